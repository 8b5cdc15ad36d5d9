package butane

import (
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// passwdYAML is passwd: of the Butane output; nil when there is
// nothing. Butane translates it to the Ignition output's passwd.
func passwdYAML(st compile.Storage) *yaml.Node {
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
