package render

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// TestOriginUserText holds origin.userText, which checkExec asks instead
// of searching the path, to the search of the path, and checks that every
// path an entry is given is the hook's path followed by a field, for every
// entry of every unit generated from the golden specs, the examples, the
// bad-input catalogue and the benchmark spec.
func TestOriginUserText(t *testing.T) {
	var files []string
	for _, pattern := range []string{"testdata/golden/*.yaml", "examples/*/hostprov.yaml", "testdata/bad/*.yaml"} {
		ms, err := filepath.Glob(filepath.Join("..", "..", pattern))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ms...)
	}
	if len(files) < 50 {
		t.Fatalf("found %d specs; the test expects the ones in the repository", len(files))
	}
	specs := map[string][]byte{"bench.yaml": benchspec.Spec(40)}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		specs[f] = data
	}
	entries := 0
	for name, data := range specs {
		spec, diags := hooks.Parse(name, data)
		if spec == nil {
			continue
		}
		b := newBuilder(spec, diags)
		for i := range spec.Hooks {
			h := &spec.Hooks[i]
			if h.Name == "" || h.UseRawManifest || !h.Generated() {
				continue
			}
			p := "hooks[" + strconv.Itoa(i) + "]"
			_, g := b.generate(i, p, UnitName(h))
			if g == nil {
				continue
			}
			for e, o := range g.from {
				entries++
				path := g.path(o)
				want := strings.Contains(path, ".manifest") || strings.Contains(path, ".directives.") || strings.Contains(path, ".contents")
				if o.userText() != want {
					t.Errorf("%s: %s=%s from %s: userText = %v, want %v", name, e.Key, e.Value, path, o.userText(), want)
				}
				if !strings.HasPrefix(path, p+".") {
					t.Errorf("%s: %s=%s from %s, not a field of %s", name, e.Key, e.Value, path, p)
				}
			}
		}
	}
	if entries < 500 {
		t.Errorf("checked only %d entries", entries)
	}
}
