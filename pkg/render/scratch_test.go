package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
)

// TestGenerateScratch checks that the gen generate reuses from unit to
// unit carries nothing over: every unit of a spec is the unit its hook
// gives when it is the only one built.
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
		spec, us, diags := BuildSpec("s.yaml", data)
		if spec == nil || diags.HasErrors(false) {
			continue
		}
		// Backwards, so that a small unit follows a large one.
		for k := len(us) - 1; k >= 0; k-- {
			u := us[k]
			one := *spec
			one.Hooks = spec.Hooks[u.Hook : u.Hook+1]
			alone, _ := Units(&one)
			if len(alone) != 1 {
				t.Errorf("%s: hooks[%d] alone gives %d units", name, u.Hook, len(alone))
			} else if !bytes.Equal(alone[0].Contents, u.Contents) {
				t.Errorf("%s: hooks[%d] gives %q alone and %q among the others", name, u.Hook, alone[0].Contents, u.Contents)
			}
			compared++
		}
	}
	if compared < 60 {
		t.Fatalf("only %d units compared", compared)
	}
}
