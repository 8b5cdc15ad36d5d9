package yamlwrite

import (
	"bytes"
	"strings"

	"gopkg.in/yaml.v3"
)

// WriteFast writes n as Encode's yaml.v3 encoder writes it, byte for
// byte, for the trees the outputs build: block mappings and sequences,
// flow lists of scalars, plain, single-quoted and literal string scalars
// of printable ASCII, booleans, and comments before the keys of the top
// mapping. For anything else it writes nothing and returns false, and
// yaml.v3 writes the whole document. The yaml.v3 encoder was a third of
// the CPU of a cloud-init render of 10,000 hooks (its emitter looks at
// every character of every unit file twice over, through a state machine).
// TestWriteYAML holds it to yaml.v3 on the outputs of every test spec and
// on trees built from fuzzed strings.
func WriteFast(b *bytes.Buffer, n *yaml.Node) bool {
	start := b.Len()
	w := yamlWriter{b: b}
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 || !plainNode(n) || !w.mapping(n, 0, true) {
		b.Truncate(start)
		return false
	}
	return true
}

type yamlWriter struct {
	b *bytes.Buffer
}

// plainNode reports whether n carries nothing the writer does not write:
// no anchor, alias, line or foot comment, nor a tag of its own making.
func plainNode(n *yaml.Node) bool {
	return n.Anchor == "" && n.Alias == nil && n.LineComment == "" && n.FootComment == "" && n.Style&yaml.TaggedStyle == 0
}

// spaces is what indent writes from: one WriteString rather than a
// WriteByte per column, for every line of every unit file.
const spaces = "                                "

func (w *yamlWriter) indent(n int) {
	for ; n > len(spaces); n -= len(spaces) {
		w.b.WriteString(spaces)
	}
	w.b.WriteString(spaces[:n])
}

// mapping writes the entries of a block mapping whose keys are at column
// col; the first key is written where the writer is when inline (after
// "- "), else at the start of a line.
func (w *yamlWriter) mapping(n *yaml.Node, col int, top bool) bool {
	if len(n.Content)%2 != 0 || (n.Tag != "" && n.Tag != "!!map") || n.HeadComment != "" && !top {
		return false
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !plainNode(k) || !plainNode(v) || v.HeadComment != "" || k.Kind != yaml.ScalarNode || k.Tag != "!!str" ||
			k.Style != 0 || len(k.Value) > 128 || !blockPlain(k.Value) {
			return false
		}
		if k.HeadComment != "" {
			// Only the top mapping's keys: yaml.v3 writes the first line
			// of a comment where the writer is, which is column 0 there.
			if !top || !w.comment(k.HeadComment) {
				return false
			}
		}
		if i > 0 || !top {
			if i > 0 {
				w.indent(col)
			}
		}
		w.b.WriteString(k.Value)
		w.b.WriteByte(':')
		if !w.value(v, col) {
			return false
		}
	}
	return true
}

// comment writes a head comment as yaml.v3 does: each line after "# ",
// unless it starts with '#'.
func (w *yamlWriter) comment(c string) bool {
	for line := range strings.SplitSeq(c, "\n") {
		if line == "" || !printableASCII(line, false) {
			return false
		}
		if line[0] != '#' {
			w.b.WriteString("# ")
		}
		w.b.WriteString(line)
		w.b.WriteByte('\n')
	}
	return true
}

// value writes the value of a key at column col, after its ':'.
func (w *yamlWriter) value(v *yaml.Node, col int) bool {
	switch {
	case v.Kind == yaml.ScalarNode:
		if v.Style&yaml.LiteralStyle != 0 {
			return w.literal(v, col+2)
		}
		w.b.WriteByte(' ')
		if !w.scalar(v, false) {
			return false
		}
		w.b.WriteByte('\n')
		return true
	case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle != 0:
		w.b.WriteByte(' ')
		if !w.flow(v) {
			return false
		}
		w.b.WriteByte('\n')
		return true
	case v.Kind == yaml.SequenceNode && v.Style == 0 && len(v.Content) > 0:
		w.b.WriteByte('\n')
		return w.sequence(v, col+2)
	case v.Kind == yaml.MappingNode && v.Style == 0 && len(v.Content) > 0:
		w.b.WriteByte('\n')
		w.indent(col + 2)
		return w.mapping(v, col+2, false)
	}
	return false
}

// sequence writes a block sequence whose "-" are at column col.
func (w *yamlWriter) sequence(n *yaml.Node, col int) bool {
	if n.Tag != "" && n.Tag != "!!seq" || n.HeadComment != "" {
		return false
	}
	for _, c := range n.Content {
		if !plainNode(c) || c.HeadComment != "" {
			return false
		}
		w.indent(col)
		w.b.WriteString("- ")
		switch {
		case c.Kind == yaml.MappingNode && c.Style == 0 && len(c.Content) > 0:
			if !w.mapping(c, col+2, false) {
				return false
			}
		case c.Kind == yaml.SequenceNode && c.Style&yaml.FlowStyle != 0:
			if !w.flow(c) {
				return false
			}
			w.b.WriteByte('\n')
		case c.Kind == yaml.ScalarNode && c.Style&yaml.LiteralStyle == 0:
			if !w.scalar(c, false) {
				return false
			}
			w.b.WriteByte('\n')
		default:
			return false
		}
	}
	return true
}

// flow writes a flow sequence of scalars.
func (w *yamlWriter) flow(n *yaml.Node) bool {
	if n.Tag != "" && n.Tag != "!!seq" || n.HeadComment != "" {
		return false
	}
	w.b.WriteByte('[')
	for i, c := range n.Content {
		if !plainNode(c) || c.HeadComment != "" || c.Kind != yaml.ScalarNode || c.Style&yaml.LiteralStyle != 0 {
			return false
		}
		if i > 0 {
			w.b.WriteString(", ")
		}
		if !w.scalar(c, true) {
			return false
		}
	}
	w.b.WriteByte(']')
	return true
}

// scalar writes a string or boolean scalar in the style yaml.v3 picks for
// it: plain where that reads back as the same string, single-quoted
// otherwise, or as asked.
func (w *yamlWriter) scalar(n *yaml.Node, inFlow bool) bool {
	v := n.Value
	switch {
	case n.Tag == "!!bool" && n.Style == 0 && (v == "true" || v == "false"):
		w.b.WriteString(v)
		return true
	case n.Tag != "!!str" || v == "" || !printableASCII(v, false):
		return false
	case n.Style == yaml.SingleQuotedStyle:
	case n.Style != 0:
		return false
	case (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag() != "!!str":
		return false // yaml.v3 double-quotes it
	case inFlow && flowPlain(v), !inFlow && blockPlain(v):
		w.b.WriteString(v)
		return true
	}
	// Single-quoted: what yaml.v3 picks when plain would not do, and it
	// may for any printable ASCII.
	w.b.WriteByte('\'')
	w.b.WriteString(strings.ReplaceAll(v, "'", "''"))
	w.b.WriteByte('\'')
	return true
}

// literal writes a literal block scalar, its lines at column col: for a
// text of printable ASCII and tabs that does not start with a space or a
// line break, ends in exactly one line break, and has no space before one
// (what yamlnode.Text writes as a literal block).
func (w *yamlWriter) literal(n *yaml.Node, col int) bool {
	v := n.Value
	if n.Tag != "!!str" || n.Style != yaml.LiteralStyle || v == "" || v[0] == ' ' || v[0] == '\n' || v[0] == '\t' ||
		!strings.HasSuffix(v, "\n") || strings.HasSuffix(v, "\n\n") || !literalText(v) {
		return false
	}
	w.b.WriteString(" |\n")
	for body := v[:len(v)-1]; ; {
		line, rest, more := strings.Cut(body, "\n")
		if line != "" {
			w.indent(col)
			w.b.WriteString(line)
		}
		w.b.WriteByte('\n')
		if !more {
			return true
		}
		body = rest
	}
}

// literalText reports whether s is printable ASCII, tabs and line breaks
// with no space or tab before a line break: printableASCII(s, true) and
// no " \n" or "\t\n", in one pass over what is most of a YAML output.
func literalText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c-' ' < '~'-' '+1 {
			continue
		}
		switch {
		case c == '\n':
			if i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
				return false
			}
		case c == '\t':
		default:
			return false
		}
	}
	return true
}

// printableASCII reports whether s is printable ASCII and spaces, with
// line breaks and tabs where text allows them.
func printableASCII(s string, text bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < ' ' && !(text && (c == '\n' || c == '\t')) || c > '~' {
			return false
		}
	}
	return true
}

// blockPlain and flowPlain are yaml.v3's emitter's analysis of a scalar
// of printable ASCII without line breaks (emitterc.go,
// yaml_emitter_analyze_scalar): whether it may be written plain in a block
// or a flow collection.
func blockPlain(s string) bool { return plainAllowed(s, false) }
func flowPlain(s string) bool  { return plainAllowed(s, true) }

func plainAllowed(s string, flow bool) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' ||
		strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		followedBySpace := i+1 == len(s) || s[i+1] == ' '
		if i == 0 {
			switch c {
			case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
				return false
			case '?', ':':
				if flow || followedBySpace {
					return false
				}
			case '-':
				if followedBySpace {
					return false
				}
			}
			continue
		}
		switch c {
		case ',', '?', '[', ']', '{', '}':
			if flow {
				return false
			}
		case ':':
			if flow || followedBySpace {
				return false
			}
		case '#':
			if s[i-1] == ' ' {
				return false
			}
		}
	}
	return true
}
