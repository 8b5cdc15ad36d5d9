package ignition

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/hostprov/hostprov/pkg/render/internal/ignconfig"
)

// unitSize is about the size of a unit's or drop-in's object in
// the JSON: its fields' names and punctuation, its name, and its contents
// with an allowance for escapes (a line break is two bytes, "\n").
func unitSize(name string, contents []byte) int {
	return 64 + len(name) + len(contents) + len(contents)/16
}

// appendUnit appends a unit's object, its keys in the sorted order
// encoding/json gives ignitionUnitJSON's fields, the empty ones left out
// as omitempty leaves them out.
func appendUnit(b []byte, u ignconfig.Unit) []byte {
	b = append(b, '{')
	if u.Contents != nil {
		b = append(b, `"contents":`...)
		b = appendJSONString(b, u.Contents)
		b = append(b, ',')
	}
	if len(u.Dropins) > 0 {
		b = append(b, `"dropins":[`...)
		for i, d := range u.Dropins {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if d.Contents != nil {
				b = append(b, `"contents":`...)
				b = appendJSONString(b, d.Contents)
				b = append(b, ',')
			}
			b = append(b, `"name":`...)
			b = appendJSONString(b, d.Name)
			b = append(b, '}')
		}
		b = append(b, "],"...)
	}
	if u.Enabled != nil {
		b = appendJSONBool(append(b, `"enabled":`...), *u.Enabled)
		b = append(b, ',')
	}
	if u.Mask != nil {
		b = appendJSONBool(append(b, `"mask":`...), *u.Mask)
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	b = appendJSONString(b, u.Name)
	return append(b, '}')
}

func appendJSONBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendJSON appends v as encoding/json writes it without escaping HTML
// (as writeConfig always wrote the config), without the encoder's
// trailing newline.
func appendJSON(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it with SetEscapeHTML(false): '"' and '\\', the control
// characters (as \b, \f, \n, \r, \t, or \u00XX), U+2028 and U+2029 (which
// JavaScript takes for line breaks), and each byte that is not UTF-8 as
// \ufffd. Everything else is copied.
func appendJSONString[S ~string | ~[]byte](b []byte, s S) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
