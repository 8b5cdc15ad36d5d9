package units

import (
	"cmp"
	"slices"
	"strings"
)

// Canonical order, and why it is safe.
//
// systemd reads a unit file line by line, and each line's parser changes
// the unit as it goes: it appends to a list, resets a list, or overwrites a
// field. Sorting entries by key is therefore only safe between keys whose
// parsers never touch the same state. The rule Canonical follows is:
//
//  1. Every known key of a section belongs to one interaction class. Keys
//     that systemd 252's directive table (load-fragment-gperf.gperf) parses
//     into the same field, keys whose parsers append to or reset one shared
//     list, aliases of one setting, and keys that set each other's value are
//     in one class; every other key is a class of its own. The classes with
//     more than one key are listed in interactionClasses, each with the
//     reason systemd gives it; a test checks them against the installed
//     systemd's own table (systemd --dump-configuration-items), and the
//     rig test loads a unit for each class into a real systemd.
//  2. Within a section, entries are ordered by their class's sort name
//     (the key itself for a class of one key, so those sort exactly as a
//     plain sort by key would), and entries of one class keep their input
//     order: every list, every empty reset and every "last one wins" is
//     read by systemd in the same order as before.
//  3. ExecStartPre= sorts directly before ExecStart= and ExecStartPost=
//     directly after it (and ExecStopPre= before ExecStopPost=), the order
//     in which systemd runs them. These are separate lists, so moving them
//     relative to each other changes nothing systemd loads.
//  4. A barrier keeps its place relative to every entry of its section:
//     the entries between two barriers are sorted among themselves only.
//     A key systemd 252 does not know is a barrier (it may be a newer
//     systemd's key that interacts with anything; "X-" keys, which every
//     systemd ignores, are not). So is an entry whose parser makes the
//     whole file fail and stops reading it when it refuses the value
//     (Exec*=, User=, Group=, SupplementaryGroups=, SocketUser=,
//     SocketGroup=, WorkingDirectory=, RootDirectory=, RootImage=,
//     RootVerity=, DynamicUser=; see fatalCheck) unless its value surely
//     loads: what systemd read before the failing line is what it loads.
//     A specifier other than "%%" never surely loads, since how it
//     resolves depends on the machine (%m without a machine id, %z not at
//     all).
//  5. Sections are merged by name and put in the fixed section order,
//     unless the file holds such a fatal-capable barrier, or keys of one
//     class in two different sections (the legacy [Service] copies of
//     StartLimitBurst= and its kin, which systemd reads into the [Unit]
//     setting: the last one read wins). Then sections keep their input
//     order and are not merged, since moving one section before another
//     would change which line systemd reads last.
//
// The result is deterministic and idempotent: a formatted file has the
// same classes, barriers and section order, so formatting it again changes
// nothing.

// execSections are the sections holding systemd's exec, kill and cgroup
// context, whose keys are shared.
var execSections = []string{SectionService, SectionSocket, SectionMount, SectionSwap}

// interactionClass is a set of keys whose relative order systemd can tell
// apart. Name is where the class sorts within its section.
type interactionClass struct {
	name   string
	reason string
	// sections the keys are in; keys lists keys found in each of them,
	// unless a key is written "Section.Key".
	sections []string
	keys     []string
	// prefixes adds every known key of the sections starting with one of
	// them, so that the class follows the generated vocabulary.
	prefixes []string
}

var interactionClasses = []interactionClass{
	{name: "Assert", reason: "every Assert*= appends to one list whose order is reported, and an empty assignment of any clears them all",
		sections: []string{SectionUnit}, prefixes: []string{"Assert"}},
	{name: "Condition", reason: "every Condition*= appends to one list whose order is reported, and an empty assignment of any clears them all",
		sections: []string{SectionUnit}, prefixes: []string{"Condition"}},
	{name: "BindTo", reason: "BindTo= is the old spelling of BindsTo=",
		sections: []string{SectionUnit}, keys: []string{"BindTo", "BindsTo"}},
	{name: "JobRunningTimeoutSec", reason: "JobTimeoutSec= also sets the running timeout unless JobRunningTimeoutSec= was read before it",
		sections: []string{SectionUnit}, keys: []string{"JobRunningTimeoutSec", "JobTimeoutSec"}},
	{name: "OnFailureIsolate", reason: "OnFailureIsolate= is the old spelling of OnFailureJobMode=isolate and sets the same field",
		sections: []string{SectionUnit}, keys: []string{"OnFailureIsolate", "OnFailureJobMode"}},
	{name: "PropagateReloadFrom", reason: "PropagateReloadFrom= is the old spelling of ReloadPropagatedFrom=",
		sections: []string{SectionUnit}, keys: []string{"PropagateReloadFrom", "ReloadPropagatedFrom"}},
	{name: "PropagateReloadTo", reason: "PropagateReloadTo= is the old spelling of PropagatesReloadTo=",
		sections: []string{SectionUnit}, keys: []string{"PropagateReloadTo", "PropagatesReloadTo"}},
	{name: "Requires", reason: "RequiresOverridable= is read as Requires=",
		sections: []string{SectionUnit}, keys: []string{"Requires", "RequiresOverridable"}},
	{name: "Requisite", reason: "RequisiteOverridable= is read as Requisite=",
		sections: []string{SectionUnit}, keys: []string{"Requisite", "RequisiteOverridable"}},
	{name: "StartLimitInterval", reason: "StartLimitInterval= is the old spelling of StartLimitIntervalSec=, and [Service] still reads it into the [Unit] setting",
		keys: []string{"Unit.StartLimitInterval", "Unit.StartLimitIntervalSec", "Service.StartLimitInterval"}},
	{name: "StartLimitBurst", reason: "[Service] StartLimitBurst= is the legacy place of the [Unit] setting, read into the same field",
		keys: []string{"Unit.StartLimitBurst", "Service.StartLimitBurst"}},
	{name: "StartLimitAction", reason: "[Service] StartLimitAction= is the legacy place of the [Unit] setting, read into the same field",
		keys: []string{"Unit.StartLimitAction", "Service.StartLimitAction"}},
	{name: "FailureAction", reason: "[Service] FailureAction= is the legacy place of the [Unit] setting, read into the same field",
		keys: []string{"Unit.FailureAction", "Service.FailureAction"}},
	{name: "RebootArgument", reason: "[Service] RebootArgument= is the legacy place of the [Unit] setting, read into the same field",
		keys: []string{"Unit.RebootArgument", "Service.RebootArgument"}},

	{name: "TimeoutSec", reason: "TimeoutSec= sets both the start and the stop timeout, so it and the two it sets override each other in order",
		sections: []string{SectionService}, keys: []string{"TimeoutSec", "TimeoutStartSec", "TimeoutStopSec"}},

	{name: "BindPaths", reason: "BindPaths= and BindReadOnlyPaths= append to one list of bind mounts, and an empty assignment of either clears it",
		sections: execSections, keys: []string{"BindPaths", "BindReadOnlyPaths"}},
	{name: "CPUSchedulingPolicy", reason: "CPUSchedulingPolicy= clamps the priority set before it to the policy's range",
		sections: execSections, keys: []string{"CPUSchedulingPolicy", "CPUSchedulingPriority"}},
	{name: "IOSchedulingClass", reason: "IOSchedulingClass= and IOSchedulingPriority= each rewrite the one I/O priority value, normalising what the other set",
		sections: execSections, keys: []string{"IOSchedulingClass", "IOSchedulingPriority"}},
	{name: "InaccessibleDirectories", reason: "InaccessibleDirectories= is the old spelling of InaccessiblePaths=",
		sections: execSections, keys: []string{"InaccessibleDirectories", "InaccessiblePaths"}},
	{name: "LoadCredential", reason: "LoadCredential= and LoadCredentialEncrypted= fill one credential table, and an empty assignment of either clears it",
		sections: execSections, keys: []string{"LoadCredential", "LoadCredentialEncrypted"}},
	{name: "ReadOnlyDirectories", reason: "ReadOnlyDirectories= is the old spelling of ReadOnlyPaths=",
		sections: execSections, keys: []string{"ReadOnlyDirectories", "ReadOnlyPaths"}},
	{name: "ReadWriteDirectories", reason: "ReadWriteDirectories= is the old spelling of ReadWritePaths=",
		sections: execSections, keys: []string{"ReadWriteDirectories", "ReadWritePaths"}},
	{name: "SetCredential", reason: "SetCredential= and SetCredentialEncrypted= fill one credential table, and an empty assignment of either clears it",
		sections: execSections, keys: []string{"SetCredential", "SetCredentialEncrypted"}},
	{name: "StandardInputData", reason: "StandardInputText= and StandardInputData= append to one standard input buffer, and an empty assignment of either clears it",
		sections: execSections, keys: []string{"StandardInputData", "StandardInputText"}},
	{name: "SyslogFacility", reason: "SyslogFacility= and SyslogLevel= are parsed into the one syslog priority field",
		sections: execSections, keys: []string{"SyslogFacility", "SyslogLevel"}},

	{name: "Listen", reason: "every Listen*= appends to one list whose order is the order of the file descriptors the service receives, and an empty assignment of any clears it",
		sections: []string{SectionSocket}, prefixes: []string{"Listen"}},
	{name: "OnActiveSec", reason: "every On*Sec= and OnCalendar= appends to one list of timer values, and an empty assignment of any clears them all",
		sections: []string{SectionTimer}, keys: []string{"OnActiveSec", "OnBootSec", "OnCalendar", "OnStartupSec", "OnUnitActiveSec", "OnUnitInactiveSec"}},
	{name: "DirectoryNotEmpty", reason: "every Path*= and DirectoryNotEmpty= appends to one list of watches, and an empty assignment of any clears them all",
		sections: []string{SectionPath}, keys: []string{"DirectoryNotEmpty", "PathChanged", "PathExists", "PathExistsGlob", "PathModified"}},
}

// lifecycle gives the Exec*= keys that systemd runs around one another a
// shared sort name and their rank within it, so that they read in the
// order systemd runs them.
var lifecycle = map[string]struct {
	name string
	rank int
}{
	"ExecStartPre":  {"ExecStart", 0},
	"ExecStart":     {"ExecStart", 1},
	"ExecStartPost": {"ExecStart", 2},
	"ExecStopPre":   {"ExecStop", 0},
	"ExecStop":      {"ExecStop", 1},
	"ExecStopPost":  {"ExecStop", 2},
}

// fatalCheck holds, for each key whose parser in systemd 252 makes the
// whole file fail to load when it refuses the value (and stops reading it
// there), a check of the values that surely load. Exec*= command keys are
// matched by prefix, see isExecCommand.
var fatalCheck = map[string]func(string) bool{
	// config_parse_user_group_compat and its list form.
	"User": validUserName, "Group": validUserName, "SocketUser": validUserName, "SocketGroup": validUserName,
	"SupplementaryGroups": func(v string) bool {
		for _, w := range strings.Fields(v) {
			if !validUserName(w) {
				return false
			}
		}
		return true
	},
	// config_parse_working_directory.
	"WorkingDirectory": func(v string) bool {
		v = strings.TrimPrefix(v, "-")
		return v == "" || v == "~" || cleanAbsolute(v)
	},
	// config_parse_unit_path_printf with its fatal flag set.
	"RootDirectory": emptyOrCleanAbsolute, "RootImage": emptyOrCleanAbsolute, "RootVerity": emptyOrCleanAbsolute,
	// config_parse_bool with its fatal flag set.
	"DynamicUser": func(v string) bool {
		switch strings.ToLower(v) {
		case "", "1", "yes", "y", "true", "t", "on", "0", "no", "n", "false", "f", "off":
			return true
		}
		return false
	},
}

// validUserName is a conservative subset of the names systemd's relaxed
// user and group name check accepts: a name that passes surely loads.
func validUserName(v string) bool {
	if v == "" {
		return true
	}
	if len(v) > 31 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_':
		case (c == '-' || c == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}

func emptyOrCleanAbsolute(v string) bool { return v == "" || cleanAbsolute(v) }

// cleanAbsolute reports whether p is an absolute path without "." or ".."
// components, which systemd accepts as such.
func cleanAbsolute(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for rest := p; rest != ""; {
		c, after, _ := strings.Cut(rest, "/")
		if c == "." || c == ".." {
			return false
		}
		rest = after
	}
	return true
}

// isExecCommand reports whether key holds a command line (config_parse_exec).
func isExecCommand(key string) bool {
	return strings.HasPrefix(key, "Exec") && key != "ExecSearchPath" && key != "ExecPaths"
}

// IsExecCommand reports whether key in section is a command line that
// systemd reads with its Exec*= parser (ExecStart=, ExecStopPost=, ...),
// whose values CheckExec checks.
func IsExecCommand(section, key string) bool {
	return isExecSection(section) && isExecCommand(key) && KnownDirective(section, key)
}

// execLoads reports whether an Exec*= value surely loads.
func execLoads(v string) bool { return CheckExec(v) == nil }

// classOf maps "Section.Key" to its class name, for keys in a class of
// more than one key.
var classOf = func() map[string]string {
	m := map[string]string{}
	for _, c := range interactionClasses {
		add := func(full string) {
			if prev, ok := m[full]; ok && prev != c.name {
				panic("units: " + full + " is in classes " + prev + " and " + c.name)
			}
			m[full] = c.name
		}
		for _, k := range c.keys {
			if strings.Contains(k, ".") {
				add(k)
				continue
			}
			for _, s := range c.sections {
				add(s + "." + k)
			}
		}
		for _, s := range c.sections {
			for _, k := range sectionKeys(s) {
				for _, p := range c.prefixes {
					if strings.HasPrefix(k, p) {
						add(s + "." + k)
					}
				}
			}
		}
	}
	return m
}()

// sortName returns where an entry of key sorts in section, and its rank
// among keys of the same sort name.
func sortName(section, key string) (string, int) {
	if c, ok := classOf[section+"."+key]; ok {
		return c, 0
	}
	if l, ok := lifecycle[key]; ok && isExecSection(section) {
		return l.name, l.rank
	}
	return key, 0
}

func isExecSection(section string) bool {
	for _, s := range execSections {
		if s == section {
			return true
		}
	}
	return false
}

// fatalBarrier reports whether e may make systemd stop reading the file:
// its key's parser fails the whole file on a value it refuses, and the
// value is not one that surely loads. A specifier other than "%%" may
// fail to resolve on some machine, so it never surely loads.
func fatalBarrier(section string, e *Entry) bool {
	if !isExecSection(section) {
		return false
	}
	check, ok := fatalCheck[e.Key]
	if isExecCommand(e.Key) {
		check, ok = execLoads, true
	}
	if !ok {
		return false
	}
	return hasSpecifier(e.Value) || !check(e.Value)
}

// hasSpecifier reports whether v holds a '%' that is not part of a "%%"
// (reading the pairs from the left): whether v still holds a '%' once
// every "%%" is removed.
func hasSpecifier(v string) bool {
	for i := strings.IndexByte(v, '%'); i >= 0; {
		if i+1 >= len(v) || v[i+1] != '%' {
			return true
		}
		j := strings.IndexByte(v[i+2:], '%')
		if j < 0 {
			return false
		}
		i += 2 + j
	}
	return false
}

// barrier reports whether e keeps its place relative to every entry of its
// section (rule 4 above).
func barrier(section string, e *Entry) bool {
	return !KnownDirective(section, e.Key) || fatalBarrier(section, e)
}

// sortKeyed is an entry with its sortName.
type sortKeyed struct {
	name string
	rank int
	e    *Entry
}

// sortEntries orders the entries of one section canonically, in place.
// noFatal says that none of them is a fatalBarrier, as keepSectionOrder
// found when it returned false: checking each Exec*= value again (a
// parse of the command line) was half of the time the canonical order
// took. scratch is room for the sort keys, returned for the next call.
func sortEntries(section string, entries []*Entry, noFatal bool, scratch []sortKeyed) []sortKeyed {
	start := 0
	for i := 0; i <= len(entries); i++ {
		if i < len(entries) {
			if noFatal && KnownDirective(section, entries[i].Key) || !noFatal && !barrier(section, entries[i]) {
				continue
			}
		}
		if seg := entries[start:i]; len(seg) > 1 {
			// Each entry's sort name is looked up once, not twice per
			// comparison: that was most of Canonical's time.
			if cap(scratch) < len(seg) {
				scratch = make([]sortKeyed, len(seg), max(len(seg), len(entries)))
			}
			keyed := scratch[:len(seg)]
			for j, e := range seg {
				keyed[j].name, keyed[j].rank = sortName(section, e.Key)
				keyed[j].e = e
			}
			slices.SortStableFunc(keyed, func(a, b sortKeyed) int {
				if c := strings.Compare(a.name, b.name); c != 0 {
					return c
				}
				return cmp.Compare(a.rank, b.rank)
			})
			for j := range keyed {
				seg[j] = keyed[j].e
			}
		}
		start = i + 1
	}
	return scratch
}

// keepSectionOrder reports whether f's sections must stay in input order,
// unmerged (rule 5 above).
func keepSectionOrder(f *File) bool {
	classSection := map[string]string{}
	for _, s := range f.Sections {
		for _, e := range s.Entries {
			if fatalBarrier(s.Name, e) {
				return true
			}
			c, ok := classOf[s.Name+"."+e.Key]
			if !ok {
				continue
			}
			if prev, ok := classSection[c]; ok && prev != s.Name {
				return true
			}
			classSection[c] = s.Name
		}
	}
	return false
}
