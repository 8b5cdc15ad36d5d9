package hooks

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/internal/yamlnode"
)

// hookFields are the fields of a hook, in the order they are documented.
var hookFields = []string{
	"name", "description", "enabled", "mask", "useRawName", "useRawManifest", "manifest", "exactBytes",
	"requires", "wants", "before", "after", "wantedBy",
	"type", "exec", "pre", "expandEnv", "specifiers", "remainAfterExit", "env", "environmentFile", "workingDirectory",
	"user", "group", "restart", "restartSec", "timeoutStartSec", "timeoutStopSec",
	"stateDirectory", "logsDirectory", "configurationDirectory", "steps", "when",
	"deviceTimeout",
	"directives", "dropins", "files", "directories", "links", "users", "groups",
	"disruption",
}

// generatedFields make up a generated unit. With useRawManifest the
// manifest is the unit as written, so each of them would be ignored.
var generatedFields = []string{
	"description", "requires", "wants", "before", "after", "wantedBy",
	"type", "exec", "pre", "expandEnv", "specifiers", "remainAfterExit", "env", "environmentFile", "workingDirectory",
	"user", "group", "restart", "restartSec", "timeoutStartSec", "timeoutStopSec",
	"stateDirectory", "logsDirectory", "configurationDirectory", "steps", "when", "directives",
}

// serviceFields only mean something in a [Service] section.
var serviceFields = []string{
	"type", "exec", "pre", "expandEnv", "remainAfterExit", "env", "environmentFile", "workingDirectory",
	"user", "group", "restart", "restartSec", "timeoutStartSec", "timeoutStopSec",
	"stateDirectory", "logsDirectory", "configurationDirectory", "steps", "when",
}

// notWithSteps are the fields that a command hook's steps replace: steps
// are the commands, always of a oneshot that remains active.
var notWithSteps = []string{"exec", "pre", "manifest", "remainAfterExit", "restart", "restartSec"}

var whenValues = []string{WhenOnce, WhenAlways, WhenNever}

var disruptionValues = []string{DisruptionNone, DisruptionDrain, DisruptionReboot}

// stepNameRE keeps step names plain: they are shown in status output and
// written in the unit as comments.
var stepNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// bodyFields are what a unit runs or is made of; a masked unit has no use
// for them.
var bodyFields = []string{"manifest", "exec", "pre", "steps", "directives"}

// deviceTimeoutTypes are the unit types whose What= can be a device that
// systemd waits for.
var deviceTimeoutTypes = []string{"mount", "swap"}

var dropinFields = []string{"name", "contents"}

var stepFields = []string{"name", "run", "sh"}

// HookFields, StepFields and DropinFields are the fields of a hook, a step
// and a drop-in, in the order they are documented: for a schema of the
// hook spec elsewhere (the HostHooks API) to be checked against.
func HookFields() []string   { return append([]string(nil), hookFields...) }
func StepFields() []string   { return append([]string(nil), stepFields...) }
func DropinFields() []string { return append([]string(nil), dropinFields...) }

// unitTypes are systemd's unit type suffixes other than "service": a hook
// named with one of them is not a service. A name without a type suffix
// becomes a service.
var unitTypes = []string{"socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope"}

var serviceTypes = []string{"simple", "exec", "forking", "oneshot", "dbus", "notify", "notify-reload", "idle"}

var restartPolicies = []string{"no", "always", "on-success", "on-failure", "on-abnormal", "on-abort", "on-watchdog"}

var (
	// timeSpanRE is systemd's time span syntax (systemd.time(7)): numbers,
	// each with an optional unit (seconds without one), optionally
	// separated by spaces.
	timeSpanRE = regexp.MustCompile(`^\s*(?:(?:\d+(?:\.\d*)?|\.\d+)\s*(?:usec|us|µs|μs|msec|ms|seconds|second|sec|s|minutes|minute|min|months|month|m|M|hours|hour|hr|h|days|day|d|weeks|week|w|years|year|y)?\s*)+$`)
)

// hook decodes one entry of hooks: and checks what can be checked without
// the unit model. ok is false when the hook's name could not be decoded.
func (d *decoder) hook(v value) (Hook, bool) {
	var h Hook
	var st hookState
	d.mapping(v.node, v.path, func(e entry) {
		field, known := hookField[e.name]
		if known {
			st.present |= 1 << field
		}
		before := len(d.diags)
		defer func() {
			switch {
			case !known:
			case len(d.diags) > before:
				st.bad |= 1 << field
			default:
				st.bad &^= 1 << field
			}
		}()
		switch e.name {
		case "name":
			h.Name, st.nameOK = d.str(e.value, false)
		case "description":
			h.Description, _ = d.str(e.value, false)
		case "enabled":
			if b, ok := d.boolean(e.value); ok {
				h.Enabled = &b
			}
		case "mask":
			h.Mask, _ = d.boolean(e.value)
		case "useRawName":
			h.UseRawName, _ = d.boolean(e.value)
		case "useRawManifest":
			h.UseRawManifest, _ = d.boolean(e.value)
		case "expandEnv":
			h.ExpandEnv, _ = d.boolean(e.value)
		case "specifiers":
			h.Specifiers, _ = d.boolean(e.value)
		case "remainAfterExit":
			if b, ok := d.boolean(e.value); ok {
				h.RemainAfterExit = &b
			}
		case "manifest":
			h.Manifest, _ = d.str(e.value, true)
		case "exactBytes":
			h.ExactBytes, _ = d.boolean(e.value)
		case "requires":
			h.Requires, _ = d.strList(e.value, `["network-online.target"]`)
		case "wants":
			h.Wants, _ = d.strList(e.value, `["network-online.target"]`)
		case "before":
			h.Before, _ = d.strList(e.value, `["kubelet.service"]`)
		case "after":
			h.After, _ = d.strList(e.value, `["network-online.target"]`)
		case "wantedBy":
			if isNull(e.node) {
				d.noValue(e.value, "write wantedBy: [] for no WantedBy=, or remove the line for the unit type's usual target")
				break
			}
			h.WantedBy, _ = d.strList(e.value, `["multi-user.target"]`)
		case "type":
			h.Type, _ = d.str(e.value, false)
			d.oneOf(e.value, h.Type, serviceTypes, "service type")
		case "restart":
			h.Restart, _ = d.str(e.value, false)
			d.oneOf(e.value, h.Restart, restartPolicies, "restart policy")
		case "exec":
			h.Exec = d.argv(e.value)
		case "pre":
			h.Pre = d.pre(e.value)
		case "env":
			h.Env = d.env(e.value)
		case "environmentFile":
			h.EnvironmentFile, _ = d.str(e.value, false)
		case "workingDirectory":
			h.WorkingDirectory, _ = d.str(e.value, false)
		case "user":
			h.User, _ = d.str(e.value, false)
		case "group":
			h.Group, _ = d.str(e.value, false)
		case "restartSec":
			h.RestartSec = d.timeSpan(e.value)
		case "timeoutStartSec":
			h.TimeoutStartSec = d.timeSpan(e.value)
		case "timeoutStopSec":
			h.TimeoutStopSec = d.timeSpan(e.value)
		case "stateDirectory":
			h.StateDirectory = d.relDir(e.value)
		case "logsDirectory":
			h.LogsDirectory = d.relDir(e.value)
		case "configurationDirectory":
			h.ConfigurationDirectory = d.relDir(e.value)
		case "steps":
			h.Steps = d.steps(e.value)
		case "when":
			h.When, _ = d.str(e.value, false)
			d.oneOf(e.value, h.When, whenValues, "when value")
		case "deviceTimeout":
			h.DeviceTimeout = d.timeSpan(e.value)
		case "directives":
			h.Directives = d.directives(e.value)
		case "dropins":
			h.Dropins = d.dropins(e.value)
		case "files":
			h.Files = d.files(e.value)
		case "directories":
			h.Directories = d.directories(e.value)
		case "links":
			h.Links = d.links(e.value)
		case "users":
			h.Users = d.users(e.value)
		case "groups":
			h.Groups = d.groups(e.value)
		case "disruption":
			h.Disruption, _ = d.str(e.value, false)
			d.oneOf(e.value, h.Disruption, disruptionValues, "disruption")
		default:
			st.unknown = true
			d.unknownField(e, "hook")
		}
	})
	d.checkHook(v, &h, st)
	return h, st.nameOK
}

// hookState is what checkHook needs to know about how a hook was written.
type hookState struct {
	present fieldSet // fields that were written
	bad     fieldSet // fields that had a problem of their own
	nameOK  bool     // the name decoded as a string
	unknown bool     // a field was unknown
}

// fieldSet is a set of hook fields, by their place in hookFields: two
// maps per hook, for what hookState says of its fields, were a tenth of
// the allocations of reading a spec.
type fieldSet uint64

// hookField is the place of each field in hookFields.
var hookField = func() map[string]int {
	if len(hookFields) > 64 {
		panic("a fieldSet holds 64 hook fields")
	}
	m := make(map[string]int, len(hookFields))
	for i, f := range hookFields {
		m[f] = i
	}
	return m
}()

func (s fieldSet) has(field string) bool {
	i, ok := hookField[field]
	return ok && s&(1<<i) != 0
}

// checkHook makes the checks that concern several fields of a hook. A
// check that depends on what a bad field meant is not made, because its
// report would only follow from the first.
func (d *decoder) checkHook(v value, h *Hook, st hookState) {
	present, nameOK := st.present.has, st.nameOK
	where := func(field string) (Position, string) {
		p := d.join(v.path, field)
		return d.spec.Where(p), p
	}
	display := h.Name
	if !nameOK {
		display = v.path
	}

	switch {
	case !present("name"):
		d.add(Error, v.pos, v.path+".name", "the hook has no name",
			"add name: with the unit's name, such as name: create-swapfile")
	case !nameOK:
	case h.Name == "":
		pos, p := where("name")
		d.add(Error, pos, p, "the hook's name is empty", "write the unit's name, such as name: create-swapfile")
	case strings.Contains(h.Name, "/") || h.Name == "." || strings.Contains(h.Name, ".."):
		pos, p := where("name")
		d.add(Error, pos, p, fmt.Sprintf("hook name %q looks like a path", h.Name),
			"a hook name is a unit name, not a path: write only the file name, such as create-swapfile.service")
	}

	if h.UseRawManifest {
		for _, f := range generatedFields {
			if present(f) {
				pos, p := where(f)
				d.add(Error, pos, p, fmt.Sprintf("%s is not used with useRawManifest", f),
					"a raw manifest is used as written: put this into the manifest, or drop useRawManifest")
			}
		}
		if strings.TrimSpace(h.Manifest) == "" {
			pos, p := where("useRawManifest")
			d.add(Error, pos, p, "useRawManifest is set, but the hook has no manifest",
				"write the whole unit file under manifest: |, or drop useRawManifest")
		}
	} else if h.Manifest != "" {
		// One report is enough: a header means the manifest is a whole
		// unit file, and the fix for all its headers is the same.
		for i, line := range strings.Split(h.Manifest, "\n") {
			t := strings.TrimSpace(line)
			if len(t) >= 2 && t[0] == '[' && t[len(t)-1] == ']' {
				p := v.path + ".manifest"
				d.add(Error, d.spec.WhereInScalar(p, i+1), p,
					fmt.Sprintf("manifest line %d is the section header %s, but without useRawManifest the manifest is the body of the unit's own section", i+1, t),
					"set useRawManifest: true to use the manifest as the whole unit file")
				break
			}
		}
	}

	if h.ExactBytes && !h.UseRawManifest && !present("dropins") {
		// Generated units are canonical: only texts written as they are
		// have bytes to keep.
		pos, p := where("exactBytes")
		d.add(Error, pos, p, "exactBytes keeps the bytes of a raw manifest and of drop-ins, and the hook has neither",
			"drop exactBytes, or set useRawManifest: true with the whole unit file as the manifest")
	}

	if present("steps") {
		for _, f := range notWithSteps {
			if present(f) {
				pos, p := where(f)
				d.add(Error, pos, p, fmt.Sprintf("%s is not used with steps", f),
					"steps are the hook's commands, run once each in order by a oneshot service: make this a step, or drop steps")
			}
		}
		if present("type") && h.Type != "oneshot" && !st.bad.has("type") {
			pos, p := where("type")
			d.add(Error, pos, p, fmt.Sprintf("a command hook is always Type=oneshot, not %s", h.Type),
				"drop type: from a hook with steps")
		}
		if h.When == WhenNever && h.Enabled != nil && *h.Enabled {
			pos, p := where("enabled")
			d.add(Error, pos, p, "enabled: true contradicts when: Never",
				"a hook that runs never is rendered but not enabled: drop enabled:, or choose when: Once or Always")
		}
	} else if present("when") {
		pos, p := where("when")
		d.add(Error, pos, p, "when is only used with steps",
			"add steps: to make this a command hook, or drop when: (enabled: false keeps a unit from starting at boot)")
	}

	if h.Mask {
		for _, f := range bodyFields {
			if present(f) {
				pos, p := where(f)
				d.add(Error, pos, p, fmt.Sprintf("a masked unit never runs, so its %s is never used", f),
					"drop mask: true to run the unit, or drop "+f+" to only mask it")
			}
		}
	}

	if nameOK && h.Name != "" && d.hookIsEmpty(h, st) && !d.reported(v.path) {
		d.add(Error, v.pos, v.path, fmt.Sprintf("hook %s has no manifest, exec, directives or dropins", display),
			"add exec: to run a command, a manifest, directives, or dropins for an existing unit; "+
				"or set mask: true to mask the unit, or enabled: to enable or disable it as it is")
	}

	if present("deviceTimeout") {
		d.checkDeviceTimeout(h, where)
	}

	// A raw manifest already reports each of these fields; saying it
	// twice would not help.
	if typ := unitType(h.Name); typ != "" && !h.UseRawManifest {
		for _, f := range serviceFields {
			if present(f) {
				pos, p := where(f)
				d.add(Error, pos, p, fmt.Sprintf("%s is a service field; %s is a %s", f, h.Name, typ),
					fmt.Sprintf("move %s to a .service hook, or write the %s's own settings under directives", f, typ))
			}
		}
	}
}

// checkDeviceTimeout refuses deviceTimeout where there is no device to
// wait for: on a unit that is neither a .mount nor a .swap, and on a
// masked one, which never waits. That What= names a device under /dev is
// checked by package render, which reads the unit.
func (d *decoder) checkDeviceTimeout(h *Hook, where func(string) (Position, string)) {
	typ := unitType(h.Name)
	switch {
	case h.Name == "":
	case !contains(deviceTimeoutTypes, typ):
		if typ == "" {
			typ = "service"
		}
		pos, p := where("deviceTimeout")
		d.add(Error, pos, p, fmt.Sprintf("deviceTimeout is only for .mount and .swap hooks; %s is a %s", h.Name, typ),
			"put deviceTimeout on the .mount or .swap hook of the device, or drop it")
	case h.Mask:
		pos, p := where("deviceTimeout")
		d.add(Error, pos, p, "a masked unit never waits for its device, so deviceTimeout is never used",
			"drop mask: true to mount the device, or drop deviceTimeout")
	}
}

// hookIsEmpty reports whether a hook says nothing but its name, which is
// almost certainly a mistake. Not empty are: a unit body (manifest, exec,
// pre, directives) that is not empty, drop-ins, a mask, any [Unit] or
// service field (a target made of description, wants and after is
// complete), and an explicit enabled. The last follows kops, where a
// name-only hook with enabled: false disables a unit of the image, and
// Ignition, where a unit with only enabled: true enables one. A hook whose
// fields had problems of their own is not called empty as well.
func (d *decoder) hookIsEmpty(h *Hook, st hookState) bool {
	if strings.TrimSpace(h.Manifest) != "" || len(h.Exec) > 0 || len(h.Pre) > 0 || len(h.Steps) > 0 || len(h.Directives) > 0 ||
		len(h.Dropins) > 0 || h.Mask || h.UseRawManifest || st.present.has("enabled") || st.unknown ||
		h.HasStorage() {
		return false
	}
	for _, f := range hookFields {
		if st.bad.has(f) {
			return false
		}
	}
	for _, f := range generatedFields {
		if st.present.has(f) && !contains(bodyFields, f) {
			return false
		}
	}
	return true
}

// reported reports whether an error was reported at path already (such as
// a merge key in the hook's mapping, whose fields are then missing).
func (d *decoder) reported(path string) bool {
	d.examined++
	return d.errorPaths[path]
}

// unitType returns the type suffix of a unit name when it is not a
// service, and "" for services and names without a type suffix.
func unitType(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return ""
	}
	if t := name[i+1:]; contains(unitTypes, t) {
		return t
	}
	return ""
}

// oneOf checks that a decoded string is one of allowed.
func (d *decoder) oneOf(v value, s string, allowed []string, what string) {
	if !v.isString() || contains(allowed, s) {
		return
	}
	hint := "use one of " + strings.Join(allowed, ", ")
	if m := suggest.Closest(s, allowed); m != "" {
		hint = "did you mean " + m + "?"
	}
	d.add(Error, v.pos, v.path, fmt.Sprintf("%q is not a %s", s, what), hint)
}

// timeSpan decodes a systemd time span ("5", "1min 30s", "infinity").
func (d *decoder) timeSpan(v value) string {
	s, ok := d.str(v, false)
	if !ok || s == "infinity" || timeSpanRE.MatchString(s) {
		return s
	}
	d.add(Error, v.pos, v.path, fmt.Sprintf("%s: %q is not a systemd time span", label(v.path), s),
		`write a number of seconds (5) or a span such as "1min 30s", "500ms", "2h" or "infinity"`)
	return s
}

// pre decodes the commands run before exec: a list of argument lists.
func (d *decoder) pre(v value) [][]string {
	n := v.node
	if isNull(n) {
		d.noValue(v, `write a list of commands, such as pre: [["/usr/bin/mkdir", "-p", "/x"]], or remove the line`)
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.add(Error, v.pos, v.path, fmt.Sprintf("pre must be a list of commands, not %s", yamlnode.KindName(n)),
			`write pre: [["/usr/bin/mkdir", "-p", "/x"]], one list of arguments per command`)
		return nil
	}
	// A flat list of strings is one command written without its brackets;
	// one report that shows it bracketed beats one per argument.
	flat := len(n.Content) > 0
	var words []string
	for _, c := range n.Content {
		rc := resolve(c)
		if rc.Kind != yaml.ScalarNode || isNull(rc) {
			flat = false
			break
		}
		words = append(words, fmt.Sprintf("%q", rc.Value))
	}
	if flat {
		d.add(Error, v.pos, v.path, "pre must be a list of commands, each a list of arguments, not a list of strings",
			fmt.Sprintf("write pre: [[%s]] for one command", strings.Join(words, ", ")))
		return nil
	}
	out := make([][]string, 0, len(n.Content))
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		out = append(out, d.argv(d.item(v.path, i, c)))
	}
	return out
}

// env decodes environment variables.
func (d *decoder) env(v value) map[string]string {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, "write variables under env:, such as env: {NAME: value}, or remove the line")
		return nil
	case n.Kind != yaml.MappingNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("env must be a mapping of names to values, not %s", yamlnode.KindName(n)),
			"write env: {NAME: value}, one variable per key")
		return nil
	}
	out := map[string]string{}
	d.mapping(n, v.path, func(e entry) {
		if !isEnvName(e.name) {
			d.add(Error, d.pos(e.key), e.path, fmt.Sprintf("%q is not a valid environment variable name", e.name),
				"a name starts with a letter or _ and has only letters, digits and _")
		}
		if isNull(e.node) {
			d.noValue(e.value, fmt.Sprintf(`write %s: "" for an empty value`, e.name))
			return
		}
		if s, ok := d.str(e.value, false); ok {
			out[d.keep(e.name)] = s
		}
	})
	return out
}

// isEnvName reports whether s is an environment variable name:
// ^[A-Za-z_][A-Za-z0-9_]*$, checked without a regular expression, which
// cost more than the rest of decoding an env map.
func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isDirectiveKey reports whether s is a directive key: ^[A-Za-z0-9-]+$.
func isDirectiveKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// directives decodes the extra Key=Value entries per section.
func (d *decoder) directives(v value) map[string][]string {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, `write sections under directives:, such as directives: {Unit: ["After=network-online.target"]}, or remove the line`)
		return nil
	case n.Kind != yaml.MappingNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("directives must be a mapping of sections to lists, not %s", yamlnode.KindName(n)),
			`write directives: {Unit: ["After=network-online.target"]}`)
		return nil
	}
	out := map[string][]string{}
	d.mapping(n, v.path, func(e entry) {
		section := e.name
		keyPos := d.pos(e.key)
		switch t := strings.TrimSpace(section); {
		case t == "":
			d.add(Error, keyPos, e.path, "a section name is empty", "write the section's name, such as Unit, Service or Install")
		case strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]"):
			d.add(Error, keyPos, e.path, fmt.Sprintf("section name %q has brackets", section),
				"write the section name without brackets: "+strings.Trim(t, "[]"))
		default:
			d.checkControlText(value{path: e.path, pos: keyPos}, section, false)
		}
		items, _ := d.strList(e.value, `["After=network-online.target"]`)
		if items == nil {
			return
		}
		for i, s := range items {
			d.checkDirective(e.path, i, s)
		}
		out[d.keep(section)] = items
	})
	return out
}

// checkDirective checks the form of one Key=Value entry. The value may be
// empty: "ExecStart=" resets a list in systemd.
func (d *decoder) checkDirective(path string, i int, s string) {
	p := d.index(path, i)
	pos := d.spec.Where(p)
	eq := strings.IndexByte(s, '=')
	switch {
	case eq < 0:
		d.add(Error, pos, p, fmt.Sprintf("%q is not a Key=Value entry", s), "write Key=Value, such as After=network-online.target")
	case eq == 0:
		d.add(Error, pos, p, fmt.Sprintf("%q has no key before =", s), "write Key=Value, such as After=network-online.target")
	case !isDirectiveKey(s[:eq]):
		hint := "write Key=Value: a key has only letters, digits and -"
		if isDirectiveKey(strings.TrimSpace(s[:eq])) {
			hint = "write Key=Value with no space before ="
		}
		d.add(Error, pos, p, fmt.Sprintf("%q is not a valid directive key", s[:eq]), hint)
	}
}

// dropins decodes a hook's drop-ins.
func (d *decoder) dropins(v value) []Dropin {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, "write a list of drop-ins, such as dropins: [{name: 10-limits.conf, contents: ...}], or remove the line")
		return nil
	case n.Kind != yaml.SequenceNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("dropins must be a list, not %s", yamlnode.KindName(n)),
			`write each drop-in as "- name: 10-limits.conf" with its contents: under it`)
		return nil
	}
	out := make([]Dropin, 0, len(n.Content))
	first := map[string]Position{}
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		item := d.item(v.path, i, c)
		if item.node.Kind != yaml.MappingNode {
			d.add(Error, item.pos, item.path, fmt.Sprintf("a drop-in must be a mapping of name and contents, not %s", yamlnode.KindName(item.node)),
				`write "- name: 10-limits.conf" with its contents: under it`)
			continue
		}
		var dr Dropin
		var hasName, nameOK, hasContents bool
		d.mapping(item.node, item.path, func(e entry) {
			switch e.name {
			case "name":
				hasName = true
				dr.Name, nameOK = d.str(e.value, false)
			case "contents":
				hasContents = true
				dr.Contents, _ = d.str(e.value, true)
			default:
				d.unknownField(e, "drop-in")
			}
		})
		if !hasName {
			d.add(Error, item.pos, item.path+".name", "the drop-in has no name", "add name: with a file name ending in .conf, such as 10-limits.conf")
		}
		if !hasContents {
			d.add(Error, item.pos, item.path+".contents", "the drop-in has no contents",
				"add contents: | with the section headers and lines to add")
		}
		if nameOK {
			d.checkDropinName(item.path+".name", dr.Name, first)
		}
		out = append(out, dr)
	}
	return out
}

func (d *decoder) checkDropinName(p, name string, first map[string]Position) {
	pos := d.spec.Where(p)
	switch {
	case name == "":
		d.add(Error, pos, p, "the drop-in's name is empty", "write a file name ending in .conf, such as 10-limits.conf")
	case strings.Contains(name, "/"):
		d.add(Error, pos, p, fmt.Sprintf("drop-in name %q contains /", name),
			"a drop-in name is a file name inside the unit's .d directory, such as 10-limits.conf")
	case strings.HasPrefix(name, "."):
		d.add(Error, pos, p, fmt.Sprintf("drop-in name %q starts with a dot", name),
			"a drop-in name is a file name such as 10-limits.conf; systemd ignores hidden files")
	case !strings.HasSuffix(name, ".conf"):
		d.add(Error, pos, p, fmt.Sprintf("drop-in name %q does not end in .conf", name),
			fmt.Sprintf("systemd reads only *.conf files in a drop-in directory: call it %s.conf", name))
	}
	if prev, dup := first[name]; dup {
		d.add(Error, pos, p, fmt.Sprintf("there is already a drop-in named %q in this hook", name),
			fmt.Sprintf("the first is on line %d: merge them, or rename one", prev.Line))
	} else {
		first[name] = pos
	}
}

// relDir decodes a directory for StateDirectory= and its kin: a relative
// path below the directory systemd puts it in (/var/lib, /var/log, /etc).
func (d *decoder) relDir(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return s
	}
	switch {
	case s == "":
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s is empty", label(v.path)), "write a directory name, such as myapp, or remove the line")
	case strings.HasPrefix(s, "/"):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is an absolute path", label(v.path), s),
			fmt.Sprintf("write it relative to the directory systemd puts it in, such as %s", strings.TrimLeft(s, "/")))
	case strings.Contains(s, "..") || strings.ContainsAny(s, " \\"):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is not a plain relative directory", label(v.path), s),
			"use a name such as myapp or myapp/cache, without .., spaces or backslashes")
	}
	return s
}

// steps decodes a command hook's steps: a list of {name, run} or
// {name, sh}.
func (d *decoder) steps(v value) []Step {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, "write a list of steps, such as steps: [{name: hello, run: [/bin/echo, hello]}], or remove the line")
		return nil
	case n.Kind != yaml.SequenceNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("steps must be a list, not %s", yamlnode.KindName(n)),
			`write each step as "- name: detect" with run: [...] or sh: under it`)
		return nil
	case len(n.Content) == 0:
		d.add(Error, v.pos, v.path, "steps is empty", "add a step, or remove the line")
		return nil
	}
	out := make([]Step, 0, len(n.Content))
	first := map[string]int{}
	for i, c := range n.Content {
		if !d.spend(c) {
			break
		}
		item := d.item(v.path, i, c)
		if item.node.Kind != yaml.MappingNode {
			d.add(Error, item.pos, item.path, fmt.Sprintf("a step must be a mapping of name and run or sh, not %s", yamlnode.KindName(item.node)),
				`write "- name: detect" with run: [...] or sh: under it`)
			continue
		}
		var s Step
		var nameOK, hasRun, hasSh bool
		d.mapping(item.node, item.path, func(e entry) {
			switch e.name {
			case "name":
				s.Name, nameOK = d.str(e.value, false)
			case "run":
				hasRun = true
				s.Run = d.argv(e.value)
			case "sh":
				hasSh = true
				// A script may span lines: it is passed to the shell as
				// one quoted argument, where a line break cannot start a
				// new directive.
				s.Sh, _ = d.str(e.value, true)
				if strings.ContainsRune(s.Sh, 0) {
					d.add(Error, e.value.pos, e.value.path, "sh contains a NUL character", "remove it: no program argument can hold one")
				}
			default:
				d.unknownField(e, "step")
			}
		})
		switch {
		case !nameOK:
			if s.Name == "" {
				d.add(Error, item.pos, item.path+".name", "the step has no name", "add name: such as name: install")
			}
		case !stepNameRE.MatchString(s.Name):
			p := item.path + ".name"
			d.add(Error, d.spec.Where(p), p, fmt.Sprintf("step name %q is not a plain name", s.Name),
				"use letters, digits, '.', '_' and '-', starting with a letter or digit, such as install-iscsi")
		default:
			if j, dup := first[s.Name]; dup {
				p := item.path + ".name"
				d.add(Error, d.spec.Where(p), p, fmt.Sprintf("steps[%d] is named %q already", j, s.Name), "give each step its own name")
			} else {
				first[s.Name] = i
			}
		}
		switch {
		case hasRun && hasSh:
			d.add(Error, item.pos, item.path, "the step has both run and sh", "a step runs one command: keep run: or sh:, or make two steps")
		case !hasRun && !hasSh:
			d.add(Error, item.pos, item.path, "the step has neither run nor sh",
				`add run: ["/path/to/command", "arg"] or sh: with a shell script`)
		}
		out = append(out, s)
	}
	return out
}
