package hooks

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a Diagnostic stops rendering.
type Severity int

const (
	// Error means the spec cannot be rendered; nothing is written.
	Error Severity = iota
	// Warning means the spec renders, but probably not as meant.
	// Callers that run with --strict treat warnings as errors.
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Position is a place in a source file. Line and Column count from 1;
// a zero Line means the position is unknown (for example, a whole file).
type Position struct {
	File   string
	Line   int
	Column int
}

func (p Position) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Column == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// Diagnostic is one problem found in a spec. Problems are data: every
// check reports all it finds, each with where it is and what to do about it.
type Diagnostic struct {
	Severity Severity
	Pos      Position
	// Path is the place in the spec's document tree, such as
	// "hooks[1].manifest" or "hooks[0].env.PATH".
	Path    string
	Message string
	// Hint says how to fix the problem; it may be empty.
	Hint string
}

// String formats d the way compilers do, so that editors can jump to it:
//
//	hooks.yaml:12:5: error: hooks[1].name: "a/b" contains "/" (hint: ...)
func (d Diagnostic) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: ", d.Pos, d.Severity)
	if d.Path != "" {
		b.WriteString(d.Path)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Hint != "" {
		b.WriteString("\n\thint: ")
		b.WriteString(d.Hint)
	}
	return b.String()
}

// Diagnostics is a list of problems, in the order of their positions once
// sorted with Sort.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error, or, when strict is
// true, whether there is any diagnostic at all.
func (ds Diagnostics) HasErrors(strict bool) bool {
	for _, d := range ds {
		if d.Severity == Error || strict {
			return true
		}
	}
	return false
}

// Sort orders the diagnostics by file, line and column, keeping the order
// in which they were found for problems at the same place.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// Error makes Diagnostics usable as an error; it lists every diagnostic,
// one per line.
func (ds Diagnostics) Error() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}
