package ignconfig

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/units"
)

// Unit is what Ignition is told about one unit, the same in every spec
// version; each version's own types carry it into JSON.
//
// contents are the unit's own bytes, not a copy (nil: no contents): the
// copies into strings were a tenth of what a render of many hooks
// allocated, and came right when the heap was at its largest. They are
// checked to be UTF-8 (Units) and only read.
type Unit struct {
	Name     string
	Contents []byte
	Enabled  *bool
	Mask     *bool
	Dropins  []Dropin
}

// Dropin is what Ignition is told about one drop-in of a Unit.
type Dropin struct {
	Name     string
	Contents []byte // never nil: a drop-in always has contents, if empty
}

// BytesPtr is b as the *string of Ignition's types; nil for nil.
func BytesPtr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// Units says what Ignition is to do with each unit. Both the
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
func Units(us []compile.Unit) ([]Unit, error) {
	files := make(map[string][]byte, len(us))
	for _, u := range us {
		if u.Contents != nil && !u.Mask {
			files[u.Name] = u.Contents
		}
	}
	out := make([]Unit, 0, len(us))
	for _, u := range us {
		iu := Unit{Name: u.Name, Enabled: u.Enabled}
		if u.Contents != nil && !u.Mask {
			if err := checkUTF8(u.Name, u.Contents); err != nil {
				return nil, err
			}
			iu.Contents = u.Contents
		}
		if u.Mask {
			iu.Mask = boolPtr(true)
			if u.Enabled != nil && *u.Enabled {
				iu.Enabled = nil
			}
		}
		if iu.Enabled != nil && *iu.Enabled {
			if f, ok := installFile(u.Name, files); ok && !hasInstallEntries(f) {
				iu.Enabled = nil
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
			iu.Dropins = append(iu.Dropins, Dropin{Name: d.Name, Contents: c})
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

// dropinType is the Dropin of each Ignition spec version's types, which
// every version from 3.0.0 to 3.5.0 defines alike, tags and all: a
// version that changed it would no longer build here.
type dropinType interface {
	~struct {
		Contents *string `json:"contents,omitempty"`
		Name     string  `json:"name"`
	}
}

// unitType is the Unit of each Ignition spec version's types, alike in
// every version but for the version's own Dropin.
type unitType[D dropinType] interface {
	~struct {
		Contents *string `json:"contents,omitempty"`
		Dropins  []D     `json:"dropins,omitempty"`
		Enabled  *bool   `json:"enabled,omitempty"`
		Mask     *bool   `json:"mask,omitempty"`
		Name     string  `json:"name"`
	}
}

// versionUnits turns the version-neutral units into one version's types.
func versionUnits[U unitType[D], D dropinType](us []Unit) []U {
	out := make([]U, 0, len(us))
	for _, u := range us {
		var ds []D
		for _, d := range u.Dropins {
			ds = append(ds, D{Name: d.Name, Contents: BytesPtr(d.Contents)})
		}
		out = append(out, U{Name: u.Name, Contents: BytesPtr(u.Contents), Enabled: u.Enabled, Mask: u.Mask, Dropins: ds})
	}
	return out
}
