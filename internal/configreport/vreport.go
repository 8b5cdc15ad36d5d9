// Package configreport turns the reports of Ignition's and Butane's config
// packages (vcontext reports) into hostprov diagnostics: the same
// severity, the position the report marks, and the path written the way
// hostprov writes paths.
package configreport

import (
	"fmt"
	"strings"

	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// Diagnostics are the entries of rpt, each an error when fatal and a
// warning otherwise, with "TOOL: " before the message and hint as the
// hint. at turns the line and column an entry marks into a position; it is
// called with 0, 0 for an entry that marks none.
func Diagnostics(rpt report.Report, at func(line, col int64) hooks.Position, tool, hint string) hooks.Diagnostics {
	var diags hooks.Diagnostics
	for _, e := range rpt.Entries {
		sev := hooks.Warning
		if e.Kind.IsFatal() {
			sev = hooks.Error
		}
		pos := at(0, 0)
		if e.Marker.StartP != nil {
			pos = at(e.Marker.Start())
		}
		diags = append(diags, hooks.Diagnostic{Severity: sev, Pos: pos, Path: Path(e.Context), Message: tool + ": " + e.Message, Hint: hint})
	}
	return diags
}

// Path is a report's path the way hostprov writes paths:
// storage.files[0].path.
func Path(c path.ContextPath) string { return Join(c.Path) }

// Join writes the elements of a path into a config (keys and list
// indexes) the way hostprov writes paths: storage.files[0].path.
func Join(elems []any) string {
	var b strings.Builder
	for _, e := range elems {
		switch e := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", e)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, e)
		}
	}
	return b.String()
}
