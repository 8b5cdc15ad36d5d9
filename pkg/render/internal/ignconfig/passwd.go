package ignconfig

import (
	"github.com/hostprov/hostprov/pkg/compile"
)

// PasswdJSON is passwd: of an Ignition config, the same in every
// spec version from 3.0.0 to 3.5.0 for the fields hostprov writes.
// Ignition creates the groups, then the users, before it writes files, so
// that a file may be owned by either.
type PasswdJSON struct {
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

// Passwd is passwd: of the Ignition config; nil when the spec has
// no users or groups.
func Passwd(st compile.Storage) *PasswdJSON {
	if !st.HasAccounts() {
		return nil
	}
	out := &PasswdJSON{}
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
