package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	pathpkg "path"
	"sort"
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

	"github.com/hostprov/hostprov/internal/vreport"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
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

// MergeIgnition returns the Ignition config of the units (as Ignition
// writes it for opts) with the user's configs merged into it, in order, by
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
func MergeIgnition(us []compile.Unit, opts IgnitionOptions, files []MergeFile) ([]byte, hooks.Diagnostics, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, nil, err
	}
	own, err := Ignition(us, IgnitionOptions{Version: opts.Version, Storage: opts.Storage})
	if err != nil {
		return nil, nil, err
	}
	return MergeIgnitionConfig(own, us, opts, files)
}

// MergeIgnitionConfig is MergeIgnition into own, hostprov's Ignition
// config of the units (and whatever else the spec puts there) at
// opts.Version. Besides units, a path that own's storage and a file both
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
	n := yamlAt(doc.Content[0], p...)
	if n == nil {
		return hooks.Position{File: f.Name}
	}
	return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column}
}

// yamlAt walks a YAML node by map keys (string) and list indexes (int).
func yamlAt(n *yaml.Node, p ...any) *yaml.Node {
	for _, e := range p {
		switch e := e.(type) {
		case string:
			if n.Kind != yaml.MappingNode {
				return nil
			}
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == e {
					next = n.Content[i+1]
				}
			}
			if next == nil {
				return nil
			}
			n = next
		case int:
			if n.Kind != yaml.SequenceNode || e >= len(n.Content) {
				return nil
			}
			n = n.Content[e]
		}
	}
	return n
}

// reportDiags turns an Ignition or Butane report into diagnostics at their
// markers.
func reportDiags(rpt report.Report, at func(int64, int64) hooks.Position, tool string) hooks.Diagnostics {
	return vreport.Diagnostics(rpt, at, tool, "fix your config: "+tool+" says so of it on its own, without hostprov's units")
}

// neutralUnit is a unit of an Ignition config as every spec version has it.
type neutralUnit struct {
	Name     string          `json:"name"`
	Contents *string         `json:"contents"`
	Enabled  *bool           `json:"enabled"`
	Mask     *bool           `json:"mask"`
	Dropins  []neutralDropin `json:"dropins"`
}

type neutralDropin struct {
	Name     string  `json:"name"`
	Contents *string `json:"contents"`
}

func neutralUnitsOf(cfg any) ([]neutralUnit, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var c struct {
		Systemd struct {
			Units []neutralUnit `json:"units"`
		} `json:"systemd"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return c.Systemd.Units, nil
}

// checkUnitClashes reports a unit (or drop-in) that the user's config and
// the spec both make and make differently, at both places. The rule, the
// same for every output:
//
//   - a unit both list may set contents, enabled and mask in only one of
//     them, or to the same value in both;
//   - a drop-in of that unit both list must have the same contents;
//   - everything else of the two is merged: the fields one of them sets,
//     and the drop-ins of both.
//
// The user's place is the unit (or drop-in) in the user's file, found by
// name; hostprov's is the hook that makes it.
func checkUnitClashes(us []compile.Unit, user []neutralUnit, f MergeFile) hooks.Diagnostics {
	ius, err := ignitionUnits(us)
	if err != nil {
		return nil // Ignition(us) failed first
	}
	var diags hooks.Diagnostics
	for _, uu := range user {
		for i, hu := range ius {
			if hu.name != uu.Name {
				continue
			}
			u := us[i]
			where := fmt.Sprintf("%s (hooks[%d], %s)", u.Pos, u.Hook, u.HookName)
			var fields []string
			if hu.contents != nil && uu.Contents != nil && string(hu.contents) != *uu.Contents {
				fields = append(fields, "contents")
			}
			if hu.enabled != nil && uu.Enabled != nil && *hu.enabled != *uu.Enabled {
				fields = append(fields, "enabled")
			}
			if hu.mask != nil && uu.Mask != nil && *hu.mask != *uu.Mask {
				fields = append(fields, "mask")
			}
			if len(fields) > 0 {
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: userUnitPos(f, uu.Name, ""),
					Path:    "systemd.units." + uu.Name,
					Message: fmt.Sprintf("unit %s is made by hostprov's spec too, at %s, with another %s", uu.Name, where, strings.Join(fields, ", ")),
					Hint:    "keep the unit in one place: drop it from your config or the hook from the spec, or make both the same"})
			}
			for _, ud := range uu.Dropins {
				for _, hd := range hu.dropins {
					if hd.name == ud.Name && !eqStr(bytesPtr(hd.contents), ud.Contents) {
						diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: userUnitPos(f, uu.Name, ud.Name),
							Path:    "systemd.units." + uu.Name + ".dropins." + ud.Name,
							Message: fmt.Sprintf("drop-in %s.d/%s is made by hostprov's spec too, at %s, with other contents", uu.Name, ud.Name, where),
							Hint:    "keep the drop-in in one place, or give one of them another name"})
					}
				}
			}
		}
	}
	return diags
}

func eqStr(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// userUnitPos is where a unit (or one of its drop-ins) is written in a
// user's Ignition or Butane file, found by name under systemd.units.
func userUnitPos(f MergeFile, unit, dropin string) hooks.Position {
	isJSON := bytes.HasPrefix(bytes.TrimLeft(f.Data, " \t\r\n"), []byte("{"))
	var c struct {
		Systemd struct {
			Units *[]struct {
				Name    string `json:"name" yaml:"name"`
				Dropins []struct {
					Name string `json:"name" yaml:"name"`
				} `json:"dropins" yaml:"dropins"`
			} `json:"units" yaml:"units"`
		} `json:"systemd" yaml:"systemd"`
	}
	var err error
	if isJSON {
		err = json.Unmarshal(f.Data, &c)
	} else {
		err = yaml.Unmarshal(f.Data, &c)
	}
	if err != nil || c.Systemd.Units == nil {
		return hooks.Position{File: f.Name}
	}
	at := func(line, col int64) hooks.Position {
		return hooks.Position{File: f.Name, Line: int(line), Column: int(col)}
	}
	for i, u := range *c.Systemd.Units {
		if u.Name != unit {
			continue
		}
		p := []any{"systemd", "units", i}
		for j, d := range u.Dropins {
			if dropin != "" && d.Name == dropin {
				p = append(p, "dropins", j)
			}
		}
		return ignitionPos(f, isJSON, f.Data, at, p...)
	}
	return hooks.Position{File: f.Name}
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

// configLists decodes the lists of one section of an Ignition config
// (storage: files, directories, links; passwd: users, groups), of
// hostprov's config as JSON (own) and of a user's as decoded (cfg), to
// compare their entries field by field.
func configLists(own []byte, cfg any, section string) (ours, theirs map[string][]map[string]any, err error) {
	if ours, err = sectionLists(own, section); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	if theirs, err = sectionLists(b, section); err != nil {
		return nil, nil, err
	}
	return ours, theirs, nil
}

// sectionLists decodes the lists of one section of an Ignition config
// given as JSON.
func sectionLists(config []byte, section string) (map[string][]map[string]any, error) {
	var c map[string]json.RawMessage
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	var lists map[string][]map[string]any
	if raw, ok := c[section]; ok {
		if err := json.Unmarshal(raw, &lists); err != nil {
			return nil, err
		}
	}
	return lists, nil
}

// checkStorageClashes reports each path that hostprov's config (own) and
// a user's config both have in storage, with entries that differ (or of
// another kind: a directory where the spec has a file), at the user's
// entry and, when st has it, at the spec's.
func checkStorageClashes(own []byte, cfg any, f MergeFile, st compile.Storage, us []compile.Unit) (hooks.Diagnostics, error) {
	ours, theirs, err := configLists(own, cfg, "storage")
	if err != nil {
		return nil, err
	}
	var diags hooks.Diagnostics
	kinds := []string{"files", "directories", "links"}
	// byPath is hostprov's entry at each path, and kindOf its kind.
	byPath, kindOf := map[string]map[string]any{}, map[string]string{}
	for _, kind := range kinds {
		for _, e := range ours[kind] {
			if p, ok := e["path"].(string); ok {
				byPath[p], kindOf[p] = e, kind
			}
		}
	}
	ownPaths := make([]string, 0, len(kindOf))
	for p := range kindOf {
		ownPaths = append(ownPaths, p)
	}
	sort.Strings(ownPaths)
	for _, kind := range kinds {
		for i, e := range theirs[kind] {
			p, _ := e["path"].(string)
			diags = append(diags, checkUnder(p, kind, i, f, ownPaths, kindOf, st, us)...)
			o, ok := byPath[p]
			if !ok {
				continue
			}
			if kindOf[p] == kind {
				x, _ := pruneEmpty(e)
				y, _ := pruneEmpty(o)
				xb, _ := json.Marshal(x)
				yb, _ := json.Marshal(y)
				if bytes.Equal(xb, yb) {
					continue
				}
			}
			pos, _ := userStoragePos(f, kind, i, p)
			in := "hostprov's spec too,"
			if place := storagePlace(st, us, p); place != "" {
				in = "hostprov's spec too, at " + place + ","
			}
			msg := fmt.Sprintf("%s is in %s as another entry: Ignition's merge would keep only yours", p, in)
			if kindOf[p] != kind {
				msg = fmt.Sprintf("%s is a %s in %s and a %s here: there can be only one thing at a path", p, storageKind[kindOf[p]], in, storageKind[kind])
			}
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: fmt.Sprintf("storage.%s[%d]", kind, i),
				Message: msg, Hint: "keep the path in one place: your config or the spec"})
		}
	}
	return diags, nil
}

// checkUnder reports a path of a user's file (p, its i-th entry of kind)
// and a path of hostprov's (ownPaths, sorted, kindOf each) of which one is
// under the other when the upper one is a file or a link: Ignition writes
// both, and the lower one fails at boot under a file, or lands wherever
// the link points (Ignition's validation refuses that one, but at no
// line of either file).
func checkUnder(p, kind string, i int, f MergeFile, ownPaths []string, kindOf map[string]string, st compile.Storage, us []compile.Unit) hooks.Diagnostics {
	var diags hooks.Diagnostics
	for _, q := range ownPaths {
		var msg, upper string
		switch {
		case kind != "directories" && strings.HasPrefix(q, p+"/"):
			upper = kind
			msg = fmt.Sprintf("%s is a %s here, and hostprov's spec has %s under it", p, storageKind[kind], q)
		case kindOf[q] != "directories" && strings.HasPrefix(p, q+"/"):
			upper = kindOf[q]
			msg = fmt.Sprintf("%s is under %s, a %s in hostprov's spec", p, q, storageKind[upper])
		default:
			continue
		}
		if place := storagePlace(st, us, q); place != "" {
			msg += ", at " + place
		}
		msg += ": nothing can be under a file"
		if upper == "links" {
			msg = strings.TrimSuffix(msg, "a file") + "a link (it would land wherever the link points)"
		}
		pos, _ := userStoragePos(f, kind, i, p)
		diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: fmt.Sprintf("storage.%s[%d]", kind, i),
			Message: msg, Hint: "move one of the two, or keep both in one place: your config or the spec"})
	}
	return diags
}

// userStoragePos is where a user's file writes the entry at path p, the
// i-th of its Ignition config's storage.<kind>: the entry in an Ignition
// file or in a Butane file's storage.<kind>, or else the Butane tree that
// holds it (fromTree), or else the file alone.
func userStoragePos(f MergeFile, kind string, i int, p string) (pos hooks.Position, fromTree bool) {
	if bytes.HasPrefix(bytes.TrimLeft(f.Data, " \t\r\n"), []byte("{")) {
		at := func(line, col int64) hooks.Position {
			return hooks.Position{File: f.Name, Line: int(line), Column: int(col)}
		}
		return ignitionPos(f, true, f.Data, at, "storage", kind, i), false
	}
	if n := yamlByPath(f, kind, p); n != nil {
		return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column}, false
	}
	if n := yamlTreeOf(f, p); n != nil {
		return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column}, true
	}
	return hooks.Position{File: f.Name}, false
}

// yamlTreeOf is the entry of a Butane file's storage.trees whose
// directory holds path p on the machine (its path:, / when it has none),
// or nil: the entries a tree makes are in no list of the file.
func yamlTreeOf(f MergeFile, p string) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(f.Data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	trees := yamlAt(doc.Content[0], "storage", "trees")
	if trees == nil || trees.Kind != yaml.SequenceNode {
		return nil
	}
	var best *yaml.Node
	bestLen := -1
	for _, e := range trees.Content {
		dest := "/"
		if n := yamlAt(e, "path"); n != nil && n.Value != "" {
			dest = pathpkg.Clean(n.Value)
		}
		if (dest == "/" || p == dest || strings.HasPrefix(p, dest+"/")) && len(dest) > bestLen {
			best, bestLen = e, len(dest)
		}
	}
	return best
}

// storageKind names an entry of an Ignition config's storage lists.
var storageKind = map[string]string{"files": "file", "directories": "directory", "links": "link"}

// yamlByPath is the entry of a Butane file's storage.<kind> with the path.
func yamlByPath(f MergeFile, kind, p string) *yaml.Node {
	return yamlByKey(f, "path", p, "storage", kind)
}

// yamlByKey is the entry of the YAML list at the path p whose key has
// the value want.
func yamlByKey(f MergeFile, key, want string, p ...any) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(f.Data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	list := yamlAt(doc.Content[0], p...)
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	for _, e := range list.Content {
		if n := yamlAt(e, key); n != nil && n.Value == want {
			return e
		}
	}
	return nil
}

// specPlace says where an entry of hostprov's spec is, for a message about
// a clash with a --merge file: its position, its hook's index, and the
// hook's name when one of the units says it.
func specPlace(pos hooks.Position, hook int, us []compile.Unit) string {
	for _, u := range us {
		if u.Hook == hook && u.HookName != "" {
			return fmt.Sprintf("%s (hooks[%d], %s)", pos, hook, u.HookName)
		}
	}
	return fmt.Sprintf("%s (hooks[%d])", pos, hook)
}

// storagePlace is where the spec puts something at path p, or "" when st
// does not say.
func storagePlace(st compile.Storage, us []compile.Unit, p string) string {
	for _, x := range st.Files {
		if x.Path == p {
			return specPlace(x.Pos, x.Hook, us)
		}
	}
	for _, x := range st.Directories {
		if x.Path == p {
			return specPlace(x.Pos, x.Hook, us)
		}
	}
	for _, x := range st.Links {
		if x.Path == p {
			return specPlace(x.Pos, x.Hook, us)
		}
	}
	return ""
}
