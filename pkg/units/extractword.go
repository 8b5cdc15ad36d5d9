package units

import (
	"errors"
	"fmt"
)

// errBadEscape and errUnbalanced are extractWordMode's errors; on
// errBadEscape, extractWord tries again keeping unknown escapes.
var (
	errBadEscape  = errors.New("invalid escape")
	errUnbalanced = errors.New("unbalanced quoting")
)

// extractWord is systemd's extract_first_word_and_warn with
// EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE: it tries strictly first and, when an
// escape is invalid, again keeping unknown escapes verbatim.
func extractWord(s string) (word, rest string, found bool, err error) {
	word, rest, found, err = extractWordMode(s, false)
	if err == errBadEscape {
		word, rest, found, err = extractWordMode(s, true)
	}
	if err != nil {
		return "", "", false, fmt.Errorf("unbalanced quoting in %q; close every quote and do not end a quoted word with a backslash", s)
	}
	return word, rest, found, nil
}

func extractWordMode(s string, relax bool) (word, rest string, found bool, err error) {
	i := 0
	for i < len(s) && isWS(s[i]) {
		i++
	}
	if i == len(s) {
		return "", "", false, nil
	}
	// A word without quotes or escapes is the text as written: no copy.
	j := i
	for j < len(s) && !isWS(s[j]) && s[j] != '\\' && s[j] != '\'' && s[j] != '"' {
		j++
	}
	if j == len(s) {
		return s[i:], "", true, nil
	}
	if isWS(s[j]) {
		k := j
		for k < len(s) && isWS(s[k]) {
			k++
		}
		return s[i:j], s[k:], true, nil
	}
	b := make([]byte, 0, len(s)-i)
	b = append(b, s[i:j]...)
	i = j
	var quote byte
	for {
		if i >= len(s) {
			if quote != 0 {
				return "", "", false, errUnbalanced
			}
			return string(b), "", true, nil
		}
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i >= len(s) {
				if relax && quote == 0 {
					return string(append(b, '\\')), "", true, nil
				}
				if relax {
					return "", "", false, errUnbalanced
				}
				return "", "", false, errBadEscape
			}
			out, n, ok := cunescapeOne(s[i:])
			switch {
			case ok:
				b = append(b, out...)
				i += n
			case relax:
				b = append(b, '\\', s[i])
				i++
			default:
				return "", "", false, errBadEscape
			}
		case quote != 0:
			if c != quote {
				b = append(b, c)
			} else {
				quote = 0
			}
			i++
		case c == '\'' || c == '"':
			quote = c
			i++
		case isWS(c):
			for i < len(s) && isWS(s[i]) {
				i++
			}
			return string(b), s[i:], true, nil
		default:
			b = append(b, c)
			i++
		}
	}
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// cunescapeOne decodes the escape sequence following a backslash as
// systemd's cunescape_one does (NUL refused), returning the bytes it stands
// for and how many input bytes it used.
func cunescapeOne(p string) (out []byte, n int, ok bool) {
	switch p[0] {
	case 'a':
		return []byte{'\a'}, 1, true
	case 'b':
		return []byte{'\b'}, 1, true
	case 'f':
		return []byte{'\f'}, 1, true
	case 'n':
		return []byte{'\n'}, 1, true
	case 'r':
		return []byte{'\r'}, 1, true
	case 't':
		return []byte{'\t'}, 1, true
	case 'v':
		return []byte{'\v'}, 1, true
	case '\\', '"', '\'':
		return []byte{p[0]}, 1, true
	case 's':
		return []byte{' '}, 1, true
	case 'x':
		if len(p) < 3 {
			return nil, 0, false
		}
		a, b := unhex(p[1]), unhex(p[2])
		if a < 0 || b < 0 || a == 0 && b == 0 {
			return nil, 0, false
		}
		return []byte{byte(a<<4 | b)}, 3, true
	case 'u', 'U':
		digits := 4
		if p[0] == 'U' {
			digits = 8
		}
		if len(p) < 1+digits {
			return nil, 0, false
		}
		var c uint32
		for i := 1; i <= digits; i++ {
			d := unhex(p[i])
			if d < 0 {
				return nil, 0, false
			}
			c = c<<4 | uint32(d)
		}
		if c == 0 || p[0] == 'U' && !unicharValid(c) {
			return nil, 0, false
		}
		return encodeUnichar(c), 1 + digits, true
	case '0', '1', '2', '3', '4', '5', '6', '7':
		if len(p) < 3 {
			return nil, 0, false
		}
		var m int
		for i := 0; i < 3; i++ {
			if p[i] < '0' || p[i] > '7' {
				return nil, 0, false
			}
			m = m<<3 | int(p[i]-'0')
		}
		if m == 0 || m > 255 {
			return nil, 0, false
		}
		return []byte{byte(m)}, 3, true
	}
	return nil, 0, false
}

// unicharValid is systemd's unichar_is_valid.
func unicharValid(c uint32) bool {
	return c < 0x110000 && c&0xFFFFF800 != 0xD800 && (c < 0xFDD0 || c > 0xFDEF) && c&0xFFFE != 0xFFFE
}

// encodeUnichar is systemd's utf8_encode_unichar, which (unlike Go's
// encoder) writes surrogates as three bytes instead of U+FFFD.
func encodeUnichar(c uint32) []byte {
	switch {
	case c < 0x80:
		return []byte{byte(c)}
	case c < 0x800:
		return []byte{0xc0 | byte(c>>6), 0x80 | byte(c&0x3f)}
	case c < 0x10000:
		return []byte{0xe0 | byte(c>>12), 0x80 | byte(c>>6&0x3f), 0x80 | byte(c&0x3f)}
	}
	return []byte{0xf0 | byte(c>>18&0x07), 0x80 | byte(c>>12&0x3f), 0x80 | byte(c>>6&0x3f), 0x80 | byte(c&0x3f)}
}
