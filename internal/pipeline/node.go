package pipeline

import (
	"fmt"
	"strings"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// runAsWarnings warns about each hook's user: and group: that no spec
// creates (st holds the accounts of all) and the node lacks: systemd would
// refuse to start the unit (status 217/USER or 216/GROUP). It is a warning,
// not an error, and only when the node is known: the image of a node may
// make the account, and a render cannot know the machine it is for.
func runAsWarnings(specs []*hooks.Spec, st compile.Storage, node apply.Options) (hooks.Diagnostics, error) {
	var has func(apply.AccountKind, string) bool // the node's accounts, read once a hook names one
	created := map[string]bool{}
	for _, u := range st.Users {
		created["user "+u.Name], created["group "+u.Name] = true, true
	}
	for _, g := range st.Groups {
		created["group "+g.Name] = true
	}
	var diags hooks.Diagnostics
	for _, spec := range specs {
		for i, h := range spec.Hooks {
			for _, x := range []struct {
				kind apply.AccountKind
				name string
				key  string
			}{{apply.KindUser, h.User, "user"}, {apply.KindGroup, h.Group, "group"}} {
				if x.name == "" || strings.ContainsAny(x.name, "%$") || allDigits(x.name) || created[string(x.kind)+" "+x.name] {
					continue
				}
				if has == nil {
					var err error
					if has, err = apply.NodeHas(node); err != nil {
						return nil, err
					}
				}
				if has(x.kind, x.name) {
					continue
				}
				path := fmt.Sprintf("hooks[%d].%s", i, x.key)
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Warning, Pos: spec.Where(path), Path: path,
					Message: fmt.Sprintf("%s %s is not on this node, and no spec creates it: systemd will not start the unit", x.kind, x.name),
					Hint:    fmt.Sprintf("add it to the hook: %ss: [{name: %s}], or create it on the node first", x.kind, x.name)})
			}
		}
	}
	return diags, nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
