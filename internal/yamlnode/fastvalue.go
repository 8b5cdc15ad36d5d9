package yamlnode

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// inline reads a value that starts at i of s, the current line, where its
// parent (the mapping of its key, or the sequence of its "-") is at column
// m, and moves past it.
func (p *fastParser) inline(s string, i, m int) *yaml.Node {
	var v *yaml.Node
	switch c := s[i]; {
	case c == '|':
		return p.literal(s, i, m)
	case c == '"' || c == '\'':
		var e int
		v, e = p.quoted(s, i)
		p.lineEnd(s, e)
	case c == '[' || c == '{':
		var e int
		v, e = p.flow(s, i)
		p.lineEnd(s, e)
	case plainStart(s, i, false):
		end := len(s)
		for j := i; j < len(s); j++ {
			if s[j] == ':' && (j+1 == len(s) || s[j+1] == ' ') {
				fail() // a mapping in a value, which YAML refuses
			}
			if s[j] == '#' && s[j-1] == ' ' {
				end = j
				break
			}
		}
		v = p.plain(strings.TrimRight(s[i:end], " "), i)
	default:
		fail()
	}
	// A value on one line: a next line indented more than its parent
	// would continue it (a multi-line plain scalar) or be an error.
	p.li++
	for q := p.li; q < len(p.lines); q++ {
		if !p.lines[q].blank {
			if p.lines[q].ind() > m {
				fail()
			}
			break
		}
	}
	return v
}

// lineEnd checks that only spaces and a comment follow offset e of s.
func (p *fastParser) lineEnd(s string, e int) {
	j := skipSpaces(s, e)
	if j < len(s) && (s[j] != '#' || j == e) {
		fail()
	}
}

func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

// plainStart reports whether a plain scalar may start at i of s: not at an
// indicator, nor at "-", "?" or ":" before a space (or, in a flow, before
// a flow indicator). A plain ":x" is left to yaml.v3.
func plainStart(s string, i int, flow bool) bool {
	switch s[i] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ':':
		return false
	case '-', '?':
		if i+1 == len(s) || s[i+1] == ' ' {
			return false
		}
		if flow && strings.IndexByte(",[]{}", s[i+1]) >= 0 {
			return false
		}
	}
	return true
}

// plain is a plain scalar node of value v at byte col of the current line,
// tagged as yaml.v3 resolves it.
func (p *fastParser) plain(v string, col int) *yaml.Node {
	if v == "" {
		fail()
	}
	n := p.node(yaml.ScalarNode, "", col)
	n.Value = v
	switch c := v[0]; {
	case v == "<<":
		n.Tag = "!!merge" // as yaml.v3's parser tags it
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9' || strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		// What yaml.v3 may resolve to another tag than !!str: numbers,
		// booleans, null, timestamps. Every other first character makes
		// a plain scalar a string there without a look.
		n.Tag = plainTag(n)
	default:
		n.Tag = strTag
	}
	return n
}

// plainTag is the tag yaml.v3 resolves the plain scalar n to, for one
// whose first character may make it other than a string. The common
// cases are answered here: yaml.v3's resolver boxes the value it decodes
// and, for "--id" or "-p", builds the errors of three failed number
// parses, which was a third of the allocations of reading a spec.
func plainTag(n *yaml.Node) string {
	v := n.Value
	switch c := v[0]; {
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		// yaml.v3 resolves these through its table of words alone.
		switch v {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "~", "null", "Null", "NULL":
			return "!!null"
		}
		return strTag
	case (c == '-' || c == '+') && len(v) > 1 && (v[1] >= 'a' && v[1] <= 'z' || v[1] >= 'A' && v[1] <= 'Z' || v[1] == '-' || v[1] == '/'):
		// A sign before a letter, a second sign or a slash is no
		// number, timestamp, infinity or binary or octal literal.
		return strTag
	case c >= '1' && c <= '9' && len(v) <= 18 && allDigits(v):
		// A decimal integer that fits in an int64.
		return "!!int"
	}
	return n.ShortTag()
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// quotedEnd returns the offset after the quoted scalar at i of s, or -1
// when it does not end on the line.
func quotedEnd(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case q == '\'' && s[j] == '\'':
			if j+1 < len(s) && s[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		case q == '"' && s[j] == '\\':
			j++
		case q == '"' && s[j] == '"':
			return j + 1
		}
	}
	return -1
}

// quoted reads the quoted scalar at i of s, on one line, and returns it
// and the offset after it.
func (p *fastParser) quoted(s string, i int) (*yaml.Node, int) {
	e := quotedEnd(s, i)
	if e < 0 {
		fail()
	}
	body := s[i+1 : e-1]
	n := p.node(yaml.ScalarNode, strTag, i)
	if s[i] == '\'' {
		n.Style = yaml.SingleQuotedStyle
		n.Value = strings.ReplaceAll(body, "''", "'")
		return n, e
	}
	n.Style = yaml.DoubleQuotedStyle
	if strings.IndexByte(body, '\\') < 0 {
		n.Value = body
		return n, e
	}
	n.Value = unescape(body)
	return n, e
}

// unescape decodes the escapes of a double-quoted scalar, as yaml.v3 does.
func unescape(body string) string {
	var b strings.Builder
	b.Grow(len(body))
	for j := 0; j < len(body); j++ {
		c := body[j]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		j++
		if j == len(body) {
			fail()
		}
		width := 0
		switch body[j] {
		case '0':
			b.WriteByte(0)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case ' ', '"', '\'', '\\':
			b.WriteByte(body[j])
		case 'N':
			b.WriteString("\u0085")
		case '_':
			b.WriteString("\u00a0")
		case 'L':
			b.WriteString("\u2028")
		case 'P':
			b.WriteString("\u2029")
		case 'x':
			width = 2
		case 'u':
			width = 4
		case 'U':
			width = 8
		default:
			fail()
		}
		if width > 0 {
			if j+1+width > len(body) {
				fail()
			}
			hex := body[j+1 : j+1+width]
			r, err := strconv.ParseUint(hex, 16, 32)
			if err != nil || strings.ContainsAny(hex, "+-_") || r >= 0xD800 && r <= 0xDFFF || r > 0x10FFFF {
				fail()
			}
			b.WriteRune(rune(r))
			j += width
		}
	}
	if !utf8.ValidString(b.String()) {
		fail()
	}
	return b.String()
}

// flow reads a flow sequence or mapping that starts at i of s and ends on
// the same line, and returns it and the offset after it.
func (p *fastParser) flow(s string, i int) (*yaml.Node, int) {
	p.enter()
	defer func() { p.depth-- }()
	closer := byte(']')
	n := p.node(yaml.SequenceNode, seqTag, i)
	if s[i] == '{' {
		closer = '}'
		n.Kind, n.Tag = yaml.MappingNode, mapTag
	}
	n.Style = yaml.FlowStyle
	mark := len(p.stack)
	j := skipSpaces(s, i+1)
	if j < len(s) && s[j] == closer {
		return n, j + 1
	}
	for {
		if j >= len(s) {
			fail() // continues on the next line
		}
		v, e := p.flowValue(s, j)
		p.push(v)
		e = skipSpaces(s, e)
		if closer == '}' {
			if v.Kind != yaml.ScalarNode || e+1 >= len(s) || s[e] != ':' || s[e+1] != ' ' || e-j > maxKey {
				fail()
			}
			e = skipSpaces(s, e+1)
			if e >= len(s) || s[e] == ',' || s[e] == '}' {
				fail() // an empty value
			}
			v, e = p.flowValue(s, e)
			p.push(v)
			e = skipSpaces(s, e)
		}
		if e >= len(s) {
			fail()
		}
		if s[e] == closer {
			n.Content = p.content(mark)
			return n, e + 1
		}
		if s[e] != ',' {
			fail()
		}
		j = skipSpaces(s, e+1)
		if j < len(s) && (s[j] == closer || s[j] == ',') {
			fail() // an empty entry
		}
	}
}

// flowValue reads one value in a flow collection at j of s.
func (p *fastParser) flowValue(s string, j int) (*yaml.Node, int) {
	switch c := s[j]; {
	case c == '[' || c == '{':
		return p.flow(s, j)
	case c == '"' || c == '\'':
		return p.quoted(s, j)
	case !plainStart(s, j, true):
		fail()
	}
	e := j
	for ; e < len(s); e++ {
		c := s[e]
		if c == ':' {
			if e+1 < len(s) && s[e+1] == ' ' {
				break // a key of a flow mapping
			}
			fail()
		}
		if c == ',' || c == '[' || c == ']' || c == '{' || c == '}' {
			break
		}
		if c == '#' || c == '?' {
			fail()
		}
	}
	return p.plain(strings.TrimRight(s[j:e], " "), j), e
}

// literal reads a literal block scalar (| or |-) whose indicator is at i
// of s, the current line, and whose parent is at column m.
func (p *fastParser) literal(s string, i, m int) *yaml.Node {
	j := i + 1
	strip := false
	if j < len(s) && s[j] == '-' {
		strip = true
		j++
	}
	if j < len(s) && s[j] != ' ' {
		fail() // |+, an indentation indicator, or something else
	}
	p.lineEnd(s, j)
	n := p.node(yaml.ScalarNode, strTag, i)
	n.Style = yaml.LiteralStyle
	p.li++
	first := p.li
	for first < len(p.lines) && p.lines[first].blank {
		if p.lines[first].ind() > 0 {
			fail()
		}
		first++
	}
	if first == len(p.lines) || p.lines[first].ind() <= m {
		fail() // an empty block scalar
	}
	ci := p.lines[first].ind()
	last, size := -1, 0
	for q := p.li; q < len(p.lines); q++ {
		l := p.lines[q]
		if l.blank {
			if l.ind() > ci {
				fail()
			}
			continue
		}
		if l.ind() < ci {
			break
		}
		last = q
	}
	for q := p.li; q <= last; q++ {
		if l := p.lines[q]; !l.blank {
			size += l.to() - l.from() - ci
		}
		size++
	}
	var b strings.Builder
	b.Grow(size)
	for q := p.li; q <= last; q++ {
		if l := p.lines[q]; !l.blank {
			b.WriteString(p.src[l.from()+ci : l.to()])
		}
		b.WriteByte('\n')
	}
	n.Value = b.String()
	if strip {
		n.Value = n.Value[:len(n.Value)-1]
	}
	p.li = last + 1
	return n
}
