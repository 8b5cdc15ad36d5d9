package hooks

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
)

// userKind and groupKind are the tables of the fields of an entry of a
// hook's users and groups, in the order they are documented.
var (
	userKind  *kind[User]
	groupKind *kind[Group]
)

func init() {
	userKind = newKind("user", userFields)
	userKind.unknown = unknownStorageField(userKind)
	userKind.check = func(d *decoder, item value, _ *User, st *entryState) {
		d.checkAccountName(item, "user", userKind.has(st.present, "name"))
	}
	groupKind = newKind("group", groupFields)
	groupKind.unknown = unknownStorageField(groupKind)
	groupKind.check = func(d *decoder, item value, _ *Group, st *entryState) {
		d.checkAccountName(item, "group", groupKind.has(st.present, "name"))
	}
}

var userFields = []field[User]{
	accountNameField(func(u *User) *string { return &u.Name }),
	accountIDField("uid", func(u *User) **uint32 { return &u.UID }),
	flag("system", 0, func(u *User) *bool { return &u.System }),
	plain("home", "", 0, func(u *User) *string { return &u.Home }, (*decoder).absPath),
	plain("shell", "", 0, func(u *User) *string { return &u.Shell }, (*decoder).absPath),
	words("groups", "", 0, func(u *User) *[]string { return &u.Groups }, (*decoder).memberOf),
	{key: "sshAuthorizedKeys", decode: func(d *decoder, v value, u *User) { u.SSHAuthorizedKeys = d.authorizedKeys(v) },
		encode: func(u *User) *yaml.Node {
			if len(u.SSHAuthorizedKeys) == 0 {
				return nil
			}
			return list(u.SSHAuthorizedKeys)
		}},
	plain("passwordHash", "", 0, func(u *User) *string { return &u.PasswordHash }, (*decoder).passwordHash),
	plain("primaryGroup", "", 0, func(u *User) *string { return &u.PrimaryGroup }, (*decoder).accountName),
	flag("noCreateHome", 0, func(u *User) *bool { return &u.NoCreateHome }),
}

var groupFields = []field[Group]{
	accountNameField(func(g *Group) *string { return &g.Name }),
	accountIDField("gid", func(g *Group) **uint32 { return &g.GID }),
	flag("system", 0, func(g *Group) *bool { return &g.System }),
}

// accountNameField is the name of a user or group, always written.
func accountNameField[T any](at func(*T) *string) field[T] {
	return field[T]{key: "name", decode: func(d *decoder, v value, t *T) { *at(t) = d.accountName(v) },
		encode: func(t *T) *yaml.Node { return yamlnode.Str(*at(t)) }}
}

// accountIDField is the uid or gid of a user or group, nil when not
// given.
func accountIDField[T any](key string, at func(*T) **uint32) field[T] {
	return field[T]{key: key, decode: func(d *decoder, v value, t *T) { *at(t) = d.accountID(v) },
		encode: func(t *T) *yaml.Node {
			if id := *at(t); id != nil {
				return yamlnode.Uint(*id)
			}
			return nil
		}}
}

// checkAccountName checks that a user or group (what) has a name.
func (d *decoder) checkAccountName(item value, what string, hasName bool) {
	if !hasName {
		d.add(Error, item.pos, item.path+".name", "the "+what+" has no name", "add name:, such as name: myapp")
	}
}

// maxAccountName is the longest user or group name systemd-sysusers
// accepts: the utmp name size less its terminating NUL.
const maxAccountName = 31

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
	// SSHAuthorizedKeys are the public keys that may log in as the user,
	// each a line of an authorized_keys file (sshd(8)), in spec order.
	SSHAuthorizedKeys []string
	// PasswordHash is the user's password as a crypt(3) hash ("$y$...",
	// "$6$..."), or "!" or "*" for none that works; empty leaves the
	// password as it is. A clear-text password is refused: a spec is
	// read by many, and ends up in user data that others can read.
	PasswordHash string
	// PrimaryGroup is the name of the user's primary group, which must
	// exist (a group of the spec, or of the machine); empty for a group
	// of the user's name (see compile.Storage.PrimaryGroup).
	PrimaryGroup string
	// NoCreateHome makes no home directory for the user. Without it,
	// Ignition makes one for every user it creates and cloud-init for a
	// user that is not a system one; apply makes none either way.
	NoCreateHome bool
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
	case len(name) > maxAccountName:
		return fmt.Sprintf("it has %d characters, more than %d", len(name), maxAccountName)
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

// accountName decodes the name of a user or group.
func (d *decoder) accountName(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return ""
	}
	if p := AccountNameProblem(s); p != "" {
		hint := fmt.Sprintf("a name starts with a letter or _, has only letters, digits, _ and -, and at most %d characters", maxAccountName)
		switch {
		case digitsRE.MatchString(s) && strings.HasSuffix(v.path, ".primaryGroup"):
			hint = "primaryGroup names the group: give the group with that gid a name in groups: (name: ..., gid: " + s + "), and write that name here"
		case digitsRE.MatchString(s):
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
	if !d.list(v, "write the user's supplementary groups, such as groups: [wheel], or remove the line",
		"groups must be a list of names", "write groups: [wheel, docker]") {
		return nil
	}
	n := v.node
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

// sshKeyTypes are the key types of OpenSSH's public keys, as the first
// word of a key (after any options) in an authorized_keys line.
var sshKeyTypes = []string{
	"ssh-ed25519", "ssh-rsa", "ssh-dss",
	"ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
	"sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com",
}

// authorizedKeys decodes a user's sshAuthorizedKeys: lines of an
// authorized_keys file, each with a key of a type sshd knows followed by
// its base64 blob.
func (d *decoder) authorizedKeys(v value) []string {
	keys, ok := d.strList(v, `["ssh-ed25519 AAAAC3Nz... me@laptop"]`)
	if !ok {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for i, k := range keys {
		item := d.item(v.path, i, v.node.Content[i])
		if problem := AuthorizedKeyProblem(k); problem != "" {
			hint := "give the line of the key's .pub file (such as ~/.ssh/id_ed25519.pub): TYPE BASE64 [COMMENT]"
			if strings.Contains(k, "PRIVATE KEY") {
				hint = "never put a private key in a spec: give the public key, the line of its .pub file"
			}
			d.add(Error, item.pos, item.path, problem, hint)
			continue
		}
		if seen[k] {
			d.add(Error, item.pos, item.path, "this key is listed twice", "remove one of them")
			continue
		}
		seen[k] = true
		out = append(out, k)
	}
	return out
}

// AuthorizedKeyProblem says why line is not a public key line that sshd
// reads from an authorized_keys file, or returns "". Only the key's
// place in the line is checked, never its text, which the message leaves
// out.
func AuthorizedKeyProblem(line string) string {
	if strings.TrimSpace(line) == "" {
		return "the key is empty"
	}
	if strings.ContainsAny(line, "\n\r") {
		return "the key has a line break: one key is one line"
	}
	words := strings.Fields(line)
	for i, w := range words {
		if !slices.Contains(sshKeyTypes, w) {
			continue
		}
		if i+1 >= len(words) || !base64RE.MatchString(words[i+1]) {
			return "the key's type " + w + " is not followed by its base64 blob"
		}
		return ""
	}
	if strings.Contains(line, "PRIVATE KEY") {
		return "this is a private key, not a public one"
	}
	return "this is not an SSH public key: no key type (such as ssh-ed25519 or ssh-rsa) was found"
}

var base64RE = regexp.MustCompile(`^[A-Za-z0-9+/]+={0,2}$`)

// passwordHashRE is a crypt(3) hash as the shadow file holds it: $ID$,
// then anything but the shadow file's separator and white space.
var passwordHashRE = regexp.MustCompile(`^\$[0-9a-z]+\$[^:\s]+$`)

// passwordHash decodes a user's passwordHash. Its text is never part of a
// message: a clear-text password given by mistake must not reach a log.
func (d *decoder) passwordHash(v value) string {
	s, ok := d.str(v, false)
	if !ok {
		return ""
	}
	if PasswordHashProblem(s) != "" {
		d.add(Error, v.pos, v.path, PasswordHashProblem(s),
			"hostprov never writes a clear-text password: make a hash with mkpasswd -m yescrypt (Debian's whois package) or openssl passwd -6, and give its output; \"!\" locks the password")
		return ""
	}
	return s
}

// PasswordHashProblem says why s is not a password hash for the shadow
// file, or returns "": a crypt(3) hash ("$y$...", "$6$...") or "!" or "*"
// (no password works). The message never holds s.
func PasswordHashProblem(s string) string {
	switch {
	case s == "!" || s == "*":
		return ""
	case s == "":
		return "passwordHash is empty, which would let anyone log in without a password"
	case !passwordHashRE.MatchString(s):
		return "passwordHash is not a crypt(3) hash (such as $y$... or $6$...); it looks like a clear-text password, which is not shown here"
	}
	return ""
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
