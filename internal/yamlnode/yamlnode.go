// Package yamlnode holds what the strict readers of hook specs and kops
// manifests both need from yaml.v3's node tree.
package yamlnode

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// KindName says what a node is, for messages ("must be a list, not a
// mapping").
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "empty"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		case "!!str":
			return "a string"
		}
		return "a value tagged " + n.ShortTag()
	}
	return "an alias"
}

// Decode reads the next document. yaml.v3 has panicked on hostile input
// before (CVE-2022-28948); input it cannot read must be reported, not crash
// the program, so a panic in it becomes an error. Only the YAML library is
// guarded: a panic in hostprov's own code is a bug to see.
func Decode(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: the YAML parser failed: %v", r)
		}
	}()
	return dec.Decode(n)
}
