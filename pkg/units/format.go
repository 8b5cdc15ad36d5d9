package units

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
)

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
			if err := CheckExec(e.Value); !unitLoads(err) {
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
