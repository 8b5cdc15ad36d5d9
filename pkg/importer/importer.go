// Package importer turns configs written for other tools into hostprov
// hook specs: a Butane config, an Ignition config (spec 3.0.0 to 3.5.0), a
// cloud-config, or a kops Cluster or InstanceGroup manifest.
//
// What has a hostprov equivalent becomes hooks: a unit a hook with
// useRawName and useRawManifest, a drop-in a drop-in of its unit's hook,
// a masked unit a mask hook, and files, directories, links, users and
// groups entries of one hook named after the config's file ("-storage"
// appended where that name is a unit's).
// Everything else (disks, partitions, file systems, RAID, kernel
// arguments, cloud-init modules other than write_files, users and groups,
// ...) is a warning at its place in the input, with a hint, and goes to
// the leftovers (Result.Rest, see rest.go), a config of the input's kind
// that render --merge takes back; kops fields other than hooks and
// fileAssets are warned about and stay kops's. Input that cannot be read
// is an error at its place, and there is no spec then.
package importer

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
	"github.com/hostprov/hostprov/pkg/units"
)

// Formats of input Import reads.
const (
	FormatButane      = "butane"
	FormatIgnition    = "ignition"
	FormatCloudConfig = "cloud-config"
	FormatKops        = "kops"
)

// Input is a config to import.
type Input struct {
	// Name is the file's name, for positions and for the spec's
	// metadata.name; "-" or "" for standard input.
	Name string
	Data []byte
	// Dir is where a Butane config's local: files are read from: the
	// file's own directory.
	Dir string
	// Locals says that the spec will be written to a directory, beside
	// which the contents it cannot hold as text (bytes that are not
	// UTF-8) may go as local: files (Result.Locals). Without it they go
	// to the leftovers.
	Locals bool

	// InstanceGroup and Role say, for kops manifests with several
	// InstanceGroups, which machine's hooks to import, as render's
	// --instance-group and --role do (kops.Manifests.Hooks). Other
	// inputs must leave them empty.
	InstanceGroup string
	Role          kops.Role

	// setName is specName of Name, once Name is the name for positions.
	setName string
}

// Result is an imported spec.
type Result struct {
	// Format is what the input was (FormatButane, ...).
	Format string
	// IgnitionVersion is, for a Butane or Ignition input, the Ignition
	// spec version of the config (for Butane: of its translation), which
	// render --ignition-version can write again.
	IgnitionVersion string
	// Name is the spec's metadata.name.
	Name  string
	Hooks []hooks.Hook
	// Spec is the spec document, as hooks.Encode writes it.
	Spec []byte
	// Rest is the leftovers: what the spec cannot say, as a config of
	// RestFormat (the input's own kind, see rest.go) that render --merge
	// takes back; nil when the spec says everything. A Butane input's
	// leftovers are an Ignition config when Butane would not give them
	// back as they are (a warning says so).
	Rest       []byte
	RestFormat string
	// Locals are the files the spec names with local:, by that name (a
	// path relative to the spec's directory), to be written there: file
	// contents that are not text (see Input.Locals).
	Locals map[string][]byte

	// origins are where each hook and its entries come from, index for
	// index with Hooks.
	origins []hookOrigins
	// rest marks the parts of the input that go to the leftovers: of
	// generic (an Ignition config as data, also a Butane config's
	// translation) or of doc (a cloud-config).
	rest    marks
	generic any
	doc     *yaml.Node
	// butaneVariant and butaneVersion are a Butane input's.
	butaneVariant, butaneVersion string
}

// displayName is the input's name in positions.
func displayName(name string) string {
	if name == "" || name == "-" {
		return hooks.StdinName
	}
	return name
}

// specName is the metadata.name of the spec imported from the file name:
// its base name without the extensions configs are written with (".bu",
// ".ign", ".json", ".yaml", ".yml", ".ign.json", ...), with every
// character a set name cannot have replaced by '-', at most 200
// characters; "imported" for standard input or a name that leaves nothing.
func specName(file string) string {
	if file == "" || file == "-" {
		return "imported"
	}
	base := filepath.Base(file)
	for {
		ext := filepath.Ext(base)
		switch strings.ToLower(ext) {
		case ".bu", ".butane", ".ign", ".ignition", ".json", ".yaml", ".yml", ".cfg", ".cloud-config", ".txt":
			base = strings.TrimSuffix(base, ext)
			continue
		}
		break
	}
	var b strings.Builder
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".-")
	// Short enough that the storage hook's name, with -storage and
	// .service, is a unit name systemd accepts (at most 255 bytes).
	if len(name) > 200 {
		name = name[:200]
	}
	if hooks.CheckSetName(name) != nil {
		return "imported"
	}
	return name
}

// storageHookName is the name of the hook that carries an import's files,
// directories, links, users and groups: the spec's name, with "-storage"
// appended while a unit hook renders the unit that name would
// ("NAME.service") or the name ends in a unit type (it would read as a
// unit's name).
func storageHookName(setName string, hs []hooks.Hook) string {
	taken := map[string]bool{}
	for i := range hs {
		taken[compile.UnitName(&hs[i])] = true
	}
	name := setName
	for taken[name+".service"] || units.Type(name) != "" {
		name += "-storage"
	}
	return name
}

// Import reads in as whatever config it is and returns the spec made of
// it, with a warning for each part that has no hostprov equivalent. The
// Result is nil when the diagnostics hold an error.
func Import(in Input) (*Result, hooks.Diagnostics) {
	file := displayName(in.Name)
	in.setName = specName(in.Name)
	in.Name = file
	var (
		res   *Result
		diags hooks.Diagnostics
	)
	format, yerr := detect(in.Data)
	if format != FormatKops && (in.InstanceGroup != "" || in.Role != "") {
		return nil, hooks.Diagnostics{{Severity: hooks.Error, Pos: hooks.Position{File: file},
			Message: "--instance-group and --role choose among the InstanceGroups of kops manifests, and this is no kops manifest",
			Hint:    "leave them out"}}
	}
	switch format {
	case FormatIgnition:
		res, diags = importIgnition(in, in.Data, nil, "")
	case FormatButane:
		res, diags = importButane(in)
	case FormatCloudConfig:
		res, diags = importCloudConfig(in)
	case FormatKops:
		res, diags = importKops(in)
	case "":
		if yerr != nil {
			// A Butane config or kops manifest with a YAML mistake:
			// where it is says more than "no config of a known kind".
			se := yamlnode.Syntax(yerr, in.Data)
			diags = hooks.Diagnostics{{Severity: hooks.Error, Pos: hooks.Position{File: file, Line: se.Line, Column: se.Column},
				Message: "the file is not valid YAML: " + se.Message,
				Hint:    se.Hint + " (import reads Butane configs, cloud-configs and kops manifests as YAML)"}}
			break
		}
		fallthrough
	default:
		diags = hooks.Diagnostics{{Severity: hooks.Error, Pos: firstPos(file, in.Data),
			Message: "not a config hostprov imports: neither an Ignition config (a JSON object), a Butane config (variant: and version:), a cloud-config (#cloud-config on the first line) nor a kops Cluster or InstanceGroup",
			Hint:    "give import a Butane, Ignition, cloud-config or kops manifest file"}}
	}
	diags.Sort()
	if res == nil || diags.HasErrors(false) {
		return nil, diags
	}
	res.Name = in.setName
	// What import writes must be a spec hostprov renders: it is checked
	// as validate does. An entry hostprov's checks refuse goes to the
	// leftovers, with a warning at its place in the input that says why,
	// and the rest is checked again; a problem import cannot place is an
	// error.
	var spec []byte
	for {
		var err error
		spec, err = hooks.Encode(res.Name, res.Hooks)
		if err != nil {
			return nil, append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file},
				Message: "cannot write the spec: " + err.Error()})
		}
		_, bad := compile.Build(res.Name+".yaml", spec, compile.Options{Locals: res.Locals})
		if !bad.HasErrors(false) {
			break
		}
		refused, ok := res.refuse(bad, file)
		if len(refused) == 0 {
			// Nothing left to keep out: the errors are import's own.
			ok = false
		}
		if !ok {
			for _, d := range bad {
				if d.Severity != hooks.Error {
					continue
				}
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file},
					Message: "the imported spec is not valid: " + d.String(),
					Hint:    "change the input so that this part has a hostprov equivalent, or leave it out"})
			}
			return nil, diags
		}
		diags = append(diags, refused...)
	}
	res.Spec = spec
	if d := res.leftovers(file); d != nil {
		diags = append(diags, *d)
		if d.Severity == hooks.Error {
			diags.Sort()
			return nil, diags
		}
	}
	diags.Sort()
	return res, diags
}

// leftovers writes res.Rest of the marked parts of the input, and says
// so when they cannot be written as a config of the input's kind.
func (res *Result) leftovers(file string) *hooks.Diagnostic {
	if len(res.rest) == 0 {
		return nil
	}
	switch res.Format {
	case FormatIgnition, FormatButane:
		b, err := ignitionRest(res.generic, res.rest, res.IgnitionVersion)
		if err != nil {
			return &hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file},
				Message: "cannot write the leftovers: " + err.Error(),
				Hint:    "leave out of the input what the warnings say goes to the leftovers, and import it again"}
		}
		res.Rest, res.RestFormat = b, FormatIgnition
		if res.Format == FormatButane && b != nil {
			if bu, ok := butaneRest(b, res.butaneVariant, res.butaneVersion); ok {
				res.Rest, res.RestFormat = bu, FormatButane
			} else {
				return &hooks.Diagnostic{Severity: hooks.Warning, Pos: hooks.Position{File: file},
					Message: "the leftovers are written as an Ignition config: Butane does not translate them back as they are when written as a Butane config",
					Hint:    "render --merge takes an Ignition config as well as a Butane one"}
			}
		}
	case FormatCloudConfig:
		b, err := cloudConfigRest(res.doc, res.rest)
		if err != nil {
			return &hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file},
				Message: "cannot write the leftovers: " + err.Error(),
				Hint:    "leave out of the input what the warnings say goes to the leftovers, and import it again"}
		}
		res.Rest, res.RestFormat = b, FormatCloudConfig
	}
	return nil
}

// detect says what config data is, by its first bytes and its head. When
// it is none it knows, the error is the YAML syntax error that stopped the
// reading, if one did: a Butane config or kops manifest with a mistake in
// its YAML would otherwise be taken for a config of no known kind.
func detect(data []byte) (string, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if bytes.HasPrefix(trimmed, []byte("{")) {
		return FormatIgnition, nil
	}
	if bytes.HasPrefix(data, []byte("#cloud-config")) {
		return FormatCloudConfig, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var head struct {
			Variant    string `yaml:"variant"`
			Version    string `yaml:"version"`
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
		}
		err := dec.Decode(&head)
		var te *yaml.TypeError
		switch {
		case err == io.EOF:
			return "", nil
		case errors.As(err, &te):
			// Valid YAML of another shape ("variant: [x]"): not a
			// config import knows.
			return "", nil
		case err != nil:
			return "", err
		case head.Variant != "":
			return FormatButane, nil
		case strings.HasPrefix(head.APIVersion, "kops.k8s.io/") && (head.Kind == "Cluster" || head.Kind == "InstanceGroup"):
			return FormatKops, nil
		}
	}
}

// firstPos is the first line of data that holds anything, for a
// diagnostic about the whole file.
func firstPos(file string, data []byte) hooks.Position {
	for i, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			return hooks.Position{File: file, Line: i + 1, Column: 1}
		}
	}
	return hooks.Position{File: file}
}

// warn is a diagnostic for a part of the input kept out of the spec.
func warn(pos hooks.Position, path, msg, hint string) hooks.Diagnostic {
	return hooks.Diagnostic{Severity: hooks.Warning, Pos: pos, Path: path, Message: msg, Hint: hint}
}
