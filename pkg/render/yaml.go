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
