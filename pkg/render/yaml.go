package render

import (
	"bytes"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// The YAML outputs (Butane, cloud-init, kops) are built as yaml.v3 node
// trees with these helpers, so that each writes unit contents the same way:
// readable where YAML can keep the bytes, exact always.

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

// yamlSize is about the size of n written as YAML: its scalars, their
// comments, and for every line the indentation and punctuation around
// them. Growing the buffer to it once spares the copies of growing it by
// doubling, which for a document of several megabytes (a unit file per
// hook) were a quarter of what writing it allocated.
func yamlSize(n *yaml.Node) int {
	size := len(n.Value) + len(n.HeadComment) + 8
	if n.Style&yaml.LiteralStyle != 0 {
		// Each line of a literal block is indented: say by 8 for a line
		// of 32 bytes, without counting them.
		size += len(n.Value) / 4
	}
	for _, c := range n.Content {
		size += yamlSize(c)
	}
	return size
}
