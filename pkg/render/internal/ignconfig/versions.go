package ignconfig

import (
	"fmt"
	"strings"

	c30 "github.com/coreos/ignition/v2/config/v3_0"
	v30 "github.com/coreos/ignition/v2/config/v3_0/types"
	c31 "github.com/coreos/ignition/v2/config/v3_1"
	v31 "github.com/coreos/ignition/v2/config/v3_1/types"
	c32 "github.com/coreos/ignition/v2/config/v3_2"
	v32 "github.com/coreos/ignition/v2/config/v3_2/types"
	c33 "github.com/coreos/ignition/v2/config/v3_3"
	v33 "github.com/coreos/ignition/v2/config/v3_3/types"
	c34 "github.com/coreos/ignition/v2/config/v3_4"
	v34 "github.com/coreos/ignition/v2/config/v3_4/types"
	c35 "github.com/coreos/ignition/v2/config/v3_5"
	v35 "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/vcontext/report"

	"github.com/hostprov/hostprov/pkg/render"
)

// DefaultVersion is the Ignition spec version emitted when none is
// asked for: the newest that both Fedora CoreOS and Flatcar accept.
const DefaultVersion = "3.4.0"

// Specs are the Ignition spec versions hostprov emits, oldest
// first, each with what is particular to it: its config is built with that
// version's own Go types and read with its own parsers. What
// the Ignition output writes directly is checked against the JSON
// of those types, so that it has exactly each version's field names and
// shape.
//
// What hostprov emits is systemd.units[] with name, contents, enabled, mask
// and dropins[] (name, contents). Every one of them is in the schema of
// every version from 3.0.0 to 3.5.0 (config/v3_*/schema/ignition.json of
// Ignition v2.24.0 define the unit and drop-in objects identically, and
// their Unit and Dropin validation is the same code), so no spec is too new
// for an old version and Ignition refuses none of them for its version.
// When a later Ignition version adds a unit feature hostprov uses, the
// check for it belongs here, with an error naming the lowest version that
// has it.
var Specs = []struct {
	Version string
	Config  func(us []Unit) any
	// parse takes a config of this version only, compat any older one
	// too, translated up with Ignition's own translation.
	parse, compat func([]byte) (any, report.Report, error)
}{
	{v30.MaxVersion.String(), func(us []Unit) any {
		return v30.Config{Ignition: v30.Ignition{Version: v30.MaxVersion.String()}, Systemd: v30.Systemd{Units: versionUnits[v30.Unit](us)}}
	}, parser(c30.Parse), parser(c30.ParseCompatibleVersion)},
	{v31.MaxVersion.String(), func(us []Unit) any {
		return v31.Config{Ignition: v31.Ignition{Version: v31.MaxVersion.String()}, Systemd: v31.Systemd{Units: versionUnits[v31.Unit](us)}}
	}, parser(c31.Parse), parser(c31.ParseCompatibleVersion)},
	{v32.MaxVersion.String(), func(us []Unit) any {
		return v32.Config{Ignition: v32.Ignition{Version: v32.MaxVersion.String()}, Systemd: v32.Systemd{Units: versionUnits[v32.Unit](us)}}
	}, parser(c32.Parse), parser(c32.ParseCompatibleVersion)},
	{v33.MaxVersion.String(), func(us []Unit) any {
		return v33.Config{Ignition: v33.Ignition{Version: v33.MaxVersion.String()}, Systemd: v33.Systemd{Units: versionUnits[v33.Unit](us)}}
	}, parser(c33.Parse), parser(c33.ParseCompatibleVersion)},
	{v34.MaxVersion.String(), func(us []Unit) any {
		return v34.Config{Ignition: v34.Ignition{Version: v34.MaxVersion.String()}, Systemd: v34.Systemd{Units: versionUnits[v34.Unit](us)}}
	}, parser(c34.Parse), parser(c34.ParseCompatibleVersion)},
	{v35.MaxVersion.String(), func(us []Unit) any {
		return v35.Config{Ignition: v35.Ignition{Version: v35.MaxVersion.String()}, Systemd: v35.Systemd{Units: versionUnits[v35.Unit](us)}}
	}, parser(c35.Parse), parser(c35.ParseCompatibleVersion)},
}

// Versions returns the Ignition spec versions hostprov emits,
// oldest first ("3.0.0" … "3.5.0").
func Versions() []string {
	vs := make([]string, len(Specs))
	for i, s := range Specs {
		vs[i] = s.Version
	}
	return vs
}

func specIndex(version string) int {
	for i, s := range Specs {
		if s.Version == version {
			return i
		}
	}
	return -1
}

// CheckVersion returns an *render.OptionError when version is not one
// hostprov emits (Versions), nil when it is.
func CheckVersion(version string) error {
	if specIndex(version) < 0 {
		return &render.OptionError{Option: "ignition-version",
			Msg: fmt.Sprintf("unknown Ignition spec version %q: use one of %s", version, strings.Join(Versions(), ", "))}
	}
	return nil
}
