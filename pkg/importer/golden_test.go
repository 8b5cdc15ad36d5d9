package importer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/importer"
)

// goldenInputs are the configs of testdata/in, one of each kind import
// reads; collect.conf is the local: file of metrics.bu.
var goldenInputs = []string{"metrics.bu", "app.ign", "web.cloud-config.yaml", "cluster.yaml"}

// TestGoldens imports each config of testdata/in and compares the spec
// and the warnings with testdata/golden/NAME.yaml and NAME.warnings. The
// Butane and Ignition ones also go round: imported and rendered to
// Ignition of their version, they give the config (for Butane, as Butane
// translates it), the leftovers merged, exactly.
func TestGoldens(t *testing.T) {
	for _, name := range goldenInputs {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "in", name))
			if err != nil {
				t.Fatal(err)
			}
			dir, err := filepath.Abs(filepath.Join("testdata", "in"))
			if err != nil {
				t.Fatal(err)
			}
			// As import -o FILE: contents that are not text go beside
			// the spec as local: files.
			in := importer.Input{Name: name, Data: data, Dir: dir, Locals: true}
			res, diags := importer.Import(in)
			if res == nil {
				t.Fatalf("import refused the config:\n%s", diags.Error())
			}
			golden.Check(t, filepath.Join("testdata", "golden", name+".yaml"), res.Spec)
			var warnings strings.Builder
			for _, d := range diags {
				warnings.WriteString(d.String() + "\n")
			}
			golden.Check(t, filepath.Join("testdata", "golden", name+".warnings"), []byte(warnings.String()))
			if res.Format != importer.FormatKops {
				golden.Check(t, filepath.Join("testdata", "golden", name+".rest"), res.Rest)
			}

			var original []byte
			switch res.Format {
			case importer.FormatIgnition:
				original = data
			case importer.FormatButane:
				original, _, err = butane.TranslateBytes(data, butanecommon.TranslateBytesOptions{TranslateOptions: butanecommon.TranslateOptions{FilesDir: dir}})
				if err != nil {
					t.Fatal(err)
				}
			default:
				return
			}
			got, want, _, _ := roundTrip(t, in, original)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("import, render differs from the original (-original +rendered):\n%s", d)
			}
		})
	}
}
