package units

import (
	"bytes"
	"cmp"
	"slices"
	"strings"
)

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
