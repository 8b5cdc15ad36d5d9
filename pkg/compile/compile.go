// Package compile turns a hook spec into the rendered model: systemd units
// and their drop-ins, and the storage (files, directories, links, users and
// groups) the hooks bring along, with the stamps and step names of command
// hooks. It knows no output format: the writers of package render and the
// planner of package apply both start from its Unit and Storage, so a node
// that only applies units links no Ignition or Butane code.
//
// The whole of it is Build: parse the spec (package hooks), build one unit
// per hook and the storage of every hook, then check the units with the
// systemd unit model (package units) and the storage against the units,
// reporting every problem at the place in the spec it comes from. Every
// output is made from the same Result, so a unit's bytes are the same in
// all of them. Units is the same building and checking of units for a
// caller that holds a parsed spec already (the kops hooks).
package compile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// Unit is one rendered unit: its file, its drop-ins and how systemd should
// treat it.
type Unit struct {
	// Name is the unit's full name ("create-swapfile.service").
	Name string
	// Contents is the unit file; nil for a hook that only adds drop-ins
	// to, enables or masks a unit that exists on the machine already.
	Contents []byte
	// Enabled says whether to enable (true) or disable (false) the unit;
	// nil leaves it as it is.
	Enabled *bool
	// Mask masks the unit.
	Mask bool
	// Dropins are the unit's drop-in files, in spec order.
	Dropins []Dropin
	// Hook is the index of the hook this unit comes from, and HookName
	// that hook's name as written in the spec.
	Hook     int
	HookName string
	// Pos is where that hook is written (the start of its list item), for
	// messages about the unit that arise after rendering, such as what an
	// output cannot carry; zero when it is not known.
	Pos hooks.Position
	// DeviceOf is, for the device unit that carries a hook's
	// deviceTimeout (a drop-in only), the .mount or .swap unit of that
	// hook; Pos is then where deviceTimeout is written.
	DeviceOf string
}

// Dropin is a drop-in file, written as NAME.d/Name.
type Dropin struct {
	Name     string
	Contents []byte
}

// Options are what a caller may give Build besides the spec.
type Options struct {
	// Locals are the spec's local: files by name (the name local:
	// gives), read from here rather than from beside the spec file, so
	// that the spec hostprov import writes is checked before its files
	// are written anywhere. A name Locals lacks is read from beside the
	// spec file.
	Locals map[string][]byte
}

// Build is the whole pipeline from spec bytes: parse and check the spec,
// build its units and its storage (files, directories, links, users,
// groups), and check them. file is the spec's path: it names the spec in
// diagnostics, and local: files are read relative to its directory, at
// render time, and may not be outside it. It returns every problem found,
// sorted by position; the Result must not be used when they hold an error
// (diags.HasErrors).
func Build(file string, data []byte, opts Options) (Result, hooks.Diagnostics) {
	spec, diags := hooks.Parse(file, data)
	if spec == nil {
		return Result{}, diags
	}
	b := newBuilder(spec, diags)
	b.locals = opts.Locals
	us := b.units()
	st := b.storage(file)
	b.checkUnitPaths(us, st)
	diags = append(diags, b.diags...)
	diags.Sort()
	return Result{Spec: spec, Units: us, Storage: st}, diags
}

// Units builds the units of a parsed spec and checks them. It is Build
// without the parsing and without the storage, for callers that hold a
// Spec already and carry only its units.
func Units(spec *hooks.Spec) ([]Unit, hooks.Diagnostics) {
	b := newBuilder(spec, nil)
	return b.units(), b.diags
}

// newBuilder returns a builder for spec that knows what the parser
// refused, from its diagnostics prior.
func newBuilder(spec *hooks.Spec, prior hooks.Diagnostics) *builder {
	b := &builder{spec: spec, seen: make(map[string]int, len(spec.Hooks)), refused: map[string]bool{}, refusedHooks: map[int]bool{}}
	for _, d := range prior {
		if d.Severity == hooks.Error {
			b.refused[d.Path] = true
			if i, ok := hookIndex(d.Path); ok {
				b.refusedHooks[i] = true
			}
		}
	}
	return b
}

// units builds the unit of every hook that gives one, in spec order.
func (b *builder) units() []Unit {
	out := make([]Unit, 0, len(b.spec.Hooks))
	for i := range b.spec.Hooks {
		if u, ok := b.hook(i); ok {
			out = append(out, u)
			if dev, ok := b.deviceTimeout(i, u); ok {
				out = append(out, dev)
			}
		}
	}
	b.checkDeviceWaits()
	return out
}

// builder carries the spec being rendered and the problems found so far.
type builder struct {
	spec *hooks.Spec
	// locals, when not nil, are the local: files of the spec by name,
	// read from here rather than from beside the spec file.
	locals map[string][]byte
	// scratch is the gen generate builds each unit with (see there):
	// its file is the last generated unit's until the next one.
	scratch *gen
	diags   hooks.Diagnostics
	seen    map[string]int // unit name -> index of the hook that made it
	// refused holds the paths the parser reported errors at, and
	// refusedHooks the indexes of the hooks those paths are in, so that
	// asking about a hook costs the same however many errors the spec
	// has (scanning every refused path for every hook made a spec of 40000
	// hooks with an error each take minutes).
	refused      map[string]bool
	refusedHooks map[int]bool
	// examined counts the refused paths looked at to answer refusedIn,
	// for the test that holds it to one per hook.
	examined int
	// mounts holds, by hook index, what deviceTimeout and
	// checkDeviceWaits need of the .mount and .swap units.
	mounts map[int]mountInfo
}

// report records a problem, unless the parser refused the value at path
// already: a second report of the same value would only follow from the
// first.
func (b *builder) report(sev hooks.Severity, pos hooks.Position, path, msg, hint string) {
	if b.refused[path] {
		return
	}
	b.diags = append(b.diags, hooks.Diagnostic{Severity: sev, Pos: pos, Path: path, Message: msg, Hint: hint})
}

// refusedIn reports whether the parser refused hook i or any value inside
// it.
func (b *builder) refusedIn(i int) bool {
	b.examined++
	return b.refusedHooks[i]
}

// hookIndex returns i for a path inside hook i: "hooks[i]" itself or a
// path that starts with "hooks[i]." or "hooks[i][".
func hookIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "hooks[")
	if !ok {
		return 0, false
	}
	end := strings.IndexByte(rest, ']')
	if end <= 0 || (len(rest) > end+1 && rest[end+1] != '.' && rest[end+1] != '[') {
		return 0, false
	}
	i, err := strconv.Atoi(rest[:end])
	if err != nil || i < 0 || strconv.Itoa(i) != rest[:end] {
		return 0, false
	}
	return i, true
}

func (b *builder) errorf(path, hint, format string, args ...any) {
	b.report(hooks.Error, b.spec.Where(path), path, fmt.Sprintf(format, args...), hint)
}

func (b *builder) warnf(path, hint, format string, args ...any) {
	b.report(hooks.Warning, b.spec.Where(path), path, fmt.Sprintf(format, args...), hint)
}

// UnitName is the name of the unit a hook renders to: the name as written
// when useRawName is set or when it already ends in a unit type suffix, and
// the name with ".service" appended otherwise (kops's rule).
func UnitName(h *hooks.Hook) string {
	if h.UseRawName || units.Type(h.Name) != "" {
		return h.Name
	}
	return h.Name + ".service"
}

// hook renders hook i. It reports false when the hook gives no unit at all
// (its problems are in b.diags).
func (b *builder) hook(i int) (Unit, bool) {
	h := &b.spec.Hooks[i]
	p := "hooks[" + strconv.Itoa(i) + "]"
	if h.Name == "" || b.refused[p+".name"] {
		return Unit{}, false // reported by the parser
	}
	name := UnitName(h)
	if err := units.ValidateName(name); err != nil {
		hint := ""
		if h.UseRawName && units.Type(name) == "" {
			hint = fmt.Sprintf("with useRawName the name must end in a unit type, such as %q; or drop useRawName to get %q", name+".service", name+".service")
		}
		b.errorf(p+".name", hint, "%v", err)
		return Unit{}, false
	}
	if j, dup := b.seen[name]; dup {
		b.errorf(p+".name", fmt.Sprintf("hooks[%d] (line %d) renders %s already: give each hook its own name", j, b.spec.Where(fmt.Sprintf("hooks[%d].name", j)).Line, name),
			"two hooks render the same unit %s", name)
		return Unit{}, false
	}
	b.seen[name] = i

	u := Unit{Name: name, Hook: i, HookName: h.Name, Mask: h.Mask, Pos: b.spec.Where(p)}
	if h.HasStorage() && !h.UseRawManifest && !h.Generated() && !h.Mask && h.Enabled == nil && len(h.Dropins) == 0 {
		// The hook only puts files on the machine: there is no unit.
		return Unit{}, false
	}
	if b.refusedIn(i) {
		// What the parser could not read is missing from the hook, so a
		// unit built from the rest would only give problems that follow
		// from the first (a service "without a command" whose exec was
		// refused). The name still counts, for duplicates.
		return Unit{}, false
	}
	var file *units.File
	switch {
	case h.UseRawManifest && strings.TrimSpace(h.Manifest) == "":
		// Reported by the parser.
	case h.UseRawManifest:
		mp := p + ".manifest"
		file = b.parseText(mp, h.Manifest, "")
		if file != nil {
			u.Contents = rawText(h, h.Manifest)
			b.checkFile(p, name, file, entryPlaces{path: mp})
			b.recordMount(i, name, file)
		}
	case h.Generated():
		var g *gen
		file, g = b.generate(i, p, name)
		if file != nil {
			u.Contents = file.Canonical()
			b.checkFile(p, name, file, entryPlaces{g: g})
			b.recordMount(i, name, file)
		}
	}
	if u.Contents != nil || h.Enabled != nil {
		enabled := h.IsEnabled()
		u.Enabled = &enabled
	}
	if u.Contents != nil && u.Enabled != nil && *u.Enabled && !h.Mask {
		// Point at what made the unit: the raw manifest, or the
		// wantedBy that emptied [Install].
		at := ".wantedBy"
		if h.UseRawManifest {
			at = ".manifest"
		}
		b.checkInstall(p, at, name, file)
	}
	for k, d := range h.Dropins {
		dp := fmt.Sprintf("%s.dropins[%d].contents", p, k)
		df := b.parseText(dp, d.Contents, "")
		if df == nil {
			continue
		}
		b.checkDirectives(df, entryPlaces{path: dp})
		b.checkExec(df, entryPlaces{path: dp})
		u.Dropins = append(u.Dropins, Dropin{Name: d.Name, Contents: rawText(h, d.Contents)})
	}
	return u, true
}

// rawText is the bytes of a raw manifest or drop-in of h: with LF line
// endings and one final newline (units.NormalizeRaw), or, with
// exactBytes, as written. Every output and apply take these bytes, so
// exactBytes needs nothing of them: the YAML outputs write a text that a
// literal block cannot keep as a double-quoted string (yamlnode.Text), and
// systemd reads CR, CRLF and LF line ends, and a last line without one,
// the same.
func rawText(h *hooks.Hook, text string) []byte {
	if h.ExactBytes {
		return []byte(text)
	}
	return units.NormalizeRaw([]byte(text))
}

// entryPlaces says where in the spec the entries of a unit file come
// from: for a generated unit, what its gen recorded; for a unit parsed from
// the text at path (a raw manifest or drop-in), the lines of that text.
type entryPlaces struct {
	g    *gen
	path string
}

// userText reports whether e is unit text the user wrote (a manifest,
// directives, a drop-in): whether its path holds ".manifest",
// ".directives." or ".contents".
func (pl entryPlaces) userText(e *units.Entry) bool {
	if pl.g != nil {
		return pl.g.origin(e).userText()
	}
	return strings.Contains(pl.path, ".manifest") || strings.Contains(pl.path, ".directives.") || strings.Contains(pl.path, ".contents")
}

// place is where in the spec e comes from, and the path there. The
// position is looked up only here, for an entry a problem is reported at.
func (b *builder) place(pl entryPlaces, e *units.Entry) (hooks.Position, string) {
	if pl.g != nil {
		o := pl.g.origin(e)
		return pl.g.where(o), pl.g.path(o)
	}
	return b.spec.WhereInScalar(pl.path, e.Line), pl.path
}

// parseText parses unit text from the spec at path. section, when not
// empty, is the section the text is the body of (a non-raw manifest).
// It reports parse errors at their line in the spec and returns nil.
func (b *builder) parseText(path, text, section string) *units.File {
	data := []byte(text)
	offset := 0
	if section != "" {
		// The text is a section body: give it its header, and count
		// lines from the body's own first line.
		data = append([]byte("["+section+"]\n"), data...)
		offset = 1
	}
	f, err := units.Parse(data)
	if err != nil {
		line := 0
		msg, hint := err.Error(), ""
		if pe, ok := err.(*units.ParseError); ok {
			line, msg, hint = pe.Line-offset, pe.Msg, pe.Hint
		}
		pos := b.spec.Where(path)
		if line >= 1 {
			pos = b.spec.WhereInScalar(path, line)
		}
		b.report(hooks.Error, pos, path, "not a valid unit file: "+msg, hint)
		return nil
	}
	return f
}

// checkFile checks a unit file built or read for hook p: its directives
// against systemd's vocabulary, and a path unit's name against its path.
func (b *builder) checkFile(p, name string, f *units.File, pl entryPlaces) {
	b.checkDirectives(f, pl)
	b.checkExec(f, pl)
	typ := units.Type(name)
	var key string
	switch typ {
	case "swap":
		key = "What"
	case "mount", "automount":
		key = "Where"
	default:
		return
	}
	sect := units.TypeSection(typ)
	vals := f.Values(sect, key)
	var path string
	for _, v := range vals {
		if v != "" {
			path = v
		}
	}
	if path == "" {
		b.errorf(p+".name", fmt.Sprintf("add %s=PATH to [%s]", key, sect), "%s %s unit needs %s= in [%s]", article(typ), typ, key, sect)
		return
	}
	want, err := units.PathUnitName(path, typ)
	if err != nil {
		b.errorf(p+".name", "", "%s=%s: %v", key, path, err)
		return
	}
	if want != name && !strings.Contains(name, "@") {
		// Not %q: unit names hold backslashes (\x2d) that must be
		// shown as they are to be copied.
		// want ends in the unit type, so the name is kept as written
		// without useRawName: the hint asks for nothing more.
		b.errorf(p+".name", fmt.Sprintf("name the hook \"%s\" (systemd-escape --path --suffix=%s '%s')", want, typ, path),
			"systemd requires %s %s unit to be named after its %s= path %s, but it is named %s", article(typ), typ, key, path, name)
	}
}

// checkExec checks the Exec*= lines the user wrote as unit text (a
// manifest, directives, a drop-in) as systemd 252 checks them: a line it
// refuses, which makes the whole unit fail to load, is an error; a line it
// ignores because of its "-" prefix is a warning. Lines built from exec:,
// pre: and steps: are quoted by QuoteExec and their specifiers checked by
// checkSpecifiers, at the argument.
func (b *builder) checkExec(f *units.File, pl entryPlaces) {
	for _, s := range f.Sections {
		for _, e := range s.Entries {
			if !units.IsExecCommand(s.Name, e.Key) {
				continue
			}
			if !pl.userText(e) {
				continue
			}
			err := units.CheckExec(e.Value)
			if err == nil {
				continue
			}
			at, path := b.place(pl, e)
			if ee := err.(*units.ExecError); ee.Ignored {
				b.report(hooks.Warning, at, path, fmt.Sprintf("%s=%s: %v; because of its \"-\" prefix systemd ignores this command instead of refusing the unit", e.Key, e.Value, err),
					"fix the command, or remove the line")
				continue
			}
			b.report(hooks.Error, at, path, fmt.Sprintf("%s=%s: %v; systemd refuses to load the unit", e.Key, e.Value, err), "")
		}
	}
}

// checkDirectives warns about sections and keys systemd does not know.
func (b *builder) checkDirectives(f *units.File, pl entryPlaces) {
	for _, s := range f.Sections {
		if !units.KnownSection(s.Name) {
			var at hooks.Position
			var path string
			if len(s.Entries) > 0 {
				at, path = b.place(pl, s.Entries[0])
			}
			b.report(hooks.Warning, at, path, fmt.Sprintf("systemd does not know section [%s] and ignores it", s.Name),
				"name private sections X-Something")
			continue
		}
		for _, e := range s.Entries {
			if units.KnownDirective(s.Name, e.Key) {
				continue
			}
			at, path := b.place(pl, e)
			b.report(hooks.Warning, at, path, fmt.Sprintf("systemd does not know %s= in [%s] and ignores it", e.Key, s.Name),
				units.SuggestDirective(s.Name, e.Key))
		}
	}
}

// checkInstall warns about an enabled unit that cannot be enabled: one
// whose [Install] section is missing or names nothing to enable it for
// (systemctl enable then only says "no installation config"), or a
// template without a default instance. The warning is at the field
// (".wantedBy", ".manifest") of the hook at path hook.
func (b *builder) checkInstall(hook, field, name string, f *units.File) {
	if !hasInstallTarget(f) && lastOf(f, units.SectionInstall, "Alias") == "" {
		b.warnf(hook+field, "add an [Install] section (for example WantedBy="+orDefault(units.DefaultTarget(units.Type(name)), "multi-user.target")+"), or set enabled: false",
			"%s is enabled but has no [Install] section with WantedBy= or RequiredBy=, so enabling it does nothing and it will not start at boot", name)
		return
	}
	if strings.HasSuffix(strings.TrimSuffix(name, "."+units.Type(name)), "@") && !hasKey(f, units.SectionInstall, "DefaultInstance") {
		b.warnf(hook+field, "add DefaultInstance= to [Install], or name an instance (foo@bar.service) in a hook of its own",
			"%s is a template: it cannot be enabled without an instance", name)
	}
}

// article is "a" or "an" for a unit type, as it is read aloud.
func article(typ string) string {
	if strings.ContainsRune("aeio", rune(typ[0])) {
		return "an"
	}
	return "a"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// sortedKeys returns m's keys in byte order. Written out like this the
// compiler inlines it and keeps the keys of a hook's few variables and
// sections off the heap; slices.Sorted(maps.Keys(m)), which says the same,
// allocated its iterator and slice on every call, even for an empty map:
// 386,000 allocations instead of 318,500 for a 10,000-hook render (make
// bench-butane), which calls this up to three times a hook.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
