package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
)

// yamlOutputs renders r to each YAML output, with writeYAML allowed or
// not.
func yamlOutputs(t *testing.T, r compile.Result, fast bool) map[string]string {
	t.Helper()
	defer func(old bool) { fastYAML = old }(fastYAML)
	fastYAML = fast
	out := map[string]string{}
	add := func(name string, b []byte, err error) {
		if err != nil {
			out[name] = "error: " + err.Error()
		} else {
			out[name] = string(b)
		}
	}
	b, err := CloudInit(r.Units, CloudInitOptions{Storage: r.Storage})
	add("cloud-init", b, err)
	b, err = Butane(r.Units, ButaneOptions{Storage: r.Storage})
	add("butane", b, err)
	b, err = Kops(r.Units, KopsOptions{Storage: r.Storage})
	add("kops", b, err)
	return out
}

// TestWriteYAML holds writeYAML to yaml.v3's encoder on the YAML outputs
// of every spec of the repository that renders, and of the benchmark's
// spec, whose outputs it must write itself.
func TestWriteYAML(t *testing.T) {
	var specs []string
	for _, glob := range []string{"../../testdata/golden/*.yaml", "../../testdata/golden/*/*.yaml", "../../examples/*/*.yaml"} {
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
		r, diags := compile.BuildAll(name, data)
		if diags.HasErrors(false) {
			continue
		}
		fast, slow := yamlOutputs(t, r, true), yamlOutputs(t, r, false)
		for format := range slow {
			if fast[format] != slow[format] {
				t.Errorf("%s, %s: writeYAML wrote\n%s\nyaml.v3 wrote\n%s", name, format, fast[format], slow[format])
			}
		}
		compared++
	}
	if compared < 10 {
		t.Fatalf("only %d specs rendered", compared)
	}
	r, _ := compile.BuildAll("benchspec", inputs["benchspec"])
	for _, doc := range []*yaml.Node{mustCloudInitDoc(t, r)} {
		if !writeYAML(&bytes.Buffer{}, doc) {
			t.Error("writeYAML does not write the cloud-init output of the benchmark's spec")
		}
	}
}

func mustCloudInitDoc(t *testing.T, r compile.Result) *yaml.Node {
	t.Helper()
	doc, err := cloudInitDoc(r.Units, CloudInitOptions{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// FuzzWriteYAML builds output-like trees from fuzzed strings (keys,
// values, unit text, comments) and holds writeYAML to yaml.v3 on every
// tree it writes.
func FuzzWriteYAML(f *testing.F) {
	f.Add("path", "/etc/systemd/system/a.service", "[Unit]\nDescription=a\n\n[Service]\nExecStart=/bin/true\n", "a comment", "0644", true)
	f.Add("name", "- x", "x\n  y\n", "#x\nline two", "it's", false)
	f.Add("a: b", "1.5", "\tx\n", "", "", true)
	f.Add("k", "yes", "a \nb\n", "x\n\ny", "~", false)
	f.Fuzz(func(t *testing.T, key, value, text, comment, quoted string, flag bool) {
		str := func(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
		q := str(quoted)
		q.Style = yaml.SingleQuotedStyle
		lit := str(text)
		lit.Style = yaml.LiteralStyle
		k := str(key)
		k.HeadComment = comment
		item := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", str(value), "enabled", yamlnode.Bool(flag), "contents", lit, "mode", q)
		doc := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode},
			"top", str(value),
			key, yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "units", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{item, str(value)}}),
			"cmds", &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{yamlnode.Words([]string{"systemctl", value, key, quoted})}},
		)
		doc.Content[2] = k
		var fast bytes.Buffer
		if !writeYAML(&fast, doc) {
			return
		}
		var slow bytes.Buffer
		e := yaml.NewEncoder(&slow)
		e.SetIndent(2)
		if err := e.Encode(doc); err != nil {
			t.Fatalf("yaml.v3 cannot write what writeYAML wrote:\n%s", fast.String())
		}
		e.Close()
		if fast.String() != slow.String() {
			t.Fatalf("writeYAML wrote\n%s\nyaml.v3 wrote\n%s", fast.String(), slow.String())
		}
	})
}
