package importer

import (
	"fmt"
	"sort"

	types "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/hostprov/hostprov/pkg/hooks"
)

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
		hu, ok := im.user([]any{"passwd", "users", i}, u)
		if !ok {
			continue
		}
		if u.PrimaryGroup == nil {
			ownGroup[u.Name] = true
		}
		h.Users = append(h.Users, hu)
		im.storageOrigins.users = append(im.storageOrigins.users, im.origin([]any{"passwd", "users", i}))
	}
	for i, g := range pw.Groups {
		hg, ok := im.group([]any{"passwd", "groups", i}, g, ownGroup)
		if !ok {
			continue
		}
		h.Groups = append(h.Groups, hg)
		im.storageOrigins.groups = append(im.storageOrigins.groups, im.origin([]any{"passwd", "groups", i}))
	}
}

// keepAccount reports whether the config's user or group (kind) of name
// at p can be imported, and warns why not when it cannot: its name is not
// one systemd-sysusers accepts, or the config deletes it.
func (im *ignImporter) keepAccount(p []any, kind, name string, shouldExist *bool) bool {
	if problem := hooks.AccountNameProblem(name); problem != "" {
		im.drop(p, []any{"name"}, fmt.Sprintf("the %s name %q is not one systemd-sysusers accepts: %s", kind, name, problem),
			"rename the "+kind+": a letter or _ first, then letters, digits, _ or -")
		return false
	}
	if shouldExist != nil && !*shouldExist {
		im.drop(p, []any{"shouldExist"}, "the "+kind+" "+name+" is to be deleted, which hostprov does not do",
			"delete the "+kind+" with a command hook")
		return false
	}
	return true
}

// user is the hook user of the config's user at p; ok is false, with a
// warning, when the user is kept out.
func (im *ignImporter) user(p []any, u types.PasswdUser) (hu hooks.User, ok bool) {
	if !im.keepAccount(p, "user", u.Name, u.ShouldExist) {
		return hu, false
	}
	hu = hooks.User{Name: u.Name, System: u.System != nil && *u.System, UID: uint32Ptr(u.UID)}
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
	return hu, true
}

// group is the hook group of the config's group at p; ok is false, with a
// warning, when the group is kept out. ownGroup are the users of the spec
// without a primaryGroup.
func (im *ignImporter) group(p []any, g types.PasswdGroup, ownGroup map[string]bool) (hg hooks.Group, ok bool) {
	if !im.keepAccount(p, "group", g.Name, g.ShouldExist) {
		return hg, false
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
		return hg, false
	}
	hg = hooks.Group{Name: g.Name, System: g.System != nil && *g.System, GID: uint32Ptr(g.Gid)}
	if g.PasswordHash != nil {
		im.move(append(p, "passwordHash"), "passwordHash of the group "+g.Name+": a hostprov group has name, gid and system",
			"set group passwords, if you need them, with a command hook")
	}
	return hg, true
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
