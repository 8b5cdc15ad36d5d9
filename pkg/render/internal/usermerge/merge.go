package usermerge

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// SameYAML reports whether two nodes hold the same data.
func SameYAML(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return false
	}
	var x, y any
	if a.Decode(&x) != nil || b.Decode(&y) != nil {
		return false
	}
	return yamlDump(x) == yamlDump(y)
}

// yamlDump is v as YAML, "" when it has none.
func yamlDump(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// MergeYAML merges the mapping from into into by cloud-init's merge rule
// (see cloudinit.Merge), which the Butane merge follows too: mappings key
// by key, lists appended, and a value both set to something else a clash
// at the file's node (file names it). prefix is the key path of into, for
// the diagnostic.
func MergeYAML(into, from *yaml.Node, file, prefix string) hooks.Diagnostics {
	var diags hooks.Diagnostics
	for i := 0; i+1 < len(from.Content); i += 2 {
		k, v := from.Content[i], from.Content[i+1]
		key := prefix + k.Value
		j := -1
		for m := 0; m+1 < len(into.Content); m += 2 {
			if into.Content[m].Value == k.Value {
				j = m
			}
		}
		if j < 0 {
			into.Content = append(into.Content, k, v)
			continue
		}
		have := into.Content[j+1]
		switch {
		case have.Kind == yaml.MappingNode && v.Kind == yaml.MappingNode:
			diags = append(diags, MergeYAML(have, v, file, key+".")...)
		case have.Kind == yaml.SequenceNode && v.Kind == yaml.SequenceNode:
			have.Content = append(have.Content, v.Content...)
		case SameYAML(have, v):
		default:
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file, Line: v.Line, Column: v.Column}, Path: key,
				Message: fmt.Sprintf("%s is set by hostprov's output (or an earlier --merge file) to something else, which cloud-init would not merge", key),
				Hint:    "set " + strings.TrimPrefix(key, ".") + " in one place only"})
		}
	}
	return diags
}

// YAMLErrPos is the line of a yaml.v3 error ("yaml: line 3: ..."), or the
// file alone.
func YAMLErrPos(file string, err error) hooks.Position {
	var line int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); e == nil {
		return hooks.Position{File: file, Line: line}
	}
	return hooks.Position{File: file}
}

// YAMLAt walks a YAML node by map keys (string) and list indexes (int).
func YAMLAt(n *yaml.Node, p ...any) *yaml.Node {
	for _, e := range p {
		switch e := e.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return nil
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == e {
					next = n.Content[i+1]
				}
			}
			if next == nil {
				return nil
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || e >= len(n.Content) {
				return nil
			}
			n = n.Content[e]
		}
	}
	return n
}

// MergeYAMLEntry is the user's entry of a list (a unit, a user) with the
// keys of hostprov's entry that it does not have added after its own:
// the entry both make, once, with the fields of both.
func MergeYAMLEntry(own, user *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(own.Content); i += 2 {
		if YAMLAt(user, own.Content[i].Value) == nil {
			user.Content = append(user.Content, own.Content[i], own.Content[i+1])
		}
	}
	return user
}
