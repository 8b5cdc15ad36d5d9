package unitdir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/unitdir"
)

// TestWriteDirLinks checks that the dir output never writes through a
// symbolic link planted in it: a link at a unit's path is replaced, and a
// drop-in directory that is a link is refused.
func TestWriteDirLinks(t *testing.T) {
	r, diags := compile.Build("t.yaml", []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a\n  exec: [/bin/true]\n  dropins: [{name: x.conf, contents: \"[Service]\\nNice=1\\n\"}]\n"), compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	dir, elsewhere := t.TempDir(), t.TempDir()
	victim := filepath.Join(elsewhere, "victim")
	os.WriteFile(victim, []byte("precious\n"), 0o644)
	os.Symlink(victim, filepath.Join(dir, "a.service"))
	os.Symlink(elsewhere, filepath.Join(dir, "a.service.d"))
	err := unitdir.Write(dir, us)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("WriteDir with a linked drop-in directory: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("WriteDir wrote through a link: the victim has %q", b)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "x.conf")); err == nil {
		t.Error("WriteDir wrote a drop-in through a linked directory")
	}
	if fi, err := os.Lstat(filepath.Join(dir, "a.service")); err != nil || fi.Mode()&os.ModeSymlink != 0 {
		t.Errorf("the link at the unit's path must be replaced by the unit file: %v %v", fi, err)
	}
}

// TestVerifyGoldens runs systemd's own checker on every unit file that the
// golden specs and examples render to: any output at all is a failure.
func TestVerifyGoldens(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			us := rendertest.Units(t, path)
			dir := t.TempDir()
			if err := unitdir.Write(dir, us); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range us {
				if u.Contents != nil && !u.Mask {
					names = append(names, u.Name)
				}
			}
			hosttools.Verify(t, dir, names...)
		})
	}
}
