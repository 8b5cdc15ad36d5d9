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

// LastValues returns, for each of keys, the value in effect of that key in
// the sections named section of the unit file data: the last one, as
// systemd applies them, or "" when none is set. It is exactly
//
//	f, err := Parse(data)
//	if err != nil {
//		return nil, err
//	}
//	vs := make([]string, len(keys))
//	for i, k := range keys {
//		if all := f.Values(section, k); len(all) > 0 {
//			vs[i] = all[len(all)-1]
//		}
//	}
//	return vs, nil
//
// answered by one scan of the lines for the files HasEntries scans, and by
// Parse for any other file.
func LastValues(data []byte, section string, keys []string) ([]string, error) {
	vs := make([]string, len(keys))
	in := false // in a section named section
	ok := scanFile(data, func(name []byte) { in = string(name) == section }, func(key, value []byte) {
		if !in {
			return
		}
		for i, k := range keys {
			if string(key) == k {
				vs[i] = string(value)
			}
		}
	})
	if ok {
		return vs, nil
	}
	f, err := Parse(data)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		vs[i] = ""
		if all := f.Values(section, k); len(all) > 0 {
			vs[i] = all[len(all)-1]
		}
	}
	return vs, nil
}

// scanEntries is HasEntries for the files it can read exactly in one scan;
// ok is false for any other file, including every file Parse refuses.
func scanEntries(data []byte, section string) (has, ok bool) {
	inSection := false // in the first section named section
	seen := false      // that section was found
	ok = scanFile(data, func(name []byte) {
		inSection = !seen && string(name) == section
		seen = seen || inSection
	}, func(_, _ []byte) {
		has = has || inSection
	})
	return has, ok
}

// scanFile reads a unit file in one scan of its lines, calling header
// with the name of each section and entry with the key and value of each
// entry (stripped as Parse strips them), in file order. It reads only
// files of LF-terminated lines without continuations, carriage returns,
// NUL bytes, byte order marks or invalid UTF-8, and reports false, having
// made calls for a part of the file only, for any other file (including
// every file Parse refuses).
func scanFile(data []byte, header func(name []byte), entry func(key, value []byte)) bool {
	if bytes.IndexByte(data, '\r') >= 0 || bytes.IndexByte(data, 0) >= 0 ||
		bytes.Contains(data, []byte(bom)) || !utf8.Valid(data) {
		return false
	}
	anySection := false
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > MaxLineLen {
			return false
		}
		t := bytes.TrimLeft(line, whitespace)
		if len(t) == 0 {
			continue
		}
		if t[0] == '#' || t[0] == ';' {
			continue
		}
		if endsEscaped(line) {
			return false // a continuation
		}
		t = bytes.TrimRight(t, whitespace)
		if t[0] == '[' {
			if t[len(t)-1] != ']' {
				return false
			}
			name := t[1 : len(t)-1]
			for _, c := range name {
				if c < 0x20 || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
					return false
				}
			}
			anySection = true
			header(name)
			continue
		}
		eq := bytes.IndexByte(t, '=')
		if !anySection || eq <= 0 {
			return false
		}
		entry(bytes.Trim(t[:eq], whitespace), bytes.Trim(t[eq+1:], whitespace))
	}
	return true
}
