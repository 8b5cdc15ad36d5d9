package ignconfig

import (
	v30 "github.com/coreos/ignition/v2/config/v3_0"
	v31 "github.com/coreos/ignition/v2/config/v3_1"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v33 "github.com/coreos/ignition/v2/config/v3_3"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/vcontext/report"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// ignitionParser parses one Ignition spec version with Ignition's own
// config package: parse takes that version only, compat any older one too,
// translated up with Ignition's own translation.
type ignitionParser struct {
	parse, compat func([]byte) (any, report.Report, error)
}

func parser[T any](f func([]byte) (T, report.Report, error)) func([]byte) (any, report.Report, error) {
	return func(b []byte) (any, report.Report, error) { return f(b) }
}

var parsers = map[string]ignitionParser{
	"3.0.0": {parser(v30.Parse), parser(v30.ParseCompatibleVersion)},
	"3.1.0": {parser(v31.Parse), parser(v31.ParseCompatibleVersion)},
	"3.2.0": {parser(v32.Parse), parser(v32.ParseCompatibleVersion)},
	"3.3.0": {parser(v33.Parse), parser(v33.ParseCompatibleVersion)},
	"3.4.0": {parser(v34.Parse), parser(v34.ParseCompatibleVersion)},
	"3.5.0": {parser(v35.Parse), parser(v35.ParseCompatibleVersion)},
}

// Parse is Ignition's own parse of a config of version, one of Versions,
// and that version only.
func Parse(version string, data []byte) (any, report.Report, error) {
	return parsers[version].parse(data)
}

// Validate is Ignition's own parse and validation of a config of
// version, as diagnostics without positions (for generated output).
func Validate(version string, data []byte) hooks.Diagnostics {
	p, ok := parsers[version]
	if !ok {
		return hooks.Diagnostics{{Severity: hooks.Error, Message: "unknown Ignition version " + version}}
	}
	_, rpt, err := p.parse(data)
	diags := reportDiags(rpt, func(int64, int64) hooks.Position { return hooks.Position{} }, "Ignition")
	if err != nil && !diags.HasErrors(false) {
		diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Message: "Ignition: " + err.Error()})
	}
	return diags
}
