package units

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Section names. Code that builds units uses these instead of string
// literals so a typo is a compile error, not a silently ignored section.
const (
	SectionUnit      = "Unit"
	SectionService   = "Service"
	SectionSocket    = "Socket"
	SectionMount     = "Mount"
	SectionAutomount = "Automount"
	SectionSwap      = "Swap"
	SectionTimer     = "Timer"
	SectionPath      = "Path"
	SectionSlice     = "Slice"
	SectionScope     = "Scope"
	SectionInstall   = "Install"
)

// unitNameMax is the longest unit name systemd accepts, in bytes
// (UNIT_NAME_MAX is 256 including the terminating NUL).
const unitNameMax = 255

// unitTypes lists the systemd unit types, as the suffix of a unit name without
// its dot. Callers must not modify it.
var unitTypes = []string{"service", "socket", "device", "mount", "automount", "swap", "target", "path", "timer", "slice", "scope"}

// typeSections maps a unit type to the section that carries its settings.
// Devices and targets have none.
var typeSections = map[string]string{
	"service":   SectionService,
	"socket":    SectionSocket,
	"mount":     SectionMount,
	"automount": SectionAutomount,
	"swap":      SectionSwap,
	"timer":     SectionTimer,
	"path":      SectionPath,
	"slice":     SectionSlice,
	"scope":     SectionScope,
}

// defaultTargets is the target a unit of each type is usually enabled into
// (its WantedBy=), following the targets systemd's own units use.
var defaultTargets = map[string]string{
	"service":   "multi-user.target",
	"target":    "multi-user.target",
	"swap":      "swap.target",
	"mount":     "local-fs.target",
	"automount": "local-fs.target",
	"timer":     "timers.target",
	"socket":    "sockets.target",
	"path":      "paths.target",
}

func isType(s string) bool {
	for _, t := range unitTypes {
		if s == t {
			return true
		}
	}
	return false
}

// Type returns the unit type of a unit name ("service" for "a.service"), or
// "" when the name does not end in a known type suffix. It does not validate
// the rest of the name; see ValidateName.
func Type(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || !isType(name[i+1:]) {
		return ""
	}
	return name[i+1:]
}

// TypeSection returns the name of the section holding a unit type's own
// settings ("Service" for "service"), or "" for types without one (target,
// device) and for unknown types.
func TypeSection(typ string) string { return typeSections[typ] }

// DefaultTarget returns the target a unit of the given type is normally
// wanted by when enabled ("multi-user.target" for services and targets,
// "local-fs.target" for mounts and automounts, "swap.target",
// "timers.target", "sockets.target", "paths.target"), or "" when no default
// applies (slices, scopes, devices, unknown types).
func DefaultTarget(typ string) string { return defaultTargets[typ] }

// validNameChar reports whether c may appear in the prefix or instance part
// of a unit name (systemd's VALID_CHARS plus '@').
func validNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == ':' || c == '-' || c == '_' || c == '.' || c == '\\' || c == '@'
}

// ValidateName reports whether name is a complete unit name as systemd's
// unit_name_is_valid accepts it: a plain name ("foo.service"), a template
// ("foo@.service") or an instance ("foo@bar.service"). The rules are: at most
// 255 bytes; only the characters A-Z a-z 0-9 : _ . \ - and @; a non-empty
// part before the type suffix that does not start with '@'; and a known type
// suffix after the last dot. Like systemd, a '@' after the first one is part
// of the instance string ("a@b@c.service" is an instance of "a@.service").
//
// The error is a sentence saying what is wrong and, where it can, how to fix
// it (for example the name systemd-escape would produce).
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("the unit name is empty; give a name with a type suffix such as \"example.service\"")
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 || !isType(name[dot+1:]) {
		return fmt.Errorf("unit name %s has no unit type suffix; it must end in one of .%s (for example %s)",
			quoteName(name), strings.Join(unitTypes, ", ."), quoteName(name+".service"))
	}
	prefix, typ := name[:dot], name[dot+1:]
	if prefix == "" {
		return fmt.Errorf("unit name %s has nothing before its .%s suffix; add a name such as \"example.%s\"", quoteName(name), typ, typ)
	}
	if len(name) > unitNameMax {
		return fmt.Errorf("unit name %s is %d bytes long; systemd allows at most %d", quoteName(name), len(name), unitNameMax)
	}
	for i := 0; i < len(prefix); i++ {
		if !validNameChar(prefix[i]) {
			hint := escapeName(prefix) + "." + typ
			if strings.HasPrefix(prefix, "/") {
				hint = EscapePath(prefix) + "." + typ
			}
			r, _ := utf8.DecodeRuneInString(prefix[i:])
			return fmt.Errorf("unit name %s contains %q at byte %d, which systemd does not allow in unit names (only A-Z a-z 0-9 : _ . \\ - and @); escape it as systemd-escape does: %s",
				quoteName(name), r, i+1, quoteName(hint))
		}
	}
	if prefix[0] == '@' {
		return fmt.Errorf("unit name %s starts with '@'; a template needs a name before the '@', as in \"example@.%s\"", quoteName(name), typ)
	}
	return nil
}

// escapeName is systemd's unit_name_escape (systemd-escape without --path):
// '/' becomes '-', a leading '.' and every byte outside [A-Za-z0-9:_.]
// become \xNN with lowercase hex.
func escapeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case i == 0 && c == '.':
			fmt.Fprintf(&b, `\x%02x`, c)
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ':' || c == '_' || c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String()
}

// simplifyPath is systemd's path_simplify: it collapses repeated slashes,
// drops "." components and trailing slashes, and keeps ".." (which
// path.Clean would resolve, changing the meaning for systemd).
func simplifyPath(p string) string {
	abs := strings.HasPrefix(p, "/")
	var parts []string
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." {
			continue
		}
		parts = append(parts, c)
	}
	s := strings.Join(parts, "/")
	if abs {
		return "/" + s
	}
	return s
}

// EscapePath returns what `systemd-escape --path PATH` prints: the path is
// simplified (repeated slashes, "." components and trailing slashes
// removed), the root becomes "-", the slashes between components become
// '-', and a leading '.' and every byte outside [A-Za-z0-9:_.] (including
// '-' itself) become \xNN in lowercase hex. A relative path is escaped the
// same way, as systemd-escape does with a warning.
//
// It returns "" for a path systemd-escape refuses: one with ".."
// components. PathUnitName is the checked form.
func EscapePath(p string) string {
	s := simplifyPath(p)
	if s == "" || s == "/" {
		return "-"
	}
	for _, c := range strings.Split(s, "/") {
		if c == ".." {
			return ""
		}
	}
	return escapeName(strings.TrimPrefix(s, "/"))
}

// PathUnitName returns the unit name systemd derives for a path-bound unit
// of the given type (mount, automount, swap), EscapePath(p)+"."+typ, so
// that hostprov can check that a .mount's name matches its Where=. The path
// must be absolute and must not contain ".." components; typ must be a
// known unit type.
func PathUnitName(p, typ string) (string, error) {
	if !isType(typ) {
		return "", fmt.Errorf("%q is not a systemd unit type; use one of %s", typ, strings.Join(unitTypes, ", "))
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q is not absolute; systemd derives %s unit names from absolute paths only, so write it as %q", p, typ, path.Join("/", p))
	}
	esc := EscapePath(p)
	if esc == "" {
		return "", fmt.Errorf("path %q contains a \"..\" component; systemd refuses to derive a unit name from it, so give the resolved path (%q)", p, path.Clean(p))
	}
	name := esc + "." + typ
	if err := ValidateName(name); err != nil {
		return "", fmt.Errorf("path %q gives the unit name %q, which systemd does not accept: %w", p, name, err)
	}
	return name, nil
}

// EscapeSpecifiers doubles every '%', so that a value in a setting where
// systemd expands specifiers (%n, %i, ...) reaches the program unchanged.
func EscapeSpecifiers(s string) string { return strings.ReplaceAll(s, "%", "%%") }

// quoteName quotes a unit name for a message. Unlike %q it leaves the
// backslashes of escaped names (\x2d) single, so that the name can be
// copied from the message as it is; a name with characters that would not
// show is quoted with %q.
func quoteName(name string) string {
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return strconv.Quote(name)
		}
	}
	return `"` + name + `"`
}
