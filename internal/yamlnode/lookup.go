package yamlnode

import "gopkg.in/yaml.v3"

// Lookup finds key in the mapping n, as a decoder does: the last of
// repeated keys wins, and the value's aliases are followed. It returns
// nils when n is not a mapping or has no such key.
func Lookup(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if c := n.Content[i]; c.Kind == yaml.ScalarNode && c.Value == key {
			k, v = c, Resolve(n.Content[i+1])
		}
	}
	return k, v
}

// Resolve follows aliases to the node they name, giving up on a chain of
// 100 (which only a hostile document writes).
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// IsNull reports whether n is absent or a null scalar.
func IsNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// IsString reports whether n is a string scalar.
func IsString(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str"
}
