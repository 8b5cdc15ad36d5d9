package compile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// PrimaryGroup is u's primary group: the one the spec names, or else the
// group of u's name when s creates one; "" when the tool that creates the
// user is to make the user's group itself. Without the group of u's name,
// useradd would refuse to make a group that exists already.
func (s Storage) PrimaryGroup(u User) string {
	if u.PrimaryGroup != "" {
		return u.PrimaryGroup
	}
	for _, g := range s.Groups {
		if g.Name == u.Name {
			return g.Name
		}
	}
	return ""
}

// AddAccounts adds the users and groups of another spec to s. An account
// both have is one account when they agree; two ids for it, or another
// system, home, shell or groups, is an error reported at both entries.
func (s *Storage) AddAccounts(o Storage) hooks.Diagnostics {
	var diags hooks.Diagnostics
	clash := func(kind, name, field, a, b string, pa, pb hooks.Position) {
		diags = append(diags,
			hooks.Diagnostic{Severity: hooks.Error, Pos: pb, Message: fmt.Sprintf("%s %s has %s %s here and %s at %s", kind, name, field, b, a, pa),
				Hint: "an account is the same on the whole machine: give every spec the same " + field + ", or write it in one spec"},
			hooks.Diagnostic{Severity: hooks.Error, Pos: pa, Message: fmt.Sprintf("%s %s has %s %s here and %s at %s", kind, name, field, a, b, pb),
				Hint: "an account is the same on the whole machine: give every spec the same " + field + ", or write it in one spec"})
	}
	users, groups := indexAccounts(&s.Users), indexAccounts(&s.Groups)
	for _, u := range o.Users {
		first := users.same(u)
		if first == nil {
			continue
		}
		// Keys and hashes are compared, but not shown: a key is long,
		// and a hash is nothing to print.
		if !slices.Equal(first.SSHAuthorizedKeys, u.SSHAuthorizedKeys) {
			clash("user", u.Name, "sshAuthorizedKeys", fmt.Sprintf("(%d keys)", len(first.SSHAuthorizedKeys)), fmt.Sprintf("(%d other keys)", len(u.SSHAuthorizedKeys)), first.Pos, u.Pos)
			continue
		}
		if first.PasswordHash != u.PasswordHash {
			clash("user", u.Name, "passwordHash", "(one hash)", "(another hash)", first.Pos, u.Pos)
			continue
		}
		// The keys and the hash are equal here, so the first field
		// that differs is one that can be shown.
		if f := accountDiff("uid", first.UID, u.UID, userValues(*first), userValues(u), userFields); f != nil {
			clash("user", u.Name, f[0], f[1], f[2], first.Pos, u.Pos)
		} else if first.UID == nil {
			first.UID = u.UID
		}
	}
	for _, g := range o.Groups {
		first := groups.same(g)
		if first == nil {
			continue
		}
		if f := accountDiff("gid", first.GID, g.GID, groupValues(*first), groupValues(g), groupFields); f != nil {
			clash("group", g.Name, f[0], f[1], f[2], first.Pos, g.Pos)
		} else if first.GID == nil {
			first.GID = g.GID
		}
	}
	return diags
}

// account is a User or a Group: what accountsByName needs of both.
type account interface {
	User | Group
	accountName() string
}

func (u User) accountName() string  { return u.Name }
func (g Group) accountName() string { return g.Name }

// accountsByName finds the accounts of a list by name, and appends to
// the list those it does not have: a map, not a walk of the list, as a
// spec may have thousands of users.
type accountsByName[A account] struct {
	list *[]A
	at   map[string]int
}

func indexAccounts[A account](list *[]A) accountsByName[A] {
	at := make(map[string]int, len(*list))
	for i, a := range *list {
		at[a.accountName()] = i
	}
	return accountsByName[A]{list, at}
}

// same returns the account of a's name, for a to be merged into, or, when
// there is none, appends a to the list and returns nil.
func (x accountsByName[A]) same(a A) *A {
	if j, ok := x.at[a.accountName()]; ok {
		return &(*x.list)[j]
	}
	x.at[a.accountName()] = len(*x.list)
	*x.list = append(*x.list, a)
	return nil
}

// userFields are the fields but the uid that two entries of one user must
// agree on, in the order a difference is reported, within a spec and
// across specs alike; userValues are a user's values of them.
var userFields = []string{"system", "home", "shell", "groups", "sshAuthorizedKeys", "passwordHash", "primaryGroup", "noCreateHome"}

func userValues(u User) []string {
	return []string{strconv.FormatBool(u.System), u.Home, u.Shell, strings.Join(u.Groups, ","),
		strings.Join(u.SSHAuthorizedKeys, "\n"), u.PasswordHash, u.PrimaryGroup, strconv.FormatBool(u.NoCreateHome)}
}

// groupFields and groupValues are userFields and userValues of a group.
var groupFields = []string{"system"}

func groupValues(g Group) []string { return []string{strconv.FormatBool(g.System)} }

// accountDiff compares two entries of one account: their ids (idName, when
// both give one), then the values of fields. It returns the first field
// that differs with both values, or nil.
func accountDiff(idName string, ida, idb *uint32, a, b []string, fields []string) []string {
	if ida != nil && idb != nil && *ida != *idb {
		return []string{idName, strconv.FormatUint(uint64(*ida), 10), strconv.FormatUint(uint64(*idb), 10)}
	}
	for i := range a {
		if a[i] != b[i] {
			va, vb := a[i], b[i]
			if va == "" {
				va = "(none)"
			}
			if vb == "" {
				vb = "(none)"
			}
			return []string{fields[i], va, vb}
		}
	}
	return nil
}
