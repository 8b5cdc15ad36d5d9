package ignition

import (
	"bytes"
	"encoding/json"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/ignconfig"
)

// DefaultVersion is the Ignition spec version emitted when none is
// asked for: the newest that both Fedora CoreOS and Flatcar accept.
const DefaultVersion = ignconfig.DefaultVersion

// Versions returns the Ignition spec versions Render can emit, oldest
// first ("3.0.0" … "3.5.0").
func Versions() []string { return ignconfig.Versions() }

// Options say how to write an Ignition config. The zero value
// asks for DefaultVersion, compact.
type Options struct {
	// Version is the Ignition spec version, one of Versions;
	// empty means DefaultVersion.
	Version string
	// Pretty indents the JSON.
	Pretty bool
	// Storage is what the config writes besides the units: files,
	// directories and links under storage:, users and groups under
	// passwd:.
	Storage compile.Storage
}

// Resolve returns the options with the defaults filled in, or an
// *render.OptionError when the version is not one hostprov emits.
func (o Options) Resolve() (Options, error) {
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	return o, ignconfig.CheckVersion(o.Version)
}

// Render returns an Ignition config that installs the units, built with
// the Go types of the spec version opts asks for: each unit goes to
// systemd.units[] with its contents, enabled, mask and drop-ins as Ignition
// means them (see ignconfig.Units). The JSON is compact unless opts.Pretty,
// has no empty objects or lists, and ends with a newline. The error is an
// *render.OptionError for options that cannot be met, and says which unit is at
// fault for contents JSON cannot carry.
func Render(us []compile.Unit, opts Options) ([]byte, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	ius, err := ignconfig.Units(us)
	if err != nil {
		return nil, err
	}
	st, err := ignconfig.Storage(opts.Storage, opts.Version)
	if err != nil {
		return nil, err
	}
	return writeConfig(opts.Version, ius, ignconfig.Passwd(opts.Storage), st, opts.Pretty)
}

// writeConfig writes the config of version with the units, compact or
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
func writeConfig(version string, us []ignconfig.Unit, pw *ignconfig.PasswdJSON, st *ignconfig.StorageJSON, pretty bool) ([]byte, error) {
	size := 64
	for _, u := range us {
		size += unitSize(u.Name, u.Contents)
		for _, d := range u.Dropins {
			size += unitSize(d.Name, d.Contents)
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
			b = appendUnit(b, u)
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
