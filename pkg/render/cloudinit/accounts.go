package cloudinit

import (
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// accountEntries returns users: and groups: of the cloud-config, and
// the bootcmd commands that make the groups cloud-init's groups module
// cannot: one with a gid or a system group. users: starts with default,
// so that the image's default user is still created (users: without it
// replaces that user). Groups are made before users, and both before
// write_files writes a deferred file: a file owned by a user of the spec
// is deferred already (see storageEntries).
func accountEntries(st compile.Storage) (users, groups *yaml.Node, bootcmd [][]string) {
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
			e := usermerge.UserYAML(st, u, "homedir")
			if len(u.SSHAuthorizedKeys) > 0 {
				yamlnode.Pairs(e, "ssh_authorized_keys", usermerge.StrSeq(u.SSHAuthorizedKeys))
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
