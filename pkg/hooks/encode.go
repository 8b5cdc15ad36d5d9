package hooks

import (
	"bytes"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// Encode writes a hook spec document named name (metadata.name; empty for
// none) holding hs, in hostprov's canonical form: the fields of a hook and
// of its entries in the order of the schema's tables, which is the order
// they are documented in (see Fields), fields at their default value left
// out, maps (env, directives) with their keys sorted, indented by two
// spaces, text that a person reads (manifests, drop-ins, file contents,
// shell steps) as literal blocks where YAML keeps their bytes (see
// yamlnode.Text) and double-quoted otherwise.
// Parse reads the document back as the same hooks; the tests prove it.
//
// The document is built as a yaml.v3 node tree, never as text, so that
// every value is quoted as YAML needs it.
func Encode(name string, hs []Hook) ([]byte, error) {
	doc := &yaml.Node{Kind: yaml.MappingNode}
	yamlnode.Pairs(doc, "apiVersion", yamlnode.Str(specAPIVersion), "kind", yamlnode.Str(specKind))
	if name != "" {
		yamlnode.Pairs(doc, "metadata", yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(name)))
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for i := range hs {
		seq.Content = append(seq.Content, encodeEntry(hookKind, &hs[i]))
	}
	yamlnode.Pairs(doc, "hooks", seq)
	var b bytes.Buffer
	if err := yamlnode.Encode(&b, doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// text is a string that may span lines: a literal block when it does,
// and YAML keeps its bytes that way, a plain string otherwise.
func text(s string) *yaml.Node {
	if bytes.IndexByte([]byte(s), '\n') >= 0 {
		return yamlnode.Text([]byte(s))
	}
	return yamlnode.Str(s)
}

// ownerNode writes a user or group: a decimal id as a number, a name as a
// string.
func ownerNode(v string) *yaml.Node {
	if digitsRE.MatchString(v) {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: v}
	}
	return yamlnode.Str(v)
}

// unitText is the text of a unit file (a manifest, a drop-in): a literal
// block where YAML keeps its bytes, double-quoted otherwise.
func unitText(s string) *yaml.Node { return yamlnode.Text([]byte(s)) }

// strOrNil is s, or nil when it is empty.
func strOrNil(s string) *yaml.Node {
	if s == "" {
		return nil
	}
	return yamlnode.Str(s)
}

// wordsOrNil is the list ss on one line, or nil when not given.
func wordsOrNil(ss []string, given bool) *yaml.Node {
	if !given {
		return nil
	}
	return yamlnode.Words(ss)
}

func list(vs []string) *yaml.Node {
	l := &yaml.Node{Kind: yaml.SequenceNode}
	for _, v := range vs {
		l.Content = append(l.Content, yamlnode.Str(v))
	}
	return l
}
