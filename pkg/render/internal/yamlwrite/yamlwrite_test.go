package yamlwrite

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// FuzzWriteYAML builds output-like trees from fuzzed strings (keys,
// values, unit text, comments) and holds WriteFast to yaml.v3 on every
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
		if !WriteFast(&fast, doc) {
			return
		}
		var slow bytes.Buffer
		e := yaml.NewEncoder(&slow)
		e.SetIndent(2)
		if err := e.Encode(doc); err != nil {
			t.Fatalf("yaml.v3 cannot write what WriteFast wrote:\n%s", fast.String())
		}
		e.Close()
		if fast.String() != slow.String() {
			t.Fatalf("WriteFast wrote\n%s\nyaml.v3 wrote\n%s", fast.String(), slow.String())
		}
	})
}

// FuzzLiteralText holds literalText to the checks it stands for.
func FuzzLiteralText(f *testing.F) {
	for _, s := range []string{"", "a\n", "a \n", "a\t\n", "a\tb\n", "\x7f", "~", "é", "a\x01", " \n", "\t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := printableASCII(s, true) && !strings.Contains(s, " \n") && !strings.Contains(s, "\t\n")
		if got := literalText(s); got != want {
			t.Errorf("literalText(%q) = %v, want %v", s, got, want)
		}
	})
}
