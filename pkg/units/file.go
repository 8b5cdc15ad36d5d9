package units

import (
	"fmt"
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
