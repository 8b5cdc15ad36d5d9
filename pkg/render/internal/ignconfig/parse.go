package ignconfig

import (
	"github.com/coreos/vcontext/report"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// parser makes a version's parse function one of Specs' row type.
func parser[T any](f func([]byte) (T, report.Report, error)) func([]byte) (any, report.Report, error) {
	return func(b []byte) (any, report.Report, error) { return f(b) }
}

// Parse is Ignition's own parse of a config of version, one of Versions,
// and that version only.
func Parse(version string, data []byte) (any, report.Report, error) {
	return Specs[specIndex(version)].parse(data)
}

// Validate is Ignition's own parse and validation of a config of
// version, as diagnostics without positions (for generated output).
func Validate(version string, data []byte) hooks.Diagnostics {
	i := specIndex(version)
	if i < 0 {
		return hooks.Diagnostics{{Severity: hooks.Error, Message: "unknown Ignition version " + version}}
	}
	_, rpt, err := Specs[i].parse(data)
	diags := reportDiags(rpt, func(int64, int64) hooks.Position { return hooks.Position{} }, "Ignition")
	if err != nil && !diags.HasErrors(false) {
		diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Message: "Ignition: " + err.Error()})
	}
	return diags
}
