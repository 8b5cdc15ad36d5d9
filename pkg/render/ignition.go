package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	v30 "github.com/coreos/ignition/v2/config/v3_0/types"
	v31 "github.com/coreos/ignition/v2/config/v3_1/types"
	v32 "github.com/coreos/ignition/v2/config/v3_2/types"
	v33 "github.com/coreos/ignition/v2/config/v3_3/types"
	v34 "github.com/coreos/ignition/v2/config/v3_4/types"
	v35 "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/units"
)

// DefaultIgnitionVersion is the Ignition spec version emitted when none is
// asked for: the newest that both Fedora CoreOS and Flatcar accept.
const DefaultIgnitionVersion = "3.4.0"

// ignitionSpecs are the Ignition spec versions hostprov emits, oldest
// first. Each builds its config with that version's own Go types: what
// writeIgnition writes directly is checked against the JSON
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
var ignitionSpecs = []struct {
	version string
	config  func(us []ignUnit) any
}{
	{v30.MaxVersion.String(), func(us []ignUnit) any {
		return v30.Config{Ignition: v30.Ignition{Version: v30.MaxVersion.String()}, Systemd: v30.Systemd{Units: convertUnits(us,
			func(u ignUnit, ds []v30.Dropin) v30.Unit {
				return v30.Unit{Name: u.name, Contents: bytesPtr(u.contents), Enabled: u.enabled, Mask: u.mask, Dropins: ds}
			},
			func(d ignDropin) v30.Dropin { return v30.Dropin{Name: d.name, Contents: bytesPtr(d.contents)} })}}
	}},
	{v31.MaxVersion.String(), func(us []ignUnit) any {
		return v31.Config{Ignition: v31.Ignition{Version: v31.MaxVersion.String()}, Systemd: v31.Systemd{Units: convertUnits(us,
			func(u ignUnit, ds []v31.Dropin) v31.Unit {
				return v31.Unit{Name: u.name, Contents: bytesPtr(u.contents), Enabled: u.enabled, Mask: u.mask, Dropins: ds}
			},
			func(d ignDropin) v31.Dropin { return v31.Dropin{Name: d.name, Contents: bytesPtr(d.contents)} })}}
	}},
	{v32.MaxVersion.String(), func(us []ignUnit) any {
		return v32.Config{Ignition: v32.Ignition{Version: v32.MaxVersion.String()}, Systemd: v32.Systemd{Units: convertUnits(us,
			func(u ignUnit, ds []v32.Dropin) v32.Unit {
				return v32.Unit{Name: u.name, Contents: bytesPtr(u.contents), Enabled: u.enabled, Mask: u.mask, Dropins: ds}
			},
			func(d ignDropin) v32.Dropin { return v32.Dropin{Name: d.name, Contents: bytesPtr(d.contents)} })}}
	}},
	{v33.MaxVersion.String(), func(us []ignUnit) any {
		return v33.Config{Ignition: v33.Ignition{Version: v33.MaxVersion.String()}, Systemd: v33.Systemd{Units: convertUnits(us,
			func(u ignUnit, ds []v33.Dropin) v33.Unit {
				return v33.Unit{Name: u.name, Contents: bytesPtr(u.contents), Enabled: u.enabled, Mask: u.mask, Dropins: ds}
			},
			func(d ignDropin) v33.Dropin { return v33.Dropin{Name: d.name, Contents: bytesPtr(d.contents)} })}}
	}},
	{v34.MaxVersion.String(), func(us []ignUnit) any {
		return v34.Config{Ignition: v34.Ignition{Version: v34.MaxVersion.String()}, Systemd: v34.Systemd{Units: convertUnits(us,
			func(u ignUnit, ds []v34.Dropin) v34.Unit {
				return v34.Unit{Name: u.name, Contents: bytesPtr(u.contents), Enabled: u.enabled, Mask: u.mask, Dropins: ds}
			},
			func(d ignDropin) v34.Dropin { return v34.Dropin{Name: d.name, Contents: bytesPtr(d.contents)} })}}
	}},
	{v35.MaxVersion.String(), func(us []ignUnit) any {
		return v35.Config{Ignition: v35.Ignition{Version: v35.MaxVersion.String()}, Systemd: v35.Systemd{Units: convertUnits(us,
			func(u ignUnit, ds []v35.Dropin) v35.Unit {
				return v35.Unit{Name: u.name, Contents: bytesPtr(u.contents), Enabled: u.enabled, Mask: u.mask, Dropins: ds}
			},
			func(d ignDropin) v35.Dropin { return v35.Dropin{Name: d.name, Contents: bytesPtr(d.contents)} })}}
	}},
}

// IgnitionVersions returns the Ignition spec versions Ignition can emit,
// oldest first ("3.0.0" … "3.5.0").
func IgnitionVersions() []string {
	vs := make([]string, len(ignitionSpecs))
	for i, s := range ignitionSpecs {
		vs[i] = s.version
	}
	return vs
}

// IgnitionOptions say how to write an Ignition config. The zero value
// asks for DefaultIgnitionVersion, compact.
type IgnitionOptions struct {
	// Version is the Ignition spec version, one of IgnitionVersions;
	// empty means DefaultIgnitionVersion.
	Version string
	// Pretty indents the JSON.
	Pretty bool
	// Storage is what the config writes besides the units: files,
	// directories and links under storage:, users and groups under
	// passwd:.
	Storage compile.Storage
}

// Resolve returns the options with the defaults filled in, or an
// *OptionError when the version is not one hostprov emits.
func (o IgnitionOptions) Resolve() (IgnitionOptions, error) {
	if o.Version == "" {
		o.Version = DefaultIgnitionVersion
	}
	if ignitionSpec(o.Version) < 0 {
		return o, &OptionError{Option: "ignition-version",
			Msg: fmt.Sprintf("unknown Ignition spec version %q: use one of %s", o.Version, strings.Join(IgnitionVersions(), ", "))}
	}
	return o, nil
}

func ignitionSpec(version string) int {
	for i, s := range ignitionSpecs {
		if s.version == version {
			return i
		}
	}
	return -1
}

// OptionError is an output option that cannot be met: an unknown version
// or variant, or a combination no tool can translate. It is a mistake in
// what was asked for, not in the spec or the units.
type OptionError struct {
	Option string // the option's name, as the command line spells it
	Msg    string
}

func (e *OptionError) Error() string { return e.Msg }

// Ignition returns an Ignition config that installs the units, built with
// the Go types of the spec version opts asks for: each unit goes to
// systemd.units[] with its contents, enabled, mask and drop-ins as Ignition
// means them (see ignitionUnits). The JSON is compact unless opts.Pretty,
// has no empty objects or lists, and ends with a newline. The error is an
// *OptionError for options that cannot be met, and says which unit is at
// fault for contents JSON cannot carry.
func Ignition(us []compile.Unit, opts IgnitionOptions) ([]byte, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	ius, err := ignitionUnits(us)
	if err != nil {
		return nil, err
	}
	st, err := ignitionStorage(opts.Storage, opts.Version)
	if err != nil {
		return nil, err
	}
	return writeIgnition(opts.Version, ius, ignitionPasswd(opts.Storage), st, opts.Pretty)
}

// ignUnit is what Ignition is told about one unit, the same in every spec
// version; each version's own types carry it into JSON.
//
// contents are the unit's own bytes, not a copy (nil: no contents): the
// copies into strings were a tenth of what a render of many hooks
// allocated, and came right when the heap was at its largest. They are
// checked to be UTF-8 (ignitionUnits) and only read.
type ignUnit struct {
	name     string
	contents []byte
	enabled  *bool
	mask     *bool
	dropins  []ignDropin
}

type ignDropin struct {
	name     string
	contents []byte // never nil: a drop-in always has contents, if empty
}

// bytesPtr is b as the *string of Ignition's types; nil for nil.
func bytesPtr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// ignitionUnits says what Ignition is to do with each unit. Both the
// Ignition and the Butane output are made from it, so that Butane
// translates to the same config.
//
//   - contents: the unit file, byte for byte; none for a unit that only gets
//     drop-ins, is only enabled or disabled, or is masked.
//   - mask: true for a masked unit. It keeps enabled: false (Ignition then
//     also disables the unit, as Butane writes it) but never enabled: true,
//     which would contradict the mask.
//   - enabled: as the spec says, except that enabled: true is left out when
//     enabling cannot do anything: the unit file given here has no [Install]
//     entries (for an instance without a file of its own, its template's
//     file). systemctl enable then only says the unit "has no installation
//     config", and Ignition warns about it when it parses the config
//     (NoInstallSection). The render pipeline has told the user already
//     (checkInstall, fatal under --strict), so the output stays free of a
//     warning that says nothing new. A unit file that is not given here
//     (a unit of the image) is enabled as asked.
//
// Contents must be valid UTF-8: JSON strings cannot carry anything else, and
// encoding/json would replace the bytes silently.
func ignitionUnits(us []compile.Unit) ([]ignUnit, error) {
	files := make(map[string][]byte, len(us))
	for _, u := range us {
		if u.Contents != nil && !u.Mask {
			files[u.Name] = u.Contents
		}
	}
	out := make([]ignUnit, 0, len(us))
	for _, u := range us {
		iu := ignUnit{name: u.Name, enabled: u.Enabled}
		if u.Contents != nil && !u.Mask {
			if err := checkUTF8(u.Name, u.Contents); err != nil {
				return nil, err
			}
			iu.contents = u.Contents
		}
		if u.Mask {
			iu.mask = boolPtr(true)
			if u.Enabled != nil && *u.Enabled {
				iu.enabled = nil
			}
		}
		if iu.enabled != nil && *iu.enabled {
			if f, ok := installFile(u.Name, files); ok && !hasInstallEntries(f) {
				iu.enabled = nil
			}
		}
		for _, d := range u.Dropins {
			if err := checkUTF8(u.Name+".d/"+d.Name, d.Contents); err != nil {
				return nil, err
			}
			c := d.Contents
			if c == nil {
				c = []byte{}
			}
			iu.dropins = append(iu.dropins, ignDropin{name: d.Name, contents: c})
		}
		out = append(out, iu)
	}
	return out, nil
}

func checkUTF8(name string, b []byte) error {
	if !utf8.Valid(b) {
		return fmt.Errorf("%s: contents are not valid UTF-8, which Ignition's JSON cannot carry", name)
	}
	return nil
}

// installFile returns the file whose [Install] section systemctl enable
// reads for the unit: its own, or, for an instance (name@inst.type) without
// one, its template's (name@.type). ok is false when the file is not among
// the units, so what it says is not known here.
func installFile(name string, files map[string][]byte) ([]byte, bool) {
	if f, ok := files[name]; ok {
		return f, true
	}
	at := strings.IndexByte(name, '@')
	typ := units.Type(name)
	if at < 0 || typ == "" || strings.HasSuffix(name, "@."+typ) {
		return nil, false
	}
	f, ok := files[name[:at]+"@."+typ]
	return f, ok
}

// hasInstallEntries reports whether a unit file has an [Install] section
// with at least one entry, which is what Ignition looks for (an empty
// section gives no unit options). A file that does not parse (never the case
// for rendered units) counts as having one, so that enabled stays as asked.
func hasInstallEntries(contents []byte) bool {
	has, err := units.HasEntries(contents, units.SectionInstall)
	return has || err != nil
}

func boolPtr(b bool) *bool { return &b }

// convertUnits turns the version-neutral units into one version's types.
func convertUnits[U, D any](us []ignUnit, unit func(ignUnit, []D) U, dropin func(ignDropin) D) []U {
	out := make([]U, 0, len(us))
	for _, u := range us {
		var ds []D
		for _, d := range u.dropins {
			ds = append(ds, dropin(d))
		}
		out = append(out, unit(u, ds))
	}
	return out
}

// writeIgnition writes the config of version with the units, compact or
// indented, ending with a newline: the JSON of an Ignition config as
// Ignition's own types of every spec version marshal it once the empty
// objects and lists and the nulls are pruned (as Butane's output has
// none), that is the version, passwd, storage and systemd.units, and of a
// unit and a drop-in only the fields hostprov sets, in the sorted order of
// their keys. That gives the bytes of marshalling the version's Config,
// unmarshalling it into generic maps, pruning and marshalling again
// (TestIgnitionDirect proves it for every version), at a fraction of the
// cost: that round trip was most of the Ignition output's time.
//
// The units are written straight into one buffer of about the config's
// size: through encoding/json, a config of 10,000 units was built in the
// encoder's buffer, which grows by doubling, and then copied into
// another, so that at the end of a render those buffers were three
// quarters of the live heap (14 of 19 MB), and a third of the render's
// peak. passwd and storage, small, still go through encoding/json. The
// bytes are those encoding/json writes: the strings are escaped as it
// escapes them with SetEscapeHTML(false) (FuzzAppendJSONString), and an
// indented config is the compact one run through json.Indent, which is
// what the encoder does with SetIndent (TestIgnitionDirect holds both to
// every version's own types).
func writeIgnition(version string, us []ignUnit, pw *ignitionPasswdJSON, st *ignitionStorageJSON, pretty bool) ([]byte, error) {
	size := 64
	for _, u := range us {
		size += ignitionUnitSize(u.name, u.contents)
		for _, d := range u.dropins {
			size += ignitionUnitSize(d.name, d.contents)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"ignition":{"version":`...)
	b = appendJSONString(b, version)
	b = append(b, '}')
	var err error
	if pw != nil {
		b = append(b, `,"passwd":`...)
		if b, err = appendJSON(b, pw); err != nil {
			return nil, err
		}
	}
	if st != nil {
		b = append(b, `,"storage":`...)
		if b, err = appendJSON(b, st); err != nil {
			return nil, err
		}
	}
	if len(us) > 0 {
		b = append(b, `,"systemd":{"units":[`...)
		for i, u := range us {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendIgnitionUnit(b, u)
		}
		b = append(b, "]}"...)
	}
	b = append(b, "}\n"...)
	if !pretty {
		return b, nil
	}
	var out bytes.Buffer
	out.Grow(2 * len(b))
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
