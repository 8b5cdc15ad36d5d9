package yamlwrite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/internal/yamlwrite"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

// yamlOutputs renders r to each YAML output, with WriteFast allowed or
// not.
func yamlOutputs(t *testing.T, r compile.Result, fast bool) map[string]string {
	t.Helper()
	defer func(old bool) { yamlwrite.Fast = old }(yamlwrite.Fast)
	yamlwrite.Fast = fast
	out := map[string]string{}
	add := func(name string, b []byte, err error) {
		if err != nil {
			out[name] = "error: " + err.Error()
		} else {
			out[name] = string(b)
		}
	}
	b, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
	add("cloud-init", b, err)
	b, err = butane.Render(r.Units, butane.Options{Storage: r.Storage})
	add("butane", b, err)
	b, err = kopshooks.Render(r.Units, kopshooks.Options{Storage: r.Storage})
	add("kops", b, err)
	return out
}

// TestWriteYAML holds WriteFast to yaml.v3's encoder on the YAML outputs
// of every spec of the repository that renders, and of the benchmark's
// spec, whose outputs it must write itself.
func TestWriteYAML(t *testing.T) {
	var specs []string
	for _, glob := range []string{rendertest.Path("testdata", "golden", "*.yaml"), rendertest.Path("testdata", "golden", "*", "*.yaml"), rendertest.Path("examples", "*", "*.yaml")} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, files...)
	}
	inputs := map[string][]byte{"benchspec": benchspec.Spec(40)}
	for _, f := range specs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = data
	}
	compared := 0
	for name, data := range inputs {
		r, diags := compile.Build(name, data, compile.Options{})
		if diags.HasErrors(false) {
			continue
		}
		fast, slow := yamlOutputs(t, r, true), yamlOutputs(t, r, false)
		for format := range slow {
			if fast[format] != slow[format] {
				t.Errorf("%s, %s: WriteFast wrote\n%s\nyaml.v3 wrote\n%s", name, format, fast[format], slow[format])
			}
		}
		compared++
	}
	if compared < 10 {
		t.Fatalf("only %d specs rendered", compared)
	}
}
