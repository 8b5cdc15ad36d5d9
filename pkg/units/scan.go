package units

import (
	"bytes"
	"unicode/utf8"
)

// HasEntries reports whether the first section named section of the unit
// file data holds at least one entry: it is exactly
//
//	f, err := Parse(data)
//	if err != nil {
//		return false, err
//	}
//	s := f.Section(section)
//	return s != nil && len(s.Entries) > 0, nil
//
// without building the File. A file of LF-terminated lines without
// continuations, carriage returns, NUL bytes, byte order marks or invalid
// UTF-8 (every unit hostprov generates) is answered by one scan of its
// lines; any other file is handed to Parse.
func HasEntries(data []byte, section string) (bool, error) {
	if s, ok := scanEntries(data, section); ok {
		return s, nil
	}
	f, err := Parse(data)
	if err != nil {
		return false, err
	}
	s := f.Section(section)
	return s != nil && len(s.Entries) > 0, nil
}

// scanEntries is HasEntries for the files it can read exactly in one scan;
// ok is false for any other file, including every file Parse refuses.
func scanEntries(data []byte, section string) (has, ok bool) {
	if bytes.IndexByte(data, '\r') >= 0 || bytes.IndexByte(data, 0) >= 0 ||
		bytes.Contains(data, []byte(bom)) || !utf8.Valid(data) {
		return false, false
	}
	inSection := false // in the first section named section
	seen := false      // that section was found
	anySection := false
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > MaxLineLen {
			return false, false
		}
		t := bytes.TrimLeft(line, whitespace)
		if len(t) == 0 {
			continue
		}
		if t[0] == '#' || t[0] == ';' {
			continue
		}
		if endsEscaped(line) {
			return false, false // a continuation
		}
		t = bytes.TrimRight(t, whitespace)
		if t[0] == '[' {
			if t[len(t)-1] != ']' {
				return false, false
			}
			name := t[1 : len(t)-1]
			for _, c := range name {
				if c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
					return false, false
				}
			}
			anySection = true
			inSection = !seen && string(name) == section
			seen = seen || inSection
			continue
		}
		if !anySection || bytes.IndexByte(t, '=') <= 0 {
			return false, false
		}
		if inSection {
			has = true
		}
	}
	return has, true
}
