package units

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// File is a unit file (or drop-in) as ordered sections of ordered,
// repeatable entries, with the comments that precede them. The order of
// entries with the same key, and of an empty reset ("ExecStart=") before
// them, is meaningful to systemd and is kept everywhere.
type File struct {
	// Header holds the comment lines (each with its '#' or ';') before the
	// first section.
	Header []string
	// Sections are in file order. A parsed file may repeat a section name;
	// systemd merges them, and so does Canonical.
	Sections []*Section
	// Trailer holds the comment lines after the last entry of the file.
	Trailer []string
}

// Section is one "[Name]" section.
type Section struct {
	Name string
	// Line is the 1-based line of the "[Name]" header, 0 for sections built
	// in code.
	Line int
	// Comments are the comment lines directly before the header.
	Comments []string
	Entries  []*Entry
}

// Entry is one "Key=Value" assignment.
type Entry struct {
	// Key and Value are stripped of surrounding whitespace as systemd
	// strips them; Value has its continuation lines joined the way systemd
	// joins them (each trailing backslash replaced by a space). An empty
	// Value is an empty assignment, which resets list settings.
	Key, Value string
	// Line is the 1-based line where the entry starts, 0 for entries built
	// in code.
	Line int
	// Comments are the comment lines directly before the entry, including
	// comment lines inside its continuation (systemd skips those).
	Comments []string
}

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

// ParseAll is Parse that goes on after an error, to report every one of a
// file at once, in the order of their lines. A line in error is left out
// of the file it returns, which is only good for finding further problems;
// the entries after a malformed section header are left out too, so that
// they are not also reported as outside of any section.
func ParseAll(data []byte) (*File, []*ParseError) {
	return parse(data, true)
}

// parse is Parse, stopping at the first error unless all is set.
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

// Section returns the first section with the given name, or nil.
func (f *File) Section(name string) *Section {
	for _, s := range f.Sections {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// AddSection returns the first section with the given name, appending a
// new empty one when there is none.
func (f *File) AddSection(name string) *Section {
	if s := f.Section(name); s != nil {
		return s
	}
	s := &Section{Name: name}
	f.Sections = append(f.Sections, s)
	return s
}

// Add appends the entry key=value to the section and returns it. An empty
// value is an empty assignment (a reset for list settings).
func (s *Section) Add(key, value string) *Entry {
	e := &Entry{Key: key, Value: value}
	s.Entries = append(s.Entries, e)
	return e
}

// Values returns every value of key in every section with the given name,
// in file order, including empty resets, as systemd would apply them.
func (f *File) Values(section, key string) []string {
	var vs []string
	for _, s := range f.Sections {
		if s.Name != section {
			continue
		}
		for _, e := range s.Entries {
			if e.Key == key {
				vs = append(vs, e.Value)
			}
		}
	}
	return vs
}

// sectionRank orders sections canonically: [Unit], the type sections in a
// fixed order, others (alphabetically, by the caller), [Install] last.
func sectionRank(name string) int {
	switch name {
	case SectionUnit:
		return 0
	case SectionService:
		return 1
	case SectionSocket:
		return 2
	case SectionMount:
		return 3
	case SectionAutomount:
		return 4
	case SectionSwap:
		return 5
	case SectionTimer:
		return 6
	case SectionPath:
		return 7
	case SectionSlice:
		return 8
	case SectionScope:
		return 9
	case SectionInstall:
		return otherRank + 1
	}
	return otherRank
}

// otherRank is the sectionRank of every section not named there.
const otherRank = 10

// Validate reports the first problem that would keep Canonical from writing
// f faithfully: a section name or key systemd could not read back, a value
// with a line break, NUL or invalid UTF-8, or a comment that is not a single
// '#' or ';' line. Files returned by Parse are always valid; files built in
// code should be checked before they are written.
func (f *File) Validate() error {
	checkComments := func(where string, cs []string) error {
		for _, c := range cs {
			if c == "" || c[0] != '#' && c[0] != ';' || strings.ContainsAny(c, "\r\n\x00") || !utf8.ValidString(c) {
				return fmt.Errorf("%s: comment %q must be one line of valid UTF-8 starting with '#' or ';'", where, c)
			}
		}
		return nil
	}
	if err := checkComments("header", f.Header); err != nil {
		return err
	}
	if err := checkComments("trailer", f.Trailer); err != nil {
		return err
	}
	for _, s := range f.Sections {
		if strings.ContainsAny(s.Name, "[]\"'\\\x7f") || strings.IndexFunc(s.Name, func(r rune) bool { return r < 0x20 }) >= 0 || !utf8.ValidString(s.Name) {
			return fmt.Errorf("section name %q contains characters systemd does not accept in a section header", s.Name)
		}
		if err := checkComments("["+s.Name+"]", s.Comments); err != nil {
			return err
		}
		for _, e := range s.Entries {
			where := fmt.Sprintf("[%s] %s", s.Name, e.Key)
			switch {
			case e.Key == "" || strings.Trim(e.Key, whitespace) != e.Key:
				return fmt.Errorf("[%s]: key %q is empty or has surrounding blanks", s.Name, e.Key)
			case strings.ContainsAny(e.Key, "=\r\n\x00") || strings.ContainsAny(e.Key[:1], "[#;") || !utf8.ValidString(e.Key):
				return fmt.Errorf("[%s]: key %q cannot be written in a unit file", s.Name, e.Key)
			case strings.ContainsAny(e.Value, "\r\n\x00"):
				return fmt.Errorf("%s: the value contains a line break or NUL, which would not survive in a unit file: %q", where, e.Value)
			case !utf8.ValidString(e.Value):
				return fmt.Errorf("%s: the value is not valid UTF-8", where)
			case strings.Trim(e.Value, whitespace) != e.Value:
				return fmt.Errorf("%s: the value %q has surrounding blanks, which systemd strips", where, e.Value)
			}
			if err := checkComments(where, e.Comments); err != nil {
				return err
			}
		}
	}
	return nil
}

// Canonical returns f in hostprov's canonical form:
//
//   - the Header comments first, directly followed by the comments and
//     header of the first section (no blank line: Parse cannot tell the
//     two apart, so keeping them together is what makes the output
//     idempotent);
//   - sections of the same name merged, in the order [Unit], [Service],
//     [Socket], [Mount], [Automount], [Swap], [Timer], [Path], [Slice],
//     [Scope], then any other sections sorted bytewise, then [Install],
//     except in the files whose sections systemd could tell apart in
//     another order, which keep their sections as they are;
//   - within a section, entries sorted by key, except that entries systemd
//     could tell apart in another order keep their relative order (keys
//     of one interaction class, and barriers), and ExecStartPre= comes
//     before ExecStart= and ExecStartPost= after it. The exact rule, and
//     why it loads exactly what the input loads, is written at the top of
//     order.go;
//   - each entry as "Key=Value" on one line, preceded by its comments; a
//     section header preceded by its comments;
//   - one blank line between sections, the Trailer after the last entry,
//     LF line ends and exactly one final newline (none for an empty File).
//
// Canonical(Parse(Canonical(f))) equals Canonical(f). A value ending in an
// odd run of backslashes is written with one trailing space, the only way
// systemd reads such a value back without taking it as a continuation.
// Canonical never writes a line break inside an entry: line breaks and NUL
// bytes in names, values and comments are written as spaces. Call Validate
// first to refuse such files instead.
func (f *File) Canonical() []byte {
	keep := keepSectionOrder(f)
	order := mergeSections(f, keep)
	if !keep {
		slices.SortStableFunc(order, func(a, b merged) int {
			ra, rb := sectionRank(a.name), sectionRank(b.name)
			if ra != rb {
				return cmp.Compare(ra, rb)
			}
			if ra == otherRank {
				return strings.Compare(a.name, b.name)
			}
			return 0
		})
	}

	// The buffer is sized once, for at most what is written, so that
	// the unit's bytes are not copied as it grows and a caller that keeps
	// many units does not keep buffers twice their size.
	var b bytes.Buffer
	b.Grow(canonicalSize(f))
	writeComments := func(cs []string) {
		for _, c := range cs {
			c = oneLine(c)
			if c == "" || c[0] != '#' && c[0] != ';' {
				c = "# " + c
			}
			b.WriteString(c)
			b.WriteByte('\n')
		}
	}
	writeComments(f.Header)
	var scratch []sortKeyed
	for i, m := range order {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeComments(m.comments)
		b.WriteByte('[')
		b.WriteString(oneLine(m.name))
		b.WriteString("]\n")
		scratch = sortEntries(m.name, m.entries, !keep, scratch)
		for _, e := range m.entries {
			writeComments(e.Comments)
			b.WriteString(oneLine(e.Key))
			b.WriteByte('=')
			v := oneLine(e.Value)
			b.WriteString(v)
			if endsEscaped(v) {
				b.WriteByte(' ')
			}
			b.WriteByte('\n')
		}
	}
	writeComments(f.Trailer)
	return b.Bytes()
}

// merged is a section as Canonical writes it: the sections of one name
// merged, or one section when their order is kept.
type merged struct {
	name     string
	comments []string
	entries  []*Entry // Canonical's own, to sort
}

// mergeSections returns f's sections merged by name in the order of their
// first appearance, or, with keep, one for each section in input order.
// The entries of all of them share one new array.
func mergeSections(f *File, keep bool) []merged {
	order := make([]merged, 0, len(f.Sections))
	// group[i] is the index in order of section i, and counts[g] the
	// number of entries of group g: on the stack for a usual file.
	var groupBuf, countsBuf [8]int
	group, counts := groupBuf[:0], countsBuf[:0]
	if len(f.Sections) > len(groupBuf) {
		group, counts = make([]int, 0, len(f.Sections)), make([]int, 0, len(f.Sections))
	}
	group = group[:len(f.Sections)]
	var byName map[string]int // for files of many sections
	if !keep && len(f.Sections) > 16 {
		byName = make(map[string]int, len(f.Sections))
	}
	total := 0
	for i, s := range f.Sections {
		g := -1
		switch {
		case keep:
		case byName != nil:
			if j, ok := byName[s.Name]; ok {
				g = j
			}
		default:
			for j := range order {
				if order[j].name == s.Name {
					g = j
					break
				}
			}
		}
		if g < 0 {
			g = len(order)
			order = append(order, merged{name: s.Name})
			counts = append(counts, 0)
			if byName != nil {
				byName[s.Name] = g
			}
		}
		group[i] = g
		counts[g] += len(s.Entries)
		total += len(s.Entries)
		m := &order[g]
		if m.comments == nil {
			// Capped, so that a merge appends to a copy.
			m.comments = s.Comments[:len(s.Comments):len(s.Comments)]
		} else {
			m.comments = append(m.comments, s.Comments...)
		}
	}
	all := make([]*Entry, total)
	off := 0
	for g := range order {
		order[g].entries = all[off : off : off+counts[g]]
		off += counts[g]
	}
	for i, s := range f.Sections {
		m := &order[group[i]]
		m.entries = append(m.entries, s.Entries...)
	}
	return order
}

// LineLen is the length of the line Canonical writes for e, without its
// line break: Key=Value, and the space Canonical puts after a value that
// ends in a backslash. Compare it with MaxLineLen.
func (e *Entry) LineLen() int {
	n := len(e.Key) + 1 + len(e.Value)
	if endsEscaped(oneLine(e.Value)) {
		n++
	}
	return n
}

// canonicalSize is at least the length of f.Canonical(): oneLine keeps
// lengths, a comment may gain "# " and a value a space, and every line
// its line break.
func canonicalSize(f *File) int {
	n := 0
	comments := func(cs []string) {
		for _, c := range cs {
			n += len(c) + 3
		}
	}
	comments(f.Header)
	comments(f.Trailer)
	for _, s := range f.Sections {
		comments(s.Comments)
		n += len(s.Name) + 4 // "[Name]\n" and the empty line before it
		for _, e := range s.Entries {
			comments(e.Comments)
			n += len(e.Key) + len(e.Value) + 3
		}
	}
	return n
}

// oneLine replaces line breaks and NUL bytes with spaces, so that nothing
// a caller puts in a File can become a directive of its own.
func oneLine(s string) string {
	if !hasBreak(s) {
		return s
	}
	return strings.NewReplacer("\r", " ", "\n", " ", "\x00", " ").Replace(s)
}

// hasBreak is strings.ContainsAny(s, "\r\n\x00"), in one pass without
// building a set of the three bytes for every call.
func hasBreak(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= '\r' && (c == '\r' || c == '\n' || c == 0) {
			return true
		}
	}
	return false
}

// Format parses a unit file and returns its canonical form; it is what
// `hostprov fmt` prints. The error is a *ParseError: one of Parse, or an
// Exec*= line that systemd 252 refuses, which makes it refuse the whole
// unit (see CheckExec; its column assumes no blanks around '=' and no
// continuation before the problem). A line systemd only ignores, because
// of its "-" prefix, is kept where it is.
func Format(data []byte) ([]byte, error) {
	out, errs := format(data, false)
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return out, nil
}

// FormatAll is Format that reports every problem of the file, in the
// order of their lines, rather than the first; the result is nil when
// there is one.
func FormatAll(data []byte) ([]byte, []*ParseError) {
	return format(data, true)
}

func format(data []byte, all bool) ([]byte, []*ParseError) {
	f, errs := parse(data, all)
	if f == nil {
		return nil, errs
	}
	parsed := len(errs)
	for _, s := range f.Sections {
		for _, e := range s.Entries {
			if !IsExecCommand(s.Name, e.Key) {
				continue
			}
			if err := CheckExec(e.Value); !ExecLoads(err) {
				ee := err.(*ExecError)
				errs = append(errs, &ParseError{Line: e.Line, Column: len(e.Key) + 2 + ee.Offset,
					Msg: fmt.Sprintf("%s=%s: %s; systemd refuses to load the unit", e.Key, e.Value, ee.Msg)})
				if !all {
					return nil, errs
				}
			}
		}
	}
	if len(errs) > 0 {
		if parsed > 0 && len(errs) > parsed {
			// Parse's errors and the Exec lines' each come in
			// line order; together they should too.
			slices.SortStableFunc(errs, func(a, b *ParseError) int { return cmp.Compare(a.Line, b.Line) })
		}
		return nil, errs
	}
	return f.Canonical(), nil
}

// NormalizeRaw prepares a raw manifest for use as written: CRLF and lone CR
// line ends become LF, trailing line ends are reduced to exactly one, and
// every other byte is kept. Empty input gives "\n".
func NormalizeRaw(data []byte) []byte {
	out := make([]byte, 0, len(data)+1)
	for i := 0; i < len(data); i++ {
		c := data[i]
		if c == '\r' {
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			c = '\n'
		}
		out = append(out, c)
	}
	out = bytes.TrimRight(out, "\n")
	return append(out, '\n')
}
