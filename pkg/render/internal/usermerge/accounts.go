package usermerge

import (
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
)

// UserYAML is a user of st as Butane's passwd and cloud-init's users
// write it: the same keys but the home directory's, which is home_dir in
// Butane and homedir in cloud-init.
func UserYAML(st compile.Storage, u compile.User, homeKey string) *yaml.Node {
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

// StrSeq is a YAML list of strings, one per item, in order.
func StrSeq(ss []string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range ss {
		seq.Content = append(seq.Content, yamlnode.Str(s))
	}
	return seq
}
