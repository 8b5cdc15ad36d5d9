package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	v34 "github.com/coreos/ignition/v2/config/v3_4"

	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/listing"
	"github.com/hostprov/hostprov/pkg/render/unitdir"
)

// TestSameBytes proves that one spec gives one set of bytes: rendering
// twice gives the same units, and the directory and Ignition outputs hold
// exactly the bytes of the units.
func TestSameBytes(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			us := rendertest.Units(t, path)
			again := rendertest.Units(t, path)
			if !bytes.Equal(listing.Render(us), listing.Render(again)) {
				t.Fatal("two renders of the same spec differ")
			}
			want := map[string]string{}
			for _, f := range render.Files(us) {
				want[f.Path] = string(f.Contents)
			}

			dir := t.TempDir()
			if err := unitdir.Write(dir, us); err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Type()&os.ModeSymlink != 0 {
					return err
				}
				b, err := os.ReadFile(p)
				rel, _ := filepath.Rel(dir, p)
				got[filepath.ToSlash(rel)] = string(b)
				return err
			})
			rendertest.CompareFiles(t, "dir", want, got)

			ign, err := ignition.Render(us, ignition.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rendertest.CompareFiles(t, "ignition", want, ignitionFiles(t, ign))
		})
	}
}

// ignitionFiles parses an Ignition config with Ignition's own parser,
// fails on any error or warning, and returns its unit files.
func ignitionFiles(t *testing.T, ign []byte) map[string]string {
	t.Helper()
	cfg, rpt, err := v34.Parse(ign)
	if err != nil {
		t.Fatalf("Ignition's parser refuses the config: %v\n%s", err, rpt)
	}
	if len(rpt.Entries) > 0 {
		t.Fatalf("Ignition's parser reports:\n%s", rpt)
	}
	files := map[string]string{}
	for _, u := range cfg.Systemd.Units {
		if u.Contents != nil {
			files[u.Name] = *u.Contents
		}
		for _, d := range u.Dropins {
			files[u.Name+".d/"+d.Name] = *d.Contents
		}
	}
	return files
}
