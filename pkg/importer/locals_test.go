package importer_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/importer"
)

// TestLocalFiles: file contents that are not UTF-8 text, which a spec's
// contents: cannot hold, become local: files beside the spec when the
// spec goes to a directory (Input.Locals), named after the set and the
// file's path, and the spec renders them (its check reads them from
// Result.Locals); without a directory they go to the leftovers (kept out,
// of a kops manifest), with a warning that says how to have them beside
// the spec.
func TestLocalFiles(t *testing.T) {
	bin := []byte{0, 0xff, 0, 0xff}
	for _, c := range []struct {
		name, data string
		mode       uint32
	}{
		{"bin.ign", `{"ignition": {"version": "3.4.0"}, "storage": {"files": [{"path": "/etc/key.bin", "mode": 384, "contents": {"source": "data:;base64,AP8A/w=="}}]}}`, 0o600},
		{"bin.cfg", "#cloud-config\nwrite_files:\n  - {path: /etc/key.bin, encoding: b64, content: AP8A/w==, permissions: '0600'}\n", 0o600},
		{"bin.yaml", "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata: {name: c.example.com}\nspec:\n  fileAssets:\n    - {name: key, path: /etc/key.bin, isBase64: true, content: AP8A/w==}\n", 0o644},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, diags := importer.Import(importer.Input{Name: c.name, Data: []byte(c.data), Locals: true})
			if res == nil {
				t.Fatal(diags.Error())
			}
			if res.Rest != nil || len(diags) > 0 {
				t.Errorf("leftovers or warnings:\n%s\n%s", res.Rest, diags.Error())
			}
			const name = "bin.files/etc/key.bin"
			if f := res.Hooks[0].Files[0]; f.Local != name || !bytes.Equal(res.Locals[name], bin) {
				t.Errorf("file local %q, locals %q; want %q with the bytes", f.Local, res.Locals, name)
			}
			r, bad := compile.Build(res.Name+".yaml", res.Spec, compile.Options{Locals: res.Locals})
			if bad.HasErrors(false) {
				t.Fatal(bad.Error())
			}
			if f := r.Storage.Files[0]; !bytes.Equal(f.Contents, bin) || f.Mode != c.mode {
				t.Errorf("rendered %q mode %04o", f.Contents, f.Mode)
			}

			res, diags = importer.Import(importer.Input{Name: c.name, Data: []byte(c.data)})
			if res == nil {
				t.Fatal(diags.Error())
			}
			if res.Format == importer.FormatKops {
				// A kops manifest leaves nothing over: kept out.
				if len(res.Locals) > 0 || len(diags) != 1 || !strings.Contains(diags[0].Hint, "-o FILE") {
					t.Errorf("without a directory: locals %q, warnings:\n%s", res.Locals, diags.Error())
				}
				return
			}
			if len(res.Locals) > 0 || res.Rest == nil || !bytes.Contains(res.Rest, []byte("/etc/key.bin")) {
				t.Errorf("without a directory: locals %q, leftovers:\n%s", res.Locals, res.Rest)
			}
			if len(diags) != 1 || !strings.Contains(diags[0].Message, importer.Leftovers) || !strings.Contains(diags[0].Hint, "-o FILE") {
				t.Errorf("warnings:\n%s", diags.Error())
			}
		})
	}
}
