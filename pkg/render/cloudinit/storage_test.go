package cloudinit_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// TestStorageCloudInitSchema runs cloud-init's own validator on the
// cloud-init output of every storage golden without an s3:// source, and
// of files owned by name, which are deferred.
func TestStorageCloudInitSchema(t *testing.T) {
	if _, err := exec.LookPath("cloud-init"); err != nil {
		hosttools.Unavailable(t, "cloud-init not found (Debian package cloud-init)")
	}
	named := rendertest.SpecHeader + "- name: a\n  exec: [/bin/true]\n  files: [{path: /etc/a, contents: \"a\\n\", user: app, group: app, mode: 0600}]\n"
	r, diags := compile.Build("named.yaml", []byte(named), compile.Options{})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	docs := map[string]compile.Result{"named": r}
	for name, path := range rendertest.StorageGoldens(t) {
		g := rendertest.Build(t, path)
		s3 := false
		for _, f := range g.Storage.Files {
			s3 = s3 || strings.HasPrefix(f.Source, "s3://")
		}
		if !s3 { // cloud-init refuses an s3:// source (TestStorageGolden)
			docs[name] = g
		}
	}
	if len(docs) < 3 {
		t.Fatalf("only %d documents to check", len(docs))
	}
	for name, r := range docs {
		ci, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
		if err != nil {
			t.Fatal(err)
		}
		if name == "named" && (!bytes.Contains(ci, []byte("owner: app:app")) || !bytes.Contains(ci, []byte("defer: true"))) {
			t.Errorf("%s: a file owned by name is not deferred with its owner:\n%s", name, ci)
		}
		file := filepath.Join(t.TempDir(), strings.ReplaceAll(name, "/", "-")+".yaml")
		if err := os.WriteFile(file, ci, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := rendertest.CloudInitSchema(file)
		if want := "Valid cloud-config: " + file + "\n"; err != nil || out != want {
			t.Errorf("cloud-init schema -c %s: %v\n%s\n%s", name, err, out, ci)
		}
	}
}
