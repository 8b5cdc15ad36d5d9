package units

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ParseError is a syntax error in a unit file.
type ParseError struct {
	Line   int // 1-based line
	Column int // 1-based byte column
	Msg    string
	// Hint says how to fix it, when there is more to say than Msg does;
	// it may be empty.
	Hint string
}

// Error returns "line L:C: msg".
func (e *ParseError) Error() string { return fmt.Sprintf("line %d:%d: %s", e.Line, e.Column, e.Msg) }

// longLineMax is systemd's LONG_LINE_MAX (src/basic/fileio.h), the limit
// of its config parser: a line is refused once it holds that many bytes,
// and a line joined from continuations once it holds more.
const longLineMax = 1 << 20

// MaxLineLen is the longest line of a unit file, in bytes without its
// line break, that systemd reads. Its read_line stops with ENOBUFS as soon
// as it holds LONG_LINE_MAX bytes, before it looks at the next character,
// so a line of exactly 1 MiB is refused too; systemd 252 logs "Line too
// long", the unit does not load ("No buffer space available"), and
// starting it over D-Bus fails with LimitsExceeded, the D-Bus name of
// ENOBUFS.
const MaxLineLen = longLineMax - 1

// MaxJoinedLen is the longest line systemd takes when it is joined from
// continuation lines (each backslash at a line end replaced by a space):
// config_parse refuses the join only when it grows past LONG_LINE_MAX.
const MaxJoinedLen = longLineMax

// LongLineHint says what to do about a line over MaxLineLen.
const LongLineHint = "move the long text into a file on the machine and pass its path instead: a script for a command to run, a file the program reads for data"

const bom = "\xef\xbb\xbf"

// Parse reads a unit file as systemd 252's config parser reads it:
//
//   - lines end in LF, CR, CRLF or LFCR (systemd's read_line);
//   - a UTF-8 byte order mark at the start is skipped;
//   - a line whose first non-blank character is '#' or ';' is a comment,
//     also in the middle of a continuation, where systemd skips it;
//   - a line ending in an unescaped backslash continues on the next line,
//     the backslash replaced by a space; a blank line ends a continuation;
//   - "[Name]" starts a section; "Key=Value" is an entry, with key and
//     value stripped of surrounding blanks; repeated keys and empty values
//     are kept in order.
//
// Where systemd would refuse the file (a malformed section header, invalid
// UTF-8, a line of 1 MiB or more, a line joined from continuations of more
// than 1 MiB) and where it would merely warn and drop a line (an
// assignment before any section, a line without '=' or without a key),
// Parse returns a *ParseError: a hand-written unit with such a line is
// broken. A NUL byte, which systemd takes as a line end, is an error
// too. Unknown sections and keys are not errors; see KnownDirective.
func Parse(data []byte) (*File, error) {
	f, errs := parse(data, false)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return f, nil
}

// parse is Parse, stopping at the first error unless all is set: then it
// goes on after an error, to report every one of a file at once (for
// FormatAll), in the order of their lines. A line in error is left out
// of the file it returns, which is only good for finding further problems;
// the entries after a malformed section header are left out too, so that
// they are not also reported as outside of any section.
func parse(data []byte, all bool) (*File, []*ParseError) {
	// One copy of the text, of which every line, key, value and comment
	// is a part: not a copy of each line.
	src := string(data)
	p := parser{f: &File{}}
	var errs []*ParseError
	// fail records an error and says whether to stop.
	fail := func(e *ParseError) bool {
		errs = append(errs, e)
		return !all
	}
	bomSeen := false
	lineNum := 0
	for len(src) > 0 {
		var line string
		line, src = nextLine(src)
		lineNum++
		if i := strings.IndexByte(line, 0); i >= 0 {
			if fail(&ParseError{Line: lineNum, Column: i + 1, Msg: "the line contains a NUL byte; unit files are text, so remove it"}) {
				return nil, errs
			}
			continue
		}
		if len(line) > MaxLineLen {
			if fail(&ParseError{Line: lineNum, Column: MaxLineLen + 1, Msg: fmt.Sprintf("the line is %d bytes long; systemd refuses a line of %d bytes or more, and the unit would not load", len(line), longLineMax), Hint: LongLineHint}) {
				return nil, errs
			}
			continue
		}
		if !bomSeen && strings.HasPrefix(line, bom) {
			line = line[len(bom):]
			bomSeen = true
		}
		// systemd skips comment lines before it looks at continuations, so
		// a comment inside a continued entry neither ends nor extends it.
		if t := strings.TrimLeft(line, whitespace); len(t) > 0 && (t[0] == '#' || t[0] == ';') {
			p.comment(t)
			continue
		}
		if p.cont != nil {
			if len(p.cont)+len(line) > MaxJoinedLen {
				if fail(&ParseError{Line: lineNum, Column: 1, Msg: fmt.Sprintf("the line continued from line %d is %d bytes long when joined; systemd refuses one of more than %d bytes, and the unit would not load", p.contLine, len(p.cont)+len(line), MaxJoinedLen), Hint: LongLineHint}) {
					return nil, errs
				}
				p.cont = nil
				continue
			}
			p.cont = append(p.cont, line...)
		}
		// The escape state before the new part is always clear (the joined
		// text ends in a space), so checking the new line alone suffices.
		if endsEscaped(line) {
			if p.cont == nil {
				p.cont = append([]byte(nil), line...)
				p.contLine = lineNum
			}
			// systemd replaces the continuation backslash with a space.
			p.cont[len(p.cont)-1] = ' '
			continue
		}
		text, start := line, lineNum
		if p.cont != nil {
			text, start = string(p.cont), p.contLine
			p.cont = nil
		}
		if err := p.line(text, start); err != nil && fail(err) {
			return nil, errs
		}
	}
	if p.cont != nil {
		// systemd parses a continuation left open at the end of the file.
		if err := p.line(string(p.cont), p.contLine); err != nil && fail(err) {
			return nil, errs
		}
	}
	if len(p.f.Sections) == 0 {
		// Without sections every comment is "before the first section".
		p.f.Header = append(p.f.Header, p.pending...)
	} else {
		p.f.Trailer = append(p.f.Trailer, p.pending...)
	}
	return p.f, errs
}

// nextLine splits off one line the way systemd's read_line does: "\n",
// "\r", "\r\n" and "\n\r" each end one line.
func nextLine(data string) (line, rest string) {
	i := strings.IndexAny(data, "\r\n")
	if i < 0 {
		return data, ""
	}
	line, rest = data[:i], data[i+1:]
	if len(rest) > 0 && (rest[0] == '\r' || rest[0] == '\n') && rest[0] != data[i] {
		rest = rest[1:]
	}
	return line, rest
}

// endsEscaped reports whether s ends in a backslash that is not itself
// escaped. Every character after a backslash is escaped, so only the length
// of the final run of backslashes matters.
func endsEscaped[T string | []byte](s T) bool {
	n := 0
	for n < len(s) && s[len(s)-1-n] == '\\' {
		n++
	}
	return n%2 == 1
}

type parser struct {
	f        *File
	sec      *Section
	slab     []Entry  // where the entries are allocated, a few at a time
	pending  []string // comments waiting for the next entry or header
	cont     []byte   // joined continuation, nil when none is open
	contLine int
}

func (p *parser) comment(c string) {
	p.pending = append(p.pending, strings.TrimRight(c, whitespace))
}

func (p *parser) takeComments() []string {
	c := p.pending
	p.pending = nil
	return c
}

// line handles one logical line (continuations joined) starting at line n.
func (p *parser) line(raw string, n int) *ParseError {
	s := strings.Trim(raw, whitespace)
	if s == "" {
		return nil
	}
	col := strings.Index(raw, s[:1]) + 1
	if !utf8.ValidString(s) {
		off := 0
		for off < len(s) {
			r, size := utf8.DecodeRuneInString(s[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		return &ParseError{Line: n, Column: col + off, Msg: "the line is not valid UTF-8; systemd refuses such unit files, so save the file as UTF-8"}
	}
	if s[0] == '[' {
		if s[len(s)-1] != ']' {
			p.sec = &Section{} // what follows belongs to no section of the file
			return &ParseError{Line: n, Column: col, Msg: fmt.Sprintf("invalid section header %q: it must end with ']' and nothing may follow it on the line (put comments on a line of their own)", s)}
		}
		name := s[1 : len(s)-1]
		for i := 0; i < len(name); i++ {
			if c := name[i]; c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
				p.sec = &Section{}
				return &ParseError{Line: n, Column: col + 1 + i, Msg: fmt.Sprintf("section header %q contains %q; systemd refuses quotes, backslashes and control characters in section names", s, name[i:i+1])}
			}
		}
		sec := &Section{Name: name, Line: n}
		if len(p.f.Sections) == 0 {
			p.f.Header = append(p.f.Header, p.takeComments()...)
		} else {
			sec.Comments = p.takeComments()
		}
		p.f.Sections = append(p.f.Sections, sec)
		p.sec = sec
		return nil
	}
	if p.sec == nil {
		return &ParseError{Line: n, Column: col, Msg: fmt.Sprintf("%q is outside of any section; systemd ignores assignments before the first section header, so add one such as [Unit] or [Service] above it", s)}
	}
	eq := strings.IndexByte(s, '=')
	if eq < 0 {
		return &ParseError{Line: n, Column: col, Msg: fmt.Sprintf("missing '=' in %q; an entry is written Key=Value (systemd ignores this line); to keep it as a note, start it with '#'", s)}
	}
	if eq == 0 {
		return &ParseError{Line: n, Column: col, Msg: fmt.Sprintf("missing key name before '=' in %q; an entry is written Key=Value", s)}
	}
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]Entry, 0, min(max(8, 2*cap(p.slab)), 256))
	}
	p.slab = append(p.slab, Entry{
		Key:      strings.Trim(s[:eq], whitespace),
		Value:    strings.Trim(s[eq+1:], whitespace),
		Line:     n,
		Comments: p.takeComments(),
	})
	p.sec.Entries = append(p.sec.Entries, &p.slab[len(p.slab)-1])
	return nil
}
