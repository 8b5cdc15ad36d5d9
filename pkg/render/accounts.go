package render

import (
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
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
			e := usermerge.UserYAML(st, u, "home_dir")
			if len(u.SSHAuthorizedKeys) > 0 {
				yamlnode.Pairs(e, "ssh_authorized_keys", usermerge.StrSeq(u.SSHAuthorizedKeys))
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
