package yamlnode

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// The helpers below build the yaml.v3 node trees hostprov writes: the hook
// specs import writes and the Butane, cloud-init and kops outputs. One set
// of them, so that a value is written the same way in every document.

// Pairs appends keys and values (key string, value *yaml.Node, ...) to the
// mapping n and returns n.
func Pairs(n *yaml.Node, kv ...any) *yaml.Node {
	for i := 0; i < len(kv); i += 2 {
		n.Content = append(n.Content, Str(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

// Str is a string scalar.
func Str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// Bool is a boolean scalar.
func Bool(v bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
}

// Uint is an integer scalar, for ids.
func Uint(v uint32) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatUint(uint64(v), 10)}
}

// Mode is a file mode as people write it and as YAML 1.1 reads it: an
// octal integer with its leading 0 and at least four digits (0644,
// 04755). Without the 0, 7777 would read as decimal.
func Mode(m uint32) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprintf("0%03o", m)}
}

// Words is a short list of strings, written on one line ([a, b]).
func Words(ss []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range ss {
		n.Content = append(n.Content, Str(s))
	}
	return n
}
