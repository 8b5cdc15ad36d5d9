package render

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The YAML outputs (Butane, cloud-init, kops) are built as yaml.v3 node
// trees with these helpers, so that each writes unit contents the same way:
// readable where YAML can keep the bytes, exact always.

func yamlPairs(n *yaml.Node, kv ...any) *yaml.Node {
	for i := 0; i < len(kv); i += 2 {
		n.Content = append(n.Content, yamlStr(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

func yamlStr(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// yamlText is a string scalar for text that a person should be able to
// read in the output: a literal block where blockSafe says the block reads
// back as exactly the text, and a double-quoted scalar, with escapes where
// needed, otherwise. yaml.v3 may still pick double quotes for a text
// blockSafe accepts (it does for characters beyond U+FFFF); that keeps the
// bytes too. The tests prove the round trip with yaml.v3 and with
// cloud-init's own YAML parser.
func yamlText(b []byte) *yaml.Node {
	n := yamlStr(string(b))
	if blockSafe(b) {
		n.Style = yaml.LiteralStyle
	} else {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// blockSafe reports whether yaml.v3 writes b as a literal block that reads
// back as b. It does not for a text that starts with a line break, a space
// or a tab (yaml.v3 writes a wrong indentation indicator, or none), that
// does not end in exactly one line break, that has spaces or tabs before a
// line break, or that holds control characters or what YAML takes for a
// line break or byte order mark (U+0085, U+2028, U+2029, U+FEFF).
func blockSafe(b []byte) bool {
	if len(b) == 0 || b[0] == '\n' || b[0] == ' ' || b[0] == '\t' || !utf8.Valid(b) ||
		!bytes.HasSuffix(b, []byte("\n")) || bytes.HasSuffix(b, []byte("\n\n")) {
		return false
	}
	prev := rune(0)
	for _, r := range string(b) {
		switch {
		case r == '\n':
			if prev == ' ' || prev == '\t' {
				return false
			}
		case r == '\t':
		case r < 0x20, r == 0x7f, r == 0x85, r == 0x2028, r == 0x2029, r == 0xfeff:
			return false
		}
		prev = r
	}
	return true
}

// yamlEncode writes n as a YAML document indented by two spaces, the
// indentation of cloud-init's and kops's documentation.
func yamlEncode(b *bytes.Buffer, n *yaml.Node) error {
	e := yaml.NewEncoder(b)
	e.SetIndent(2)
	if err := e.Encode(n); err != nil {
		return err
	}
	return e.Close()
}

func yamlBool(v bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}
}
