package importer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
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
	"github.com/vincent-petithory/dataurl"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/vreport"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
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

// importButane translates a Butane config with Butane's own library (its
// local: files read from in.Dir) and imports the Ignition config it makes,
// reporting positions in the Butane file.
func importButane(in Input) (*Result, hooks.Diagnostics) {
	at := func(line, col int64) hooks.Position {
		return hooks.Position{File: in.Name, Line: int(line), Column: int(col)}
	}
	data := in.Data
	aheadOf := ""
	var head struct{ Variant, Version string }
	if yaml.Unmarshal(in.Data, &head) == nil {
		if exp, ok := butaneAhead[head.Variant+" "+head.Version]; ok {
			aheadOf = ahead36
			// Same length of lines before it, so every position
			// Butane reports is where it is in the file.
			data = butaneVersionRE.ReplaceAll(in.Data, []byte("${1}${2}"+exp+"${4}${5}"))
		}
	}
	out, rpt, err := butane.TranslateBytes(data, butanecommon.TranslateBytesOptions{TranslateOptions: butanecommon.TranslateOptions{FilesDir: in.Dir}})
	diags := reportDiags(rpt, at, "Butane")
	if err != nil || rpt.IsFatal() {
		if !diags.HasErrors(false) {
			msg := "Butane cannot translate this config: " + strings.TrimSpace(err.Error())
			d := hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: in.Name}, Message: msg,
				Hint: "check it with butane --strict"}
			if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
				// A YAML error of Butane's, at the line it names.
				d.Pos.Line, _ = strconv.Atoi(m[1])
				d.Message = "Butane cannot read this config: " + strings.Join(strings.Fields(err.Error()), " ")
			} else if strings.Contains(err.Error(), "No translator exists") {
				d.Pos, d.Path = butaneHeadPos(in), "version"
				d.Hint = "this Butane knows " + butaneVersions()
			}
			diags = append(diags, d)
		}
		return nil, diags
	}
	res, d := importIgnition(in, out, in.Data, aheadOf)
	if res != nil {
		res.Format = FormatButane
		res.butaneVariant, res.butaneVersion = head.Variant, head.Version
	}
	return res, append(diags, d...)
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// butaneHeadPos is where a Butane config's version is written.
func butaneHeadPos(in Input) hooks.Position {
	var doc yaml.Node
	if yaml.Unmarshal(in.Data, &doc) == nil && len(doc.Content) > 0 {
		if v := mapValue(doc.Content[0], "version"); v != nil {
			return hooks.Position{File: in.Name, Line: v.Line, Column: v.Column}
		}
	}
	return hooks.Position{File: in.Name}
}

func butaneVersions() string {
	return "fcos 1.0.0 to 1.7.0, flatcar 1.0.0 and 1.1.0, fiot 1.0.0, r4e 1.0.0 and 1.1.0, and their -experimental successors"
}

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
		diags := reportDiags(rpt, at, "Ignition")
		if diags.HasErrors(false) {
			for i := range diags {
				if diags[i].Pos.Line == 0 && butaneSrc == nil {
					// No marker: where encoding/json finds the error.
					diags[i].Pos = jsonErrPos(file, raw)
				}
			}
			return nil, diags
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
		return nil, hooks.Diagnostics{d}
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
		loc := newLocator(file, raw, false, probe)
		if butaneSrc != nil {
			loc = newLocator(file, butaneSrc, true, probe)
		}
		pos := loc.at("ignition", "version")
		if butaneSrc != nil {
			pos = butaneHeadPos(in)
		}
		return nil, hooks.Diagnostics{{Severity: hooks.Error, Pos: pos, Path: "ignition.version",
			Message: fmt.Sprintf("Ignition spec version %s: hostprov imports Ignition 3.0.0 to 3.6.0", v),
			Hint:    "write the config for Ignition 3.0.0 to 3.6.0 (Butane fcos 1.0.0 to 1.7.0, flatcar 1.0.0 or 1.1.0)"}}
	}
	cfg, rpt, err := parse(raw)
	diags := reportDiags(rpt, at, "Ignition")
	if err != nil || rpt.IsFatal() {
		if !diags.HasErrors(false) {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file},
				Message: fmt.Sprintf("Ignition refuses the config: %v", err), Hint: "check it with ignition-validate"})
		}
		return nil, diags
	}
	// Every spec version's types marshal to JSON that 3.5.0's read: a
	// later version only adds fields.
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file}, Message: err.Error()})
	}
	var c types.Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file}, Message: err.Error()})
	}
	var generic any
	_ = json.Unmarshal(b, &generic)
	generic = prune(generic)
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
	if _, exp := ignitionParsers[version]; exp && strings.HasSuffix(version, "-experimental") {
		res.IgnitionVersion = newestWritten
		pos := loc.at("ignition", "version")
		if butaneSrc != nil {
			pos = butaneHeadPos(in)
		}
		what := "Ignition " + version
		if aheadOf != "" {
			what = "Ignition " + aheadOf + " (read with Ignition's " + version + " config package, which is what the Ignition module hostprov is built with knows of it)"
		}
		im.diags = append(im.diags, hooks.Diagnostic{Severity: hooks.Warning, Pos: pos, Path: "ignition.version",
			Message: what + ": the spec renders to Ignition " + newestWritten + " at most",
			Hint:    "render it with --ignition-version " + newestWritten + ", which a machine whose Ignition reads " + strings.TrimSuffix(version, "-experimental") + " reads too"})
	}
	res.Hooks, res.origins = im.hooks, im.origins
	res.generic, res.rest, res.Locals = generic, im.rest, im.locals.files
	if im.storageHook.HasStorage() {
		im.storageHook.Name = StorageHook(in.setName, im.hooks)
		res.Hooks = append([]hooks.Hook{im.storageHook}, im.hooks...)
		res.origins = append([]hookOrigins{im.storageOrigins}, im.origins...)
	}
	return res, append(diags, im.diags...)
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
	return vreport.Diagnostics(rpt, at, tool, tool+" says so of the config on its own; check it with "+strings.ToLower(tool)+"-validate or butane --strict")
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
	im.warn(p, Leftovers+msg, hint)
}

// drop puts the whole entry at path entry into the leftovers, with a
// warning at its field at entry+field, which says why.
func (im *ignImporter) drop(entry []any, field []any, msg, hint string) {
	at := append(append([]any(nil), entry...), field...)
	im.rest.add(entry...)
	im.diags = append(im.diags, warn(im.loc.at(at...), jsonPath(entry), Leftovers+msg, hint))
}

func jsonPath(p []any) string { return vreport.Join(p) }

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

// units makes a hook of every unit: a raw hook (useRawName and
// useRawManifest) of a unit with contents, a drop-in-only hook of one
// without, a mask hook of a masked one.
func (im *ignImporter) units(us []types.Unit) {
	for i, u := range us {
		p := []any{"systemd", "units", i}
		h := hooks.Hook{Name: u.Name, UseRawName: true}
		o := hookOrigins{hook: im.origin(p)}
		mask := u.Mask != nil && *u.Mask
		if mask {
			h.Mask = true
			if u.Contents != nil {
				im.move(append(p, "contents"), "the contents of a masked unit",
					"a masked unit is linked to /dev/null and its file is never read; unmask it to have its contents")
			}
			if u.Enabled != nil {
				h.Enabled = u.Enabled
			}
		} else if u.Contents != nil {
			contents := *u.Contents
			f, err := units.Parse([]byte(contents))
			if err != nil {
				msg := err.Error()
				if pe, ok := err.(*units.ParseError); ok {
					msg = fmt.Sprintf("line %d: %s", pe.Line, pe.Msg)
				}
				im.drop(p, []any{"contents"}, "the unit "+u.Name+" is not a unit file hostprov reads: "+msg,
					"fix the unit file; systemd would not load it as meant either")
				continue
			}
			h.UseRawManifest = true
			h.Manifest = contents
			if string(units.NormalizeRaw([]byte(contents))) != contents {
				// hostprov would write it with line feeds and one
				// final newline; exactBytes keeps the config's bytes
				// in every output (see exactBytes).
				h.ExactBytes = true
				im.warn(append(p, "contents"), exactBytesMsg("unit file", contents), exactBytesHint)
			}
			install := hasInstall(f)
			switch {
			case u.Enabled == nil && install:
				// Ignition leaves a unit it is not told to enable or
				// disable as the system's presets have it (systemd's
				// preset-all at first boot, with the image's preset
				// files). A hook is enabled or disabled, never "as the
				// presets say": kops has no way to say it (nodeup starts
				// a hook whose unit has WantedBy=multi-user.target), and
				// a cloud-init or apply node would have to run systemctl
				// preset, which decides by files of the image that differ
				// between images. So the unit, with its drop-ins, goes to
				// the leftovers as written, rather than into the spec with
				// enabled: false, which would disable a unit the presets
				// may enable.
				im.drop(p, []any{"name"}, "the config neither enables nor disables "+u.Name+", which Ignition leaves to the system's presets; a hook is enabled or disabled, so the unit stays as written",
					"to have the unit as a hook, write enabled: true or enabled: false on it in the config and import it again")
				continue
			case u.Enabled != nil && *u.Enabled && !install:
				im.move(append(p, "enabled"), u.Name+" is enabled but has no [Install] section with entries, so enabling it does nothing; hostprov does not tell Ignition to enable it",
					"add an [Install] section (for example WantedBy=multi-user.target), or remove enabled: true")
			case u.Enabled != nil && !*u.Enabled:
				h.Enabled = u.Enabled
			}
		} else {
			h.Enabled = u.Enabled
		}
		for j, d := range u.Dropins {
			dp := append(append([]any(nil), p...), "dropins", j)
			if d.Contents == nil {
				im.move(dp, "the drop-in "+d.Name+" has no contents",
					"give the drop-in its contents, or remove it")
				continue
			}
			if _, err := units.Parse([]byte(*d.Contents)); err != nil {
				im.drop(dp, []any{"contents"}, "the drop-in "+d.Name+" is not a unit file hostprov reads: "+err.Error(),
					"fix the drop-in; systemd would not load it as meant either")
				continue
			}
			if string(units.NormalizeRaw([]byte(*d.Contents))) != *d.Contents {
				h.ExactBytes = true
				im.warn(append(dp, "contents"), exactBytesMsg("drop-in", *d.Contents), exactBytesHint)
			}
			h.Dropins = append(h.Dropins, hooks.Dropin{Name: d.Name, Contents: *d.Contents})
			o.dropins = append(o.dropins, im.origin(dp))
		}
		if !h.Mask && !h.UseRawManifest && len(h.Dropins) == 0 && h.Enabled == nil {
			im.move(p, "the unit "+u.Name+" has nothing hostprov can say: no contents, drop-ins, enabled or mask",
				"remove the unit, or say what Ignition is to do with it")
			continue
		}
		im.hooks = append(im.hooks, h)
		im.origins = append(im.origins, o)
	}
}

// exactBytesMsg says that a unit file's or drop-in's text, which hostprov
// would write with line feeds and one final newline, is kept as it is.
// The spec could hold the normalised text, which systemd reads the same,
// but then no output would be the config's bytes, and a unit of a node the
// config made would be another file to apply. The leftovers cannot hold
// the text instead: a merge refuses a unit whose contents the spec and the
// leftovers both give, and in the leftovers the unit would be no hook.
func exactBytesMsg(what, text string) string {
	return "the " + what + " " + describeNewlines(text) + ", which hostprov would write with line feeds and one final newline; kept byte for byte with exactBytes: true on its hook"
}

const exactBytesHint = "nothing to do: systemd reads both the same; drop exactBytes from the hook to have hostprov's line endings"

func describeNewlines(s string) string {
	switch {
	case strings.Contains(s, "\r"):
		return "has carriage returns"
	case !strings.HasSuffix(s, "\n"):
		return "does not end with a newline"
	}
	return "ends with more than one newline"
}

// hasInstall reports whether a unit file's [Install] section has an
// entry: what Ignition and systemctl enable look for.
func hasInstall(f *units.File) bool {
	s := f.Section(units.SectionInstall)
	return s != nil && len(s.Entries) > 0
}

func owner(o types.NodeUser) string {
	switch {
	case o.ID != nil:
		return strconv.Itoa(*o.ID)
	case o.Name != nil:
		return *o.Name
	}
	return ""
}

func groupOwner(o types.NodeGroup) string { return owner(types.NodeUser(o)) }

func modePtr(m *int) *uint32 {
	if m == nil {
		return nil
	}
	v := uint32(*m)
	return &v
}

// storage puts the config's files, directories and links on the storage
// hook.
func (im *ignImporter) storage(c types.Config) {
	h := &im.storageHook
	for i, f := range c.Storage.Files {
		p := []any{"storage", "files", i}
		if len(f.Append) > 0 {
			// A hostprov file is the whole file: what the config appends
			// cannot be said, and a file written without it would be
			// another file.
			im.drop(p, []any{"append"}, f.Path+": append adds to a file, and a hostprov file is the whole file",
				"write the whole file as the hook's file, or append in a command hook")
			continue
		}
		hf := hooks.File{Path: f.Path, Mode: modePtr(f.Mode), User: owner(f.User), Group: groupOwner(f.Group)}
		if f.Overwrite != nil && *f.Overwrite {
			hf.Overwrite = true
		}
		if !im.ownersOK(p, f.Path, hf.User, hf.Group) || !im.contents(&hf, f.Contents, p) {
			continue
		}
		h.Files = append(h.Files, hf)
		im.storageOrigins.files = append(im.storageOrigins.files, im.origin(p))
	}
	for i, d := range c.Storage.Directories {
		p := []any{"storage", "directories", i}
		if d.Overwrite != nil && *d.Overwrite {
			// A merge takes an entry of a path whole: the directory goes
			// with its overwrite.
			im.drop(p, []any{"overwrite"}, d.Path+": overwrite of a directory (replace what is at the path) has no hostprov equivalent",
				"remove what is at the path with a command hook, if it must go")
			continue
		}
		hd := hooks.Directory{Path: d.Path, Mode: modePtr(d.Mode), User: owner(d.User), Group: groupOwner(d.Group)}
		if !im.ownersOK(p, d.Path, hd.User, hd.Group) {
			continue
		}
		h.Directories = append(h.Directories, hd)
		im.storageOrigins.directories = append(im.storageOrigins.directories, im.origin(p))
	}
	for i, l := range c.Storage.Links {
		p := []any{"storage", "links", i}
		if l.Target == nil {
			im.move(p, "the link "+l.Path+" has no target", "give the link its target")
			continue
		}
		hl := hooks.Link{Path: l.Path, Target: *l.Target, Hard: l.Hard != nil && *l.Hard, User: owner(l.User), Group: groupOwner(l.Group),
			Overwrite: l.Overwrite != nil && *l.Overwrite}
		if !im.ownersOK(p, l.Path, hl.User, hl.Group) {
			continue
		}
		h.Links = append(h.Links, hl)
		im.storageOrigins.links = append(im.storageOrigins.links, im.origin(p))
	}
}

// ownersOK reports whether the user and group of the entry at p (of the
// file or directory at path) are owners a spec can name, and warns that
// the entry is kept out when not.
func (im *ignImporter) ownersOK(p []any, path, user, group string) bool {
	for _, o := range []struct{ field, v string }{{"user", user}, {"group", group}} {
		if o.v == "" {
			continue
		}
		if problem := hooks.OwnerProblem(o.v); problem != "" {
			im.drop(p, []any{o.field}, fmt.Sprintf("%s: the %s %q is not one a hook spec can name: %s", path, o.field, o.v, problem),
				"rename the account, or give its numeric id")
			return false
		}
	}
	return true
}

// contents sets a file's bytes from an Ignition resource: a data URL's
// decoded (and gunzipped) bytes as contents, a remote source with its
// hash as source. It reports false, with a warning, for what a hostprov
// file cannot be.
func (im *ignImporter) contents(f *hooks.File, r types.Resource, entry []any) bool {
	drop := func(field, msg, hint string) bool {
		im.drop(entry, []any{"contents", field}, f.Path+": "+msg, hint)
		return false
	}
	if len(r.HTTPHeaders) > 0 {
		return drop("httpHeaders", "a source fetched with HTTP headers", "hostprov fetches a source without headers: put the file where it can be fetched so, with its hash")
	}
	if r.Verification.Hash != nil {
		f.Hash = *r.Verification.Hash
	}
	if r.Source == nil {
		empty := ""
		f.Contents = &empty
		return true
	}
	src := *r.Source
	u, err := url.Parse(src)
	if err != nil {
		return drop("source", "the source is not a URL: "+err.Error(), "fix the URL")
	}
	if u.Scheme != "data" {
		if r.Compression != nil && *r.Compression != "" {
			return drop("compression", "a compressed download, which hostprov does not decompress", "put the file uncompressed where it can be fetched, with the hash of its bytes")
		}
		if f.Hash == "" {
			return drop("source", "a file from "+u.Scheme+":// without verification.hash, which a hostprov file from a source needs", "add verification: {hash: sha512-HEX} (sha512sum FILE) to the config, then import it again")
		}
		if u.Scheme != "https" && u.Scheme != "s3" {
			return drop("source", "a source of scheme "+u.Scheme+"://; hostprov fetches https:// and s3:// only", "put the file at an https:// URL, with its hash")
		}
		f.Source = src
		return true
	}
	du, err := dataurl.DecodeString(src)
	if err != nil {
		return drop("source", "the data URL does not decode: "+err.Error(), "fix the data URL")
	}
	data := du.Data
	if r.Compression != nil && *r.Compression == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err == nil {
			data, err = io.ReadAll(zr)
		}
		if err != nil {
			return drop("source", "the gzip-compressed data does not decompress: "+err.Error(), "fix the data URL")
		}
	}
	if !utf8.Valid(data) {
		if name := im.locals.add(f.Path, data); name != "" {
			f.Local = name
			return true
		}
		return drop("source", "the contents are not UTF-8 text, which a hook spec's contents: cannot carry, and the spec goes to no directory for a local: file to be beside it",
			"import with -o FILE: such contents go beside it as local: files")
	}
	s := string(data)
	f.Contents = &s
	return true
}

// passwd puts the config's users and groups on the storage hook, with
// the fields hostprov has; the others are warned about and kept out.
func (im *ignImporter) passwd(pw types.Passwd) {
	h := &im.storageHook
	// ownGroup are the users of the spec without a primaryGroup: a group
	// of the spec named as one of them would be its primary group in
	// every output (compile.Storage.PrimaryGroup), which the config does
	// not say (see below).
	ownGroup := map[string]bool{}
	for i, u := range pw.Users {
		p := []any{"passwd", "users", i}
		if problem := hooks.AccountNameProblem(u.Name); problem != "" {
			im.drop(p, []any{"name"}, fmt.Sprintf("the user name %q is not one systemd-sysusers accepts: %s", u.Name, problem),
				"rename the user: a letter or _ first, then letters, digits, _ or -")
			continue
		}
		if u.ShouldExist != nil && !*u.ShouldExist {
			im.drop(p, []any{"shouldExist"}, "the user "+u.Name+" is to be deleted, which hostprov does not do",
				"delete the user with a command hook")
			continue
		}
		hu := hooks.User{Name: u.Name, System: u.System != nil && *u.System}
		if u.UID != nil {
			id := uint32(*u.UID)
			hu.UID = &id
		}
		if u.HomeDir != nil {
			hu.Home = *u.HomeDir
		}
		if u.Shell != nil {
			hu.Shell = *u.Shell
		}
		for _, g := range u.Groups {
			hu.Groups = append(hu.Groups, string(g))
		}
		for k, key := range u.SSHAuthorizedKeys {
			if problem := hooks.AuthorizedKeyProblem(string(key)); problem != "" {
				im.move(append(p, "sshAuthorizedKeys", k), "a key of the user "+u.Name+": "+problem,
					"give the line of the key's .pub file")
				continue
			}
			hu.SSHAuthorizedKeys = append(hu.SSHAuthorizedKeys, string(key))
		}
		if u.PasswordHash != nil {
			if problem := hooks.PasswordHashProblem(*u.PasswordHash); problem != "" {
				im.move(append(p, "passwordHash"), "the password of the user "+u.Name+": "+problem,
					"make a hash with mkpasswd -m yescrypt or openssl passwd -6, and give it as passwordHash")
			} else {
				hu.PasswordHash = *u.PasswordHash
			}
		}
		if u.PrimaryGroup != nil {
			hu.PrimaryGroup = *u.PrimaryGroup
		} else {
			ownGroup[u.Name] = true
		}
		hu.NoCreateHome = u.NoCreateHome != nil && *u.NoCreateHome
		// The no* fields false are what every output does: only true
		// is lost.
		unsupported := map[string]bool{
			"gecos":       u.Gecos != nil,
			"noLogInit":   u.NoLogInit != nil && *u.NoLogInit,
			"noUserGroup": u.NoUserGroup != nil && *u.NoUserGroup,
		}
		for _, k := range sortedTrue(unsupported) {
			im.move(append(p, k), k+" of the user "+u.Name+": a hostprov user has name, uid, system, home, shell, groups, sshAuthorizedKeys, passwordHash, primaryGroup and noCreateHome",
				userHints[k])
		}
		h.Users = append(h.Users, hu)
		im.storageOrigins.users = append(im.storageOrigins.users, im.origin(p))
	}
	for i, g := range pw.Groups {
		p := []any{"passwd", "groups", i}
		if problem := hooks.AccountNameProblem(g.Name); problem != "" {
			im.drop(p, []any{"name"}, fmt.Sprintf("the group name %q is not one systemd-sysusers accepts: %s", g.Name, problem),
				"rename the group: a letter or _ first, then letters, digits, _ or -")
			continue
		}
		if g.ShouldExist != nil && !*g.ShouldExist {
			im.drop(p, []any{"shouldExist"}, "the group "+g.Name+" is to be deleted, which hostprov does not do",
				"delete the group with a command hook")
			continue
		}
		if ownGroup[g.Name] {
			// With the group in the spec, every output would make it the
			// user's primary group (Ignition's and cloud-init's useradd
			// refuse to create a user whose name is a group's that
			// exists, without --gid), a field the config does not have.
			// Without it, each output creates the user with a group of
			// its name (useradd's user group, systemd-sysusers' group of
			// the user's name), which is what the config most likely
			// means; the group as written, its gid with it, goes to the
			// leftovers, so that render --merge gives the config back
			// as it is.
			im.drop(p, []any{"name"}, "the group "+g.Name+" is named as a user the config creates without a primaryGroup: in the spec, hostprov would make it that user's primary group, which the config does not say; without it, the user gets a group of its own name",
				"if the group is the user's own, write primaryGroup: "+g.Name+" on the user in the config (useradd refuses to create the user otherwise, as the group exists) and import it again")
			continue
		}
		hg := hooks.Group{Name: g.Name, System: g.System != nil && *g.System}
		if g.Gid != nil {
			id := uint32(*g.Gid)
			hg.GID = &id
		}
		if g.PasswordHash != nil {
			im.move(append(p, "passwordHash"), "passwordHash of the group "+g.Name+": a hostprov group has name, gid and system",
				"set group passwords, if you need them, with a command hook")
		}
		h.Groups = append(h.Groups, hg)
		im.storageOrigins.groups = append(im.storageOrigins.groups, im.origin(p))
	}
}

var userHints = map[string]string{
	"gecos":       "the comment of an account is not kept; set it with a command hook (usermod -c) if it matters",
	"noLogInit":   "hostprov creates accounts with systemd-sysusers, which writes no lastlog",
	"noUserGroup": "systemd-sysusers gives every user a group of its name",
}

func sortedTrue(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
