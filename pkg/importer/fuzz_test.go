package importer_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/importer"
)

// FuzzImport: import never panics, and whatever it accepts is a spec
// that parses without an error, named as the file says, whose every
// error-free import has no error diagnostic.
func FuzzImport(f *testing.F) {
	for _, name := range goldenInputs {
		data, err := os.ReadFile(filepath.Join("testdata", "in", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/a","contents":{"source":"data:;base64,H4sIAAAAAAAA/w=="}}]}}`))
	f.Add([]byte("#cloud-config\nwrite_files: [{path: /a, encoding: gz+b64, content: AAAA}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, diags := importer.Import(importer.Input{Name: "in.cfg", Data: data, Dir: t.TempDir()})
		if res == nil {
			if !diags.HasErrors(false) {
				t.Fatalf("no spec and no error:\n%s", diags.Error())
			}
			return
		}
		if diags.HasErrors(false) {
			t.Fatalf("a spec and an error:\n%s", diags.Error())
		}
		spec, pd := hooks.Parse("in.yaml", res.Spec)
		if pd.HasErrors(false) || spec.Name != "in" {
			t.Fatalf("the spec does not parse as spec in:\n%s\n%s", pd.Error(), res.Spec)
		}
	})
}
