package hooks

import (
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// hookKind is the table of a hook's fields, in the order they are
// documented; stepKind and dropinKind those of its steps and drop-ins.
var (
	hookKind   *kind[Hook]
	stepKind   *kind[Step]
	dropinKind *kind[Dropin]
)

func init() {
	unknown := func(what string) func(d *decoder, e entry) {
		return func(d *decoder, e entry) { d.unknownField(e, what) }
	}
	hookKind = newKind("hook", hookFields)
	hookKind.unknown = unknown("hook")
	hookKind.check = (*decoder).checkHook
	stepKind = newKind("step", stepFields)
	stepKind.unknown = unknown("step")
	dropinKind = newKind("drop-in", dropinFields)
	dropinKind.unknown = unknown("drop-in")
}

// unitNames is the type of the fields that list units.
const unitNames = "list of unit names"

var hookFields = []field[Hook]{
	{key: "name", typ: "string", decode: func(d *decoder, v value, h *Hook) { h.Name, d.entry().nameOK = d.str(v, false) },
		encode: func(h *Hook) *yaml.Node { return yamlnode.Str(h.Name) }},
	plain("description", "string", generated|content, func(h *Hook) *string { return &h.Description }, str),
	optionalBool("enabled", 0, func(h *Hook) **bool { return &h.Enabled }),
	flag("mask", 0, func(h *Hook) *bool { return &h.Mask }),
	flag("useRawName", 0, func(h *Hook) *bool { return &h.UseRawName }),
	flag("useRawManifest", 0, func(h *Hook) *bool { return &h.UseRawManifest }),
	stringField("manifest", "string", body|replacedBySteps|content, func(h *Hook) *string { return &h.Manifest }, multiline, unitText),
	flag("exactBytes", 0, func(h *Hook) *bool { return &h.ExactBytes }),
	words("requires", unitNames, generated|content, func(h *Hook) *[]string { return &h.Requires }, strList(`["network-online.target"]`)),
	words("wants", unitNames, generated|content, func(h *Hook) *[]string { return &h.Wants }, strList(`["network-online.target"]`)),
	words("before", unitNames, generated|content, func(h *Hook) *[]string { return &h.Before }, strList(`["kubelet.service"]`)),
	words("after", unitNames, generated|content, func(h *Hook) *[]string { return &h.After }, strList(`["network-online.target"]`)),
	{key: "wantedBy", typ: unitNames, roles: generated | content, decode: decodeWantedBy,
		encode: func(h *Hook) *yaml.Node { return wordsOrNil(h.WantedBy, h.WantedBy != nil) },
		set:    func(h *Hook) bool { return h.WantedBy != nil }},
	plain("type", "string", generated|service|content, func(h *Hook) *string { return &h.Type }, oneOf(serviceTypes, "service type")),
	words("exec", "list of strings", generated|service|body|replacedBySteps|content, func(h *Hook) *[]string { return &h.Exec }, (*decoder).argv),
	{key: "pre", typ: "list of lists of strings", roles: generated | service | body | replacedBySteps | content,
		decode: func(d *decoder, v value, h *Hook) { h.Pre = d.pre(v) }, encode: encodePre,
		set: func(h *Hook) bool { return len(h.Pre) > 0 }},
	flag("expandEnv", generated|service, func(h *Hook) *bool { return &h.ExpandEnv }),
	flag("specifiers", generated, func(h *Hook) *bool { return &h.Specifiers }),
	optionalBool("remainAfterExit", generated|service|replacedBySteps|content, func(h *Hook) **bool { return &h.RemainAfterExit }),
	{key: "env", typ: "map of strings", roles: generated | service | content,
		decode: func(d *decoder, v value, h *Hook) { h.Env = d.env(v) }, encode: encodeEnv,
		set: func(h *Hook) bool { return len(h.Env) > 0 }},
	plain("environmentFile", "string", generated|service|content, func(h *Hook) *string { return &h.EnvironmentFile }, str),
	plain("workingDirectory", "string", generated|service|content, func(h *Hook) *string { return &h.WorkingDirectory }, str),
	plain("user", "string", generated|service|content, func(h *Hook) *string { return &h.User }, str),
	plain("group", "string", generated|service|content, func(h *Hook) *string { return &h.Group }, str),
	plain("restart", "string", generated|service|replacedBySteps|content, func(h *Hook) *string { return &h.Restart }, oneOf(restartPolicies, "restart policy")),
	plain("restartSec", "time span", generated|service|replacedBySteps|content, func(h *Hook) *string { return &h.RestartSec }, (*decoder).timeSpan),
	plain("timeoutStartSec", "time span", generated|service|content, func(h *Hook) *string { return &h.TimeoutStartSec }, (*decoder).timeSpan),
	plain("timeoutStopSec", "time span", generated|service|content, func(h *Hook) *string { return &h.TimeoutStopSec }, (*decoder).timeSpan),
	plain("stateDirectory", "string", generated|service|content, func(h *Hook) *string { return &h.StateDirectory }, (*decoder).relDir),
	plain("logsDirectory", "string", generated|service|content, func(h *Hook) *string { return &h.LogsDirectory }, (*decoder).relDir),
	plain("configurationDirectory", "string", generated|service|content, func(h *Hook) *string { return &h.ConfigurationDirectory }, (*decoder).relDir),
	entryList("steps", "list of `{name, run}` or `{name, sh}`", generated|service|body|content, &stepKind,
		func(h *Hook) *[]Step { return &h.Steps }, (*decoder).steps),
	plain("when", "`Once`, `Always`, `Never`", generated|service, func(h *Hook) *string { return &h.When }, oneOf(whenValues, "when value")),
	plain("deviceTimeout", "time span", 0, func(h *Hook) *string { return &h.DeviceTimeout }, (*decoder).timeSpan),
	{key: "directives", typ: "map: section → list of `Key=Value`", roles: generated | body | content,
		decode: func(d *decoder, v value, h *Hook) { h.Directives = d.directives(v) }, encode: encodeDirectives,
		set: func(h *Hook) bool { return len(h.Directives) > 0 }},
	entryList("dropins", "list of `{name, contents}`", 0, &dropinKind, func(h *Hook) *[]Dropin { return &h.Dropins }, (*decoder).dropins),
	entryList("files", "lists", 0, &fileKind, func(h *Hook) *[]File { return &h.Files },
		storageList(&fileKind, "{path: /etc/myapp/config.toml, contents: ...}")),
	entryList("directories", "lists", 0, &directoryKind, func(h *Hook) *[]Directory { return &h.Directories },
		storageList(&directoryKind, "{path: /var/lib/myapp, mode: 0750}")),
	entryList("links", "lists", 0, &linkKind, func(h *Hook) *[]Link { return &h.Links },
		storageList(&linkKind, "{path: /etc/myapp/current, target: /opt/myapp/v2}")),
	entryList("users", "lists", 0, &userKind, func(h *Hook) *[]User { return &h.Users },
		storageList(&userKind, "{name: myapp, system: true}")),
	entryList("groups", "lists", 0, &groupKind, func(h *Hook) *[]Group { return &h.Groups },
		storageList(&groupKind, "{name: myapp, system: true}")),
	plain("disruption", "`None`, `Drain`, `Reboot`", 0, func(h *Hook) *string { return &h.Disruption }, oneOf(disruptionValues, "disruption")),
}

var stepFields = []field[Step]{
	{key: "name", decode: func(d *decoder, v value, s *Step) { s.Name, d.entry().nameOK = d.str(v, false) },
		encode: func(s *Step) *yaml.Node { return strOrNil(s.Name) }},
	words("run", "", 0, func(s *Step) *[]string { return &s.Run }, (*decoder).argv),
	// A script may span lines: it is passed to the shell as one quoted
	// argument, where a line break cannot start a new directive.
	stringField("sh", "", 0, func(s *Step) *string { return &s.Sh }, decodeScript, text),
}

var dropinFields = []field[Dropin]{
	{key: "name", decode: func(d *decoder, v value, dr *Dropin) { dr.Name, d.entry().nameOK = d.str(v, false) },
		encode: func(dr *Dropin) *yaml.Node { return yamlnode.Str(dr.Name) }},
	{key: "contents", decode: func(d *decoder, v value, dr *Dropin) { dr.Contents = multiline(d, v) },
		encode: func(dr *Dropin) *yaml.Node { return unitText(dr.Contents) }},
}

var whenValues = []string{WhenOnce, WhenAlways, WhenNever}

var disruptionValues = []string{DisruptionNone, DisruptionDrain, DisruptionReboot}

// deviceTimeoutTypes are the unit types whose What= can be a device that
// systemd waits for.
var deviceTimeoutTypes = []string{"mount", "swap"}

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

// hook decodes one entry of hooks: into h and checks what can be checked
// without the unit model. It reports whether the hook's name decoded.
func (d *decoder) hook(v value, h *Hook) bool {
	return decodeEntry(d, hookKind, v, h).nameOK
}

// checkHook makes the checks that concern several fields of a hook. A
// check that depends on what a bad field meant is not made, because its
// report would only follow from the first.
func (d *decoder) checkHook(v value, h *Hook, st *entryState) {
	present := func(key string) bool { return hookKind.has(st.present, key) }
	where := func(field string) (Position, string) {
		p := d.join(v.path, field)
		return d.spec.Where(p), p
	}
	d.checkHookName(v, h, st, where)
	d.checkManifest(v, h, st, where)

	if h.ExactBytes && !h.UseRawManifest && !present("dropins") {
		// Generated units are canonical: only texts written as they are
		// have bytes to keep.
		pos, p := where("exactBytes")
		d.add(Error, pos, p, "exactBytes keeps the bytes of a raw manifest and of drop-ins, and the hook has neither",
			"drop exactBytes, or set useRawManifest: true with the whole unit file as the manifest")
	}

	if present("steps") {
		d.checkCommandHook(h, st, where)
	} else if present("when") {
		pos, p := where("when")
		d.add(Error, pos, p, "when is only used with steps",
			"add steps: to make this a command hook, or drop when: (enabled: false keeps a unit from starting at boot)")
	}

	if h.Mask {
		d.reportFields(st, body, where, func(f string) (string, string) {
			return fmt.Sprintf("a masked unit never runs, so its %s is never used", f),
				"drop mask: true to run the unit, or drop " + f + " to only mask it"
		})
	}

	if st.nameOK && h.Name != "" && d.hookIsEmpty(h, st) && !d.reported(v.path) {
		d.add(Error, v.pos, v.path, fmt.Sprintf("hook %s has no manifest, exec, directives or dropins", h.Name),
			"add exec: to run a command, a manifest, directives, or dropins for an existing unit; "+
				"or set mask: true to mask the unit, or enabled: to enable or disable it as it is")
	}

	if present("deviceTimeout") {
		d.checkDeviceTimeout(h, where)
	}

	// A raw manifest already reports each of these fields; saying it
	// twice would not help.
	if typ := unitType(h.Name); typ != "" && !h.UseRawManifest {
		d.reportFields(st, service, where, func(f string) (string, string) {
			return fmt.Sprintf("%s is a service field; %s is a %s", f, h.Name, typ),
				fmt.Sprintf("move %s to a .service hook, or write the %s's own settings under directives", f, typ)
		})
	}
}

// reportFields reports each field of a hook with one of roles that was
// written, in the order of the table, with the message and hint that say
// gives.
func (d *decoder) reportFields(st *entryState, roles role, where func(string) (Position, string), say func(key string) (msg, hint string)) {
	for i, f := range hookKind.fields {
		if f.roles&roles != 0 && st.present&(1<<i) != 0 {
			pos, p := where(f.key)
			msg, hint := say(f.key)
			d.add(Error, pos, p, msg, hint)
		}
	}
}

// checkHookName checks that the hook has a name, and one of a unit.
func (d *decoder) checkHookName(v value, h *Hook, st *entryState, where func(string) (Position, string)) {
	switch {
	case !hookKind.has(st.present, "name"):
		d.add(Error, v.pos, v.path+".name", "the hook has no name",
			"add name: with the unit's name, such as name: create-swapfile")
	case !st.nameOK:
	case h.Name == "":
		pos, p := where("name")
		d.add(Error, pos, p, "the hook's name is empty", "write the unit's name, such as name: create-swapfile")
	case strings.Contains(h.Name, "/") || h.Name == "." || strings.Contains(h.Name, ".."):
		pos, p := where("name")
		d.add(Error, pos, p, fmt.Sprintf("hook name %q looks like a path", h.Name),
			"a hook name is a unit name, not a path: write only the file name, such as create-swapfile.service")
	}
}

// checkManifest checks that a raw manifest comes alone, and that one that
// is not raw has no section headers.
func (d *decoder) checkManifest(v value, h *Hook, st *entryState, where func(string) (Position, string)) {
	if h.UseRawManifest {
		d.reportFields(st, generated, where, func(f string) (string, string) {
			return fmt.Sprintf("%s is not used with useRawManifest", f),
				"a raw manifest is used as written: put this into the manifest, or drop useRawManifest"
		})
		if strings.TrimSpace(h.Manifest) == "" {
			pos, p := where("useRawManifest")
			d.add(Error, pos, p, "useRawManifest is set, but the hook has no manifest",
				"write the whole unit file under manifest: |, or drop useRawManifest")
		}
		return
	}
	if h.Manifest == "" {
		return
	}
	// One report is enough: a header means the manifest is a whole unit
	// file, and the fix for all its headers is the same.
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

// checkCommandHook checks the fields of a hook with steps against them.
func (d *decoder) checkCommandHook(h *Hook, st *entryState, where func(string) (Position, string)) {
	d.reportFields(st, replacedBySteps, where, func(f string) (string, string) {
		return fmt.Sprintf("%s is not used with steps", f),
			"steps are the hook's commands, run once each in order by a oneshot service: make this a step, or drop steps"
	})
	if hookKind.has(st.present, "type") && h.Type != "oneshot" && !hookKind.has(st.bad, "type") {
		pos, p := where("type")
		d.add(Error, pos, p, fmt.Sprintf("a command hook is always Type=oneshot, not %s", h.Type),
			"drop type: from a hook with steps")
	}
	if h.When == WhenNever && h.Enabled != nil && *h.Enabled {
		pos, p := where("enabled")
		d.add(Error, pos, p, "enabled: true contradicts when: Never",
			"a hook that runs never is rendered but not enabled: drop enabled:, or choose when: Once or Always")
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
func (d *decoder) hookIsEmpty(h *Hook, st *entryState) bool {
	if strings.TrimSpace(h.Manifest) != "" || len(h.Exec) > 0 || len(h.Pre) > 0 || len(h.Steps) > 0 || len(h.Directives) > 0 ||
		len(h.Dropins) > 0 || h.Mask || h.UseRawManifest || hookKind.has(st.present, "enabled") || st.unknown ||
		h.HasStorage() {
		return false
	}
	return st.bad == 0 && st.present&hookKind.with(generated)&^hookKind.with(body) == 0
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
