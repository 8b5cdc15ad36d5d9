package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// SyntaxError is a syntax error of yaml.v3, placed in the source it came
// from and said in words a person who writes a spec understands.
type SyntaxError struct {
	// Line and Column say where to look, counting from 1: where the
	// construct that is not closed starts (a "[", a quote), or else the
	// token at which the parser gave up. Zero means unknown.
	Line, Column int
	// Message says what is wrong; it ends with yaml.v3's own words.
	Message string
	// Hint says how to fix it.
	Hint string
}

// Syntax places err, which yaml.v3 returned while reading src, in src.
//
// yaml.v3 (v3.0.1) gives only a message such as "yaml: line 4: did not find
// expected ',' or ']'", and its line is not one thing. For an error of its
// parser it is the line of the construct being parsed (the "[" of a flow
// list, the first key of a block mapping), counted from 0, or, when that
// construct is on the first line, the line of the token it gave up at,
// counted from 0, or no line at all when that is the first line too. For
// an error of its scanner it is the same marks counted from 1. So the
// number cannot be read on its own. Syntax reads src again with a line
// break put first: that changes no meaning, but puts every mark on a line
// other than the first, so the number always names the construct (or the
// token, for errors without a construct) and can be told apart by kind.
// Columns, which yaml.v3 never gives, are found by reading prefixes of the
// source: the shortest prefix of that line that fails the same way ends at
// the character the parser stopped at. The source of a spec is a few
// kilobytes, so the extra reads cost little; for large sources the column
// search is skipped.
func Syntax(err error, src []byte) SyntaxError {
	full := err.Error()
	problem, line := splitError(full)
	if line == 0 {
		if se, ok := lineless(problem, src); ok {
			return se
		}
	}
	s := newSource(src)
	if s == nil {
		return fallback(problem, line, src)
	}
	sp, sl, failed := s.read(len(s.body))
	if !failed || sp != problem || sl == 0 {
		// Not the error it was; say what yaml.v3 said.
		return fallback(problem, line, src)
	}
	return s.place(problem, sl)
}

var lineErrRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// splitError splits yaml.v3's message into its problem and its line (0
// when it gives none).
func splitError(msg string) (string, int) {
	if m := lineErrRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return m[2], n
	}
	return strings.TrimPrefix(msg, "yaml: "), 0
}

// parserProblems are the problems yaml.v3's parser (rather than its
// scanner) reports; it numbers their lines from 0 (parserc.go).
var parserProblems = map[string]bool{
	"did not find expected <stream-start>":   true,
	"did not find expected <document start>": true,
	"found undefined tag handle":             true,
	"did not find expected node content":     true,
	"did not find expected '-' indicator":    true,
	"did not find expected key":              true,
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found duplicate %TAG directive":         true,
}

// fallback is what is left when the source cannot be read again the same
// way: yaml.v3's words and its line, which may be off by one.
func fallback(problem string, line int, src []byte) SyntaxError {
	se := SyntaxError{Line: line, Message: problem, Hint: "fix the YAML syntax at this place"}
	if lines := splitLines(src); line >= 1 && line <= len(lines) {
		se.Column = firstNonSpace(lines[line-1])
	}
	return se
}

// lineless places the errors that yaml.v3 reports without any line.
func lineless(problem string, src []byte) (SyntaxError, bool) {
	switch {
	case strings.HasPrefix(problem, "unknown anchor '") && strings.HasSuffix(problem, "' referenced"):
		name := strings.TrimSuffix(strings.TrimPrefix(problem, "unknown anchor '"), "' referenced")
		se := SyntaxError{Message: problem, Hint: fmt.Sprintf("define the anchor &%s on a value before this alias uses it", name)}
		// yaml.v3 does not say where the alias is; find its first use.
		if i := bytes.Index(src, []byte("*"+name)); i >= 0 {
			se.Line, se.Column = lineCol(src, i)
		}
		return se, true
	case readerProblems[problem]:
		return unreadable(problem, src)
	}
	return SyntaxError{}, false
}

// readerProblems are the problems of yaml.v3's reader, which checks every
// character before the scanner sees it (readerc.go). It knows the offset
// of the character it refused but does not say it, nor any line.
var readerProblems = map[string]bool{
	"control characters are not allowed": true,
	"invalid leading UTF-8 octet":        true,
	"invalid trailing UTF-8 octet":       true,
	"incomplete UTF-8 octet sequence":    true,
	"invalid length of a UTF-8 sequence": true,
	"invalid Unicode character":          true,
}

// Unreadable places err, which yaml.v3 returned while reading src, when it
// is an error of yaml.v3's reader: a character of src that is not allowed
// in YAML (a control character) or a byte that is not UTF-8, which the
// reader refuses before parsing and reports without a line. ok is false
// for any other error. Syntax places these errors the same way.
func Unreadable(err error, src []byte) (se SyntaxError, ok bool) {
	problem, line := splitError(err.Error())
	if line != 0 || !readerProblems[problem] {
		return SyntaxError{}, false
	}
	return unreadable(problem, src)
}

// unreadable places a problem of yaml.v3's reader at the first character
// of src that the reader refuses, and says what it is.
func unreadable(problem string, src []byte) (SyntaxError, bool) {
	i, ok := refused(src)
	if !ok {
		return SyntaxError{}, false
	}
	se := SyntaxError{}
	se.Line, se.Column = lineCol(src, i)
	if bytes.HasPrefix(src, []byte(bom)) && se.Line == 1 {
		se.Column-- // yaml.v3 skips the byte order mark and counts from after it
	}
	r, size := utf8.DecodeRune(src[i:])
	if r == utf8.RuneError && size <= 1 {
		// No escape gives the byte back: "\xff" in YAML is U+00FF.
		se.Message = fmt.Sprintf("byte 0x%02x is not UTF-8 (yaml: %s)", src[i], problem)
		se.Hint = "YAML is UTF-8 text: remove the byte, or convert the file to UTF-8 (iconv -t UTF-8)"
		return se, true
	}
	what := "control character"
	switch {
	case r >= 0x80 && r <= 0x9f:
		// What most often puts one in a text: Windows-1252 punctuation
		// (curly quotes, dashes) converted as if it were Latin-1.
		what = "C1 control character"
	case r == 0xfffe || r == 0xffff:
		what = "noncharacter"
	}
	se.Message = fmt.Sprintf("the %s %U, which YAML does not allow in a file (yaml: %s)", what, r, problem)
	se.Hint = fmt.Sprintf("remove the character, or write it as an escape in a double-quoted string: \"%s\"", escape(r))
	if what == "C1 control character" {
		se.Hint += "; a C1 control in a text is often a Windows-1252 quote or dash that was converted as Latin-1"
	}
	return se, true
}

// bom is the UTF-8 byte order mark.
const bom = "\xef\xbb\xbf"

// refused returns the offset of the first character of src that
// yaml.v3's reader refuses: a byte that is not UTF-8 or a character
// outside YAML's printable set (tab, line breaks, U+0020..U+007E, U+0085,
// U+00A0..U+D7FF, U+E000..U+FFFD and U+10000 and up). ok is false when
// there is none, and for UTF-16 input, which the reader decodes first.
func refused(src []byte) (i int, ok bool) {
	if bytes.HasPrefix(src, []byte("\xfe\xff")) || bytes.HasPrefix(src, []byte("\xff\xfe")) {
		return 0, false
	}
	for i < len(src) {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 || !printable(r) {
			return i, true
		}
		i += size
	}
	return 0, false
}

// printable reports whether YAML allows r in a stream, as yaml.v3's reader
// checks it.
func printable(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}

// escape is how r is written in a double-quoted YAML string.
func escape(r rune) string {
	switch {
	case r == 0:
		return `\0`
	case r <= 0xff:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

// source is a YAML text being read again to place an error in it.
type source struct {
	src   []byte
	lead  []byte // what goes before the source: a line break, after a byte order mark
	body  []byte // the source without its byte order mark
	lines []string
	// starts[i] is the offset in body at which line i+1 starts.
	starts []int
	// budget is how many more bytes may be parsed while searching.
	budget int
}

// searchBudget bounds the bytes parsed while searching for a column or a
// line, so that an error in a large file stays cheap to report.
const searchBudget = 64 << 20

func newSource(src []byte) *source {
	s := &source{src: src, lead: []byte("\n"), body: src, budget: searchBudget}
	switch {
	case bytes.HasPrefix(src, []byte("\xef\xbb\xbf")):
		// A byte order mark must stay first.
		s.lead = []byte("\xef\xbb\xbf\n")
		s.body = src[3:]
	case bytes.HasPrefix(src, []byte("\xfe\xff")), bytes.HasPrefix(src, []byte("\xff\xfe")):
		return nil // UTF-16: a line break cannot simply be put first
	}
	s.lines = splitLines(s.body)
	off := 0
	for i, l := range s.lines {
		s.starts = append(s.starts, off)
		off += len(l)
		if i < len(s.lines)-1 {
			off += breakLen(s.body[off:])
		}
	}
	return s
}

// read parses the first n bytes of the body behind the lead and returns
// the problem, its line in the body counted as yaml.v3 counts it, and
// whether it failed at all.
func (s *source) read(n int) (problem string, line int, failed bool) {
	s.budget -= n
	text := make([]byte, 0, len(s.lead)+n)
	text = append(append(text, s.lead...), s.body[:n]...)
	dec := yaml.NewDecoder(bytes.NewReader(text))
	for {
		var doc yaml.Node
		err := Decode(dec, &doc)
		if errors.Is(err, io.EOF) {
			return "", 0, false
		}
		if err != nil {
			p, l := splitError(err.Error())
			return p, l, true
		}
	}
}

// place finds where the error is, given yaml.v3's line for the source read
// behind a line break.
func (s *source) place(problem string, shifted int) SyntaxError {
	// Behind the leading line break every mark is on a line counted from
	// 0 of at least 1: a parser error's number is the body's line counted
	// from 1, a scanner error's (already counted from 1) is one more.
	line := shifted
	if !parserProblems[problem] {
		line--
	}
	if line < 1 || line > len(s.lines) {
		return fallback(problem, 0, s.src)
	}
	same := func(n int) bool {
		p, l, failed := s.read(n)
		return failed && p == problem && l == shifted
	}
	se := SyntaxError{Line: line, Message: problem, Hint: "fix the YAML syntax at this place"}
	switch problem {
	case "did not find expected ',' or ']'", "did not find expected ',' or '}'":
		s.flow(&se, problem, same)
	case "found unexpected end of stream":
		s.quote(&se, same)
	case "found a tab character that violates indentation", "found a tab character where an indentation space is expected":
		// The mark is the value or block scalar the tab follows; the tab
		// is in the indentation of a later line.
		for l := line; l <= len(s.lines); l++ {
			if i := tabInIndent(s.lines[l-1]); i >= 0 {
				se.Line, se.Column = l, i+1
				break
			}
		}
		s.tab(&se)
	case "did not find expected key", "did not find expected '-' indicator", "did not find expected node content":
		s.block(&se, problem, same)
	case "found unknown escape character":
		se.Column = firstNonSpace(s.lines[line-1])
		s.escape(&se)
	default:
		se.Column = s.column(line, same)
		s.token(&se, problem)
	}
	se.Message += " (yaml: " + problem + ")"
	return se
}

// column returns the column of the character at which the shortest
// failing prefix of line ends, or the line's first character that is not
// a space when no prefix of the line fails that way (or the search is
// too costly).
func (s *source) column(line int, same func(int) bool) int {
	col, _ := s.prefixColumn(line, same)
	return col
}

// prefixColumn is column, and whether a prefix was found.
func (s *source) prefixColumn(line int, same func(int) bool) (int, bool) {
	text := s.lines[line-1]
	start := s.starts[line-1]
	if (start+len(text))*min(len(text), 200) <= s.budget {
		for i := 0; i < len(text); {
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
			if same(start + i) {
				return utf8.RuneCountInString(text[:i]), true // the last character read
			}
		}
	}
	return firstNonSpace(text), false
}

// flow places an unclosed flow list or mapping: at its opening bracket,
// saying where the parser gave up looking for the end.
func (s *source) flow(se *SyntaxError, problem string, same func(int) bool) {
	open, close, what, item, items := "[", "]", "list", "item", "items"
	if strings.HasSuffix(problem, "'}'") {
		open, close, what, item, items = "{", "}", "mapping", "entry", "entries"
	}
	col, found := s.prefixColumn(se.Line, same)
	se.Column = col
	text := s.lines[se.Line-1]
	at := columnOffset(text, se.Column)
	if !found {
		// The line ends with the bracket: no prefix of it fails the
		// same way.
		at = len(text)
	}
	if at >= len(text) || text[at:at+1] != open {
		// The shortest failing prefix ends in the first item: the
		// collection opens at the bracket before it.
		if i := strings.LastIndex(text[:at], open); i >= 0 {
			at = i
			se.Column = utf8.RuneCountInString(text[:i]) + 1
		}
	}
	where := ""
	if at < len(text) && text[at:at+1] == open {
		switch l, ok := s.gaveUp(s.starts[se.Line-1]+at, se.Line, problem); {
		case !ok:
		case l == 0:
			where = fmt.Sprintf(": yaml.v3 reached the end of the file without finding %q", close)
		default:
			where = fmt.Sprintf(": yaml.v3 gave up on line %d, where it found neither %q nor %q after an %s", l, ",", close, item)
		}
	}
	se.Message = fmt.Sprintf("the %s that starts here with %q is not closed%s", what, open, where)
	se.Hint = fmt.Sprintf("end the %s with %q after its last %s and put %q between %s; or write it without brackets, one %s per line",
		what, close, item, ",", items, map[string]string{"list": `"- item"`, "mapping": `"key: value"`}[what])
}

// gaveUp returns the line at which yaml.v3 stopped looking for the end of
// the flow collection that opens at offset open of the body, on line
// line, or 0 when it read to the end of the file; ok is false when that
// cannot be known. Read on its own, the collection starts on the first
// line, so yaml.v3 gives the line of the token it stopped at, counted from
// 0 (or none, for the first line).
func (s *source) gaveUp(open, line int, problem string) (int, bool) {
	rest := s.body[open:]
	s.budget -= len(rest)
	dec := yaml.NewDecoder(bytes.NewReader(rest))
	for {
		var doc yaml.Node
		err := Decode(dec, &doc)
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return 0, false
		}
		p, l := splitError(err.Error())
		if p != problem {
			return 0, false
		}
		at := line + l
		for i := at; i <= len(s.lines); i++ {
			if t := strings.TrimSpace(s.lines[i-1]); t != "" && !strings.HasPrefix(t, "#") {
				return at, true
			}
		}
		return 0, true
	}
}

// quote places a quoted string that is not closed, at its opening quote.
func (s *source) quote(se *SyntaxError, same func(int) bool) {
	se.Column = s.column(se.Line, same)
	text := s.lines[se.Line-1]
	at := columnOffset(text, se.Column)
	if at >= len(text) || (text[at] != '"' && text[at] != '\'') {
		se.Message = "the file ends inside a value"
		return
	}
	q := text[at : at+1]
	se.Message = fmt.Sprintf("the string that starts here with %s is not closed: yaml.v3 reached the end of the file looking for the closing %s", q, q)
	if q == `"` {
		se.Hint = `end the string with "; inside double quotes, write \" for a quote`
	} else {
		se.Hint = `end the string with '; inside single quotes, write '' for a quote`
	}
}

// tab says that YAML indents with spaces only.
func (s *source) tab(se *SyntaxError) {
	se.Message = "a tab in the indentation: YAML indents with spaces only"
	se.Hint = "YAML indents with spaces: replace the tabs on this line with spaces"
}

// block places an error in the indentation of a block mapping or list: at
// the first line after the start of the mapping or list at which reading
// fails (yaml.v3 names only the start), and in it at the token it stopped
// at.
func (s *source) block(se *SyntaxError, problem string, same func(int) bool) {
	start := se.Line
	startCol := keyColumn(s.lines[start-1])
	// Find the first line at which a prefix made of whole lines fails
	// the same way: lines before it read well.
	lo, hi := start-1, len(s.lines) // same fails at lo, holds at hi
	for hi-lo > 1 && s.budget > 0 {
		mid := (lo + hi) / 2
		if same(s.lineEnd(mid)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	se.Line = hi
	text := s.lines[hi-1]
	se.Column = s.column(hi, same)
	first := firstNonSpace(text)
	if at := columnOffset(text, se.Column); at < len(text) && text[at] == ':' {
		// A key is known to be one only at its colon; the token yaml.v3
		// stopped at is the key.
		se.Column = first
	}
	at := columnOffset(text, se.Column)
	switch {
	case problem == "did not find expected '-' indicator":
		se.Message = fmt.Sprintf("this line is inside the list that starts on line %d, but is not an item of it", start)
		se.Hint = fmt.Sprintf(`start the line with "- " to add an item to the list, or indent it less, like the key that holds the list, to add a key`)
	case problem == "did not find expected node content":
		se.Message = "a value is missing here"
		se.Hint = "give the value, or quote it if it is text that starts with a YAML indicator"
	case se.Column != first:
		se.Message = fmt.Sprintf("the value ends before this text, which is not a key of the mapping that starts on line %d", start)
		se.Hint = `quote the whole value; a quote inside a single-quoted value is written ''`
	case at < len(text) && text[at] == '-':
		se.Message = fmt.Sprintf("a list item where a key of the mapping that starts on line %d was expected", start)
		se.Hint = `a list is the value of a key: end the line above with "key:" and indent the "- " items under it`
	default:
		se.Message = fmt.Sprintf("this line is not a key of the mapping that starts on line %d: its indentation fits no mapping above", start)
		se.Hint = fmt.Sprintf("indent it by %d spaces, like the keys of that mapping, or by more, under a key that has no value, to nest it", startCol-1)
		// yaml.v3 names the outermost mapping the line could still
		// close; a line indented a little less than the keys just
		// above it most often belongs with them.
		for l := s.previousLine(hi); l > 0; l = s.previousLine(l) {
			if k := keyColumn(s.lines[l-1]); k > first {
				if k != startCol {
					se.Hint = fmt.Sprintf("indent it by %d spaces, like the key on line %d, or by %d, like the keys of the mapping that starts on line %d", k-1, l, startCol-1, start)
				}
				break
			} else if k < first {
				break
			}
		}
	}
}

// lineEnd is the offset in the body just after line n (counted from 1),
// with its line break.
func (s *source) lineEnd(n int) int {
	if n >= len(s.lines) {
		return len(s.body)
	}
	return s.starts[n]
}

// escape places an unknown escape in a double-quoted string, at its
// backslash: the first one after the string's start that YAML does not
// know.
func (s *source) escape(se *SyntaxError) {
	from := s.starts[se.Line-1]
	for i := from; i < len(s.body)-1; i++ {
		if s.body[i] == '\\' {
			if !strings.ContainsRune("0abt\tnvfre \"/\\N_LPxuU\r\n", rune(s.body[i+1])) {
				se.Line, se.Column = lineCol(s.body, i)
				break
			}
			i++
		}
	}
	se.Message = "unknown escape in a double-quoted string"
	se.Hint = `inside double quotes a backslash starts an escape: write \\ for a backslash, or use single quotes, in which a backslash is itself`
}

// token words the errors of yaml.v3's scanner that are placed at one
// character.
func (s *source) token(se *SyntaxError, problem string) {
	text := s.lines[se.Line-1]
	at := columnOffset(text, se.Column)
	c := ""
	if at < len(text) {
		r, _ := utf8.DecodeRuneInString(text[at:])
		c = string(r)
	}
	switch problem {
	case "mapping values are not allowed in this context":
		prev := s.previousLine(se.Line)
		first := firstNonSpace(text)
		if prev > 0 && first > keyColumn(s.lines[prev-1]) && strings.Index(text, ":") == at {
			// "a: 1\n  b: 2": the deeper line continues the value above.
			se.Column = first
			se.Message = fmt.Sprintf("this line is indented more than the key on line %d, so it continues the value there, and a value cannot hold a key", prev)
			se.Hint = fmt.Sprintf("indent this key by %d spaces, like the key on line %d, or by more only under a key that has no value", keyColumn(s.lines[prev-1])-1, prev)
		} else {
			se.Message = `": " in a value that is not quoted`
			se.Hint = `quote the value ("a: b"), or put the key on a line of its own`
		}
	case "found character that cannot start any token":
		if c == "\t" {
			s.tab(se)
			return
		}
		se.Message = fmt.Sprintf("%q cannot start a value", c)
		se.Hint = fmt.Sprintf("quote the value: '%s...'", c)
	case "could not find expected ':'":
		se.Column = firstNonSpace(text)
		se.Message = `a line in a mapping that is not "key: value"`
		se.Hint = `write "key: value", with a space after the colon; text that continues the value above must be indented more than its key`
	case "block sequence entries are not allowed in this context":
		se.Message = `a "- " list item where a value was expected`
		se.Hint = `start the list on the line after its key ("key:"), one "- item" per line`
	case "did not find expected alphabetic or numeric character":
		se.Message = "an anchor (&) or alias (*) without a name"
		se.Hint = "give it a name (&name, *name), or quote the value if & or * is meant as text"
	default:
		se.Message = "invalid YAML"
	}
}

// previousLine is the number of the last line before line that holds more
// than spaces and a comment, or 0.
func (s *source) previousLine(line int) int {
	for l := line - 1; l >= 1; l-- {
		if t := strings.TrimSpace(s.lines[l-1]); t != "" && !strings.HasPrefix(t, "#") {
			return l
		}
	}
	return 0
}

// splitLines splits text at the line breaks YAML counts (LF, CRLF, CR,
// NEL, LS and PS), so that line numbers match the parser's.
func splitLines(data []byte) []string {
	var lines []string
	start := 0
	for i := 0; i < len(data); {
		if n := breakLen(data[i:]); n > 0 {
			lines = append(lines, string(data[start:i]))
			i += n
			start = i
			continue
		}
		i++
	}
	return append(lines, string(data[start:]))
}

// breakLen is the length of the line break that b starts with, or 0.
func breakLen(b []byte) int {
	switch {
	case bytes.HasPrefix(b, []byte("\r\n")):
		return 2
	case len(b) > 0 && (b[0] == '\n' || b[0] == '\r'):
		return 1
	case bytes.HasPrefix(b, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(b, []byte("\u2028")), bytes.HasPrefix(b, []byte("\u2029")):
		return 3
	}
	return 0
}

// lineCol returns the line and column, counted from 1, of offset i of b.
func lineCol(b []byte, i int) (int, int) {
	lines := splitLines(b[:i])
	return len(lines), utf8.RuneCountInString(lines[len(lines)-1]) + 1
}

// firstNonSpace is the column, counted from 1, of the first character of
// text that is not a space (1 for a blank line).
func firstNonSpace(text string) int {
	return utf8.RuneCountInString(text) - utf8.RuneCountInString(strings.TrimLeft(text, " ")) + 1
}

// keyColumn is the column, counted from 1, at which the key of a line
// starts: after its indentation and any "- " that start list items.
func keyColumn(text string) int {
	col := firstNonSpace(text)
	rest := strings.TrimLeft(text, " ")
	for strings.HasPrefix(rest, "- ") {
		trimmed := strings.TrimLeft(rest[1:], " ")
		col += utf8.RuneCountInString(rest) - utf8.RuneCountInString(trimmed)
		rest = trimmed
	}
	return col
}

// columnOffset is the byte offset in text of column col (counted from 1).
func columnOffset(text string, col int) int {
	i := 0
	for n := 1; n < col && i < len(text); n++ {
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return i
}

// tabInIndent is the offset of the first tab in the indentation of text,
// or -1.
func tabInIndent(text string) int {
	indent := text[:len(text)-len(strings.TrimLeft(text, " \t"))]
	return strings.IndexByte(indent, '\t')
}
