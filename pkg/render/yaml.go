package render

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
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

// yamlText is unit text as a readable and exact scalar; see
// yamlnode.Text.
func yamlText(b []byte) *yaml.Node { return yamlnode.Text(b) }

// fastYAML lets the tests compare writeYAML with yaml.v3's encoder.
var fastYAML = true

// yamlEncode writes n as a YAML document indented by two spaces, the
// indentation of cloud-init's and kops's documentation: by writeYAML
// where it can, by yaml.v3 otherwise, with the same bytes.
func yamlEncode(b *bytes.Buffer, n *yaml.Node) error {
	if fastYAML && writeYAML(b, n) {
		return nil
	}
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
