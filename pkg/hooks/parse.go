package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// headerHint shows the smallest valid spec; it is the hint wherever the
// document as a whole is not a spec.
const headerHint = `a spec starts with "apiVersion: hostprov/v1alpha1", "kind: Hooks" and "hooks:", one per line`

// Top-level fields of a spec, in the order they are documented.
var specFields = []string{"apiVersion", "kind", "metadata", "hooks"}

// metadataFields are the fields of a spec's metadata.
var metadataFields = []string{"name"}

// AgentSetPrefix starts the name of every spec set that hostprov's agent
// applies on a node for a HostHooks (v1alpha1.SetPrefix is the same). The
// agent prunes the sets with this prefix that it no longer has a HostHooks
// for, so a node's own spec must not take such a name.
const AgentSetPrefix = "hosthooks."

// CheckSetName refuses a spec set name (metadata.name, or a spec file's
// name without its extension) that is empty, too long, or has other
// characters than letters, digits, '-', '_' and '.' (not first): a set's
// name is shown in tables and logs, and may name a Kubernetes object.
func CheckSetName(name string) error {
	if name == "" || len(name) > 253 || name[0] == '.' || name[0] == '-' {
		return fmt.Errorf("spec set name %q must be 1 to 253 letters, digits, '-', '_' or '.', starting with a letter, a digit or '_'", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("spec set name %q has %q: only letters, digits, '-', '_' and '.' are allowed", name, r)
		}
	}
	return nil
}

// StdinName is what positions and messages call standard input, the
// File of a Position in a spec (or a unit file) read from it. Given as
// the file of Parse (or compile.Build), it also says that the spec has no
// directory for local: files to be relative to.
const StdinName = "<stdin>"

// Parse reads a hook spec. file names the source in positions ("hooks.yaml",
// or StdinName).
//
// It returns a Spec whenever the document is a YAML mapping, with every field
// it could decode, so that later checks (package render) can report their
// problems too, and all diagnostics, sorted by position. A value that has a
// problem may still be in the Spec as written. Callers must not render a
// spec when diags.HasErrors(strict).
//
// The spec is decoded from the YAML node tree rather than unmarshalled into
// structs so that every problem is found, not only the first, and each
// carries the exact place it was written.
func Parse(file string, data []byte) (*Spec, Diagnostics) {
	d := &decoder{file: file}
	spec := d.read(data)
	d.diags.Sort()
	return spec, d.diags
}

// read is Parse without sorting the diagnostics.
func (d *decoder) read(data []byte) *Spec {
	if len(data) > MaxSize {
		// Refused before any parsing, so that time and memory stay
		// bounded whatever the input: a real spec is a few kilobytes.
		d.add(Error, Position{File: d.file, Line: 1, Column: 1}, "",
			fmt.Sprintf("the spec is %d bytes; hostprov reads specs of at most %d bytes (%d MiB)", len(data), MaxSize, MaxSize>>20),
			"check that this is the hook spec; split a spec this large into several")
		return nil
	}
	// The budget allows every value of the file once, and aliases of
	// small shared values many times over.
	d.src, d.budget = string(data), len(data)+100000
	if !utf8.Valid(data) {
		// yaml.v3 would say only that some octet is wrong, not where.
		d.invalidUTF8(data)
		return nil
	}
	return d.parse(data)
}

// MaxSize is the largest spec Parse reads, in bytes. Ten thousand hooks
// take about 4 MiB.
const MaxSize = 16 << 20

// decoder holds the state of one Parse.
type decoder struct {
	file string
	// src is the source, shared with the fast parser, whose values are
	// substrings of it; lines is the source split into lines, for the
	// positions of block scalars, made when first needed unless the
	// source's lines are those that "\n" ends (asciiLines): then a block
	// scalar's first line is found from the one before (see srcLine).
	src        string
	lines      []string
	asciiLines bool
	lineCursor struct{ line, start int }
	spec       *Spec
	diags      Diagnostics
	// budget is how many more values may be decoded; see spend.
	budget int
	// errorPaths holds the paths of the errors in diags, so that asking
	// whether a value was reported costs the same however many problems
	// the spec has: scanning diags for each hook made a spec of many
	// hooks that give only their name quadratic to read.
	errorPaths map[string]bool
	// examined counts the diagnostics looked at to answer reported, for
	// the test that holds it to one per question.
	examined int
	// streamed is the hooks list whose items the fast parser gave to be
	// decoded as it read them (see parse); streamStop says that one of
	// them stopped decoding, as an exhausted budget does.
	streamed   *yaml.Node
	streamStop bool
	// firstName is the line on which each hook name was first given.
	firstName map[string]int
	// paths is the buffer the paths of values are cut from (see
	// reserve), and values the one kept values are copied to (see keep).
	paths, values strings.Builder
	// states are the states of the entries being decoded, outermost
	// first, and depth how many there are (see entry).
	states [maxDepth]entryState
	depth  int
}

func (d *decoder) parse(data []byte) *Spec {
	// Specs as people write them are read by the fast parser, which
	// gives yaml.v3's tree at a fraction of its time and allocations;
	// anything outside its subset, errors included, is read by yaml.v3,
	// whose diagnostics are the ones reported. The fast parser gives the
	// hooks one by one as it reads them, and each is decoded then, so
	// that the tree of all of them (51 MB for 10,000 hooks) is never
	// whole; should the parser give up after some, what was decoded of
	// them is thrown away and yaml.v3 reads the file from the start.
	fresh := *d
	doc, ok := (*yaml.Node)(nil), false
	if fastParse {
		doc, ok = yamlnode.FastStreamString(d.src, &yamlnode.Stream{
			Key: "hooks",
			Start: func(root, seq *yaml.Node, count int) {
				d.asciiLines = true
				d.newSpec(root)
				d.streamed = seq
				d.hooksBegin(count)
			},
			Item: func(i int, c *yaml.Node) {
				if !d.streamStop && !d.hookItem("hooks", i, c) {
					d.streamStop = true
				}
			},
		})
	}
	if ok {
		d.asciiLines = true
	} else {
		*d = fresh
		if doc = d.parseYAML(data); doc == nil {
			return nil
		}
	}
	return d.decode(doc)
}

// fastParse lets the tests compare what the fast parser's path decodes
// with what yaml.v3's does.
var fastParse = true

// newSpec makes the Spec that the document whose top mapping is root
// decodes to.
func (d *decoder) newSpec(root *yaml.Node) {
	d.spec = &Spec{File: d.file, pos: positions{file: d.file}}
	d.spec.pos.set("", d.pos(root))
}

// decode decodes the document doc.
func (d *decoder) decode(doc *yaml.Node) *Spec {
	var root *yaml.Node
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root = resolve(doc.Content[0])
	}
	switch {
	case root == nil || isNull(root):
		d.add(Error, Position{File: d.file}, "", "empty spec: the document has no content", headerHint)
		return nil
	case root.Kind != yaml.MappingNode:
		d.add(Error, d.pos(root), "", fmt.Sprintf("a spec is a mapping of apiVersion, kind and hooks, not %s", yamlnode.KindName(root)), headerHint)
		return nil
	}

	if d.spec == nil {
		d.newSpec(root)
	}
	s := d.spec
	var hooksSeen bool
	d.mapping(root, "", func(e entry) {
		switch e.name {
		case "apiVersion":
			s.APIVersion, _ = d.str(e.value, false)
			if e.value.isString() && s.APIVersion != specAPIVersion {
				d.add(Error, e.value.pos, e.path,
					fmt.Sprintf("apiVersion %q is not supported: this hostprov reads %s", s.APIVersion, specAPIVersion),
					"write apiVersion: "+specAPIVersion)
			}
		case "kind":
			s.Kind, _ = d.str(e.value, false)
			if e.value.isString() && s.Kind != specKind {
				d.add(Error, e.value.pos, e.path, fmt.Sprintf("kind %q is not a hook spec: kind must be %s", s.Kind, specKind),
					"write kind: "+specKind)
			}
		case "metadata":
			if e.value.node.Kind != yaml.MappingNode {
				d.add(Error, e.value.pos, e.path, "metadata is a mapping", "write metadata: with name: NAME under it")
				return
			}
			d.mapping(e.value.node, e.path, func(m entry) {
				switch m.name {
				case "name":
					name, ok := d.str(m.value, false)
					if !ok {
						return
					}
					if err := CheckSetName(name); err != nil {
						d.add(Error, m.value.pos, m.path, err.Error(), "the name names the spec set that owns this spec's units; write a plain name such as storage-setup")
						return
					}
					s.Name = name
				default:
					d.unknownField(m, "metadata")
				}
			})
		case "hooks":
			hooksSeen = true
			if d.streamed != nil && e.value.node == d.streamed {
				d.hooksEnd() // its items were decoded as they were read
			} else {
				d.hooks(e.value)
			}
		default:
			d.unknownField(e, "spec")
		}
	})
	rootPos := d.pos(root)
	if _, ok := s.pos.get("apiVersion"); !ok {
		d.add(Error, rootPos, "apiVersion", "the spec has no apiVersion", "add apiVersion: "+specAPIVersion+" at the top of the file")
	}
	if _, ok := s.pos.get("kind"); !ok {
		d.add(Error, rootPos, "kind", "the spec has no kind", "add kind: "+specKind+" at the top of the file")
	}
	if !hooksSeen {
		// A spec without hooks makes apply remove every unit it installed
		// before. That must be said on purpose (hooks: []), not by a typo.
		d.add(Error, rootPos, "hooks", "the spec has no hooks field",
			"add hooks: with a list of hooks, or hooks: [] to have none on purpose")
	}
	return s
}

// parseYAML reads data with yaml.v3, reporting a syntax error, an empty
// file or a second document; nil if there is no document to decode.
func (d *decoder) parseYAML(data []byte) *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := yamlnode.Decode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.add(Error, Position{File: d.file}, "", "empty spec: the file has no YAML document", headerHint)
		} else {
			d.yamlError(err, data)
		}
		return nil
	}
	// One file is one spec: a second document would be silently ignored by
	// a reader that takes the first, so it is an error, even when empty.
	var extra yaml.Node
	switch err := yamlnode.Decode(dec, &extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.yamlError(err, data)
	default:
		d.add(Error, d.pos(&extra), "", "a spec is one YAML document, but a second document starts here",
			"remove this --- line and put every hook in the one hooks: list, or write a spec per file")
	}
	return &doc
}

// invalidUTF8 reports the first byte of data that is not UTF-8, at its
// line and column: a spec is text, and a binary file or one in another
// encoding cannot be one.
func (d *decoder) invalidUTF8(data []byte) {
	i := 0
	for i < len(data) {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			break
		}
		i += size
	}
	start := bytes.LastIndexByte(data[:i], '\n') + 1
	pos := Position{File: d.file, Line: bytes.Count(data[:i], []byte("\n")) + 1, Column: utf8.RuneCount(data[start:i]) + 1}
	d.add(Error, pos, "", fmt.Sprintf("the file is not UTF-8 text: byte 0x%02x at offset %d is not valid UTF-8", data[i], i),
		"a spec is UTF-8 text: convert the file (iconv -t UTF-8), or check that this is the spec and not a binary file")
}

// yamlError turns a syntax error of yaml.v3 into a diagnostic placed where
// the construct that is not closed starts, or where the parser gave up;
// see yamlnode.Syntax for how.
func (d *decoder) yamlError(err error, data []byte) {
	se := yamlnode.Syntax(err, data)
	d.add(Error, Position{File: d.file, Line: se.Line, Column: se.Column}, "", "the file is not valid YAML: "+se.Message, se.Hint)
}

// hooks decodes the hooks list.
func (d *decoder) hooks(v value) {
	n := v.node
	switch {
	case isNull(n):
		d.add(Error, v.keyPos, v.path, "hooks has no value", "list the hooks under hooks:, or write hooks: [] to have none on purpose")
		return
	case n.Kind != yaml.SequenceNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("hooks must be a list of hooks, not %s", yamlnode.KindName(n)),
			`start each hook with "- name:", one indented line under hooks:`)
		return
	case len(n.Content) == 0:
		d.add(Warning, v.pos, v.path, "the spec has no hooks: nothing is rendered, and apply removes every unit it installed before",
			"add hooks to the list if this is not meant")
		return
	}
	d.hooksBegin(len(n.Content))
	for i, c := range n.Content {
		if !d.hookItem(v.path, i, c) {
			break
		}
	}
	d.hooksEnd()
}

// hooksBegin prepares the decoding of a hooks list of count items.
func (d *decoder) hooksBegin(count int) {
	d.firstName = make(map[string]int, min(count, 1<<16))
	// Sized once: a Hook is half a kilobyte, and growing the list by
	// appending copied a large spec's hooks over and over.
	d.spec.Hooks = make([]Hook, 0, count)
	d.spec.pos.values.start = make([]uint32, 0, count)
	d.spec.pos.lines.start = make([]uint32, 0, count)
	d.spec.pos.values.hooks, d.spec.pos.lines.hooks = count, count
}

// hookItem decodes item i of the hooks list at path, c; false when
// decoding must stop (see spend).
func (d *decoder) hookItem(path string, i int, c *yaml.Node) bool {
	if !d.spend(c) {
		return false
	}
	d.spec.pos.beginHook(i, c.Line)
	defer d.spec.pos.endHook()
	item := d.item(path, i, c)
	if item.node.Kind != yaml.MappingNode {
		d.add(Error, item.pos, item.path, fmt.Sprintf("a hook must be a mapping of fields, not %s", yamlnode.KindName(item.node)),
			`write a hook as "- name: my-hook" followed by its other fields`)
		d.spec.Hooks = append(d.spec.Hooks, Hook{}) // keeps Hooks[i] at "hooks[i]"
		return true
	}
	d.spec.Hooks = append(d.spec.Hooks, Hook{})
	h := &d.spec.Hooks[len(d.spec.Hooks)-1]
	if ok := d.hook(item, h); !ok || h.Name == "" {
		return true
	}
	namePath := d.join(item.path, "name")
	if first, dup := d.firstName[h.Name]; dup {
		d.add(Error, d.spec.Where(namePath), namePath, fmt.Sprintf("there is already a hook named %q", h.Name),
			fmt.Sprintf("the first is on line %d: rename one of them, or merge them into one hook", first))
	} else {
		d.firstName[h.Name] = d.spec.Where(namePath).Line
	}
	return true
}

// hooksEnd checks what concerns the hooks together, once all are decoded.
func (d *decoder) hooksEnd() {
	d.checkClaims()
	d.checkAccounts()
}

// splitText splits the source at the line breaks YAML counts (LF, CRLF,
// CR, NEL, LS and PS), so that its line numbers match the parser's; the
// lines are substrings of s.
func splitText(s string) []string {
	// Sized for the usual line breaks at once; one per line of a large
	// spec is otherwise grown, and copied, some twenty times.
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	start := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\n':
			lines = append(lines, s[start:i])
			i++
			start = i
		case c == '\r':
			lines = append(lines, s[start:i])
			i++
			if i < len(s) && s[i] == '\n' {
				i++
			}
			start = i
		case c == 0xc2 && strings.HasPrefix(s[i:], "\u0085"), c == 0xe2 && (strings.HasPrefix(s[i:], "\u2028") || strings.HasPrefix(s[i:], "\u2029")):
			lines = append(lines, s[start:i])
			if c == 0xc2 {
				i += 2
			} else {
				i += 3
			}
			start = i
		default:
			i++
		}
	}
	return append(lines, s[start:])
}

// srcLine returns line k (counted from 0) of the source. Block scalars are
// asked for in the order they are written, so with asciiLines the line is
// found by going on from the one asked for before.
func (d *decoder) srcLine(k int) (string, bool) {
	if !d.asciiLines {
		if lines := d.srcLines(); k < len(lines) {
			return lines[k], true
		}
		return "", false
	}
	c := &d.lineCursor
	if k < c.line {
		c.line, c.start = 0, 0
	}
	for c.line < k {
		i := strings.IndexByte(d.src[c.start:], '\n')
		if i < 0 {
			return "", false
		}
		c.line, c.start = c.line+1, c.start+i+1
	}
	end := strings.IndexByte(d.src[c.start:], '\n')
	if end < 0 {
		end = len(d.src) - c.start
	}
	return d.src[c.start : c.start+end], true
}

// srcLines returns the source split into lines.
func (d *decoder) srcLines() []string {
	if d.lines == nil {
		d.lines = splitText(d.src)
	}
	return d.lines
}
