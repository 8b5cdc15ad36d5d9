package compile

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
	// A unit of more entries than origin searches one by one.
	var big strings.Builder
	big.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: big\n  exec: [/bin/true]\n  directives:\n    Service:\n")
	for k := 0; k < 2*searchMax; k++ {
		big.WriteString("    - ExecStartPost=/bin/echo " + strconv.Itoa(k) + "\n")
	}
	specs := map[string][]byte{"bench.yaml": benchspec.Spec(40), "big.yaml": []byte(big.String())}
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
			for i, e := range g.ents {
				o := g.origins[i]
				if g.origin(e) != o {
					t.Errorf("%s: origin of %s=%s is %+v, want %+v", name, e.Key, e.Value, g.origin(e), o)
				}
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
	if g := bigGen(t, specs["big.yaml"]); g.from == nil {
		t.Errorf("a unit of %d entries is not indexed", len(g.ents))
	}
	if entries < 500 {
		t.Errorf("checked only %d entries", entries)
	}
}

// bigGen is the gen of the first hook of spec, after its checks.
func bigGen(t *testing.T, data []byte) *gen {
	t.Helper()
	spec, diags := hooks.Parse("big.yaml", data)
	if spec == nil || diags.HasErrors(false) {
		t.Fatalf("%v", diags)
	}
	b := newBuilder(spec, diags)
	_, g := b.generate(0, "hooks[0]", UnitName(&spec.Hooks[0]))
	if g == nil {
		t.Fatalf("no unit: %v", b.diags)
	}
	b.checkExec(g.file, entryPlaces{g: g})
	return g
}
