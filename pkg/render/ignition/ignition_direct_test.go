package ignition

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/ignconfig"
)

// TestIgnitionDirect checks that writeConfig gives, for every spec
// version, compact and indented, the bytes of that version's own Config
// marshalled and pruned of empty objects, lists and nulls (marshalPruned,
// how Ignition wrote its configs before), on odd units and on the units
// of the examples, the bad-input catalogue and the benchmark spec.
func TestIgnitionDirect(t *testing.T) {
	str := func(s string) []byte { return []byte(s) }
	boolPtr := func(b bool) *bool { return &b }
	odd := [][]ignconfig.Unit{
		nil,
		{},
		{{Name: "a.service"}},
		{{Name: ""}},
		{{Name: "a.service", Contents: str("")}},
		{{Name: "a.service", Contents: str("[Unit]\nDescription=<&> \"q\" \\ \u2028\u2029 \x01\x7f é 日本 \U0001F600\n"), Enabled: boolPtr(true)}},
		{{Name: "a.service", Enabled: boolPtr(false), Mask: boolPtr(true)}},
		{{Name: "b.service", Dropins: []ignconfig.Dropin{{Name: "10-a.conf", Contents: str("[Service]\nX=1\n")}, {Name: "", Contents: str("")}}}},
		{{Name: "c.service", Contents: str("x"), Enabled: boolPtr(false), Mask: boolPtr(false), Dropins: []ignconfig.Dropin{{Name: "d.conf"}}},
			{Name: "d.timer", Enabled: boolPtr(true)}},
	}
	sets := odd
	var files []string
	for _, glob := range []string{"../../../examples/*.yaml", "../../../testdata/bad/*.yaml", "../../../examples/*/*.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	specs := [][]byte{benchspec.Spec(40)}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		specs = append(specs, data)
	}
	built := 0
	for _, data := range specs {
		r, _ := compile.Build("spec.yaml", data, compile.Options{})
		us := r.Units
		if len(us) == 0 {
			continue
		}
		ius, err := ignconfig.Units(us)
		if err != nil {
			continue
		}
		sets = append(sets, ius)
		built++
	}
	if built < 5 {
		t.Fatalf("only %d unit sets built from %d specs", built, len(specs))
	}
	for _, spec := range ignconfig.Specs {
		for _, pretty := range []bool{false, true} {
			for i, us := range sets {
				want, err := marshalPruned(spec.Config(us), pretty)
				if err != nil {
					t.Fatal(err)
				}
				got, err := writeConfig(spec.Version, us, nil, nil, pretty)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s, pretty %v, unit set %d:\n got %s\nwant %s", spec.Version, pretty, i, got, want)
				}
			}
		}
	}
	t.Logf("%d unit sets, %d of them from specs", len(sets), built)
}

// marshalPruned is how Ignition wrote a config before writeConfig, and
// what TestIgnitionDirect holds it to. It marshals v as JSON without the
// empty objects and lists that encoding/json keeps for struct fields ("storage": {}), and without the
// nulls of pointer fields that have no omitempty (3.0.0's
// "config": {"replace": {"source": null}}), as Butane's output has none:
// the same config to Ignition, fewer bytes of user data. Object keys come out
// sorted, so the bytes depend only on the config.
func marshalPruned(v any, pretty bool) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	tree = prune(tree)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(tree); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			x = prune(x)
			if isEmpty(x) {
				delete(t, k)
			} else {
				t[k] = x
			}
		}
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
	}
	return v
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		return len(t) == 0
	case []any:
		return len(t) == 0
	case nil:
		return true
	}
	return false
}
