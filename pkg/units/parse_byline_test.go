package units

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parseByLine is Parse as it was before it read the lines out of one copy
// of the text: each line converted to a string of its own. Parse must
// give the same File.
func parseByLine(data []byte) (*File, error) {
	p := parser{f: &File{}}
	bomSeen := false
	lineNum := 0
	for len(data) > 0 {
		var line []byte
		line, data = nextLineBytes(data)
		lineNum++
		if i := bytes.IndexByte(line, 0); i >= 0 {
			return nil, &ParseError{Line: lineNum, Column: i + 1, Msg: "the line contains a NUL byte; unit files are text, so remove it"}
		}
		if len(line) > MaxLineLen {
			return nil, &ParseError{Line: lineNum, Column: MaxLineLen + 1, Msg: fmt.Sprintf("the line is %d bytes long; systemd refuses a line of %d bytes or more, and the unit would not load", len(line), longLineMax), Hint: LongLineHint}
		}
		if !bomSeen && bytes.HasPrefix(line, []byte(bom)) {
			line = line[len(bom):]
			bomSeen = true
		}
		// systemd skips comment lines before it looks at continuations, so
		// a comment inside a continued entry neither ends nor extends it.
		if t := bytes.TrimLeft(line, whitespace); len(t) > 0 && (t[0] == '#' || t[0] == ';') {
			p.comment(string(t))
			continue
		}
		if p.cont != nil {
			if len(p.cont)+len(line) > MaxJoinedLen {
				return nil, &ParseError{Line: lineNum, Column: 1, Msg: fmt.Sprintf("the line continued from line %d is %d bytes long when joined; systemd refuses one of more than %d bytes, and the unit would not load", p.contLine, len(p.cont)+len(line), MaxJoinedLen), Hint: LongLineHint}
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
		text, start := string(line), lineNum
		if p.cont != nil {
			text, start = string(p.cont), p.contLine
			p.cont = nil
		}
		if err := p.line(text, start); err != nil {
			return nil, err
		}
	}
	if p.cont != nil {
		// systemd parses a continuation left open at the end of the file.
		if err := p.line(string(p.cont), p.contLine); err != nil {
			return nil, err
		}
	}
	if len(p.f.Sections) == 0 {
		// Without sections every comment is "before the first section".
		p.f.Header = append(p.f.Header, p.pending...)
	} else {
		p.f.Trailer = append(p.f.Trailer, p.pending...)
	}
	return p.f, nil
}

func nextLineBytes(data []byte) (line, rest []byte) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		return data, nil
	}
	line, rest = data[:i], data[i+1:]
	if len(rest) > 0 && (rest[0] == '\r' || rest[0] == '\n') && rest[0] != data[i] {
		rest = rest[1:]
	}
	return line, rest
}

func checkParseByLine(t *testing.T, data []byte) {
	t.Helper()
	f, err := Parse(data)
	want, werr := parseByLine(data)
	if fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Fatalf("Parse(%q): error %v, want %v", data, err, werr)
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Fatalf("Parse(%q) (-want +got):\n%s", data, diff)
	}
}

func TestParseByLine(t *testing.T) {
	for _, seed := range append(append([]string{realistic}, scanSeeds...), canonicalSeeds...) {
		checkParseByLine(t, []byte(seed))
	}
}

func FuzzParseByLine(f *testing.F) {
	for _, seed := range append(append([]string{realistic}, canonicalSeeds...), scanSeeds[:len(scanSeeds)-2]...) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParseByLine(t, data)
	})
}
