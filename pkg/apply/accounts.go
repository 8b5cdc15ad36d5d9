package apply

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
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
// wants them, each named by its hook in spec.
func AccountsOf(st compile.Storage, spec *hooks.Spec) []Account {
	name := hookNamer(spec)
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
