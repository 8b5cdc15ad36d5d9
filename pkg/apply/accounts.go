package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprov/hostprov/internal/killpoint"
	"github.com/hostprov/hostprov/pkg/compile"
)

// AccountKind is what an Account is: a user or a group.
type AccountKind string

// Account kinds.
const (
	KindUser  AccountKind = "user"
	KindGroup AccountKind = "group"
)

// Account is a user or group a hook asks for (its users: and groups:).
//
// On a node hostprov creates accounts the way systemd does, never by
// editing /etc/passwd: it writes the accounts of each spec set into a
// sysusers.d file of its own (SysusersConfig), placed, owned, checked for
// drift and pruned like any file of a hook, and runs systemd-sysusers on
// that file before it places the files those accounts may own. An account
// is never removed, not even when its entry is gone from the spec: files
// may still belong to it (systemd-sysusers never removes one either).
type Account struct {
	// Hook is the name of the hook whose entry it is.
	Hook string
	Kind AccountKind
	Name string
	// ID is the uid or gid; nil lets systemd-sysusers pick one, which it
	// takes from the system range (below 1000), even for a user that is
	// not a system user.
	ID *uint32
	// System marks a system account. systemd-sysusers makes every account
	// it picks an id for a system one, so this only tells the reader.
	System bool
	// Home and Shell are a user's; empty for systemd-sysusers' defaults
	// ("/" and nologin).
	Home, Shell string
	// Groups are the other groups a user is a member of.
	Groups []string
	// SSHAuthorizedKeys are a user's public keys, placed as a file
	// hostprov owns, HOME/.ssh/authorized_keys (see keyPaths), and
	// PasswordHash the hash set as the user's password with the node's
	// own chpasswd, never logged.
	SSHAuthorizedKeys []string
	PasswordHash      string
	// PrimaryGroup is a user's primary group when it is not the group of
	// the user's name, which systemd-sysusers makes otherwise; the group
	// must exist, or be made by the same file. A user's noCreateHome has
	// nothing to say here: systemd-sysusers makes no home.
	PrimaryGroup string
	// Where is the entry's place in the spec ("FILE:LINE:COL").
	Where string

	set string
}

// AccountsOf returns the users and groups of a rendered spec as apply
// wants them; hookNames[i] is the name of hook i.
func AccountsOf(st compile.Storage, hookNames []string) []Account {
	name := hookNamer(hookNames)
	var as []Account
	for _, g := range st.Groups {
		as = append(as, Account{Hook: name(g.Hook), Kind: KindGroup, Name: g.Name, ID: g.GID, System: g.System, Where: g.Pos.String()})
	}
	for _, u := range st.Users {
		as = append(as, Account{Hook: name(u.Hook), Kind: KindUser, Name: u.Name, ID: u.UID, System: u.System,
			Home: u.Home, Shell: u.Shell, Groups: slices.Clone(u.Groups), Where: u.Pos.String(),
			SSHAuthorizedKeys: slices.Clone(u.SSHAuthorizedKeys), PasswordHash: u.PasswordHash})
		if pg := st.PrimaryGroup(u); pg != u.Name {
			as[len(as)-1].PrimaryGroup = pg
		}
	}
	return as
}

// SysusersConfig is the node path of the sysusers.d file that holds the
// accounts of a spec set ("" for the one spec of an apply without sets).
// Its name sorts after the files of the image's packages, whose accounts
// it may name as groups.
func SysusersConfig(set string) string {
	if set == "" {
		return "/etc/sysusers.d/hostprov.conf"
	}
	return "/etc/sysusers.d/hostprov-" + set + ".conf"
}

// sysusersFile is the sysusers.d file for accounts (of one set): groups
// first, then users, then their memberships, each in spec order and each
// name once (the render refuses one name with two ids).
func sysusersFile(set string, accounts []Account) []byte {
	var b bytes.Buffer
	name := set
	if name == "" {
		name = "of this node"
	}
	fmt.Fprintf(&b, "# The users and groups of hostprov spec set %s, for systemd-sysusers.\n", name)
	b.WriteString("# Written by hostprov apply: an edit is drift, and is reported.\n")
	seen := map[string]bool{}
	for _, kind := range []AccountKind{KindGroup, KindUser} {
		for _, a := range accounts {
			if a.Kind != kind || seen[string(kind)+a.Name] {
				continue
			}
			seen[string(kind)+a.Name] = true
			id := "-"
			if a.ID != nil {
				id = strconv.FormatUint(uint64(*a.ID), 10)
			}
			if kind == KindGroup {
				fmt.Fprintf(&b, "g %s %s\n", a.Name, id)
				continue
			}
			if a.PrimaryGroup != "" {
				// "uid:groupname", "-:groupname" without a uid.
				id += ":" + a.PrimaryGroup
			}
			fmt.Fprintf(&b, "u %s %s - %s %s\n", a.Name, id, dashIfEmpty(a.Home), dashIfEmpty(a.Shell))
		}
	}
	members := map[string]bool{}
	for _, a := range accounts {
		for _, g := range a.Groups {
			if a.Kind == KindUser && !members[a.Name+":"+g] {
				members[a.Name+":"+g] = true
				fmt.Fprintf(&b, "m %s %s\n", a.Name, g)
			}
		}
	}
	return b.Bytes()
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// AccountChange is what a plan does about one account: creates it (add),
// adds a user to groups it is not in yet (change), or nothing (unchanged).
type AccountChange struct {
	Hook string      `json:"hook,omitempty"`
	Kind AccountKind `json:"kind"`
	Name string      `json:"name"`
	Op   FileOp      `json:"op"`
	// Groups are the groups a user joins.
	Groups []string `json:"groups,omitempty"`
	// Config is the sysusers.d file that has the account.
	Config string `json:"config"`
	Reason string `json:"reason,omitempty"`
	Where  string `json:"where,omitempty"`
	// Password is "set" when the plan sets a user's password to the
	// spec's hash (which no plan, log or output shows).
	Password string `json:"password,omitempty"`

	hash string
}

func (a AccountChange) changes() bool { return a.Op == OpAdd || a.Op == OpChange }

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
		if a.Kind == KindUser && a.PasswordHash != "" {
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
		if a.Kind == KindUser {
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
	// A path owned by an account that is not created cannot be placed.
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
	for cfg, ch := range changed {
		if ch && placed[cfg] && !slices.Contains(p.sysusers, cfg) {
			p.sysusers = append(p.sysusers, cfg)
		}
	}
	slices.Sort(p.sysusers)
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

// NodeHas returns a function that reports whether the node (below
// opts.Root) has the user or group name, as its /etc/passwd and /etc/group
// say.
func NodeHas(opts Options) (func(kind AccountKind, name string) bool, error) {
	acc := &accounts{}
	if _, err := os.Stat(opts.Root); opts.Root == "" || err == nil {
		// A --root that is not there yet (apply makes it) has none.
		if acc, err = readAccounts(newNodeFS(opts)); err != nil {
			return nil, err
		}
	}
	return func(kind AccountKind, name string) bool {
		m := acc.groups
		if kind == KindUser {
			m = acc.users
		}
		_, ok := m[name]
		return ok
	}, nil
}

// sysusersCommand is the systemd-sysusers the plan runs; a variable for
// the test that a failing run stops the apply.
var sysusersCommand = "systemd-sysusers"

// runSysusers runs systemd-sysusers on the sysusers.d files of the plan
// that need it (below Root with --root, or the node's own through
// Options.Tools), then resolves the owners the accounts it created give
// to the plan's paths.
func (e *executor) runSysusers(ctx context.Context) error {
	p := e.p
	if e.sysusersRan {
		return nil
	}
	e.sysusersRan = true
	if len(p.sysusers) == 0 {
		return e.setPasswords(ctx)
	}
	var args []nodeArg
	for _, cfg := range p.sysusers {
		args = append(args, nodeArg{s: cfg, node: true})
	}
	killpoint.At("sysusers")
	shown, out, err := p.opts.runTool(ctx, sysusersCommand, []string{"--root=" + p.opts.Root}, args, nil)
	if err != nil {
		return fmt.Errorf("systemd-sysusers %s: %v: %s; the users and groups may be made in part: fix the problem and run hostprov apply again",
			shown, err, strings.TrimSpace(string(out)))
	}
	for _, a := range p.Accounts {
		if a.changes() {
			e.emit(Event{Action: EvCreated, Account: string(a.Kind) + " " + a.Name, Path: a.Config, Reason: a.Reason})
		}
	}
	acc, err := readAccounts(newNodeFS(p.opts))
	if err != nil {
		return err
	}
	for i := range p.Files {
		pc := p.Files[i].path
		if pc == nil || pc.pendingUser == "" && pc.pendingGroup == "" {
			continue
		}
		if pc.pendingUser != "" {
			if pc.owner.UID, err = acc.id(pc.pendingUser, true); err != nil {
				return fmt.Errorf("%s: systemd-sysusers ran, but %v", p.Files[i].Path, err)
			}
		}
		if pc.pendingGroup != "" {
			if pc.owner.GID, err = acc.id(pc.pendingGroup, false); err != nil {
				return fmt.Errorf("%s: systemd-sysusers ran, but %v", p.Files[i].Path, err)
			}
		}
		pc.pendingUser, pc.pendingGroup = "", ""
		p.Files[i].Owner = pc.ownerText()
	}
	return e.setPasswords(ctx)
}

// chpasswdCommand is the node's tool that sets password hashes; a
// variable for tests.
var chpasswdCommand = "chpasswd"

// setPasswords sets the password hashes the plan sets, once the accounts
// exist, with the node's own chpasswd (-e: the input is a hash; --root for
// an image, Options.Tools for a node seen from a container), given on its
// standard input: a hash is never an argument that ps shows, nor part of
// a message.
func (e *executor) setPasswords(ctx context.Context) error {
	var in bytes.Buffer
	var names []string
	for _, a := range e.p.Accounts {
		if a.Password == "set" && a.Op != OpKeep {
			fmt.Fprintf(&in, "%s:%s\n", a.Name, a.hash)
			names = append(names, a.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	killpoint.At("chpasswd")
	shown, out, err := e.p.opts.runTool(ctx, chpasswdCommand, []string{"--root", e.p.opts.Root}, []nodeArg{{s: "-e"}}, in.Bytes())
	if err != nil {
		return fmt.Errorf("%s %s (the password of %s): %v: %s; fix the problem and run hostprov apply again",
			chpasswdCommand, shown, strings.Join(names, ", "), err, strings.TrimSpace(string(out)))
	}
	for _, name := range names {
		e.emit(Event{Action: EvChanged, Account: "user " + name, Reason: "password set to the spec's hash"})
	}
	return nil
}
