package butane

import (
	"bytes"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/ignconfig"
	"github.com/hostprov/hostprov/pkg/render/internal/yamlwrite"
)

// Version is one version of a Butane variant's config spec and the
// Ignition spec version Butane translates it to.
type Version struct {
	Variant         string // "fcos" or "flatcar"
	Version         string // the Butane spec version, "1.5.0"
	IgnitionVersion string // what Butane translates it to, "3.4.0"
}

// versions is Butane's own table (config/config.go of Butane
// v0.25.1), for the variants hostprov writes and their stable versions.
// fcos 1.2.0 and 1.3.0 both give Ignition 3.2.0; flatcar has no version
// for Ignition 3.0.0 to 3.2.0 or 3.5.0.
var versions = []Version{
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

// Variants are the Butane variants hostprov writes; the first is the
// default. Their unit syntax is the same; the variant tells Butane which
// operating system the config is for.
var variants = []string{"fcos", "flatcar"}

// Versions returns the Butane spec versions hostprov writes, per
// variant oldest first, each with the Ignition version it translates to.
func Versions() []Version {
	return append([]Version(nil), versions...)
}

// Variants returns the Butane variants hostprov writes, the default
// first.
func Variants() []string {
	return append([]string(nil), variants...)
}

// Options say how to write a Butane config. The zero value asks for
// the fcos variant at the version that translates to
// ignconfig.DefaultVersion (fcos 1.5.0; flatcar 1.1.0).
//
// Version and IgnitionVersion say the same thing in two ways, and either is
// enough: Version is the Butane spec version; IgnitionVersion picks the
// newest Butane version of the variant that translates to that Ignition
// version (fcos 1.3.0 for 3.2.0). When both are given they must agree.
type Options struct {
	Variant         string // "fcos" (the default) or "flatcar"
	Version         string // the Butane spec version
	IgnitionVersion string // the Ignition spec version the config must translate to
	// Storage is what the config writes besides the units: files,
	// directories and links. Files from local: are written as local:,
	// relative to the spec's directory: translate with butane
	// --files-dir set to it. fcos 1.0.0 has no local:, so there their
	// bytes are written into the config.
	Storage compile.Storage
}

// Resolve returns the options with the variant and both versions filled in,
// or an *render.OptionError naming what cannot be met: an unknown variant or
// version, a version the variant does not have, or an Ignition version no
// Butane version of the variant translates to.
func (o Options) Resolve() (Options, error) {
	if o.Variant == "" {
		o.Variant = variants[0]
	}
	var ofVariant []Version
	for _, v := range versions {
		if v.Variant == o.Variant {
			ofVariant = append(ofVariant, v)
		}
	}
	if len(ofVariant) == 0 {
		return o, &render.OptionError{Option: "variant",
			Msg: fmt.Sprintf("unknown Butane variant %q: use %s", o.Variant, strings.Join(variants, " or "))}
	}
	if o.IgnitionVersion != "" {
		if err := ignconfig.CheckVersion(o.IgnitionVersion); err != nil {
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
				return o, &render.OptionError{Option: "butane-version",
					Msg: fmt.Sprintf("Butane %s %s translates to Ignition %s, not %s: %s",
						o.Variant, o.Version, v.IgnitionVersion, o.IgnitionVersion, fix)}
			}
			o.IgnitionVersion = v.IgnitionVersion
			return o, nil
		}
		return o, &render.OptionError{Option: "butane-version",
			Msg: fmt.Sprintf("Butane %s has no version %q: use %s", o.Variant, o.Version, versionList(ofVariant))}
	default:
		want := o.IgnitionVersion
		if want == "" {
			want = ignconfig.DefaultVersion
		}
		if v, ok := newestFor(ofVariant, want); ok {
			o.Version, o.IgnitionVersion = v.Version, want
			return o, nil
		}
		return o, &render.OptionError{Option: "ignition-version",
			Msg: fmt.Sprintf("no Butane %s version translates to Ignition %s: use %s", o.Variant, want, versionList(ofVariant))}
	}
}

// newestFor returns the newest of a variant's versions that translates to
// the Ignition version.
func newestFor(ofVariant []Version, ignition string) (Version, bool) {
	for i := len(ofVariant) - 1; i >= 0; i-- {
		if ofVariant[i].IgnitionVersion == ignition {
			return ofVariant[i], true
		}
	}
	return Version{}, false
}

// versionList lists a variant's versions for an error message:
// "1.0.0 (Ignition 3.3.0) or 1.1.0 (Ignition 3.4.0)".
func versionList(vs []Version) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("%s (Ignition %s)", v.Version, v.IgnitionVersion)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// Render returns a Butane config that installs the units and that Butane
// translates to exactly what Ignition emits for the same units at
// opts' IgnitionVersion: the same decisions about contents, enabled and
// mask (see ignconfig.Units), as YAML written with yaml.v3's own encoder.
// Unit and drop-in contents are literal block scalars ("|") where that
// keeps every byte, and double-quoted scalars otherwise (see yamlnode.BlockSafe).
// The error is an *render.OptionError for options that cannot be met.
func Render(us []compile.Unit, opts Options) ([]byte, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	ius, err := ignconfig.Units(us)
	if err != nil {
		return nil, err
	}
	doc := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "variant", yamlnode.Str(opts.Variant), "version", yamlnode.Str(opts.Version))
	// What the Ignition version cannot carry is refused here as there.
	if _, err := ignconfig.Storage(opts.Storage, opts.IgnitionVersion); err != nil {
		return nil, err
	}
	st, err := storageYAML(opts.Storage, opts.IgnitionVersion)
	if err != nil {
		return nil, err
	}
	if pw := passwdYAML(opts.Storage); pw != nil {
		yamlnode.Pairs(doc, "passwd", pw)
	}
	if st != nil {
		yamlnode.Pairs(doc, "storage", st)
	}
	if len(ius) > 0 {
		// A unit's entry shares what is the same in all of them (the
		// keys, true and false) with the others, and its mapping and
		// name come from one array: a node each for every key and value
		// of 10,000 units was most of what the output allocated.
		k := struct{ name, enabled, mask, contents, dropins, yes, no *yaml.Node }{
			yamlnode.Str("name"), yamlnode.Str("enabled"), yamlnode.Str("mask"), yamlnode.Str("contents"), yamlnode.Str("dropins"),
			yamlnode.Bool(true), yamlnode.Bool(false)}
		boolean := func(v bool) *yaml.Node {
			if v {
				return k.yes
			}
			return k.no
		}
		list := &yaml.Node{Kind: yaml.SequenceNode, Content: make([]*yaml.Node, 0, len(ius))}
		for _, u := range ius {
			ns := new([2]yaml.Node)
			ns[1] = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: u.Name}
			content := make([]*yaml.Node, 0, 10)
			content = append(content, k.name, &ns[1])
			if u.Enabled != nil {
				content = append(content, k.enabled, boolean(*u.Enabled))
			}
			if u.Mask != nil {
				content = append(content, k.mask, boolean(*u.Mask))
			}
			if u.Contents != nil {
				content = append(content, k.contents, yamlnode.Text(u.Contents))
			}
			if len(u.Dropins) > 0 {
				ds := &yaml.Node{Kind: yaml.SequenceNode}
				for _, d := range u.Dropins {
					ds.Content = append(ds.Content, &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
						k.name, yamlnode.Str(d.Name), k.contents, yamlnode.Text(d.Contents)}})
				}
				content = append(content, k.dropins, ds)
			}
			ns[0] = yaml.Node{Kind: yaml.MappingNode, Content: content}
			list.Content = append(list.Content, &ns[0])
		}
		yamlnode.Pairs(doc, "systemd", yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "units", list))
	}
	var buf bytes.Buffer
	buf.Grow(yamlwrite.Size(doc))
	if err := yamlwrite.Encode(&buf, doc); err != nil {
		return nil, fmt.Errorf("writing the Butane config: %w", err)
	}
	return buf.Bytes(), nil
}
