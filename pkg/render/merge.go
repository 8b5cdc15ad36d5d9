package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"github.com/coreos/go-semver/semver"
	"github.com/coreos/ignition/v2/config/merge"
	ignutil "github.com/coreos/ignition/v2/config/util"
	v30 "github.com/coreos/ignition/v2/config/v3_0"
	v31 "github.com/coreos/ignition/v2/config/v3_1"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v33 "github.com/coreos/ignition/v2/config/v3_3"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	vjson "github.com/coreos/vcontext/json"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/configreport"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// MergeFile is a config of the user's to merge into an output
// (render --merge FILE): its name for messages, its bytes, and the
// directory that local: references of a Butane config are read from (the
// file's own directory).
type MergeFile struct {
	Name string
	Data []byte
	Dir  string
}

// ignitionParser parses one Ignition spec version with Ignition's own
// config package: parse takes that version only, compat any older one too,
// translated up with Ignition's own translation.
type ignitionParser struct {
	parse, compat func([]byte) (any, report.Report, error)
}

func parser[T any](f func([]byte) (T, report.Report, error)) func([]byte) (any, report.Report, error) {
	return func(b []byte) (any, report.Report, error) { return f(b) }
}

var ignitionParsers = map[string]ignitionParser{
	"3.0.0": {parser(v30.Parse), parser(v30.ParseCompatibleVersion)},
	"3.1.0": {parser(v31.Parse), parser(v31.ParseCompatibleVersion)},
	"3.2.0": {parser(v32.Parse), parser(v32.ParseCompatibleVersion)},
	"3.3.0": {parser(v33.Parse), parser(v33.ParseCompatibleVersion)},
	"3.4.0": {parser(v34.Parse), parser(v34.ParseCompatibleVersion)},
	"3.5.0": {parser(v35.Parse), parser(v35.ParseCompatibleVersion)},
}

// MergeIgnitionConfig returns own, hostprov's Ignition config of the
// units (and whatever else the spec puts there) at opts.Version, with the user's configs merged into it, in order, by
// Ignition's own merge (config/merge): hostprov's config is the parent,
// each file a child, the way Ignition merges a config named in
// ignition.config.merge at boot. A file is an Ignition config of any spec
// version up to opts.Version, translated up with Ignition's own code, or a
// Butane config, translated with Butane (its local: files read from the
// file's directory) to an Ignition version up to opts.Version.
//
// A unit both a file and the spec make must agree (see checkUnitClashes);
// every disagreement, and every problem Ignition or Butane find in a file,
// is a diagnostic with its place. The output is nil when there is an error.
// The merged config is checked with Ignition's own validation of
// opts.Version, and written with its keys sorted and without empty objects,
// lists or nulls, compact unless opts.Pretty.
//
// Besides units, a path that own's storage and a file both
// have (files, directories, links) is an error at the file's entry unless
// the two entries are the same, and so is a user or group both make with
// a field both set to other values: Ignition's merge would let the
// file's win silently. opts.Storage, the spec's storage that own was
// written from, says where the spec has them.
func MergeIgnitionConfig(own []byte, us []compile.Unit, opts IgnitionOptions, files []MergeFile) ([]byte, hooks.Diagnostics, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, nil, err
	}
	p := ignitionParsers[opts.Version]
	merged, rpt, err := p.parse(own)
	if err != nil || rpt.IsFatal() {
		return nil, nil, fmt.Errorf("Ignition refuses hostprov's own config: %v %s", err, rpt)
	}
	var diags hooks.Diagnostics
	for _, f := range files {
		cfg, d := userIgnition(f, opts.Version, "--format ignition")
		diags = append(diags, d...)
		if cfg == nil {
			continue
		}
		nu, err := neutralUnitsOf(cfg)
		if err != nil {
			return nil, nil, err
		}
		diags = append(diags, checkUnitClashes(us, nu, f)...)
		d, err = checkStorageClashes(own, cfg, f, opts.Storage, us)
		if err != nil {
			return nil, nil, err
		}
		diags = append(diags, d...)
		d, err = checkAccountClashes(own, cfg, f, opts.Storage, us)
		if err != nil {
			return nil, nil, err
		}
		diags = append(diags, d...)
		merged, _ = merge.MergeStructTranscribe(merged, cfg)
	}
	diags.Sort()
	if diags.HasErrors(false) {
		return nil, diags, nil
	}
	out, err := prunedJSON(merged, opts.Pretty)
	if err != nil {
		return nil, nil, err
	}
	if _, rpt, err := p.parse(out); err != nil || rpt.IsFatal() {
		// Each config is valid on its own, but not merged: say so at
		// the files.
		var names []string
		for _, f := range files {
			names = append(names, f.Name)
		}
		msg := fmt.Sprint(err)
		if err == nil {
			msg = rpt.String()
		}
		diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: strings.Join(names, ", ")},
			Message: "Ignition refuses the merged config: " + strings.TrimSpace(msg),
			Hint:    "change your config so that, merged with hostprov's units, it is valid"})
		return nil, diags, nil
	}
	return out, diags, nil
}

// userIgnition reads a --merge file as an Ignition config of version (or
// older), from Ignition JSON or from a Butane config. It returns the
// config as version's types, or nil with the diagnostics that say why not.
func userIgnition(f MergeFile, version, format string) (any, hooks.Diagnostics) {
	at := func(line, col int64) hooks.Position {
		return hooks.Position{File: f.Name, Line: int(line), Column: int(col)}
	}
	fail := func(pos hooks.Position, msg, hint string) (any, hooks.Diagnostics) {
		return nil, hooks.Diagnostics{{Severity: hooks.Error, Pos: pos, Message: msg, Hint: hint}}
	}
	raw := f.Data
	var diags hooks.Diagnostics
	// said are the warnings Butane gave of the file: Butane checks its
	// output with Ignition's own validation, so Ignition would say them
	// again below, at no place.
	said := map[string]bool{}
	isJSON := bytes.HasPrefix(bytes.TrimLeft(raw, " \t\r\n"), []byte("{"))
	if !isJSON {
		var head struct {
			Variant string `yaml:"variant"`
			Version string `yaml:"version"`
		}
		if err := yaml.Unmarshal(raw, &head); err != nil || head.Variant == "" {
			return fail(hooks.Position{File: f.Name}, "not an Ignition config (a JSON object) nor a Butane config (YAML with variant: and version:)",
				"give --merge an Ignition config or a Butane config")
		}
		out, rpt, err := butane.TranslateBytes(raw, butanecommon.TranslateBytesOptions{TranslateOptions: butanecommon.TranslateOptions{FilesDir: f.Dir}})
		diags = append(diags, reportDiags(rpt, at, "Butane")...)
		for _, e := range rpt.Entries {
			said[e.Message] = true
		}
		if err != nil {
			if !diags.HasErrors(false) {
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: f.Name},
					Message: "Butane cannot translate this config: " + err.Error(), Hint: "check it with butane --strict"})
			}
			return nil, diags
		}
		raw = out
		// Positions in Butane's output are not in the user's file.
		at = func(int64, int64) hooks.Position { return hooks.Position{File: f.Name} }
	}
	v, _, err := ignutil.GetConfigVersion(raw)
	if err != nil {
		d := hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: f.Name}, Message: "not an Ignition config: " + err.Error(),
			Hint: `an Ignition config is a JSON object with "ignition": {"version": "3.x.0"}`}
		if node, jerr := vjson.UnmarshalToContext(raw); jerr != nil && isJSON {
			d.Message = "not valid JSON: " + jerr.Error()
		} else if isJSON {
			l, c := node.Start()
			d.Pos = at(l, c)
		}
		return nil, append(diags, d)
	}
	if v.LessThan(semver.Version{Major: 3}) {
		return fail(hooks.Position{File: f.Name}, fmt.Sprintf("Ignition spec version %s: hostprov merges Ignition 3.0.0 to %s", v, version),
			"translate the config to spec 3 (Ignition 2.x configs are not read by current Ignition)")
	}
	if semver.New(version).LessThan(v) {
		hint := fmt.Sprintf("render with %s --ignition-version %s, or write the config for %s", format, v, version)
		if _, ok := ignitionParsers[v.String()]; !ok {
			vs := IgnitionVersions()
			hint = fmt.Sprintf("hostprov writes Ignition %s to %s: write the config for one of them", vs[0], vs[len(vs)-1])
		}
		return fail(ignitionPos(f, isJSON, raw, at, "ignition", "version"),
			fmt.Sprintf("the config is Ignition %s, newer than the output's %s: Ignition cannot translate a config to an older version", v, version), hint)
	}
	cfg, rpt, err := ignitionParsers[version].compat(raw)
	var fresh report.Report
	for _, e := range rpt.Entries {
		if e.Kind.IsFatal() || !said[e.Message] {
			fresh.Entries = append(fresh.Entries, e)
		}
	}
	diags = append(diags, reportDiags(fresh, at, "Ignition")...)
	if err != nil || rpt.IsFatal() {
		if !diags.HasErrors(false) {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: f.Name},
				Message: fmt.Sprintf("Ignition refuses the config: %v", err), Hint: "check it with ignition-validate"})
		}
		return nil, diags
	}
	var replace struct {
		Ignition struct {
			Config struct {
				Replace struct {
					Source *string `json:"source"`
				} `json:"replace"`
			} `json:"config"`
		} `json:"ignition"`
	}
	if b, err := json.Marshal(cfg); err == nil && json.Unmarshal(b, &replace) == nil && replace.Ignition.Config.Replace.Source != nil {
		pos := ignitionPos(f, isJSON, raw, at, "ignition", "config", "replace")
		if !isJSON {
			pos = yamlPos(f, "ignition", "config", "replace")
		}
		return nil, append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: "ignition.config.replace",
			Message: "ignition.config.replace makes Ignition use another config instead of this one at boot, and hostprov's units would go with it",
			Hint:    "use ignition.config.merge to add a config, or put --merge on the config that replaces it"})
	}
	return cfg, diags
}

// ignitionPos is where the value at the JSON path is in a user's Ignition
// file, or the file alone when it is not known.
func ignitionPos(f MergeFile, isJSON bool, raw []byte, at func(int64, int64) hooks.Position, p ...any) hooks.Position {
	if !isJSON {
		return yamlPos(f, p...)
	}
	node, err := vjson.UnmarshalToContext(raw)
	if err != nil {
		return hooks.Position{File: f.Name}
	}
	n, err := node.Get(path.New("json", p...))
	if err != nil {
		return hooks.Position{File: f.Name}
	}
	line, col := n.Start()
	// An object's or a list's marker starts after its opening bracket:
	// point at the bracket.
	if m := n.GetMarker(); m.StartP != nil && m.StartP.Index > 0 && int(m.StartP.Index) <= len(raw) &&
		(raw[m.StartP.Index-1] == '{' || raw[m.StartP.Index-1] == '[') && col > 1 {
		col--
	}
	return at(line, col)
}

// yamlPos is where the value at the path (map keys and list indexes) is in
// a YAML file, or the file alone.
func yamlPos(f MergeFile, p ...any) hooks.Position {
	var doc yaml.Node
	if yaml.Unmarshal(f.Data, &doc) != nil || len(doc.Content) == 0 {
		return hooks.Position{File: f.Name}
	}
	n := usermerge.YAMLAt(doc.Content[0], p...)
	if n == nil {
		return hooks.Position{File: f.Name}
	}
	return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column}
}

// reportDiags turns an Ignition or Butane report into diagnostics at their
// markers.
func reportDiags(rpt report.Report, at func(int64, int64) hooks.Position, tool string) hooks.Diagnostics {
	return configreport.Diagnostics(rpt, at, tool, "fix your config: "+tool+" says so of it on its own, without hostprov's units")
}

// prunedJSON marshals an Ignition config without empty objects, lists and
// nulls (which Ignition's types write for every field they have), keys
// sorted, ending with a newline.
func prunedJSON(cfg any, pretty bool) ([]byte, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	v, _ = pruneEmpty(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pruneEmpty drops nulls and empty objects and lists; keep is false when v
// itself is one of them.
func pruneEmpty(v any) (any, bool) {
	switch v := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		for k, e := range v {
			if p, keep := pruneEmpty(e); keep {
				v[k] = p
			} else {
				delete(v, k)
			}
		}
		return v, len(v) > 0
	case []any:
		out := v[:0]
		for _, e := range v {
			if p, keep := pruneEmpty(e); keep {
				out = append(out, p)
			}
		}
		return out, len(out) > 0
	}
	return v, true
}

// errKopsMerge is why --merge is refused for kops hooks.
var errKopsMerge = errors.New("--merge is not for --format kops: kops hooks are a list of units in a cluster spec, with no place for a config of your own " +
	"(files, users, packages); keep those in the instance group's own additionalUserData, or render --format ignition, butane or cloud-init")

// CheckMerge reports whether --merge can be used with the output format
// named format: nil for ignition, butane and cloud-init, an error saying
// why not for every other.
func CheckMerge(format string) error {
	switch format {
	case "ignition", "butane", "cloud-init":
		return nil
	case "kops":
		return errKopsMerge
	}
	return fmt.Errorf("--merge is only for --format ignition, butane or cloud-init: --format %s is not instance user data", format)
}

// ValidateIgnition is Ignition's own parse and validation of a config of
// version, as diagnostics without positions (for generated output).
func ValidateIgnition(version string, data []byte) hooks.Diagnostics {
	p, ok := ignitionParsers[version]
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
