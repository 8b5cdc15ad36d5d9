package ignconfig

import (
	"bytes"
	"encoding/json"
	"fmt"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"github.com/coreos/go-semver/semver"
	ignutil "github.com/coreos/ignition/v2/config/util"
	vjson "github.com/coreos/vcontext/json"
	"github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/configreport"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// UserConfig reads a --merge file as an Ignition config of version (or
// older), from Ignition JSON or from a Butane config. It returns the
// config as version's types, or nil with the diagnostics that say why not.
func UserConfig(f render.MergeFile, version, format string) (any, hooks.Diagnostics) {
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
		if specIndex(v.String()) < 0 {
			vs := Versions()
			hint = fmt.Sprintf("hostprov writes Ignition %s to %s: write the config for one of them", vs[0], vs[len(vs)-1])
		}
		return fail(ignitionPos(f, isJSON, raw, at, "ignition", "version"),
			fmt.Sprintf("the config is Ignition %s, newer than the output's %s: Ignition cannot translate a config to an older version", v, version), hint)
	}
	cfg, rpt, err := Specs[specIndex(version)].compat(raw)
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
func ignitionPos(f render.MergeFile, isJSON bool, raw []byte, at func(int64, int64) hooks.Position, p ...any) hooks.Position {
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
func yamlPos(f render.MergeFile, p ...any) hooks.Position {
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

// PrunedJSON marshals an Ignition config without empty objects, lists and
// nulls (which Ignition's types write for every field they have), keys
// sorted, ending with a newline.
func PrunedJSON(cfg any, pretty bool) ([]byte, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	v, _ = PruneEmpty(v)
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

// PruneEmpty drops nulls and empty objects and lists; keep is false when v
// itself is one of them.
func PruneEmpty(v any) (any, bool) {
	switch v := v.(type) {
	case nil:
		return nil, false
	case map[string]any:
		for k, e := range v {
			if p, keep := PruneEmpty(e); keep {
				v[k] = p
			} else {
				delete(v, k)
			}
		}
		return v, len(v) > 0
	case []any:
		out := v[:0]
		for _, e := range v {
			if p, keep := PruneEmpty(e); keep {
				out = append(out, p)
			}
		}
		return out, len(out) > 0
	}
	return v, true
}
