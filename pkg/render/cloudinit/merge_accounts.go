package cloudinit

import (
	"fmt"
	"github.com/hostprov/hostprov/pkg/render"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// mergeCloudInitAccounts takes out of the user's cloud-config (user) the
// accounts that the cloud-config merged so far (doc) has, so that
// cloud-init gets each once: default, which hostprov's users: starts
// with; a user both make, which becomes one entry in doc's place with the
// fields of both (a field both set to other values is a clash); and a
// group both make (cloud-init's groups: give a group no id, so the same
// name is the same group). A group the user lists with members is kept:
// cloud-init adds the members to a group that exists. A list emptied so is
// dropped.
func mergeCloudInitAccounts(doc, user *yaml.Node, f render.MergeFile, st compile.Storage, us []compile.Unit) hooks.Diagnostics {
	var diags hooks.Diagnostics
	if own, theirs := usermerge.YAMLAt(doc, "users"), usermerge.YAMLAt(user, "users"); own != nil && theirs != nil &&
		own.Kind == yaml.SequenceNode && theirs.Kind == yaml.SequenceNode && len(theirs.Content) > 0 {
		kept := theirs.Content[:0:0]
		for i, item := range theirs.Content {
			name := item
			if item.Kind == yaml.MappingNode {
				name = usermerge.YAMLAt(item, "name")
			}
			if name == nil || name.Kind != yaml.ScalarNode {
				kept = append(kept, item)
				continue
			}
			j := slices.IndexFunc(own.Content, func(o *yaml.Node) bool {
				if o.Kind == yaml.ScalarNode {
					return item.Kind == yaml.ScalarNode && o.Value == name.Value
				}
				n := usermerge.YAMLAt(o, "name")
				return n != nil && n.Value == name.Value
			})
			if j < 0 {
				kept = append(kept, item)
				continue
			}
			if item.Kind != yaml.MappingNode || own.Content[j].Kind != yaml.MappingNode {
				continue // default, or a user named only: nothing to add
			}
			var fields []string
			for k := 0; k+1 < len(item.Content); k += 2 {
				if o := usermerge.YAMLAt(own.Content[j], item.Content[k].Value); o != nil && !usermerge.SameYAML(o, item.Content[k+1]) {
					fields = append(fields, item.Content[k].Value)
				}
			}
			if len(fields) > 0 {
				sort.Strings(fields)
				diags = append(diags, usermerge.AccountClash(hooks.Position{File: f.Name, Line: item.Line, Column: item.Column}, fmt.Sprintf("users[%d]", i),
					"user", name.Value, usermerge.AccountPlace(st, us, "user", name.Value), "hostprov's output (or an earlier --merge file)", fields))
				continue
			}
			own.Content[j] = usermerge.MergeYAMLEntry(own.Content[j], item)
		}
		dropEmptied(user, "users", theirs, kept)
	}
	if theirs := usermerge.YAMLAt(user, "groups"); theirs != nil && theirs.Kind == yaml.SequenceNode && len(theirs.Content) > 0 {
		has := map[string]bool{}
		for _, g := range st.Groups {
			has[g.Name] = true
		}
		if own := usermerge.YAMLAt(doc, "groups"); own != nil && own.Kind == yaml.SequenceNode {
			for _, o := range own.Content {
				if o.Kind == yaml.ScalarNode {
					has[o.Value] = true
				}
			}
		}
		kept := theirs.Content[:0:0]
		for _, item := range theirs.Content {
			if item.Kind != yaml.ScalarNode || !has[item.Value] {
				kept = append(kept, item)
			}
		}
		dropEmptied(user, "groups", theirs, kept)
	}
	return diags
}

// dropEmptied sets the list of key in the mapping m to kept, and drops
// the key when kept is empty.
func dropEmptied(m *yaml.Node, key string, list *yaml.Node, kept []*yaml.Node) {
	list.Content = kept
	if len(kept) > 0 {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}
