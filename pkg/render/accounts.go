package render

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// ignitionPasswdJSON is passwd: of an Ignition config, the same in every
// spec version from 3.0.0 to 3.5.0 for the fields hostprov writes.
// Ignition creates the groups, then the users, before it writes files, so
// that a file may be owned by either.
type ignitionPasswdJSON struct {
	Groups []ignitionGroupJSON `json:"groups,omitempty"`
	Users  []ignitionUserJSON  `json:"users,omitempty"`
}

type ignitionUserJSON struct {
	Groups            []string `json:"groups,omitempty"`
	HomeDir           *string  `json:"homeDir,omitempty"`
	Name              string   `json:"name"`
	NoCreateHome      *bool    `json:"noCreateHome,omitempty"`
	PasswordHash      *string  `json:"passwordHash,omitempty"`
	PrimaryGroup      *string  `json:"primaryGroup,omitempty"`
	Shell             *string  `json:"shell,omitempty"`
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`
	System            *bool    `json:"system,omitempty"`
	UID               *int     `json:"uid,omitempty"`
}

type ignitionGroupJSON struct {
	Gid    *int   `json:"gid,omitempty"`
	Name   string `json:"name"`
	System *bool  `json:"system,omitempty"`
}

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

func idPtr(id *uint32) *int {
	if id == nil {
		return nil
	}
	i := int(*id)
	return &i
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func trueOrNil(b bool) *bool {
	if !b {
		return nil
	}
	return boolPtr(true)
}

// ignitionPasswd is passwd: of the Ignition config; nil when the spec has
// no users or groups.
func ignitionPasswd(st Storage) *ignitionPasswdJSON {
	if !st.HasAccounts() {
		return nil
	}
	out := &ignitionPasswdJSON{}
	for _, g := range st.Groups {
		out.Groups = append(out.Groups, ignitionGroupJSON{Gid: idPtr(g.GID), Name: g.Name, System: trueOrNil(g.System)})
	}
	for _, u := range st.Users {
		out.Users = append(out.Users, ignitionUserJSON{Groups: u.Groups, HomeDir: strPtr(u.Home), Name: u.Name, NoCreateHome: trueOrNil(u.NoCreateHome),
			PasswordHash: strPtr(u.PasswordHash), PrimaryGroup: strPtr(st.PrimaryGroup(u)), Shell: strPtr(u.Shell),
			SSHAuthorizedKeys: u.SSHAuthorizedKeys, System: trueOrNil(u.System), UID: idPtr(u.UID)})
	}
	return out
}

// butanePasswd is passwd: of the Butane output; nil when there is
// nothing. Butane translates it to the Ignition output's passwd.
func butanePasswd(st Storage) *yaml.Node {
	if !st.HasAccounts() {
		return nil
	}
	n := &yaml.Node{Kind: yaml.MappingNode}
	if len(st.Users) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, u := range st.Users {
			e := userYAML(st, u, "home_dir")
			if len(u.SSHAuthorizedKeys) > 0 {
				yamlnode.Pairs(e, "ssh_authorized_keys", strSeq(u.SSHAuthorizedKeys))
			}
			if u.PasswordHash != "" {
				yamlnode.Pairs(e, "password_hash", yamlnode.Str(u.PasswordHash))
			}
			seq.Content = append(seq.Content, e)
		}
		yamlnode.Pairs(n, "users", seq)
	}
	if len(st.Groups) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, g := range st.Groups {
			e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(g.Name))
			if g.GID != nil {
				yamlnode.Pairs(e, "gid", yamlnode.Uint(*g.GID))
			}
			if g.System {
				yamlnode.Pairs(e, "system", yamlnode.Bool(true))
			}
			seq.Content = append(seq.Content, e)
		}
		yamlnode.Pairs(n, "groups", seq)
	}
	return n
}

// cloudInitAccounts returns users: and groups: of the cloud-config, and
// the bootcmd commands that make the groups cloud-init's groups module
// cannot: one with a gid or a system group. users: starts with default,
// so that the image's default user is still created (users: without it
// replaces that user). Groups are made before users, and both before
// write_files writes a deferred file: a file owned by a user of the spec
// is deferred already (see cloudInitStorage).
func cloudInitAccounts(st Storage) (users, groups *yaml.Node, bootcmd [][]string) {
	for _, g := range st.Groups {
		if g.GID == nil && !g.System {
			if groups == nil {
				groups = &yaml.Node{Kind: yaml.SequenceNode}
			}
			groups.Content = append(groups.Content, yamlnode.Str(g.Name))
			continue
		}
		// Names are checked (letters, digits, _ and -), so the script
		// holds them as written. bootcmd runs at every boot: the group
		// is added only when missing.
		args := "groupadd"
		if g.System {
			args += " --system"
		}
		if g.GID != nil {
			args += " --gid " + strconv.FormatUint(uint64(*g.GID), 10)
		}
		bootcmd = append(bootcmd, []string{"sh", "-c", fmt.Sprintf("getent group %s >/dev/null || %s %s", g.Name, args, g.Name)})
	}
	if len(st.Users) > 0 {
		users = &yaml.Node{Kind: yaml.SequenceNode}
		users.Content = append(users.Content, yamlnode.Str("default"))
		for _, u := range st.Users {
			e := userYAML(st, u, "homedir")
			if len(u.SSHAuthorizedKeys) > 0 {
				yamlnode.Pairs(e, "ssh_authorized_keys", strSeq(u.SSHAuthorizedKeys))
			}
			// cloud-init locks a user's password unless told not to
			// (lock_passwd defaults to true), which would make a
			// hash given here useless; "!" and "*" are locks already.
			switch u.PasswordHash {
			case "":
			case "!", "*":
				yamlnode.Pairs(e, "lock_passwd", yamlnode.Bool(true))
			default:
				yamlnode.Pairs(e, "hashed_passwd", yamlnode.Str(u.PasswordHash), "lock_passwd", yamlnode.Bool(false))
			}
			users.Content = append(users.Content, e)
		}
	}
	return users, groups, bootcmd
}

// ErrKopsAccounts is why the kops output refuses users and groups.
var ErrKopsAccounts = errors.New("a kops hook is a unit and nothing else: it cannot create users or groups")

func kopsAccountProblems(st Storage) []KopsProblem {
	var ps []KopsProblem
	hint := "create the account in the unit's own ExecStartPre= (or a command hook's steps), use DynamicUser=, or provision it with Ignition, Butane or cloud-init"
	for _, g := range st.Groups {
		ps = append(ps, KopsProblem{Unit: "group " + g.Name, Hook: g.Hook, Pos: g.Pos, Err: ErrKopsAccounts, Hint: hint})
	}
	for _, u := range st.Users {
		ps = append(ps, KopsProblem{Unit: "user " + u.Name, Hook: u.Hook, Pos: u.Pos, Err: ErrKopsAccounts, Hint: hint})
	}
	return ps
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
	for _, u := range o.Users {
		j := slices.IndexFunc(s.Users, func(x User) bool { return x.Name == u.Name })
		if j < 0 {
			s.Users = append(s.Users, u)
			continue
		}
		first := &s.Users[j]
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
		if f := accountDiff(first.UID, u.UID,
			[]string{strconv.FormatBool(first.System), first.Home, first.Shell, strings.Join(first.Groups, ","), first.PrimaryGroup, strconv.FormatBool(first.NoCreateHome)},
			[]string{strconv.FormatBool(u.System), u.Home, u.Shell, strings.Join(u.Groups, ","), u.PrimaryGroup, strconv.FormatBool(u.NoCreateHome)},
			"uid", "system", "home", "shell", "groups", "primaryGroup", "noCreateHome"); f != nil {
			clash("user", u.Name, f[0], f[1], f[2], first.Pos, u.Pos)
		} else if first.UID == nil {
			first.UID = u.UID
		}
	}
	for _, g := range o.Groups {
		j := slices.IndexFunc(s.Groups, func(x Group) bool { return x.Name == g.Name })
		if j < 0 {
			s.Groups = append(s.Groups, g)
			continue
		}
		first := &s.Groups[j]
		if f := accountDiff(first.GID, g.GID, []string{strconv.FormatBool(first.System)}, []string{strconv.FormatBool(g.System)}, "gid", "system"); f != nil {
			clash("group", g.Name, f[0], f[1], f[2], first.Pos, g.Pos)
		} else if first.GID == nil {
			first.GID = g.GID
		}
	}
	return diags
}

// accountDiff compares two entries of one account: their ids (when both
// give one), then the other fields. It returns the first field that
// differs with both values, or nil.
func accountDiff(ida, idb *uint32, a, b []string, fields ...string) []string {
	if ida != nil && idb != nil && *ida != *idb {
		return []string{fields[0], strconv.FormatUint(uint64(*ida), 10), strconv.FormatUint(uint64(*idb), 10)}
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
			return []string{fields[i+1], va, vb}
		}
	}
	return nil
}

// strSeq is a YAML list of strings, one per item, in order.
func strSeq(ss []string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range ss {
		seq.Content = append(seq.Content, yamlnode.Str(s))
	}
	return seq
}

// userYAML is a user of st as Butane's passwd and cloud-init's users
// write it: the same keys but the home directory's, which is home_dir in
// Butane and homedir in cloud-init.
func userYAML(st Storage, u User, homeKey string) *yaml.Node {
	e := yamlnode.Pairs(&yaml.Node{Kind: yaml.MappingNode}, "name", yamlnode.Str(u.Name))
	if u.UID != nil {
		yamlnode.Pairs(e, "uid", yamlnode.Uint(*u.UID))
	}
	if u.System {
		yamlnode.Pairs(e, "system", yamlnode.Bool(true))
	}
	if pg := st.PrimaryGroup(u); pg != "" {
		yamlnode.Pairs(e, "primary_group", yamlnode.Str(pg))
	}
	if u.Home != "" {
		yamlnode.Pairs(e, homeKey, yamlnode.Str(u.Home))
	}
	if u.NoCreateHome {
		yamlnode.Pairs(e, "no_create_home", yamlnode.Bool(true))
	}
	if u.Shell != "" {
		yamlnode.Pairs(e, "shell", yamlnode.Str(u.Shell))
	}
	if len(u.Groups) > 0 {
		yamlnode.Pairs(e, "groups", yamlnode.Words(u.Groups))
	}
	return e
}
