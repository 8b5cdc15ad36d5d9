// Package yamlwrite writes the node trees of the YAML outputs (Butane,
// cloud-init, kops) as yaml.v3 writes them, two spaces indented, and
// faster: the writer of every YAML output, so that each writes a unit's
// text the same way.
package yamlwrite

import (
	"bytes"

	"gopkg.in/yaml.v3"
)

// Fast, when false, has Encode leave everything to yaml.v3: the tests
// compare WriteFast with yaml.v3's encoder that way.
var Fast = true

// Encode writes n as a YAML document indented by two spaces, the
// indentation of cloud-init's and kops's documentation: by WriteFast
// where it can, by yaml.v3 otherwise, with the same bytes.
func Encode(b *bytes.Buffer, n *yaml.Node) error {
	if Fast && WriteFast(b, n) {
		return nil
	}
	e := yaml.NewEncoder(b)
	e.SetIndent(2)
	if err := e.Encode(n); err != nil {
		return err
	}
	return e.Close()
}

// Size is about the size of n written as YAML: its scalars, their
// comments, and for every line the indentation and punctuation around
// them. Growing the buffer to it once spares the copies of growing it by
// doubling, which for a document of several megabytes (a unit file per
// hook) were a quarter of what writing it allocated.
func Size(n *yaml.Node) int {
	size := len(n.Value) + len(n.HeadComment) + 8
	if n.Style&yaml.LiteralStyle != 0 {
		// Each line of a literal block is indented: say by 8 for a line
		// of 32 bytes, without counting them.
		size += len(n.Value) / 4
	}
	for _, c := range n.Content {
		size += Size(c)
	}
	return size
}
