package render

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
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
func ignitionPasswd(st compile.Storage) *ignitionPasswdJSON {
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
func butanePasswd(st compile.Storage) *yaml.Node {
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
func cloudInitAccounts(st compile.Storage) (users, groups *yaml.Node, bootcmd [][]string) {
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
func userYAML(st compile.Storage, u compile.User, homeKey string) *yaml.Node {
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
