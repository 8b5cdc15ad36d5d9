package kops

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// Role is a kops instance group role, in kops's current spelling.
type Role string

// The roles of kops instance groups (pkg/apis/kops/instancegroup.go).
// v1alpha2 calls ControlPlane Master; Read and ParseRole take both there.
const (
	ControlPlane          Role = "ControlPlane"
	APIServer             Role = "APIServer"
	Node                  Role = "Node"
	Bastion               Role = "Bastion"
	Etcd                  Role = "Etcd"
	Scheduler             Role = "Scheduler"
	KubeControllerManager Role = "KubeControllerManager"
)

// allRoles lists every role, as kops's AllInstanceGroupRoles does.
var allRoles = []Role{ControlPlane, APIServer, Node, Bastion, Etcd, Scheduler, KubeControllerManager}

func roleNames(apiVersion string) []string {
	var out []string
	for _, r := range allRoles {
		out = append(out, string(r))
	}
	if apiVersion == V1Alpha2 {
		out = append(out, "Master")
	}
	return out
}

// ParseRole reads a role as a person gives it on a command line: a kops
// role name, with Master for ControlPlane as in v1alpha2. Case matters, as
// it does to kops.
func ParseRole(s string) (Role, error) {
	if s == "Master" {
		return ControlPlane, nil
	}
	for _, r := range allRoles {
		if s == string(r) {
			return r, nil
		}
	}
	names := roleNames(V1Alpha2)
	if sug := suggest.Closest(s, names); sug != "" {
		return "", fmt.Errorf("%q is not a kops instance group role; did you mean %s?", s, sug)
	}
	return "", fmt.Errorf("%q is not a kops instance group role; the roles are %s", s, strings.Join(names, ", "))
}

// Merge gathers the manifests of several files (a Cluster file and
// InstanceGroup files) into one set. A second Cluster is an error, and so
// is a second InstanceGroup of the same name.
func Merge(ms ...*Manifests) (*Manifests, hooks.Diagnostics) {
	out := &Manifests{}
	var diags hooks.Diagnostics
	byName := map[string]*Manifest{}
	for _, m := range ms {
		if m == nil {
			continue
		}
		if m.Cluster != nil {
			if out.Cluster != nil {
				diags = append(diags, hooks.Diagnostic{Pos: m.Cluster.Pos, Message: "a second Cluster manifest",
					Hint: fmt.Sprintf("the first is at %s: give one Cluster", out.Cluster.Pos)})
			} else {
				out.Cluster = m.Cluster
			}
		}
		for _, ig := range m.InstanceGroups {
			if first, dup := byName[ig.Name]; dup {
				diags = append(diags, hooks.Diagnostic{Pos: ig.Pos, Path: "metadata.name",
					Message: fmt.Sprintf("a second InstanceGroup named %q", ig.Name),
					Hint:    fmt.Sprintf("the first is at %s", first.Pos)})
				continue
			}
			byName[ig.Name] = ig
			out.InstanceGroups = append(out.InstanceGroups, ig)
		}
	}
	return out, diags
}

// NodeHook is a hook as kops nodeup renders it on one machine: with the
// name kops gives it.
type NodeHook struct {
	// Name is kops's name for the hook: the name as written, or
	// kops-hook-<index> for an unnamed cluster hook and
	// kops-hook-<index>-ig for an unnamed instance group hook, where
	// index counts the hooks of its list as written, before filtering by
	// role.
	Name string
	// InstanceGroup is true for a hook of the InstanceGroup manifest.
	InstanceGroup bool
	*Hook
}

// UnitName is the name of the hook's unit: Name, with ".service" appended
// unless it ends in a systemd unit type (kops's EnsureSystemdSuffix).
func (h NodeHook) UnitName() string { return ensureSystemdSuffix(h.Name) }

// unitSuffixes are kops's systemd.UnitExtensions.
var unitSuffixes = []string{".automount", ".device", ".mount", ".path", ".scope", ".service", ".slice", ".socket", ".swap", ".target", ".timer"}

func ensureSystemdSuffix(name string) string {
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s) {
			return name
		}
	}
	return name + ".service"
}

// Hooks returns the hooks kops nodeup renders on a machine of the given
// role in the given instance group, in nodeup's order, by kops's rules
// (pkg/apis/nodeup filterHooks, nodeup/pkg/model/hooks.go):
//
//   - a hook with roles is only for machines of one of those roles;
//   - the instance group's hooks come first, then the cluster's;
//   - unnamed hooks are kops-hook-<index>, and kops-hook-<index>-ig in the
//     instance group;
//   - of hooks with the same name, the first is rendered, so an instance
//     group hook overrides a cluster hook of its name.
//
// instanceGroup names the InstanceGroup by metadata.name; its spec.role is
// the role, and role must be empty or the same. With instanceGroup empty,
// the only InstanceGroup of the manifests is used when there is exactly
// one, or else the only one of the given role; with none (or several of
// the role, none with hooks of its own), only the cluster's hooks are
// rendered. role empty then means every role: no hook is left out for its
// roles.
//
// Hooks reports as errors an unknown or ambiguous instance group, a role
// that is not the instance group's, and two hooks whose units would have
// the same name (kops fails on them).
func (m *Manifests) Hooks(role Role, instanceGroup string) ([]NodeHook, hooks.Diagnostics) {
	var diags hooks.Diagnostics
	errorf := func(pos hooks.Position, path, hint, format string, args ...any) {
		diags = append(diags, hooks.Diagnostic{Pos: pos, Path: path, Message: fmt.Sprintf(format, args...), Hint: hint})
	}
	var ig *Manifest
	switch {
	case instanceGroup != "":
		for _, g := range m.InstanceGroups {
			if g.Name == instanceGroup {
				ig = g
			}
		}
		if ig == nil {
			errorf(hooks.Position{}, "", igHint(m), "there is no InstanceGroup named %q", instanceGroup)
			return nil, diags
		}
	case len(m.InstanceGroups) == 1:
		ig = m.InstanceGroups[0]
	case len(m.InstanceGroups) > 1 && role != "":
		// The role says which machine: the InstanceGroup of that role,
		// when there is one; none when no group has it (the cluster's
		// hooks alone), and none either when every group of the role
		// has no hooks, since each such machine gets the same hooks.
		var of []*Manifest
		withHooks := 0
		for _, g := range m.InstanceGroups {
			if g.Role == role {
				of = append(of, g)
				if len(g.Hooks) > 0 {
					withHooks++
				}
			}
		}
		switch {
		case len(of) == 1:
			ig = of[0]
		case withHooks > 0:
			var names []string
			for _, g := range of {
				names = append(names, g.Name)
			}
			sort.Strings(names)
			errorf(of[1].Pos, "", "give --instance-group: the instance groups of role "+string(role)+" are "+strings.Join(names, ", "),
				"the manifests hold %d InstanceGroups of role %s with hooks of their own; say which machine's hooks to render", len(of), role)
			return nil, diags
		}
	case len(m.InstanceGroups) > 1:
		errorf(m.InstanceGroups[1].Pos, "", igHint(m)+"; give --instance-group, or --role when the groups of that role have no hooks of their own",
			"the manifests hold %d InstanceGroups; say which machine's hooks to render", len(m.InstanceGroups))
		return nil, diags
	}
	if ig != nil {
		if role != "" && ig.Role != "" && role != ig.Role {
			errorf(ig.Pos, "spec.role", fmt.Sprintf("leave the role out: it is the instance group's, %s", ig.Role),
				"InstanceGroup %q has role %s, not %s", ig.Name, ig.Role, role)
			return nil, diags
		}
		role = ig.Role
	}

	var out []NodeHook
	names := map[string]bool{}
	units := map[string]NodeHook{}
	lists := []*Manifest{ig, m.Cluster}
	for i, src := range lists {
		if src == nil {
			continue
		}
		for j := range src.Hooks {
			h := &src.Hooks[j]
			if role != "" && len(h.Roles) > 0 && !containsRole(h.Roles, role) {
				continue
			}
			name := h.Name
			if name == "" {
				name = fmt.Sprintf("kops-hook-%d", j)
				if i == 0 {
					name += "-ig"
				}
			}
			if names[name] {
				continue // overridden (nodeup: "a similar service name")
			}
			names[name] = true
			nh := NodeHook{Name: name, InstanceGroup: i == 0, Hook: h}
			if prev, dup := units[nh.UnitName()]; dup {
				errorf(h.Where("name"), h.Path+".name", "give each hook its own unit name: kops fails on two tasks of one name",
					"hook %q renders the unit %s, and so does hook %q (%s)", name, nh.UnitName(), prev.Name, prev.Where("name"))
				continue
			}
			units[nh.UnitName()] = nh
			out = append(out, nh)
		}
	}
	return out, diags
}

func igHint(m *Manifests) string {
	var names []string
	for _, g := range m.InstanceGroups {
		names = append(names, g.Name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "the manifests hold no InstanceGroup"
	}
	return "the instance groups are " + strings.Join(names, ", ")
}

func containsRole(list []Role, r Role) bool {
	for _, x := range list {
		if x == r {
			return true
		}
	}
	return false
}
