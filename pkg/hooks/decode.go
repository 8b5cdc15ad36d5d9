package hooks

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/internal/yamlnode"
)

// value is a node of the document with what is needed to report on it.
type value struct {
	node   *yaml.Node // with aliases followed
	path   string     // "hooks[0].exec[1]"
	pos    Position   // where the value is written (the alias, if it is one)
	keyPos Position   // the key's position, or pos for list items: where "has no value" points
}

// entry is one key of a mapping with its value.
type entry struct {
	key  *yaml.Node
	name string
	value
}

// isString reports whether v is a scalar that decodes to a string field.
func (v value) isString() bool {
	return v.node.Kind == yaml.ScalarNode && !isNull(v.node) && knownScalarTag(v.node)
}

func (d *decoder) add(sev Severity, pos Position, path, msg, hint string) {
	d.diags = append(d.diags, Diagnostic{Severity: sev, Pos: pos, Path: path, Message: msg, Hint: hint})
	if sev == Error {
		if d.errorPaths == nil {
			d.errorPaths = map[string]bool{}
		}
		d.errorPaths[path] = true
	}
}

func (d *decoder) pos(n *yaml.Node) Position {
	return Position{File: d.file, Line: n.Line, Column: n.Column}
}

// resolve follows an alias to the node it names. Anchors let a person share
// an env map or a command between hooks, so aliases are read as if the
// value were written out at the alias.
func resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// knownScalarTag reports whether a scalar has one of YAML's own tags, whose
// text can stand for a string. An application tag ("!foo x") means the
// author expects some processing that hostprov does not do.
func knownScalarTag(n *yaml.Node) bool {
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp", "!!binary":
		return true
	}
	return false
}

// label names a value in messages: its path without the hook's prefix, so
// "hooks[3].env.PATH" is "env.PATH". The Diagnostic's Path has the rest.
func label(path string) string {
	if strings.HasPrefix(path, "hooks[") {
		if i := strings.Index(path, "]."); i >= 0 {
			return path[i+2:]
		}
	}
	return path
}

// join appends a mapping key to a path.
func (d *decoder) join(path, key string) string {
	if path == "" {
		return key
	}
	start := d.reserve(len(path) + 1 + len(key))
	d.paths.WriteString(path)
	d.paths.WriteByte('.')
	d.paths.WriteString(key)
	return d.paths.String()[start:]
}

// index appends a list index to a path.
func (d *decoder) index(path string, i int) string {
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(i), 10)
	start := d.reserve(len(path) + len(digits) + 2)
	d.paths.WriteString(path)
	d.paths.WriteByte('[')
	d.paths.Write(digits)
	d.paths.WriteByte(']')
	return d.paths.String()[start:]
}

// keep returns s, a string of the source, for the Spec to keep. The fast
// parser's values are substrings of the source (see parse), so that one
// kept would keep all of it, keys, indentation and all: they are copied,
// into buffers shared by the values of many hooks. yaml.v3's values are
// strings of their own.
func (d *decoder) keep(s string) string {
	switch {
	case !d.asciiLines || s == "":
		return s
	case len(s) > valueChunk/8:
		return strings.Clone(s)
	}
	if d.values.Cap()-d.values.Len() < len(s) {
		d.values = strings.Builder{}
		d.values.Grow(valueChunk)
	}
	start := d.values.Len()
	d.values.WriteString(s)
	return d.values.String()[start:]
}

// valueChunk is the size of the buffers values are copied to.
const valueChunk = 32 << 10

// pathChunk is the size of the buffers paths are written to.
const pathChunk = 4096

// reserve makes room for a path of n bytes in d.paths without growing
// it, and returns where the path starts. Every value decoded has a path,
// and one string each was half of the allocations of reading a spec:
// the paths are cut from buffers of a few kilobytes instead. A string
// cut from a strings.Builder stays as it is: the builder only appends,
// and is replaced rather than grown.
func (d *decoder) reserve(n int) int {
	if d.paths.Cap()-d.paths.Len() < n {
		d.paths = strings.Builder{}
		d.paths.Grow(max(n, pathChunk))
	}
	return d.paths.Len()
}

// mapping calls f for each key of the mapping n, in document order, after
// recording where its value is. It reports keys that are not strings,
// merge keys, and duplicate keys; those are not passed to f, so the first
// of duplicate keys is the one decoded.
func (d *decoder) mapping(n *yaml.Node, path string, f func(entry)) {
	// The keys decoded so far, to find duplicates: a hook, its env and
	// its directives are small mappings, where a scan of an array on the
	// stack costs less than a map per mapping (a fifth of the decoder's
	// allocations); a large one moves to the map.
	var small [16]*yaml.Node
	keys := small[:0]
	var first map[string]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.spend(k) {
			return
		}
		rk := resolve(k)
		if rk.Kind != yaml.ScalarNode {
			d.add(Error, d.pos(k), path, fmt.Sprintf("a key must be a name, not %s", yamlnode.KindName(rk)), "write the key as a plain name")
			continue
		}
		// Merge keys are rejected rather than supported: they make a hook's
		// fields come from elsewhere with override rules few people know,
		// and "is this field given twice?" would have two answers. Sharing
		// single values through anchors and aliases covers the need.
		if rk.ShortTag() == "!!merge" {
			d.add(Error, d.pos(k), path, "merge keys (<<) are not supported in a hook spec",
				"write the fields out, or share single values with an anchor (&name) and an alias (*name)")
			continue
		}
		name := rk.Value
		p := d.join(path, name)
		if prev := firstKey(keys, first, name); prev != nil {
			d.add(Error, d.pos(k), p, fmt.Sprintf("%s is given twice", label(p)),
				fmt.Sprintf("the first %s is on line %d: remove one of them", name, prev.Line))
			continue
		}
		switch {
		case first != nil:
			first[name] = k
		case len(keys) < len(small):
			keys = append(keys, k)
		default:
			first = make(map[string]*yaml.Node, len(n.Content)/2)
			for _, k := range keys {
				first[resolve(k).Value] = k
			}
			first[name] = k
		}
		rv := resolve(v)
		e := entry{key: k, name: name, value: value{node: rv, path: p, pos: d.pos(v), keyPos: d.pos(k)}}
		if isNull(rv) {
			// An empty value has no text to point at; its key does.
			e.pos = e.keyPos
		}
		d.spec.pos.set(p, e.pos)
		f(e)
	}
}

// firstKey returns the key node recorded for name, in keys (whose
// resolved values are the names) or, once it is in use, in first; nil if
// there is none.
func firstKey(keys []*yaml.Node, first map[string]*yaml.Node, name string) *yaml.Node {
	if first != nil {
		return first[name]
	}
	for _, k := range keys {
		if resolve(k).Value == name {
			return k
		}
	}
	return nil
}

// spend counts one value decoded at n and reports whether decoding may go
// on. Without aliases a document holds fewer values than it has bytes, but
// aliases of lists of aliases multiply: a few kilobytes can stand for
// billions of values (the "billion laughs"). Like yaml.v3's own decoder,
// Parse refuses such an expansion instead of running out of memory.
func (d *decoder) spend(n *yaml.Node) bool {
	if d.budget--; d.budget >= 0 {
		return true
	}
	if d.budget == -1 {
		d.add(Error, d.pos(n), "", "the aliases in this spec expand to far more values than it holds; decoding stopped here",
			"use anchors and aliases for small shared values, such as an env map")
	}
	return false
}

// item returns the i-th item of the list at path, recording its position.
func (d *decoder) item(path string, i int, c *yaml.Node) value {
	p := d.index(path, i)
	v := value{node: resolve(c), path: p, pos: d.pos(c)}
	v.keyPos = v.pos
	d.spec.pos.set(p, v.pos)
	return v
}

// noValue reports a field written with no value ("exec:" or "exec: ~").
func (d *decoder) noValue(v value, hint string) {
	d.add(Error, v.keyPos, v.path, label(v.path)+" has no value", hint)
}

// list reports whether v is a list. When it is not, it says so: for no
// value with noValueHint, else that notList ("dropins must be a list") is
// what v is not, with hint.
func (d *decoder) list(v value, noValueHint, notList, hint string) bool {
	switch n := v.node; {
	case isNull(n):
		d.noValue(v, noValueHint)
		return false
	case n.Kind != yaml.SequenceNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s, not %s", notList, yamlnode.KindName(n)), hint)
		return false
	}
	return true
}

// str decodes a string. Numbers, booleans and dates are taken as the text
// written ("restartSec: 5" is "5", "user: 0" is "0"): their meaning as
// strings is plain, and requiring quotes would only annoy. multiline allows
// line breaks and control characters, which only unit text (manifest,
// drop-in contents) may hold; its lines are checked by the unit parser.
func (d *decoder) str(v value, multiline bool) (string, bool) {
	n := v.node
	switch {
	case n.Kind != yaml.ScalarNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be a string, not %s", label(v.path), yamlnode.KindName(n)),
			"write "+label(v.path)+" as a single value")
		return "", false
	case isNull(n):
		d.noValue(v, fmt.Sprintf(`give %s a value, write "" for an empty string, or remove the line`, label(v.path)))
		return "", false
	case !knownScalarTag(n):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s has the tag %s, which a hook spec does not use", label(v.path), n.Tag),
			"remove the tag")
		return "", false
	}
	d.recordScalar(v.path, n)
	if !multiline {
		d.checkControl(v, n)
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return n.Value, true // made of the lines, not a substring of the source
	}
	return d.keep(n.Value), true
}

// checkControl reports the first control character in a value that ends
// up on a unit line: there a line break would start a new directive of the
// author's choosing, and other control characters corrupt the line.
func (d *decoder) checkControl(v value, n *yaml.Node) {
	d.checkControlText(v, n.Value, n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0)
}

func (d *decoder) checkControlText(v value, s string, block bool) {
	i := strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
	if i < 0 {
		return
	}
	c := s[i]
	hint := "remove it: a control character would corrupt the unit line"
	if c == '\n' || c == '\r' {
		hint = "write the value on one line: a line break would inject a new line into the unit"
		if block {
			hint += " (a | or > block keeps its final line break: use |- or a plain value)"
		}
	}
	d.add(Error, v.pos, v.path, fmt.Sprintf("%s contains the control character %s", label(v.path), strconv.Quote(string(c))), hint)
}

// boolean decodes true or false. YAML 1.1's yes/no/on/off are strings in
// YAML 1.2, which yaml.v3 follows; they are rejected rather than guessed,
// because "enabled: off" read as a string would otherwise be a type error
// elsewhere or, worse, true.
func (d *decoder) boolean(v value) (b, ok bool) {
	n := v.node
	name := label(v.path)
	switch {
	case n.Kind != yaml.ScalarNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be true or false, not %s", name, yamlnode.KindName(n)), "use true or false")
	case isNull(n):
		d.noValue(v, fmt.Sprintf("write %s: true or %s: false, or remove the line", name, name))
	case n.ShortTag() == "!!bool":
		return strings.EqualFold(n.Value, "true"), true
	case n.ShortTag() == "!!str" && (strings.EqualFold(n.Value, "true") || strings.EqualFold(n.Value, "false")):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be a boolean, not the string %q", name, n.Value),
			fmt.Sprintf("remove the quotes: %s: %s", name, strings.ToLower(n.Value)))
	case n.ShortTag() == "!!str" && isYAML11Bool(n.Value):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s: %q is not a boolean in YAML 1.2, which hostprov reads", name, n.Value),
			"use true or false")
	default:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be true or false, not %s", name, quoteScalar(n)), "use true or false")
	}
	return false, false
}

func isYAML11Bool(s string) bool {
	switch strings.ToLower(s) {
	case "yes", "no", "on", "off", "y", "n":
		return true
	}
	return false
}

// quoteScalar shows a scalar in a message.
func quoteScalar(n *yaml.Node) string {
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// strList decodes a list of strings. An empty list gives an empty, non-nil
// slice, because for wantedBy "[]" and "not given" mean different things.
// example is a sample list for hints, such as `["/usr/bin/true"]`.
func (d *decoder) strList(v value, example string) ([]string, bool) {
	return d.strItems(v, example, false)
}

// strItems is strList; with args, the items after the first may hold line
// breaks and other control characters: they are the arguments of a
// command, which QuoteExec writes with C escapes inside quotes, so systemd
// passes them to the program exactly as written.
func (d *decoder) strItems(v value, example string, args bool) ([]string, bool) {
	n := v.node
	name := label(v.path)
	switch {
	case isNull(n):
		d.noValue(v, fmt.Sprintf("write a list, such as %s: %s, or remove the line", lastKey(v.path), example))
		return nil, false
	case n.Kind == yaml.ScalarNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be a list, not %s", name, yamlnode.KindName(n)),
			fmt.Sprintf("write %s: [%s]", lastKey(v.path), strconv.Quote(n.Value)))
		return nil, false
	case n.Kind != yaml.SequenceNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be a list, not %s", name, yamlnode.KindName(n)),
			fmt.Sprintf("write a list, such as %s: %s", lastKey(v.path), example))
		return nil, false
	}
	out := make([]string, 0, len(n.Content))
	ok := true
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		s, good := d.str(d.item(v.path, i, c), args && i > 0)
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

// lastKey is the last mapping key of a path: "exec" for "hooks[0].exec".
func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// argv decodes a command: a non-empty list of arguments whose first item,
// the program, is not empty.
func (d *decoder) argv(v value) []string {
	n := v.node
	if n.Kind == yaml.ScalarNode && !isNull(n) {
		// A command line written as one string is the commonest mistake;
		// show it split into arguments.
		words := strings.Fields(n.Value)
		if len(words) == 0 {
			words = []string{"/usr/bin/true"}
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = strconv.Quote(w)
		}
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be a list of arguments, not %s", label(v.path), yamlnode.KindName(n)),
			fmt.Sprintf("write %s: [%s], one item per argument", lastKey(v.path), strings.Join(quoted, ", ")))
		return nil
	}
	args, ok := d.strItems(v, `["/usr/bin/true"]`, true)
	switch {
	case args == nil:
	case len(args) == 0:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s is an empty command", label(v.path)),
			`give the program and its arguments, such as ["/usr/bin/true"]`)
	case ok && args[0] == "":
		p := v.path + "[0]"
		d.add(Error, d.spec.Where(p), p, fmt.Sprintf("the program of %s is empty", label(v.path)),
			"the first item is the program to run, such as /usr/bin/true")
	}
	return args
}

// unknownField reports a key that is not a field of where ("spec", "hook"
// or "drop-in"), saying where it belongs if it is a field of another level.
func (d *decoder) unknownField(e entry, where string) {
	pos := d.pos(e.key)
	switch {
	case where == "spec" && contains(hookKind.keys, e.name):
		d.add(Error, pos, e.path, fmt.Sprintf("%s is a field of a hook, not of the spec", e.name),
			"move it under an entry of hooks:")
		return
	case where == "hook" && contains(specFields, e.name):
		d.add(Error, pos, e.path, fmt.Sprintf("%s is a field of the spec, not of a hook", e.name),
			"move it to the top level of the file, outside hooks:")
		return
	case where == "hook" && kopsOnly[e.name] != "":
		d.add(Error, pos, e.path, fmt.Sprintf("%s is a kops hook field that hostprov does not support", e.name), kopsOnly[e.name])
		return
	}
	known := map[string][]string{"spec": specFields, "hook": hookKind.keys, "drop-in": dropinKind.keys, "step": stepKind.keys, "metadata": metadataFields}[where]
	hint := "the fields of a " + where + " are " + strings.Join(known, ", ")
	if s := suggest.Closest(e.name, known); s != "" {
		hint = "did you mean " + s + "?"
	}
	d.add(Error, pos, e.path, fmt.Sprintf("unknown field %q in a %s", e.name, where), hint)
}

// kopsOnly names kops HookSpec fields that hostprov does not take, with
// what to write instead, so that a hook copied from kops fails helpfully.
var kopsOnly = map[string]string{
	"disabled":      "hostprov uses kops v1alpha3's enabled: write enabled: false instead of disabled: true",
	"roles":         "a spec is rendered for the machines it is given to: remove roles, and write a spec per role",
	"execContainer": `run the container through exec, such as exec: ["/usr/bin/podman", "run", "--rm", "IMAGE"]`,
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
