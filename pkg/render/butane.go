package render

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// ButaneVersion is one version of a Butane variant's config spec and the
// Ignition spec version Butane translates it to.
type ButaneVersion struct {
	Variant         string // "fcos" or "flatcar"
	Version         string // the Butane spec version, "1.5.0"
	IgnitionVersion string // what Butane translates it to, "3.4.0"
}

// butaneVersions is Butane's own table (config/config.go of Butane
// v0.25.1), for the variants hostprov writes and their stable versions.
// fcos 1.2.0 and 1.3.0 both give Ignition 3.2.0; flatcar has no version
// for Ignition 3.0.0 to 3.2.0 or 3.5.0.
var butaneVersions = []ButaneVersion{
	{"fcos", "1.0.0", "3.0.0"},
	{"fcos", "1.1.0", "3.1.0"},
	{"fcos", "1.2.0", "3.2.0"},
	{"fcos", "1.3.0", "3.2.0"},
	{"fcos", "1.4.0", "3.3.0"},
	{"fcos", "1.5.0", "3.4.0"},
	{"fcos", "1.6.0", "3.5.0"},
	{"flatcar", "1.0.0", "3.3.0"},
	{"flatcar", "1.1.0", "3.4.0"},
}

// ButaneVariants are the Butane variants hostprov writes; the first is the
// default. Their unit syntax is the same; the variant tells Butane which
// operating system the config is for.
var butaneVariants = []string{"fcos", "flatcar"}

// ButaneVersions returns the Butane spec versions hostprov writes, per
// variant oldest first, each with the Ignition version it translates to.
func ButaneVersions() []ButaneVersion {
	return append([]ButaneVersion(nil), butaneVersions...)
}

// ButaneVariants returns the Butane variants hostprov writes, the default
// first.
func ButaneVariants() []string {
	return append([]string(nil), butaneVariants...)
}

// ButaneOptions say how to write a Butane config. The zero value asks for
// the fcos variant at the version that translates to
// DefaultIgnitionVersion (fcos 1.5.0; flatcar 1.1.0).
//
// Version and IgnitionVersion say the same thing in two ways, and either is
// enough: Version is the Butane spec version; IgnitionVersion picks the
// newest Butane version of the variant that translates to that Ignition
// version (fcos 1.3.0 for 3.2.0). When both are given they must agree.
type ButaneOptions struct {
	Variant         string // "fcos" (the default) or "flatcar"
	Version         string // the Butane spec version
	IgnitionVersion string // the Ignition spec version the config must translate to
}

// Resolve returns the options with the variant and both versions filled in,
// or an *OptionError naming what cannot be met: an unknown variant or
// version, a version the variant does not have, or an Ignition version no
// Butane version of the variant translates to.
func (o ButaneOptions) Resolve() (ButaneOptions, error) {
	if o.Variant == "" {
		o.Variant = butaneVariants[0]
	}
	var ofVariant []ButaneVersion
	for _, v := range butaneVersions {
		if v.Variant == o.Variant {
			ofVariant = append(ofVariant, v)
		}
	}
	if len(ofVariant) == 0 {
		return o, &OptionError{Option: "variant",
			Msg: fmt.Sprintf("unknown Butane variant %q: use %s", o.Variant, strings.Join(butaneVariants, " or "))}
	}
	if o.IgnitionVersion != "" {
		if _, err := (IgnitionOptions{Version: o.IgnitionVersion}).Resolve(); err != nil {
			return o, err
		}
	}
	switch {
	case o.Version != "":
		for _, v := range ofVariant {
			if v.Version != o.Version {
				continue
			}
			if o.IgnitionVersion != "" && o.IgnitionVersion != v.IgnitionVersion {
				fix := "give only one of the two versions"
				if w, ok := newestFor(ofVariant, o.IgnitionVersion); ok {
					fix = fmt.Sprintf("%s %s translates to %s; or %s", o.Variant, w.Version, o.IgnitionVersion, fix)
				}
				return o, &OptionError{Option: "butane-version",
					Msg: fmt.Sprintf("Butane %s %s translates to Ignition %s, not %s: %s",
						o.Variant, o.Version, v.IgnitionVersion, o.IgnitionVersion, fix)}
			}
			o.IgnitionVersion = v.IgnitionVersion
			return o, nil
		}
		return o, &OptionError{Option: "butane-version",
			Msg: fmt.Sprintf("Butane %s has no version %q: use %s", o.Variant, o.Version, butaneMapping(ofVariant))}
	default:
		want := o.IgnitionVersion
		if want == "" {
			want = DefaultIgnitionVersion
		}
		if v, ok := newestFor(ofVariant, want); ok {
			o.Version, o.IgnitionVersion = v.Version, want
			return o, nil
		}
		return o, &OptionError{Option: "ignition-version",
			Msg: fmt.Sprintf("no Butane %s version translates to Ignition %s: use %s", o.Variant, want, butaneMapping(ofVariant))}
	}
}

// newestFor returns the newest of a variant's versions that translates to
// the Ignition version.
func newestFor(ofVariant []ButaneVersion, ignition string) (ButaneVersion, bool) {
	for i := len(ofVariant) - 1; i >= 0; i-- {
		if ofVariant[i].IgnitionVersion == ignition {
			return ofVariant[i], true
		}
	}
	return ButaneVersion{}, false
}

// butaneMapping lists a variant's versions for an error message:
// "1.0.0 (Ignition 3.3.0) or 1.1.0 (Ignition 3.4.0)".
func butaneMapping(vs []ButaneVersion) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%s (Ignition %s)", v.Version, v.IgnitionVersion)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// Butane returns a Butane config that installs the units and that Butane
// translates to exactly what Ignition emits for the same units at
// opts' IgnitionVersion: the same decisions about contents, enabled and
// mask (see ignitionUnits), as YAML written with yaml.v3's own encoder.
// Unit and drop-in contents are literal block scalars ("|") where that
// keeps every byte, and double-quoted scalars otherwise (see literalSafe).
// The error is an *OptionError for options that cannot be met.
func Butane(us []Unit, opts ButaneOptions) ([]byte, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	ius, err := ignitionUnits(us)
	if err != nil {
		return nil, err
	}
	doc := mapping("variant", str(opts.Variant), "version", str(opts.Version))
	if len(ius) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, u := range ius {
			n := mapping("name", str(u.name))
			if u.enabled != nil {
				add(n, "enabled", boolean(*u.enabled))
			}
			if u.mask != nil {
				add(n, "mask", boolean(*u.mask))
			}
			if u.contents != nil {
				add(n, "contents", text(*u.contents))
			}
			if len(u.dropins) > 0 {
				ds := &yaml.Node{Kind: yaml.SequenceNode}
				for _, d := range u.dropins {
					ds.Content = append(ds.Content, mapping("name", str(d.name), "contents", text(*d.contents)))
				}
				add(n, "dropins", ds)
			}
			list.Content = append(list.Content, n)
		}
		add(doc, "systemd", mapping("units", list))
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("writing the Butane config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing the Butane config: %w", err)
	}
	return buf.Bytes(), nil
}

// mapping returns a mapping node of key, value pairs, in order.
func mapping(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < len(kv); i += 2 {
		add(n, kv[i].(string), kv[i+1].(*yaml.Node))
	}
	return n
}

func add(m *yaml.Node, key string, value *yaml.Node) {
	m.Content = append(m.Content, str(key), value)
}

// str is a string scalar; the encoder quotes it where it would otherwise
// read as another type ("yes", "1.0").
func str(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func boolean(b bool) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(b)}
}

// text is a file's contents: a literal block, readable as the file itself,
// where that keeps the bytes, and a double-quoted scalar, where every byte
// is written as an escape if need be, otherwise.
func text(s string) *yaml.Node {
	n := str(s)
	if literalSafe(s) {
		n.Style = yaml.LiteralStyle
	} else {
		n.Style = yaml.DoubleQuotedStyle
	}
	return n
}

// literalSafe reports whether s reads back from a literal block scalar
// written by yaml.v3 as exactly s, and looks in it like what it is. A
// literal block cannot hold, or yaml.v3 writes wrongly:
//   - a leading line break or a first line starting with a space or a tab
//     (the indentation indicator yaml.v3 writes then is wrong for tabs and
//     for leading empty lines);
//   - text without a final line break, or only line breaks (chomping
//     indicators: correct, but "|-" and "|+" are easy to misread);
//   - trailing spaces or tabs on a line (invisible, and stripped by editors;
//     yaml.v3 itself refuses a block for trailing spaces);
//   - carriage returns, other control characters, and the characters YAML
//     treats as line breaks or a byte order mark (U+0085, U+2028, U+2029,
//     U+FEFF), which a block cannot keep;
//   - invalid UTF-8, which YAML cannot hold at all.
//
// yaml.v3 may still choose a quoted style for a text this accepts (it does
// for some non-ASCII text); that keeps the bytes too.
func literalSafe(s string) bool {
	if !utf8.ValidString(s) || s == "" || s[0] == '\n' || s[0] == ' ' || s[0] == '\t' ||
		!strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
		return false
	}
	prev := rune(0)
	for _, r := range s {
		switch {
		case r == '\n':
			if prev == ' ' || prev == '\t' {
				return false
			}
		case r == '\t':
		case r < 0x20, r == 0x7f, r == 0x85, r == 0x2028, r == 0x2029, r == 0xfeff:
			return false
		}
		prev = r
	}
	return true
}
