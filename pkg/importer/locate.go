package importer

import (
	"bytes"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// locator finds where a part of an Ignition config is written in the
// input: in the JSON itself (read as YAML, which JSON is, to have
// yaml.v3's line and column of every value), or, for a Butane config, in
// the Butane YAML that Butane translated. Butane lists the same entries
// under the same keys, spelled in snake_case, so an entry of a list is
// found by what identifies it (a unit's name, a file's path, ...) rather
// than by its index, which Butane's sugar (storage.trees, with_mount_unit,
// boot_device) can shift. What Butane made from sugar is reported at the
// sugar when it is known (a file system's with_mount_unit, see sugar), and
// at the nearest part that is written otherwise.
type locator struct {
	file   string
	root   *yaml.Node
	butane bool
	// cfg is the Ignition config as generic JSON data, for the identity
	// of a list entry by its index.
	cfg any
}

func newLocator(file string, src []byte, butane bool, cfg any) *locator {
	l := &locator{file: file, butane: butane, cfg: cfg}
	if !butane {
		// JSON may be indented with tabs, which YAML refuses there; a
		// space in their place keeps every line and column.
		src = bytes.ReplaceAll(src, []byte("\t"), []byte(" "))
	}
	var doc yaml.Node
	if yaml.Unmarshal(src, &doc) == nil && len(doc.Content) > 0 {
		l.root = doc.Content[0]
	}
	return l
}

// identity are the fields that identify an entry of a list of an Ignition
// config, most specific first.
var identity = []string{"name", "path", "device", "label"}

// at is where the value at the Ignition path p (keys and indexes) is
// written, or, for an object or a list named by its key, where the key
// is; where the sugar it was made of is written (see sugar); the nearest
// ancestor that is written when neither is; the file alone when nothing
// is.
func (l *locator) at(p ...any) hooks.Position {
	if l.root == nil {
		return hooks.Position{File: l.file}
	}
	if pos, ok := l.sugar(p); ok {
		return pos
	}
	n, best := l.root, l.root
	var cfg any = l.cfg
	for i, e := range p {
		if n == nil {
			break
		}
		last := i == len(p)-1
		switch e := e.(type) {
		case string:
			var next any
			if m, ok := cfg.(map[string]any); ok {
				next = m[e]
			}
			cfg = next
			key := e
			if l.butane {
				key = snake(e)
			}
			k, v := mapEntry(n, key)
			n = v
			if last && v != nil && v.Kind != yaml.ScalarNode {
				n = k
			}
		case int:
			var item any
			if s, ok := cfg.([]any); ok && e < len(s) {
				item = s[e]
			}
			cfg = item
			switch {
			case n.Kind != yaml.SequenceNode:
				n = nil
			case !l.butane && e < len(n.Content):
				n = n.Content[e]
			case !l.butane:
				n = nil
			default:
				n = findEntry(n, item)
			}
		}
		if n != nil {
			best = n
		}
	}
	return hooks.Position{File: l.file, Line: best.Line, Column: best.Column}
}

// sugar is where a Butane config writes what Butane made the part at p
// (or under it) of, when that is not the part's own keys: a mount or swap
// unit that Butane makes of a file system with with_mount_unit: true is
// at the file system's entry. ok is false for every other part.
func (l *locator) sugar(p []any) (pos hooks.Position, ok bool) {
	if !l.butane || l.root == nil || len(p) < 3 || p[0] != "systemd" || p[1] != "units" {
		return pos, false
	}
	i, isIndex := p[2].(int)
	var name string
	if m, isMap := l.cfg.(map[string]any); isMap {
		if sd, isMap := m["systemd"].(map[string]any); isMap {
			if us, isList := sd["units"].([]any); isList && isIndex && i < len(us) {
				if u, isMap := us[i].(map[string]any); isMap {
					name, _ = u["name"].(string)
				}
			}
		}
	}
	if name == "" {
		return pos, false
	}
	if written := mapValue(mapValue(l.root, "systemd"), "units"); written != nil {
		for _, u := range written.Content {
			if n := mapValue(u, "name"); n != nil && n.Value == name {
				return pos, false // the user's own unit
			}
		}
	}
	fss := mapValue(mapValue(l.root, "storage"), "filesystems")
	if fss == nil || fss.Kind != yaml.SequenceNode {
		return pos, false
	}
	for _, fs := range fss.Content {
		var with bool
		if n := mapValue(fs, "with_mount_unit"); n == nil || n.Decode(&with) != nil || !with {
			continue
		}
		// Butane's names: the device's for swap, else the mount
		// point's.
		made := ""
		if f := mapValue(fs, "format"); f != nil && f.Value == "swap" {
			if d := mapValue(fs, "device"); d != nil {
				made = units.EscapePath(d.Value) + ".swap"
			}
		} else if m := mapValue(fs, "path"); m != nil {
			made = units.EscapePath(m.Value) + ".mount"
		}
		if made == name {
			return hooks.Position{File: l.file, Line: fs.Line, Column: fs.Column}, true
		}
	}
	return pos, false
}

// findEntry is the entry of the Butane list seq that has the identity of
// the Ignition entry item.
func findEntry(seq *yaml.Node, item any) *yaml.Node {
	m, ok := item.(map[string]any)
	if !ok {
		return nil
	}
	for _, key := range identity {
		want, ok := m[key].(string)
		if !ok {
			continue
		}
		for _, c := range seq.Content {
			if v := mapValue(c, key); v != nil && v.Kind == yaml.ScalarNode && v.Value == want {
				return c
			}
		}
		return nil
	}
	return nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	_, v := mapEntry(n, key)
	return v
}

// mapEntry is the key and value nodes of key in the mapping n.
func mapEntry(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// snake spells an Ignition key as Butane does: kernelArguments is
// kernel_arguments, sizeMiB size_mib.
func snake(s string) string {
	s = strings.ReplaceAll(s, "MiB", "Mib")
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
