package apply

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// accountPaths turns the accounts of the sets into the sysusers.d file of
// each set, as paths of the plan. The files are placed before anything
// else the plan places (see planPaths), so that systemd-sysusers can run
// before files are given to the accounts it creates.
func accountPaths(accounts []Account) []Path {
	var sets []string
	bySet := map[string][]Account{}
	for _, a := range accounts {
		if _, ok := bySet[a.set]; !ok {
			sets = append(sets, a.set)
		}
		bySet[a.set] = append(bySet[a.set], a)
	}
	var ps []Path
	for _, s := range sets {
		as := bySet[s]
		ps = append(ps, Path{Kind: KindFile, Path: SysusersConfig(s), Contents: sysusersFile(s, as), Mode: 0o644,
			Where: as[0].Where, set: s, sysusers: true})
	}
	return ps
}

// keyPaths are the authorized_keys files of the users with SSH keys, in
// HOME/.ssh, with the modes sshd's StrictModes demands: the directory 0700
// and the file 0600, both the user's. HOME is the spec's, or the node's
// for a user it has; a user with neither (systemd-sysusers makes its users
// with the home /) is a conflict, as is a home that is /. The home itself
// is not made the user's: a directories: entry does that.
func keyPaths(accounts []Account, acc *accounts) ([]Path, []Problem) {
	var ps []Path
	var problems []Problem
	seen := map[string]bool{}
	for _, a := range accounts {
		if a.Kind != KindUser || len(a.SSHAuthorizedKeys) == 0 || seen[a.Name] {
			continue
		}
		seen[a.Name] = true
		home := a.Home
		if home == "" {
			home = acc.homes[a.Name]
		}
		if home == "" || home == "/" {
			problems = append(problems, Problem{Unit: hookOr(&Path{Hook: a.Hook}), Path: SysusersConfig(a.set),
				Message: fmt.Sprintf("%s: user %s has sshAuthorizedKeys but no home to put them in (systemd-sysusers makes users with the home /)", orDash(a.Where), a.Name),
				Fix:     &Fix{Spec: "give the user a home:, such as home: /home/" + a.Name + " (and a directories: entry for it owned by the user)"}})
			continue
		}
		ssh := path.Join(home, ".ssh")
		var b strings.Builder
		fmt.Fprintf(&b, "# The SSH keys of user %s, written by hostprov apply from its spec: an edit is drift, and is reported.\n", a.Name)
		for _, k := range a.SSHAuthorizedKeys {
			b.WriteString(k + "\n")
		}
		ps = append(ps,
			Path{Hook: a.Hook, Kind: KindDirectory, Path: ssh, Mode: 0o700, User: a.Name, Where: a.Where, set: a.set},
			Path{Hook: a.Hook, Kind: KindFile, Path: path.Join(ssh, "authorized_keys"), Contents: []byte(b.String()), Mode: 0o600,
				User: a.Name, Where: a.Where, set: a.set})
	}
	return ps, problems
}

// planAccounts records what the plan does about each account, against the
// node's accounts, and whether systemd-sysusers must run: when a set's
// sysusers.d file changes, or an account or membership of it is missing
// (an apply stopped after writing the file, or someone removed the user).
// A set's accounts are created only once its file is placed: a file that
// is a conflict or drift leaves them alone, as it does the file.
func (p *planner) planAccounts(accounts []Account, acc *accounts) {
	if len(accounts) == 0 {
		return
	}
	placed := map[string]bool{}
	changed := map[string]bool{}
	for _, f := range p.Files {
		if f.path != nil && f.path.want.sysusers {
			placed[f.Path] = f.Op != OpKeep
			changed[f.Path] = f.changes()
		}
	}
	seen := map[string]bool{}
	for _, a := range accounts {
		key := string(a.Kind) + ":" + a.Name
		if seen[key] {
			continue
		}
		seen[key] = true
		cfg := SysusersConfig(a.set)
		ac := AccountChange{Hook: a.Hook, Kind: a.Kind, Name: a.Name, Op: OpUnchanged, Config: cfg, Where: a.Where}
		m := acc.groups
		if a.Kind == KindUser {
			m = acc.users
		}
		id, exists := m[a.Name]
		switch {
		case !exists:
			ac.Op, ac.Reason = OpAdd, "new"
			if a.ID == nil {
				ac.Reason = "new, with an id systemd-sysusers picks"
				if a.Kind == KindUser && !a.System {
					ac.Reason += " from the system range: give it a uid for another"
				}
			}
		case a.ID != nil && uint32(id) != *a.ID:
			p.Warnings = append(p.Warnings, Problem{Unit: hookOr(&Path{Hook: a.Hook}), Path: cfg,
				Message: fmt.Sprintf("%s %s exists on the node with id %d, and the spec gives %d; left as it is (systemd-sysusers never changes an account): change the spec's id, or the account", a.Kind, a.Name, id, *a.ID)})
		}
		if a.Kind == KindUser {
			ac.userChanges(a, acc, exists)
		}
		if !placed[cfg] {
			if ac.changes() {
				ac.Op, ac.Reason = OpKeep, "not created: its sysusers.d file is left alone (see the warnings and conflicts)"
			}
			p.Accounts = append(p.Accounts, ac)
			continue
		}
		if ac.changes() && (ac.Password == "" || ac.Op == OpAdd || len(ac.Groups) > 0) || changed[cfg] {
			if !slices.Contains(p.sysusers, cfg) {
				p.sysusers = append(p.sysusers, cfg)
			}
		}
		p.Accounts = append(p.Accounts, ac)
	}
	p.ownersNotCreated(accounts, placed)
	for cfg, ch := range changed {
		if ch && placed[cfg] && !slices.Contains(p.sysusers, cfg) {
			p.sysusers = append(p.sysusers, cfg)
		}
	}
	slices.Sort(p.sysusers)
}

// userChanges adds to ac what the user a's password and groups change:
// exists says the node has the user.
func (ac *AccountChange) userChanges(a Account, acc *accounts, exists bool) {
	if a.PasswordHash != "" {
		// Set when the node's hash is another (or cannot be read,
		// as by a plan that is not run as root): chpasswd -e is
		// idempotent, and a hash is never compared by printing it.
		if cur, known := acc.shadow[a.Name]; !exists || !known || cur != a.PasswordHash {
			ac.Password, ac.hash = "set", a.PasswordHash
			if ac.Op == OpAdd {
				ac.Reason += "; its password is set to the spec's hash"
			}
			if ac.Op == OpUnchanged {
				ac.Op, ac.Reason = OpChange, "its password is set to the spec's hash"
				if exists && !known {
					ac.Reason += " (the node's /etc/shadow could not be read to compare)"
				}
			}
		}
	}
	for _, g := range a.Groups {
		if !slices.Contains(acc.members[g], a.Name) {
			ac.Groups = append(ac.Groups, g)
		}
	}
	if len(ac.Groups) > 0 {
		switch {
		case ac.Op == OpUnchanged:
			ac.Op, ac.Reason = OpChange, "joins "+strings.Join(ac.Groups, ", ")
		case ac.Op == OpChange:
			ac.Reason += "; joins " + strings.Join(ac.Groups, ", ")
		}
	}
}

// ownersNotCreated makes a conflict of each path whose owner is an account
// this apply does not create: it cannot be placed.
func (p *planner) ownersNotCreated(accounts []Account, placed map[string]bool) {
	for i := range p.Files {
		pc := p.Files[i].path
		if pc == nil || p.Files[i].Op == OpKeep {
			continue
		}
		for _, o := range []struct {
			name string
			user bool
		}{{pc.pendingUser, true}, {pc.pendingGroup, false}} {
			if o.name == "" {
				continue
			}
			if a := createdBy(accounts, o.name, o.user); a != nil && !placed[SysusersConfig(a.set)] {
				p.Conflicts = append(p.Conflicts, Problem{Unit: hookOr(pc.want), Path: p.Files[i].Path,
					Message: fmt.Sprintf("its owner %s is not created, since %s is left alone; fix that first", o.name, SysusersConfig(a.set))})
			}
		}
	}
}

// createdBy returns the account of accounts that creates the user (or
// group) name, if any. A user's entry creates its group of the same name
// too, as systemd-sysusers does.
func createdBy(accounts []Account, name string, user bool) *Account {
	for i := range accounts {
		a := &accounts[i]
		if a.Name != name {
			continue
		}
		if user && a.Kind == KindUser || !user {
			return a
		}
	}
	return nil
}
