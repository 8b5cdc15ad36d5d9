package hooks

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// Where returns where the value at path starts ("hooks[1].manifest",
// "hooks[0].exec[2]", "hooks[0].env.PATH", "hooks[2].directives.Unit[0]",
// "hooks[0].dropins[1].contents"). For a path that was not in the document
// it returns the position of the nearest ancestor that was, so
// "hooks[0].wantedBy" of a hook without it is the hook itself, and
// Position{File: s.File} at worst. A value given as an alias is where the
// alias is written; an empty value ("exec:") is where its key is.
func (s *Spec) Where(path string) Position {
	if s == nil {
		return Position{}
	}
	for {
		if p, ok := s.pos.get(path); ok {
			return p
		}
		if path == "" {
			return Position{File: s.File}
		}
		path = ParentPath(path)
	}
}

// ParentPath strips the last element of a path into a spec, such as a
// Diagnostic's: "a.b[2]" → "a.b" → "a" → "". Paths into a kops manifest
// are written the same way.
func ParentPath(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// WhereInScalar returns the position of line n (1-based) of the string
// value at path: for block scalars (| and >, with any chomping or
// indentation indicator) the line in the source where that line of the
// value starts, and for quoted scalars the character after the opening
// quote (n == 1). It is how a problem found inside a manifest points at its
// line. For anything else, such as a plain scalar, a line that the value
// does not have, or a path that was not decoded as a string, it returns
// Where(path), which is also line 1 of a plain scalar.
func (s *Spec) WhereInScalar(path string, n int) Position {
	if s == nil {
		return Position{}
	}
	if sc, ok := s.pos.scalar(path); ok {
		if line, ok := sc.line(n); ok {
			return Position{File: s.File, Line: line, Column: sc.column}
		}
	}
	return s.Where(path)
}

// Has reports whether the value at path was written in the spec, as
// opposed to left out (for a Spec parsed from a file).
func (s *Spec) Has(path string) bool {
	if s == nil {
		return false
	}
	_, ok := s.pos.get(path)
	return ok
}

// PosInValue returns the position of the character at line and col
// (counted from 1) of the string value at path: exact for a value on one
// line written plain or quoted without escapes before that character, and
// for a literal block scalar; for other values it is where the value's
// line starts, or Where(path) when that is not known.
func (s *Spec) PosInValue(path string, line, col int) Position {
	if s == nil {
		return Position{}
	}
	if _, ok := s.pos.scalar(path); !ok && line > 1 {
		return s.Where(path)
	}
	p := s.WhereInScalar(path, line)
	if p.Line > 0 && p.Column > 0 {
		p.Column += col - 1
	}
	return p
}

// recordScalar records where the lines of a string value start, for
// WhereInScalar.
func (d *decoder) recordScalar(path string, n *yaml.Node) {
	switch {
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0:
		d.spec.pos.setLines(path, blockScalar{first: n.Line, count: 1, column: n.Column + 1})
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		if sc, ok := d.blockLines(n); ok {
			d.spec.pos.setLines(path, sc)
		}
	}
}

// blockLines maps the lines of a block scalar's value to source lines.
// yaml.v3 gives only the position of the indicator ("|"); the content
// starts on the next line, at an indentation that is either detected from
// the first non-empty line or set by an indentation indicator relative to
// the parent. Rather than recompute the parent's indentation, it is found by
// matching the first non-empty line of the value against its source line.
func (d *decoder) blockLines(n *yaml.Node) (blockScalar, bool) {
	v := n.Value
	k := len(v) - len(strings.TrimLeft(v, "\n")) // leading empty lines, kept as "\n" by both styles
	first := n.Line + k                          // 0-based index of the first non-empty content line
	if k == len(v) {
		return blockScalar{}, false
	}
	src, ok := d.srcLine(first)
	if !ok {
		return blockScalar{}, false
	}
	want := strings.SplitN(v[k:], "\n", 2)[0]
	lead := len(src) - len(strings.TrimLeft(src, " "))
	indent := lead
	for i := lead; i >= 0; i-- {
		// For i above the content indentation, src[i:] lacks spaces that
		// the value's line has, so the first match going down is it.
		if strings.HasPrefix(want, src[i:]) {
			indent = i
			break
		}
	}
	sc := blockScalar{column: indent + 1}
	if n.Style&yaml.LiteralStyle != 0 {
		// Its lines are the source lines after the indicator.
		sc.first, sc.count = n.Line+1, strings.Count(v, "\n")
		if !strings.HasSuffix(v, "\n") {
			sc.count++
		}
		return sc, true
	}
	sc.lines = foldedLines(d.srcLines(), n.Line, indent)
	return sc, true
}

// foldedLines follows YAML's line folding for a ">" scalar whose indicator
// is on line header and whose content is indented by indent spaces: a line
// break between two lines of text becomes a space, each empty line between
// them a line break, and breaks next to a more-indented line are kept.
func foldedLines(lines []string, header, indent int) []int {
	var out, blanks []int
	started, prevMore := false, false
	value := 0 // 0-based line of the value the current source line is on
	for j := header; j < len(lines); j++ {
		s := lines[j]
		if strings.TrimLeft(s, " ") == "" {
			blanks = append(blanks, j+1)
			continue
		}
		lead := len(s) - len(strings.TrimLeft(s, " "))
		if lead < indent {
			break // the scalar has ended
		}
		more := lead > indent || s[indent] == '\t'
		switch {
		case !started:
			value = len(blanks)
			started = true
		case !prevMore && !more:
			value += len(blanks) // folded: one space, or one break per empty line
		default:
			value += 1 + len(blanks)
		}
		// Lines of the value that are empty start on the empty source
		// lines just before this one.
		for need := value - len(out); need > 0; need-- {
			if i := len(blanks) - need; i >= 0 {
				out = append(out, blanks[i])
			} else {
				out = append(out, j+1)
			}
		}
		if value == len(out) {
			out = append(out, j+1)
		}
		blanks = blanks[:0]
		prevMore = more
	}
	return out
}
