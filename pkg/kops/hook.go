package kops

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// hooks reads spec.hooks.
func (r *reader) hooks(m *Manifest, k, v *yaml.Node) {
	switch {
	case yamlnode.IsNull(v):
		return // "hooks:" with nothing: no hooks, as kops reads it
	case v.Kind != yaml.SequenceNode:
		r.add(hooks.Error, r.pos(v), "spec.hooks", fmt.Sprintf("hooks must be a list of hooks, not %s", yamlnode.KindName(v)),
			`start each hook with "- name:", one indented line under hooks:`)
		return
	}
	names := map[string]*yaml.Node{}
	for i, c := range v.Content {
		if !r.spend(c) {
			return
		}
		path := fmt.Sprintf("spec.hooks[%d]", i)
		h := Hook{Path: path, File: r.file, m: m, nodes: map[string]*yaml.Node{"": c}}
		rc := yamlnode.Resolve(c)
		if rc.Kind != yaml.MappingNode {
			r.add(hooks.Error, r.pos(c), path, fmt.Sprintf("a hook must be a mapping of fields, not %s", yamlnode.KindName(rc)),
				`write a hook as "- name: my-hook" followed by its other fields`)
			m.Hooks = append(m.Hooks, h)
			continue
		}
		r.hook(m, &h, rc)
		if h.Name != "" {
			if first, dup := names[h.Name]; dup {
				r.add(hooks.Error, h.Where("name"), path+".name", fmt.Sprintf("there is already a hook named %q in this list (line %d)", h.Name, first.Line),
					"kops renders only the first hook of a name and skips the others silently: rename or merge them")
			} else {
				names[h.Name] = h.node("name")
			}
		}
		m.Hooks = append(m.Hooks, h)
	}
}

// hookFields are the fields of a hook in each API version, in kops's order.
var hookFields = map[string][]string{
	V1Alpha2: {"name", "disabled", "roles", "requires", "before", "execContainer", "manifest", "useRawManifest"},
	V1Alpha3: {"name", "enabled", "roles", "requires", "before", "execContainer", "manifest", "useRawManifest"},
}

var execFields = []string{"image", "command", "environment"}

func (r *reader) hook(m *Manifest, h *Hook, n *yaml.Node) {
	present := map[string]bool{}
	before := len(r.diags)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], yamlnode.Resolve(n.Content[i+1])
		if !r.spend(k) {
			return
		}
		if k.Kind != yaml.ScalarNode {
			r.add(hooks.Error, r.pos(k), h.Path, fmt.Sprintf("a key must be a name, not %s", yamlnode.KindName(k)), "write the key as a plain name")
			continue
		}
		name := k.Value
		path := h.Path + "." + name
		if present[name] {
			continue // reported by checkDuplicates; kops reads the last
		}
		present[name] = true
		at := n.Content[i+1]
		if yamlnode.IsNull(v) {
			at = k
		}
		h.nodes[name] = at
		switch name {
		case "name":
			h.Name, _ = r.str(v, k, path)
			if strings.Contains(h.Name, "/") || h.Name == "." || strings.Contains(h.Name, "..") {
				r.add(hooks.Error, r.pos(at), path, fmt.Sprintf("hook name %q looks like a path; kops would write the unit outside the unit directory", h.Name),
					"a hook name is a unit name, such as my-hook or my-hook.service")
			} else if h.Name == "" && yamlnode.IsString(v) {
				r.add(hooks.Error, r.pos(at), path, "the hook's name is empty",
					"remove the line to have kops name it kops-hook-<index>, or write a unit name")
			}
		case "disabled", "enabled":
			r.enablement(m, h, name, k, v, path)
		case "roles":
			h.Roles = r.roles(m, h, k, v, path)
		case "requires":
			h.Requires = r.strList(h, name, k, v, path)
		case "before":
			h.Before = r.strList(h, name, k, v, path)
		case "execContainer":
			h.ExecContainer = r.execContainer(h, k, v, path)
		case "manifest":
			h.Manifest, _ = r.str(v, k, path)
		case "useRawManifest":
			h.UseRawManifest, _ = r.boolean(v, k, path)
		default:
			r.unknownField(m, k, path, hookFields[m.APIVersion], "hook")
		}
	}
	// A hook whose fields had problems of their own is not also
	// reported for what they would have given it.
	r.checkHook(h, present, r.diags[before:].HasErrors(false))
}

// enablementHint is a hint in each way a manifest spells a hook's
// enablement: kops reads disabled: the wrong way round in a v1alpha2
// InstanceGroup, so there the hint differs from the Cluster's.
type enablementHint struct {
	none, v1alpha3, cluster, v1alpha2InstanceGroup string
}

// of is the hint in the field names of m's apiVersion and kind; none
// when there is no manifest.
func (h enablementHint) of(m *Manifest) string {
	switch {
	case m == nil:
		return h.none
	case m.APIVersion == V1Alpha3:
		return h.v1alpha3
	case m.Kind == KindCluster:
		return h.cluster
	}
	return h.v1alpha2InstanceGroup
}

// disableHint says how to disable a hook of m: in a v1alpha2
// InstanceGroup the way is another apiVersion or the Cluster.
func disableHint(m *Manifest) string {
	return enablementHint{
		none:     "disable the hook",
		v1alpha3: "write enabled: false (kops then stops and disables the unit)",
		cluster:  "write disabled: true (kops then stops and disables the unit)",
		v1alpha2InstanceGroup: "write the InstanceGroup as " + V1Alpha3 + " with enabled: false, or disable the hook in the Cluster spec (a " +
			V1Alpha2 + " InstanceGroup reads disabled: true as enabled)",
	}.of(m)
}

// enableHint says how to enable a hook of m.
func enableHint(m *Manifest) string {
	return enablementHint{
		none:                  "enable the hook",
		v1alpha3:              "write enabled: true",
		cluster:               "remove disabled: true",
		v1alpha2InstanceGroup: "remove disabled: false (a " + V1Alpha2 + " InstanceGroup reads disabled: false as disabled)",
	}.of(m)
}

// enablement reads disabled (v1alpha2) or enabled (v1alpha3). The other
// version's spelling is an error rather than accepted: kops decodes it
// into nothing, so a hook written "enabled: false" in a v1alpha2 manifest
// is enabled on every kops node, and hostprov must not read it otherwise.
func (r *reader) enablement(m *Manifest, h *Hook, name string, k, v *yaml.Node, path string) {
	want := "disabled"
	if m.APIVersion == V1Alpha3 {
		want = "enabled"
	}
	if name != want {
		r.add(hooks.Error, r.pos(k), path, fmt.Sprintf("%s is not a hook field in %s, and kops ignores it there: the hook stays enabled", name, m.APIVersion), disableHint(m))
		return
	}
	b, ok := r.boolean(v, k, path)
	if !ok {
		return
	}
	switch {
	case name == "enabled":
		h.Enabled = &b
	case m.Kind == KindCluster:
		e := !b
		h.Enabled = &e
	default:
		// kops's v1alpha2 conversion inverts disabled only for Cluster
		// hooks (Convert_v1alpha2_ClusterSpec_To_kops_ClusterSpec); an
		// InstanceGroup's is copied into Enabled as it is.
		h.Enabled = &b
		what := "runs the hook"
		if !b {
			what = "stops and disables the unit"
		}
		r.add(hooks.Warning, r.pos(k), path,
			fmt.Sprintf("disabled: %t in a v1alpha2 InstanceGroup means the opposite to kops: its conversion inverts disabled only for Cluster hooks, so kops %s; hostprov reads it as kops does", b, what),
			"write the InstanceGroup as "+V1Alpha3+" with enabled:, or put the hook in the Cluster spec with roles:")
	}
}

func (r *reader) roles(m *Manifest, h *Hook, k, v *yaml.Node, path string) []Role {
	if yamlnode.IsNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("roles must be a list, not %s", yamlnode.KindName(v)), "write roles: [Node, ControlPlane]")
		return nil
	}
	var out []Role
	for i, c := range v.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		h.nodes[fmt.Sprintf("roles[%d]", i)] = c
		rc := yamlnode.Resolve(c)
		if !yamlnode.IsString(rc) {
			r.add(hooks.Error, r.pos(c), p, fmt.Sprintf("a role must be a name, not %s", yamlnode.KindName(rc)), "write a role such as Node")
			continue
		}
		// A role kops does not know is kept as written, so that the
		// hook matches no machine, as in kops; it is reported.
		role, ok := r.roleName(m, rc, p)
		if !ok {
			role = Role(rc.Value)
		}
		out = append(out, role)
	}
	return out
}

func (r *reader) strList(h *Hook, field string, k, v *yaml.Node, path string) []string {
	if yamlnode.IsNull(v) {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		hint := fmt.Sprintf("write %s: [kubelet.service]", field)
		if v.Kind == yaml.ScalarNode {
			hint = fmt.Sprintf("write %s: [%s]", field, strconv.Quote(v.Value))
		}
		r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("%s must be a list of unit names, not %s", field, yamlnode.KindName(v)), hint)
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for i, c := range v.Content {
		if !r.spend(c) {
			break
		}
		rel := fmt.Sprintf("%s[%d]", strings.TrimPrefix(path, h.Path+"."), i)
		h.nodes[rel] = c
		s, ok := r.str(yamlnode.Resolve(c), c, fmt.Sprintf("%s[%d]", path, i))
		if ok {
			if strings.ContainsAny(s, "\n\r") {
				r.add(hooks.Error, r.pos(c), fmt.Sprintf("%s[%d]", path, i), "a unit name with a line break would inject lines into the unit", "write the name on one line")
			}
			out = append(out, s)
		}
	}
	return out
}

func (r *reader) execContainer(h *Hook, k, v *yaml.Node, path string) *ExecContainer {
	if yamlnode.IsNull(v) {
		r.add(hooks.Error, r.pos(k), path, "execContainer has no value", "give its image:, or remove the line")
		return nil
	}
	if v.Kind != yaml.MappingNode {
		r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("execContainer must be a mapping of image, command and environment, not %s", yamlnode.KindName(v)),
			"write execContainer: {image: busybox, command: [sh, -c, ...]}")
		return nil
	}
	ec := &ExecContainer{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		ek, ev := v.Content[i], yamlnode.Resolve(v.Content[i+1])
		if ek.Kind != yaml.ScalarNode || seen[ek.Value] {
			continue
		}
		seen[ek.Value] = true
		p := path + "." + ek.Value
		rel := "execContainer." + ek.Value
		if yamlnode.IsNull(ev) {
			h.nodes[rel] = ek
		} else {
			h.nodes[rel] = v.Content[i+1]
		}
		switch ek.Value {
		case "image":
			ec.Image, _ = r.str(ev, ek, p)
		case "command":
			if yamlnode.IsNull(ev) {
				continue
			}
			if ev.Kind != yaml.SequenceNode {
				hint := "write command: [sh, -c, \"...\"], one item per argument"
				if ev.Kind == yaml.ScalarNode {
					words := strings.Fields(ev.Value)
					for j, w := range words {
						words[j] = strconv.Quote(w)
					}
					hint = fmt.Sprintf("write command: [%s], one item per argument", strings.Join(words, ", "))
				}
				r.add(hooks.Error, r.pos(v.Content[i+1]), p, fmt.Sprintf("command must be a list of arguments, not %s", yamlnode.KindName(ev)), hint)
				continue
			}
			ec.Command = make([]string, 0, len(ev.Content))
			for j, c := range ev.Content {
				if !r.spend(c) {
					break
				}
				h.nodes[fmt.Sprintf("%s[%d]", rel, j)] = c
				s, _ := r.str(yamlnode.Resolve(c), c, fmt.Sprintf("%s[%d]", p, j))
				ec.Command = append(ec.Command, s)
			}
		case "environment":
			if yamlnode.IsNull(ev) {
				continue
			}
			if ev.Kind != yaml.MappingNode {
				r.add(hooks.Error, r.pos(v.Content[i+1]), p, fmt.Sprintf("environment must be a mapping of names to values, not %s", yamlnode.KindName(ev)),
					"write environment: {NAME: value}")
				continue
			}
			ec.Environment = map[string]string{}
			for j := 0; j+1 < len(ev.Content); j += 2 {
				nk, nv := ev.Content[j], yamlnode.Resolve(ev.Content[j+1])
				if !r.spend(nk) || nk.Kind != yaml.ScalarNode {
					continue
				}
				np := p + "." + nk.Value
				h.nodes[rel+"."+nk.Value] = ev.Content[j+1]
				if _, dup := ec.Environment[nk.Value]; dup {
					continue
				}
				s, ok := r.str(nv, nk, np)
				if ok {
					ec.Environment[nk.Value] = s
				}
			}
		default:
			r.unknownField(h.m, ek, p, execFields, "execContainer")
		}
	}
	return ec
}

// str decodes a string. Numbers and booleans are taken as written, as
// kops's JSON decoding of YAML does not (it refuses them), so they are an
// error with the quoted spelling as the hint.
func (r *reader) str(v, k *yaml.Node, path string) (string, bool) {
	switch {
	case yamlnode.IsNull(v):
		r.add(hooks.Error, r.pos(k), path, lastKey(path)+" has no value", `give it a value, write "" for an empty string, or remove the line`)
		return "", false
	case v.Kind != yaml.ScalarNode:
		r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("%s must be a string, not %s", lastKey(path), yamlnode.KindName(v)), "write a single value")
		return "", false
	case v.ShortTag() != "!!str":
		r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("%s must be a string, not %s; kops refuses it", lastKey(path), yamlnode.KindName(v)),
			fmt.Sprintf("quote it: %s", strconv.Quote(v.Value)))
		return v.Value, false
	}
	return v.Value, true
}

func (r *reader) boolean(v, k *yaml.Node, path string) (bool, bool) {
	name := lastKey(path)
	switch {
	case yamlnode.IsNull(v):
		r.add(hooks.Error, r.pos(k), path, name+" has no value", fmt.Sprintf("write %s: true or %s: false, or remove the line", name, name))
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool":
		return strings.EqualFold(v.Value, "true"), true
	case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!str":
		r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("%s must be true or false, not the string %q", name, v.Value), "use true or false, without quotes")
	default:
		r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("%s must be true or false, not %s", name, yamlnode.KindName(v)), "use true or false")
	}
	return false, false
}

func (r *reader) unknownField(m *Manifest, k *yaml.Node, path string, known []string, where string) {
	hint := fmt.Sprintf("the fields of a%s %s in %s are %s", map[bool]string{true: "n"}[where == "execContainer"], where, m.APIVersion, strings.Join(known, ", "))
	if s := suggest.Closest(k.Value, known); s != "" {
		hint = "did you mean " + s + "?"
	}
	r.add(hooks.Error, r.pos(k), path, fmt.Sprintf("unknown field %q in a%s %s; kops drops it without a word", k.Value, map[bool]string{true: "n"}[where == "execContainer"], where), hint)
}

// checkHook makes kops's validation of a hook (validateHookSpec) and the
// checks kops leaves out: what nodeup would skip or ignore silently.
func (r *reader) checkHook(h *Hook, present map[string]bool, bad bool) {
	at := func(f string) (hooks.Position, string) { return h.Where(f), h.Path + "." + f }
	if !h.IsEnabled() {
		// kops validates nothing of a disabled hook and renders none
		// of it: it stops and disables the unit of that name.
		for _, f := range []string{"manifest", "execContainer", "useRawManifest", "requires", "before"} {
			if present[f] {
				pos, p := at(f)
				r.add(hooks.Warning, pos, p, fmt.Sprintf("the hook is disabled, so kops ignores its %s: it only stops and disables the unit", f),
					"remove "+f+", or "+enableHint(h.m))
			}
		}
		return
	}
	if h.UseRawManifest {
		for _, f := range []string{"before", "requires", "execContainer"} {
			if present[f] {
				pos, p := at(f)
				r.add(hooks.Error, pos, p, fmt.Sprintf("%s may not be used with useRawManifest; kops refuses it, and a raw manifest is used as written", f),
					"write it into the manifest ([Unit] "+map[string]string{"before": "Before=", "requires": "Requires=", "execContainer": "and an ExecStart= running the container"}[f]+"), or drop useRawManifest")
			}
		}
		if h.Manifest == "" {
			pos, p := at("useRawManifest")
			r.add(hooks.Error, pos, p, "useRawManifest is set, but the hook has no manifest", "write the whole unit file under manifest: |, or drop useRawManifest")
		}
		return
	}
	switch {
	case h.ExecContainer == nil && h.Manifest == "" && !present["execContainer"] && !bad:
		r.add(hooks.Error, h.Where(""), h.Path, "the hook has neither a manifest nor an execContainer; kops refuses it",
			"give manifest: with the body of the [Service] section, or execContainer: with an image; or, to stop a unit of the image, "+disableHint(h.m))
	case h.ExecContainer != nil && h.Manifest != "":
		pos, p := at("manifest")
		r.add(hooks.Error, pos, p, "with execContainer, kops ignores the manifest without a word", "remove one of them")
	}
	if h.ExecContainer != nil && strings.TrimSpace(h.ExecContainer.Image) == "" && present["execContainer"] {
		pos, p := at("execContainer.image")
		r.add(hooks.Error, pos, p, "the execContainer has no image; kops skips such a hook", "give image:, such as image: busybox")
	}
}

func lastKey(path string) string {
	if strings.HasSuffix(path, "]") {
		path = hooks.ParentPath(path)
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}
