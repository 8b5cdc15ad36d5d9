package importer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	ignutil "github.com/coreos/ignition/v2/config/util"
	v30 "github.com/coreos/ignition/v2/config/v3_0"
	v31 "github.com/coreos/ignition/v2/config/v3_1"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v33 "github.com/coreos/ignition/v2/config/v3_3"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	types "github.com/coreos/ignition/v2/config/v3_5/types"
	v36 "github.com/coreos/ignition/v2/config/v3_6_experimental"
	vjson "github.com/coreos/vcontext/json"
	"github.com/coreos/vcontext/report"

	"github.com/hostprov/hostprov/internal/configreport"
	"github.com/hostprov/hostprov/pkg/hooks"
)

func parser[T any](f func([]byte) (T, report.Report, error)) func([]byte) (any, report.Report, error) {
	return func(b []byte) (any, report.Report, error) { return f(b) }
}

// ignitionParsers parse each spec version hostprov imports with that
// version's own Ignition config package.
var ignitionParsers = map[string]func([]byte) (any, report.Report, error){
	"3.0.0": parser(v30.Parse),
	"3.1.0": parser(v31.Parse),
	"3.2.0": parser(v32.Parse),
	"3.3.0": parser(v33.Parse),
	"3.4.0": parser(v34.Parse),
	"3.5.0": parser(v35.Parse),
	// Ignition 3.6.0 is stable upstream, but the Ignition module hostprov
	// is built with knows it only as 3.6.0-experimental: a 3.6.0 config is
	// read with that package (see ahead).
	"3.6.0-experimental": parser(v36.Parse),
}

// ahead holds, for each spec version that is stable upstream but only
// experimental in the Ignition and Butane modules hostprov is built with,
// the experimental version they read it as. A config of such a version is
// read as that one: import then warns, and the spec renders to the newest
// version hostprov writes (render writes no experimental version).
var ahead = map[string]string{ahead36: "3.6.0-experimental"}

const ahead36 = "3.6.0"

// butaneAhead is ahead for Butane: fcos 1.7.0 is Ignition 3.6.0, which
// Butane translates as 1.7.0-experimental to 3.6.0-experimental.
var butaneAhead = map[string]string{"fcos 1.7.0": "1.7.0-experimental"}

// newestWritten is the newest Ignition spec version render writes.
const newestWritten = "3.5.0"

// ignitionVersionRE finds the version of an Ignition config, to read a
// config of a version in ahead as its experimental one.
var ignitionVersionRE = regexp.MustCompile(`("version"\s*:\s*)"([0-9.]+)"`)

// butaneVersionRE finds a Butane config's top-level version line.
var butaneVersionRE = regexp.MustCompile(`(?m)^(version:[ \t]*)(["']?)([0-9.]+)(["']?)([ \t]*(#.*)?)$`)

// importIgnition imports the Ignition config raw. butaneSrc, when not nil,
// is the Butane config raw was translated from: positions are reported
// there.
func importIgnition(in Input, raw, butaneSrc []byte, aheadOf string) (*Result, hooks.Diagnostics) {
	file := in.Name
	at := func(line, col int64) hooks.Position {
		return hooks.Position{File: file, Line: int(line), Column: int(col)}
	}
	if butaneSrc != nil {
		at = func(int64, int64) hooks.Position { return hooks.Position{File: file} }
	}
	v, rpt, err := ignutil.GetConfigVersion(raw)
	if err != nil {
		return nil, versionDiags(file, raw, butaneSrc, at, rpt, err)
	}
	version := v.String()
	// aheadOf, when set, is the stable version a config of ahead was
	// written for (a Butane config's is set by importButane).
	if exp, ok := ahead[version]; ok {
		aheadOf, version = version, exp
		if m := ignitionVersionRE.FindSubmatchIndex(raw); m != nil {
			raw = append(append(append([]byte(nil), raw[:m[4]]...), exp...), raw[m[5]:]...)
		}
	}
	parse, ok := ignitionParsers[version]
	if !ok {
		var probe any
		_ = json.Unmarshal(raw, &probe)
		return nil, hooks.Diagnostics{{Severity: hooks.Error, Pos: versionPos(in, raw, butaneSrc, probe), Path: "ignition.version",
			Message: fmt.Sprintf("Ignition spec version %s: hostprov imports Ignition 3.0.0 to 3.6.0", v),
			Hint:    "write the config for Ignition 3.0.0 to 3.6.0 (Butane fcos 1.0.0 to 1.7.0, flatcar 1.0.0 or 1.1.0)"}}
	}
	c, generic, diags, ok := parseConfig(file, raw, parse, at)
	if !ok {
		return nil, diags
	}
	loc := newLocator(file, raw, false, generic)
	if butaneSrc != nil {
		loc = newLocator(file, butaneSrc, true, generic)
	}
	im := &ignImporter{loc: loc, locals: newLocalFiles(in)}
	im.keptOut(generic)
	im.units(c.Systemd.Units)
	im.storage(c)
	im.passwd(c.Passwd)
	res := &Result{Format: FormatIgnition, IgnitionVersion: version}
	if strings.HasSuffix(version, "-experimental") {
		res.IgnitionVersion = newestWritten
		im.diags = append(im.diags, experimentalDiag(versionPos(in, raw, butaneSrc, generic), version, aheadOf))
	}
	res.Hooks, res.origins = im.hooks, im.origins
	res.generic, res.rest, res.Locals = generic, im.rest, im.locals.files
	if im.storageHook.HasStorage() {
		im.storageHook.Name = storageHookName(in.setName, im.hooks)
		res.Hooks = append([]hooks.Hook{im.storageHook}, im.hooks...)
		res.origins = append([]hookOrigins{im.storageOrigins}, im.origins...)
	}
	return res, append(diags, im.diags...)
}

// versionDiags are the diagnostics of a config whose spec version
// Ignition cannot read: Ignition's own, or why raw is no Ignition config.
func versionDiags(file string, raw, butaneSrc []byte, at func(int64, int64) hooks.Position, rpt report.Report, err error) hooks.Diagnostics {
	diags := reportDiags(rpt, at, "Ignition")
	if diags.HasErrors(false) {
		for i := range diags {
			if diags[i].Pos.Line == 0 && butaneSrc == nil {
				// No marker: where encoding/json finds the error.
				diags[i].Pos = jsonErrPos(file, raw)
			}
		}
		return diags
	}
	d := hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file}, Message: "not an Ignition config: " + err.Error(),
		Hint: `an Ignition config is a JSON object with "ignition": {"version": "3.x.0"}`}
	if node, jerr := vjson.UnmarshalToContext(raw); jerr != nil {
		d.Message = "not valid JSON: " + jerr.Error()
		d.Pos = jsonErrPos(file, raw)
	} else {
		l, c := node.Start()
		d.Pos = at(l, c)
	}
	return hooks.Diagnostics{d}
}

// versionPos is where the config's spec version is written: in the Butane
// config raw was translated from, when butaneSrc is not nil. generic is
// raw as generic JSON.
func versionPos(in Input, raw, butaneSrc []byte, generic any) hooks.Position {
	if butaneSrc != nil {
		return butaneHeadPos(in)
	}
	return newLocator(in.Name, raw, false, generic).at("ignition", "version")
}

// parseConfig parses raw with its spec version's parser and reads it as
// 3.5.0's types, and as pruned generic JSON; ok is false when the config
// cannot be read.
func parseConfig(file string, raw []byte, parse func([]byte) (any, report.Report, error), at func(int64, int64) hooks.Position) (c types.Config, generic any, diags hooks.Diagnostics, ok bool) {
	cfg, rpt, err := parse(raw)
	diags = reportDiags(rpt, at, "Ignition")
	if err != nil || rpt.IsFatal() {
		if !diags.HasErrors(false) {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file},
				Message: fmt.Sprintf("Ignition refuses the config: %v", err), Hint: "check it with ignition-validate"})
		}
		return c, nil, diags, false
	}
	// Every spec version's types marshal to JSON that 3.5.0's read: a
	// later version only adds fields.
	b, err := json.Marshal(cfg)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return c, nil, append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file}, Message: err.Error()}), false
	}
	_ = json.Unmarshal(b, &generic)
	return c, prune(generic), diags, true
}

// experimentalDiag warns that a config of an experimental spec version
// (or of the stable version aheadOf, read as one) renders to the newest
// version hostprov writes.
func experimentalDiag(pos hooks.Position, version, aheadOf string) hooks.Diagnostic {
	what := "Ignition " + version
	if aheadOf != "" {
		what = "Ignition " + aheadOf + " (read with Ignition's " + version + " config package, which is what the Ignition module hostprov is built with knows of it)"
	}
	return hooks.Diagnostic{Severity: hooks.Warning, Pos: pos, Path: "ignition.version",
		Message: what + ": the spec renders to Ignition " + newestWritten + " at most",
		Hint:    "render it with --ignition-version " + newestWritten + ", which a machine whose Ignition reads " + strings.TrimSuffix(version, "-experimental") + " reads too"}
}

// jsonErrPos is where encoding/json finds a syntax error in raw: the
// character after the Offset bytes it read.
func jsonErrPos(file string, raw []byte) hooks.Position {
	se, ok := json.Unmarshal(raw, new(any)).(*json.SyntaxError)
	if !ok {
		return hooks.Position{File: file}
	}
	off := se.Offset
	if off > int64(len(raw)) {
		off = int64(len(raw))
	}
	line, col := 1, 1
	for _, c := range raw[:max(off-1, 0)] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return hooks.Position{File: file, Line: line, Column: col}
}

// reportDiags turns an Ignition or Butane report into diagnostics at
// their markers.
func reportDiags(rpt report.Report, at func(int64, int64) hooks.Position, tool string) hooks.Diagnostics {
	return configreport.Diagnostics(rpt, at, tool, tool+" says so of the config on its own; check it with "+strings.ToLower(tool)+"-validate or butane --strict")
}

// prune removes empty objects, lists and nulls, as Ignition's types
// marshal absent fields as empty objects.
func prune(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			e = prune(e)
			if e == nil {
				delete(v, k)
			} else {
				v[k] = e
			}
		}
		if len(v) == 0 {
			return nil
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = prune(e)
		}
		if len(v) == 0 {
			return nil
		}
		return v
	}
	return v
}

// ignImporter builds hooks from one Ignition config.
type ignImporter struct {
	loc         *locator
	diags       hooks.Diagnostics
	hooks       []hooks.Hook
	storageHook hooks.Hook
	// origins are those of hooks, and storageOrigins those of storageHook.
	origins        []hookOrigins
	storageOrigins hookOrigins
	// rest are the parts of the config that go to the leftovers.
	rest marks
	// locals are the contents that go beside the spec.
	locals *localFiles
}

// origin is the origin of the part of the config at p.
func (im *ignImporter) origin(p []any) origin {
	return origin{pos: im.loc.at(p...), path: jsonPath(p)}
}

func (im *ignImporter) warn(p []any, msg, hint string) {
	im.diags = append(im.diags, warn(im.loc.at(p...), jsonPath(p), msg, hint))
}

// move puts the part at p into the leftovers, with a warning that says
// why.
func (im *ignImporter) move(p []any, msg, hint string) {
	im.rest.add(p...)
	im.warn(p, leftoversPrefix+msg, hint)
}

// drop puts the whole entry at path entry into the leftovers, with a
// warning at its field at entry+field, which says why.
func (im *ignImporter) drop(entry []any, field []any, msg, hint string) {
	at := append(append([]any(nil), entry...), field...)
	im.rest.add(entry...)
	im.diags = append(im.diags, warn(im.loc.at(at...), jsonPath(entry), leftoversPrefix+msg, hint))
}

func jsonPath(p []any) string { return configreport.Join(p) }

// keptOutHints say, for each part of an Ignition config that hostprov has
// no equivalent of, why and what to do instead.
var keptOutHints = []struct {
	path []string
	what string
	hint string
}{
	{[]string{"ignition", "config", "merge"}, "a config that Ignition fetches and merges at boot", "render the spec with --merge of the leftovers, which keep the reference; or import that config on its own"},
	{[]string{"ignition", "config", "replace"}, "a config that Ignition uses instead of this one", "import that config instead"},
	{[]string{"ignition", "proxy"}, "Ignition's proxy for fetching", "hostprov fetches a file's source itself; set the proxy in the environment of apply"},
	{[]string{"ignition", "security"}, "Ignition's TLS settings for fetching", "hostprov fetches with the system's certificate authorities"},
	{[]string{"ignition", "timeouts"}, "Ignition's fetch timeouts", "hostprov's apply has a fetch timeout of its own"},
	{[]string{"kernelArguments"}, "the kernel arguments", "kernel arguments are not a hook's business: render the spec with --merge of the leftovers, which keep them"},
	{[]string{"storage", "disks"}, "a disk (partitions)", "render the spec with --merge of the leftovers, which keep it"},
	{[]string{"storage", "filesystems"}, "a file system", "render the spec with --merge of the leftovers, which keep it; a mount unit for it is imported as a hook"},
	{[]string{"storage", "raid"}, "a RAID array", "render the spec with --merge of the leftovers, which keep it"},
	{[]string{"storage", "luks"}, "a LUKS volume", "render the spec with --merge of the leftovers, which keep it"},
}

// keptOut warns about every part of the config (pruned generic JSON)
// that hostprov has no equivalent of: each entry of a list, each key of an
// object.
func (im *ignImporter) keptOut(cfg any) {
	for _, k := range keptOutHints {
		v := cfg
		for _, e := range k.path {
			m, _ := v.(map[string]any)
			v = m[e]
		}
		if v == nil {
			continue
		}
		p := make([]any, len(k.path))
		for i, e := range k.path {
			p[i] = e
		}
		if l, ok := v.([]any); ok {
			for i := range l {
				im.move(append(append([]any(nil), p...), i), k.what+", which hostprov has no equivalent of", k.hint)
			}
			continue
		}
		im.move(p, k.what+", which hostprov has no equivalent of", k.hint)
	}
}
