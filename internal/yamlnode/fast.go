package yamlnode

import (
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

// Fast reads data as one YAML document and returns its document node, the
// tree yaml.v3 would give (the same kinds, tags, values, styles, lines and
// columns; comments are not kept), or false when data holds anything
// outside the block style people write specs in: block mappings and
// sequences, flow lists and mappings on one line, plain scalars on one
// line, quoted scalars on one line, and literal block scalars (| and |-).
// Anything else (anchors, aliases, tags, folded or kept block scalars,
// multi-line plain, quoted or flow values, empty values, complex keys,
// directives, document markers, tabs, carriage returns, bytes beyond
// ASCII, a document whose top is not a mapping, a last line without a
// line break, and every error) is for yaml.v3, which must then read the
// whole document, so that what it reports stays exactly as it is.
//
// It is several times faster than yaml.v3 and allocates its nodes in
// slabs, with values that are substrings of the input where nothing needs
// unescaping: a spec of 10,000 hooks has some 300,000 nodes. The fuzz
// target FuzzFast holds it to yaml.v3's tree for every input it accepts.
func Fast(data []byte) (doc *yaml.Node, ok bool) {
	return FastStream(data, nil)
}

// Stream asks FastStream to give the items of a block sequence to Item
// one by one, as they are read, rather than keep them in the tree: the
// sequence that is the value of the first key named Key of the top
// mapping. Its node in the tree has no Content. A reader that decodes
// each item as it comes never has the whole tree of a large document.
type Stream struct {
	Key string
	// Start is called before the first item, with the top mapping (its
	// Content not yet complete), the sequence, and how many items it has.
	Start func(root, seq *yaml.Node, count int)
	// Item is called with the i-th item, whole. The item's nodes are
	// valid only until Item returns: FastStream reuses them for the next
	// item, so that reading a long list allocates no nodes per item.
	Item func(i int, item *yaml.Node)
}

// FastStream is Fast, with the items of one sequence given to s (if not
// nil) as they are read. When it returns false, s may have been given
// some of them: what was made of them must be thrown away.
func FastStream(data []byte, s *Stream) (doc *yaml.Node, ok bool) {
	return FastStreamString(string(data), s)
}

// FastStreamString is FastStream of the text src, whose values are
// substrings of src where nothing needs unescaping: a reader that keeps
// the source as a string anyway saves a copy of it. Before it gives s
// any item, it has checked that src is ASCII with no control characters
// but line feeds, so that its lines are those that "\n" ends.
func FastStreamString(src string, s *Stream) (doc *yaml.Node, ok bool) {
	if len(src) == 0 || src[len(src)-1] != '\n' || len(src) > math.MaxInt32 {
		return nil, false
	}
	for i := 0; i < len(src); i++ {
		if c := src[i]; c >= 0x7f || c < ' ' && c != '\n' {
			return nil, false
		}
	}
	p := &fastParser{src: src, stream: s}
	defer func() {
		if r := recover(); r != nil {
			if _, fb := r.(fastFallback); !fb {
				panic(r)
			}
			doc, ok = nil, false
		}
	}()
	if !p.splitLines() {
		return nil, false
	}
	return p.document(), true
}

func (l fline) from() int { return int(l.start) }
func (l fline) to() int   { return int(l.end) }
func (l fline) ind() int  { return int(l.indent) }

// fastFallback is what the fast parser panics with when the input is not
// for it; Fast recovers it and reports false.
type fastFallback struct{}

func fail() { panic(fastFallback{}) }

// fline is one line of the source, in 16 bytes: a spec of 10,000 hooks
// has 110,000 lines. FastStreamString leaves sources of 2 GiB or more to
// yaml.v3.
type fline struct {
	start, end int32 // offsets of the line in src, without its line break
	indent     int32 // leading spaces
	blank      bool  // nothing but spaces
	comment    bool  // a comment and nothing else
}

type fastParser struct {
	src   string
	lines []fline
	li    int // the current line
	// nodes and ptrs are slabs that nodes and their Content are cut from.
	nodes []yaml.Node
	ptrs  []*yaml.Node
	stack []*yaml.Node // the children of the collections being read
	depth int
	// stream is what FastStream was given; root is the top mapping, and
	// keySeen says that the top mapping's first key named stream.Key has
	// been read.
	stream  *Stream
	root    *yaml.Node
	keySeen bool
	made    int // nodes made so far
	// madePtrs counts the Content slots made so far.
	madePtrs int
	// itemNodes and itemPtrs are the slabs each streamed item is cut
	// from, reused from item to item.
	itemNodes []yaml.Node
	itemPtrs  []*yaml.Node
}

const (
	strTag = "!!str"
	mapTag = "!!map"
	seqTag = "!!seq"
	// maxDepth bounds the nesting the fast parser follows; deeper
	// documents are yaml.v3's.
	maxDepth = 100
	// maxKey is below yaml.v3's limit of 1024 characters for a key.
	maxKey = 1000
)

func (p *fastParser) splitLines() bool {
	p.lines = make([]fline, 0, strings.Count(p.src, "\n"))
	for start := 0; start < len(p.src); {
		end := start + strings.IndexByte(p.src[start:], '\n')
		s := p.src[start:end]
		indent := 0
		for indent < len(s) && s[indent] == ' ' {
			indent++
		}
		l := fline{start: int32(start), end: int32(end), indent: int32(indent)}
		l.blank = indent == len(s)
		l.comment = !l.blank && s[indent] == '#'
		if indent == 0 && (strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...")) && (len(s) == 3 || s[3] == ' ') ||
			strings.HasPrefix(s, "%") {
			return false // a document marker or a directive
		}
		p.lines = append(p.lines, l)
		start = end + 1
	}
	// Nodes are about one per line of a spec. When items are given away,
	// the slabs stay small, so that those of the items already read are
	// freed.
	if p.stream == nil {
		p.nodes = make([]yaml.Node, 0, len(p.lines)+16)
		p.ptrs = make([]*yaml.Node, 0, len(p.lines)+16)
	}
	return true
}

func (p *fastParser) text(li int) string {
	return p.src[p.lines[li].from():p.lines[li].to()]
}

// node returns a new node at byte col of the current line.
func (p *fastParser) node(kind yaml.Kind, tag string, col int) *yaml.Node {
	if len(p.nodes) == cap(p.nodes) {
		size := 1024
		if p.stream != nil {
			size = 32 // see blockSequence
		}
		p.nodes = make([]yaml.Node, 0, size)
	}
	p.made++
	p.nodes = p.nodes[:len(p.nodes)+1]
	n := &p.nodes[len(p.nodes)-1]
	*n = yaml.Node{Kind: kind, Tag: tag, Line: p.li + 1, Column: col + 1} // a reused node is cleared
	return n
}

// content pops the children pushed since mark, as a Content slice.
func (p *fastParser) content(mark int) []*yaml.Node {
	k := len(p.stack) - mark
	if k == 0 {
		return nil
	}
	p.madePtrs += k
	var c []*yaml.Node
	if k > 256 {
		c = make([]*yaml.Node, k)
	} else {
		if len(p.ptrs)+k > cap(p.ptrs) {
			size := 4096
			if p.stream != nil {
				size = max(128, k)
			}
			p.ptrs = make([]*yaml.Node, 0, size)
		}
		c = p.ptrs[len(p.ptrs) : len(p.ptrs)+k : len(p.ptrs)+k]
		p.ptrs = p.ptrs[:len(p.ptrs)+k]
	}
	copy(c, p.stack[mark:])
	clear(p.stack[mark:])
	p.stack = p.stack[:mark]
	return c
}

func (p *fastParser) push(n *yaml.Node) { p.stack = append(p.stack, n) }

// skipBlank moves to the next line that is neither blank nor a comment.
func (p *fastParser) skipBlank() {
	for p.li < len(p.lines) && (p.lines[p.li].blank || p.lines[p.li].comment) {
		p.li++
	}
}

func (p *fastParser) enter() {
	if p.depth++; p.depth > maxDepth {
		fail()
	}
}

func (p *fastParser) document() *yaml.Node {
	p.skipBlank()
	if p.li >= len(p.lines) || p.lines[p.li].ind() != 0 {
		fail()
	}
	root := p.blockMapping(0, 0)
	p.skipBlank()
	if p.li < len(p.lines) {
		fail()
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, Line: root.Line, Column: root.Column, Content: []*yaml.Node{root}}
	return doc
}

// blockMapping reads a block mapping whose keys are at column m and whose
// first key starts the current line's text at m.
func (p *fastParser) blockMapping(m int, first int) *yaml.Node {
	p.enter()
	defer func() { p.depth-- }()
	mark := len(p.stack)
	n := p.node(yaml.MappingNode, mapTag, first)
	if p.root == nil {
		p.root = n
	}
	for {
		p.entry(m)
		p.skipBlank()
		if p.li >= len(p.lines) || p.lines[p.li].ind() < m {
			break
		}
		if p.lines[p.li].ind() > m {
			fail()
		}
	}
	n.Content = p.content(mark)
	return n
}

// entry reads a key at column m of the current line and its value.
func (p *fastParser) entry(m int) {
	s := p.text(p.li)
	k, after, ok := p.key(s, m)
	if !ok {
		fail()
	}
	p.push(k)
	stream := false
	if p.stream != nil && p.depth == 1 && !p.keySeen && k.Value == p.stream.Key {
		p.keySeen, stream = true, true
	}
	i := skipSpaces(s, after)
	if i == len(s) || s[i] == '#' && i > after {
		p.li++
		p.push(p.nested(m, true, stream))
		return
	}
	if i == after {
		fail()
	}
	p.push(p.inline(s, i, m))
}

// nested reads a value written on the lines after its key (or its "-"),
// which is at column m: a block mapping or sequence indented more, or a
// sequence at m itself after a key (indentless).
// With stream, a sequence's items are given to p.stream.
func (p *fastParser) nested(m int, indentless, stream bool) *yaml.Node {
	p.skipBlank()
	if p.li >= len(p.lines) {
		fail() // an empty value
	}
	l := p.lines[p.li]
	s := p.text(p.li)
	switch {
	case l.ind() > m && isDash(s, l.ind()):
		return p.blockSequence(l.ind(), stream)
	case l.ind() > m:
		return p.blockMapping(l.ind(), l.ind())
	case l.ind() == m && indentless && isDash(s, m):
		return p.blockSequence(m, stream)
	}
	fail() // an empty value
	return nil
}

func isDash(s string, i int) bool {
	return i < len(s) && s[i] == '-' && (i+1 == len(s) || s[i+1] == ' ')
}

// blockSequence reads a block sequence whose "-" are at column n; with
// stream, it gives its items to p.stream instead of keeping them.
func (p *fastParser) blockSequence(n int, stream bool) *yaml.Node {
	p.enter()
	defer func() { p.depth-- }()
	mark := len(p.stack)
	seq := p.node(yaml.SequenceNode, seqTag, n)
	item, made, madePtrs := 0, 0, 0
	if stream {
		p.stream.Start(p.root, seq, p.countItems(n))
	}
	for {
		if stream {
			// Each item is cut from the same two slabs, reused once Item
			// has returned. Cut from slabs that also hold kept nodes, or
			// from fresh ones, the items stayed alive: the slabs linked
			// each item to the ones before it.
			p.nodes, p.ptrs = p.itemNodes[:0], p.itemPtrs[:0]
			made, madePtrs = p.made, p.madePtrs
		}
		s := p.text(p.li)
		j := skipSpaces(s, n+1)
		switch {
		case j == len(s) || s[j] == '#' && j > n+1:
			p.li++
			p.push(p.nested(n, false, false))
		case isDash(s, j):
			fail() // "- - x"
		default:
			if _, _, ok := keyEnd(s, j); ok {
				p.push(p.blockMapping(j, j))
			} else {
				p.push(p.inline(s, j, n))
			}
		}
		if stream {
			v := p.stack[len(p.stack)-1]
			p.stack[len(p.stack)-1] = nil
			p.stack = p.stack[:len(p.stack)-1]
			p.stream.Item(item, v)
			item++
			// An item that needed more than the slabs had makes them as
			// large as it needed, for the next ones.
			if k := p.made - made; k > cap(p.itemNodes) {
				p.itemNodes = make([]yaml.Node, 0, k)
			}
			if k := p.madePtrs - madePtrs; k > cap(p.itemPtrs) {
				p.itemPtrs = make([]*yaml.Node, 0, k)
			}
		}
		p.skipBlank()
		if p.li >= len(p.lines) || p.lines[p.li].ind() < n {
			break
		}
		if p.lines[p.li].ind() > n {
			fail()
		}
		if !isDash(p.text(p.li), n) {
			break // the key after an indentless sequence
		}
	}
	seq.Content = p.content(mark)
	return seq
}

// countItems counts the items of the block sequence whose "-" are at
// column n and whose first item is on the current line: the lines at n
// that start with "-", up to a line less indented or one at n that does
// not. (The lines of a block scalar inside are indented more.)
func (p *fastParser) countItems(n int) int {
	count := 0
	for q := p.li; q < len(p.lines); q++ {
		l := p.lines[q]
		switch {
		case l.blank || l.comment || l.ind() > n:
		case l.ind() < n || !isDash(p.text(q), n):
			return count
		default:
			count++
		}
	}
	return count
}

// key reads a mapping key at i of s, the current line: a plain or quoted
// scalar followed by ':' and a space or the line's end. after is the
// offset after the ':'.
func (p *fastParser) key(s string, i int) (k *yaml.Node, after int, ok bool) {
	end, after, ok := keyEnd(s, i)
	switch {
	case !ok:
		return nil, 0, false
	case s[i] == '"' || s[i] == '\'':
		k, _ = p.quoted(s, i)
	default:
		k = p.plain(strings.TrimRight(s[i:end], " "), i)
	}
	return k, after, true
}

// keyEnd finds the key at i of s: the end of its text and the offset
// after its ':'. A key that is not there is not an error here: a sequence
// item asks whether it holds a mapping.
func keyEnd(s string, i int) (end, after int, ok bool) {
	if i >= len(s) {
		return 0, 0, false
	}
	switch c := s[i]; {
	case c == '"' || c == '\'':
		e := quotedEnd(s, i)
		if e < 0 {
			return 0, 0, false
		}
		j := skipSpaces(s, e)
		if j >= len(s) || s[j] != ':' || j+1 < len(s) && s[j+1] != ' ' || j-i > maxKey {
			return 0, 0, false
		}
		return e, j + 1, true
	case !plainStart(s, i, false):
		return 0, 0, false
	}
	for j := i; j < len(s); j++ {
		switch s[j] {
		case ':':
			if j+1 == len(s) || s[j+1] == ' ' {
				if j-i > maxKey {
					return 0, 0, false
				}
				return j, j + 1, true
			}
		case '#':
			if s[j-1] == ' ' {
				return 0, 0, false
			}
		}
	}
	return 0, 0, false
}
