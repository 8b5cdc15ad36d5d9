package hooks

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

var (
	userFields  = []string{"name", "uid", "system", "home", "shell", "groups"}
	groupFields = []string{"name", "gid", "system"}
)

// UserFields and GroupFields are the fields of an entry of a hook's users
// and groups, in the order they are documented.
func UserFields() []string  { return append([]string(nil), userFields...) }
func GroupFields() []string { return append([]string(nil), groupFields...) }

// MaxAccountName is the longest user or group name systemd-sysusers
// accepts: the utmp name size less its terminating NUL.
const MaxAccountName = 31

// User is an entry of a hook's users: an account the hook needs on the
// machine, created if it is missing.
type User struct {
	// Name is a valid account name (see AccountNameProblem).
	Name string
	// UID is the user's id; nil lets the system pick one.
	UID *uint32
	// System makes a system account (an id from the system range, no
	// aging, no home created).
	System bool
	// Home and Shell are absolute paths; empty for the system's default.
	Home  string
	Shell string
	// Groups are the supplementary groups the user is a member of.
	Groups []string
}

// Group is an entry of a hook's groups.
type Group struct {
	Name string
	// GID is the group's id; nil lets the system pick one.
	GID    *uint32
	System bool
}

// AccountNameProblem says why name is not a user or group name that
// systemd-sysusers accepts, or returns "": it starts with a letter or _,
// has only ASCII letters, digits, _ and -, and has at most 31 characters.
// Dots are refused too, because chown reads them as the separator of
// user and group.
func AccountNameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > MaxAccountName:
		return fmt.Sprintf("it has %d characters, more than %d", len(name), MaxAccountName)
	}
	c := name[0]
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
		return fmt.Sprintf("it starts with %q", string(c))
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Sprintf("it has the character %q", string(c))
		}
	}
	return ""
}

// users decodes a hook's users.
func (d *decoder) users(v value) []User {
	var out []User
	d.entries(v, "user", "{name: myapp, system: true}", func(i int, item value) {
		var u User
		var hasName bool
		d.mapping(item.node, item.path, func(e entry) {
			switch e.name {
			case "name":
				hasName = true
				u.Name = d.accountName(e.value)
			case "uid":
				u.UID = d.accountID(e.value)
			case "system":
				u.System, _ = d.boolean(e.value)
			case "home":
				u.Home = d.absPath(e.value)
			case "shell":
				u.Shell = d.absPath(e.value)
			case "groups":
				u.Groups = d.memberOf(e.value)
			default:
				d.unknownStorageField(e, "user", userFields)
			}
		})
		if !hasName {
			d.add(Error, item.pos, item.path+".name", "the user has no name", "add name:, such as name: myapp")
		}
		out = append(out, u)
	})
	return out
}

// groups decodes a hook's groups.
func (d *decoder) groups(v value) []Group {
	var out []Group
	d.entries(v, "group", "{name: myapp, system: true}", func(i int, item value) {
		var g Group
		var hasName bool
		d.mapping(item.node, item.path, func(e entry) {
			switch e.name {
			case "name":
				hasName = true
				g.Name = d.accountName(e.value)
			case "gid":
				g.GID = d.accountID(e.value)
			case "system":
				g.System, _ = d.boolean(e.value)
			default:
				d.unknownStorageField(e, "group", groupFields)
			}
		})
		if !hasName {
			d.add(Error, item.pos, item.path+".name", "the group has no name", "add name:, such as name: myapp")
		}
		out = append(out, g)
	})
	return out
}

// accountName decodes the name of a user or group.
func (d *decoder) accountName(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return ""
	}
	if p := AccountNameProblem(s); p != "" {
		hint := fmt.Sprintf("a name starts with a letter or _, has only letters, digits, _ and -, and at most %d characters", MaxAccountName)
		if digitsRE.MatchString(s) {
			hint = "a name cannot be a number: write the id as uid: or gid:, and give the account a name"
		}
		what := "group"
		if strings.Contains(v.path, ".users[") && strings.HasSuffix(v.path, ".name") {
			what = "user"
		}
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s name %q is not valid: %s", what, s, p), hint)
		return ""
	}
	return s
}

// accountID decodes a uid or gid: a decimal number that systemd takes as
// an id, which leaves out 65535 and 4294967295 (-1 in 16 and 32 bits).
func (d *decoder) accountID(v value) *uint32 {
	n := v.node
	name := lastKey(v.path)
	switch {
	case isNull(n):
		d.noValue(v, fmt.Sprintf("write the id, such as %s: 1000, or remove the line to let the system pick one", name))
		return nil
	case n.Kind != yaml.ScalarNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s must be a number, not %s", name, yamlnode.KindName(n)), fmt.Sprintf("write it such as %s: 1000", name))
		return nil
	case !knownScalarTag(n):
		d.str(v, false) // reports the tag
		return nil
	case !digitsRE.MatchString(n.Value):
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %q is not a decimal number", name, n.Value), fmt.Sprintf("write it such as %s: 1000", name))
		return nil
	}
	id, err := strconv.ParseUint(n.Value, 10, 32)
	switch {
	case err != nil || id == 1<<32-1:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %s is out of range", name, n.Value), "an id is at most 4294967294")
		return nil
	case id == 1<<16-1:
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s 65535 is not a valid id", name), "65535 is -1 to 16-bit programs, which systemd refuses as an id: pick another")
		return nil
	case len(n.Value) > 1 && n.Value[0] == '0':
		d.add(Error, v.pos, v.path, fmt.Sprintf("%s %s has a leading 0", name, n.Value), fmt.Sprintf("write %s: %d", name, id))
		return nil
	}
	u := uint32(id)
	return &u
}

// memberOf decodes a user's groups: a list of group names.
func (d *decoder) memberOf(v value) []string {
	n := v.node
	switch {
	case isNull(n):
		d.noValue(v, "write the user's supplementary groups, such as groups: [wheel], or remove the line")
		return nil
	case n.Kind != yaml.SequenceNode:
		d.add(Error, v.pos, v.path, fmt.Sprintf("groups must be a list of names, not %s", yamlnode.KindName(n)), "write groups: [wheel, docker]")
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for i, c := range n.Content {
		item := d.item(v.path, i, c)
		s := d.accountName(item)
		if s == "" {
			continue
		}
		if seen[s] {
			d.add(Error, item.pos, item.path, fmt.Sprintf("group %q is listed twice", s), "remove one of them")
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// account is where a user or group is first written, with its id.
type account struct {
	at string  // "hooks[0].users[1]"
	id *uint32 // nil when not given
}

// checkAccounts reports a user or group that two entries give different
// ids, at both entries. Entries of one name that agree (or of which only
// one gives an id) are one account.
func (d *decoder) checkAccounts() {
	for _, kind := range []string{"user", "group"} {
		seen := map[string]account{}
		reported := map[string]bool{}
		for i := range d.spec.Hooks {
			h := &d.spec.Hooks[i]
			var names []string
			var ids []*uint32
			field, idField := "users", "uid"
			if kind == "user" {
				for _, u := range h.Users {
					names, ids = append(names, u.Name), append(ids, u.UID)
				}
			} else {
				field, idField = "groups", "gid"
				for _, g := range h.Groups {
					names, ids = append(names, g.Name), append(ids, g.GID)
				}
			}
			for k, name := range names {
				if name == "" {
					continue
				}
				at := fmt.Sprintf("hooks[%d].%s[%d]", i, field, k)
				first, ok := seen[name]
				switch {
				case !ok:
					seen[name] = account{at: at, id: ids[k]}
				case first.id == nil:
					if ids[k] != nil {
						seen[name] = account{at: first.at, id: ids[k]}
					}
				case ids[k] != nil && *ids[k] != *first.id:
					d.accountClash(kind, name, idField, first.at, *first.id, at, *ids[k], !reported[first.at])
					reported[first.at] = true
				}
			}
		}
	}
}

// accountClash reports a user or group with two ids, at the second entry
// and, once, at the first.
func (d *decoder) accountClash(kind, name, idField, firstAt string, firstID uint32, at string, id uint32, both bool) {
	p, fp := at+"."+idField, firstAt+"."+idField
	d.add(Error, d.spec.Where(p), p, fmt.Sprintf("%s %s has %s %d here and %d at %s", kind, name, idField, id, firstID, firstAt),
		fmt.Sprintf("an account has one id: give both entries the same %s (line %d), or remove one of them", idField, d.spec.Where(fp).Line))
	if both {
		d.add(Error, d.spec.Where(fp), fp, fmt.Sprintf("%s %s has %s %d here and %d at %s", kind, name, idField, firstID, id, at),
			fmt.Sprintf("an account has one id: give both entries the same %s (line %d), or remove one of them", idField, d.spec.Where(p).Line))
	}
}
