package compile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
)

// TestGenerateScratch checks that the gen generate reuses from unit to
// unit carries nothing over: every unit of a spec is the unit its hook
// gives when it is the only one built (with the device unit of its
// deviceTimeout, when it has one).
func TestGenerateScratch(t *testing.T) {
	specs := map[string][]byte{"benchspec": benchspec.Spec(40)}
	files, err := filepath.Glob("../../testdata/golden/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("golden specs: %v, %d", err, len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		specs[f] = data
	}
	compared := 0
	for name, data := range specs {
		r, diags := Build("s.yaml", data, Options{})
		spec, us := r.Spec, r.Units
		if spec == nil || diags.HasErrors(false) {
			continue
		}
		// Backwards, so that a small unit follows a large one.
		for k := len(us) - 1; k >= 0; k-- {
			u := us[k]
			if k > 0 && us[k-1].Hook == u.Hook {
				continue // compared with the hook's first unit
			}
			var ofHook []Unit
			for _, v := range us[k:] {
				if v.Hook == u.Hook {
					ofHook = append(ofHook, v)
				}
			}
			one := *spec
			one.Hooks = spec.Hooks[u.Hook : u.Hook+1]
			alone, _ := Units(&one)
			if len(alone) != len(ofHook) {
				t.Errorf("%s: hooks[%d] alone gives %d units, among the others %d", name, u.Hook, len(alone), len(ofHook))
				continue
			}
			for j := range alone {
				if alone[j].Name != ofHook[j].Name || !bytes.Equal(alone[j].Contents, ofHook[j].Contents) {
					t.Errorf("%s: hooks[%d] gives %s %q alone and %s %q among the others", name, u.Hook,
						alone[j].Name, alone[j].Contents, ofHook[j].Name, ofHook[j].Contents)
				}
			}
			compared++
		}
	}
	if compared < 60 {
		t.Fatalf("only %d units compared", compared)
	}
}
