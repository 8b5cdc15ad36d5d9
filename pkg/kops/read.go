package kops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// API versions of the kops manifests Read takes. LegacyV1Alpha2 is the
// group kops used before kops.k8s.io; kops still rewrites it to V1Alpha2
// (pkg/kopscodecs), and so does Read.
const (
	V1Alpha2       = "kops.k8s.io/v1alpha2"
	V1Alpha3       = "kops.k8s.io/v1alpha3"
	LegacyV1Alpha2 = "kops/v1alpha2"
)

// Kinds of kops manifests that carry hooks.
const (
	KindCluster       = "Cluster"
	KindInstanceGroup = "InstanceGroup"
)

// Manifests are the kops Cluster and InstanceGroup manifests of one or more
// files, with their hooks.
type Manifests struct {
	// Cluster is the Cluster manifest; nil when the files hold none.
	Cluster *Manifest
	// InstanceGroups are the InstanceGroup manifests, in file order.
	InstanceGroups []*Manifest
}

// Manifest is one Cluster or InstanceGroup document.
type Manifest struct {
	Kind string
	// APIVersion is as written, except that LegacyV1Alpha2 is read as
	// V1Alpha2.
	APIVersion string
	// Name is metadata.name.
	Name string
	// Role is an InstanceGroup's spec.role in kops's current spelling
	// (v1alpha2's Master is ControlPlane); empty for a Cluster.
	Role Role
	// Hooks are spec.hooks; Hooks[i] is the entry written as
	// spec.hooks[i].
	Hooks []Hook
	// ContainerRuntime is a Cluster's spec.containerRuntime as written
	// ("docker" on clusters that kops set up before 1.28); empty when not
	// given, which kops reads as containerd.
	ContainerRuntime string

	// File is the file the manifest was read from.
	File string
	// Pos is where the document's mapping starts.
	Pos hooks.Position
	src []byte
}

// Hook is one entry of a manifest's spec.hooks, as kops's internal HookSpec
// holds it after conversion from the manifest's API version.
type Hook struct {
	// Name is as written; "" when the hook has none (kops then names it
	// kops-hook-<index>, see Manifests.Hooks).
	Name string
	// Enabled is kops's internal HookSpec.Enabled: v1alpha3's enabled,
	// and v1alpha2's disabled inverted for Cluster hooks. kops does not
	// invert disabled for v1alpha2 InstanceGroup hooks, and neither does
	// Read (it warns instead). Nil means enabled.
	Enabled *bool
	// Roles are the roles the hook is for, in kops's current spelling;
	// empty means every role.
	Roles          []Role
	Requires       []string
	Before         []string
	ExecContainer  *ExecContainer
	Manifest       string
	UseRawManifest bool

	// Path is the hook's path in its document ("spec.hooks[2]").
	Path string
	// File is the file the hook was read from.
	File string
	m    *Manifest
	// nodes are the value nodes of the hook's fields by path relative to
	// the hook ("" for the hook, "name", "execContainer.command[1]",
	// "execContainer.environment.K"); an empty value is its key.
	nodes map[string]*yaml.Node
}

// ExecContainer is a hook's execContainer: a container that nodeup runs
// with the host's root file system at /rootfs.
type ExecContainer struct {
	Image   string
	Command []string
	// Environment are variables passed to the container (--env K=V).
	Environment map[string]string
}

// IsEnabled reports whether kops renders and starts the hook (true) or
// stops and disables its unit (false).
func (h *Hook) IsEnabled() bool { return h.Enabled == nil || *h.Enabled }

// Where returns where the field at rel (a path relative to the hook, such
// as "manifest" or "execContainer.image") was written, or the hook's own
// position when it was not.
func (h *Hook) Where(rel string) hooks.Position {
	for {
		if n, ok := h.nodes[rel]; ok {
			return hooks.Position{File: h.File, Line: n.Line, Column: n.Column}
		}
		if rel == "" {
			return hooks.Position{File: h.File}
		}
		rel = parentPath(rel)
	}
}

// node returns the YAML node of the field at rel, or nil.
func (h *Hook) node(rel string) *yaml.Node { return h.nodes[rel] }

func parentPath(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// Read reads the kops manifests of one file: one or more YAML documents,
// each a kops.k8s.io/v1alpha2 or v1alpha3 Cluster or InstanceGroup.
// Documents of other kinds or API groups are skipped, and so are the fields
// of a manifest other than metadata.name, spec.role and spec.hooks: kops
// owns them. file names the source in positions.
//
// The hooks are read strictly, like a hostprov spec: an unknown field
// inside a hook (with "did you mean"), a wrong type, a hook field written at
// the spec level, the other version's spelling of enabled/disabled, an
// unknown role, and a duplicate key anywhere in the file (kops would keep
// only the last) are errors at their line and column. So are the hooks
// that kops's validation refuses, and those it would skip or misread
// without saying so; see the package documentation.
//
// It returns what it could read, so that callers can report every problem,
// and all diagnostics, sorted. Callers must not render when
// diags.HasErrors(strict).
func Read(file string, data []byte) (*Manifests, hooks.Diagnostics) {
	r := &reader{file: file, src: data, budget: len(data) + 100000}
	ms := r.read()
	r.diags.Sort()
	return ms, r.diags
}

// reader holds the state of one Read.
type reader struct {
	file  string
	src   []byte
	diags hooks.Diagnostics
	// budget bounds the values decoded, against alias bombs.
	budget int
}

func (r *reader) add(sev hooks.Severity, pos hooks.Position, path, msg, hint string) {
	r.diags = append(r.diags, hooks.Diagnostic{Severity: sev, Pos: pos, Path: path, Message: msg, Hint: hint})
}

func (r *reader) pos(n *yaml.Node) hooks.Position {
	return hooks.Position{File: r.file, Line: n.Line, Column: n.Column}
}

func (r *reader) read() *Manifests {
	ms := &Manifests{}
	dec := yaml.NewDecoder(bytes.NewReader(r.src))
	seen := 0
	for {
		var doc yaml.Node
		err := yamlnode.Decode(dec, &doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			r.yamlError(err)
			break
		}
		if len(doc.Content) != 1 || yamlnode.IsNull(doc.Content[0]) {
			continue // an empty document, such as after a final ---
		}
		seen++
		root := doc.Content[0]
		r.checkDuplicates(root, map[*yaml.Node]bool{})
		m := r.manifest(root)
		if m == nil {
			continue
		}
		switch m.Kind {
		case KindCluster:
			if ms.Cluster != nil {
				r.add(hooks.Error, m.Pos, "", "a second Cluster manifest",
					fmt.Sprintf("the first is at %s: kops has one Cluster per cluster; remove one of them", ms.Cluster.Pos))
				continue
			}
			ms.Cluster = m
		case KindInstanceGroup:
			ms.InstanceGroups = append(ms.InstanceGroups, m)
		}
	}
	if seen == 0 && len(r.diags) == 0 {
		r.add(hooks.Error, hooks.Position{File: r.file}, "", "the file has no YAML document",
			"give a kops Cluster or InstanceGroup manifest (apiVersion: kops.k8s.io/v1alpha2)")
	}
	return ms
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (r *reader) yamlError(err error) {
	if se, ok := yamlnode.Unreadable(err, r.src); ok {
		r.add(hooks.Error, hooks.Position{File: r.file, Line: se.Line, Column: se.Column}, "", "the file is not valid YAML: "+se.Message, se.Hint)
		return
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pos := hooks.Position{File: r.file}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else {
		pos.Line, pos.Column = r.badPlace(msg)
	}
	r.add(hooks.Error, pos, "", "the file is not valid YAML: "+msg, "fix the YAML syntax at this place")
}

// badPlace finds where a YAML error that yaml.v3 gives without a line
// is, when yamlnode.Unreadable did not place it: the alias for an unknown
// anchor, the first byte that is not text (invalid UTF-8 or a control
// character) for an encoding error of UTF-16 input, and the end of the
// file otherwise ("unexpected end of stream").
func (r *reader) badPlace(msg string) (line, col int) {
	at := len(r.src)
	if strings.HasPrefix(msg, "unknown anchor '") {
		name := strings.TrimSuffix(strings.TrimPrefix(msg, "unknown anchor '"), "' referenced")
		if i := bytes.Index(r.src, []byte("*"+name)); i >= 0 {
			at = i
		}
	} else {
		for i := 0; i < len(r.src); {
			c, size := utf8.DecodeRune(r.src[i:])
			if c == utf8.RuneError && size <= 1 || c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f || c == 0xfeff && i > 0 {
				at = i
				break
			}
			i += size
		}
	}
	before := r.src[:at]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}

// checkDuplicates reports every key given twice in a mapping of the
// document. kops's decoder keeps the last silently, so the first value is
// lost: kops's own docs have five hooks: keys in one mapping, of which kops
// would render only the last list. Aliases are not followed: what they
// name is checked where it is written.
func (r *reader) checkDuplicates(n *yaml.Node, done map[*yaml.Node]bool) {
	if n == nil || done[n] || !r.spend(n) {
		return
	}
	done[n] = true
	if n.Kind == yaml.MappingNode {
		last := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode {
				last[k.Value] = k
			}
		}
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			if f, dup := first[k.Value]; dup {
				l := last[k.Value]
				r.add(hooks.Error, r.pos(k), "", fmt.Sprintf("%s is given twice in this mapping (first on line %d)", k.Value, f.Line),
					fmt.Sprintf("kops keeps only the last %s (line %d) and silently drops the others: merge them into one", k.Value, l.Line))
				continue
			}
			first[k.Value] = k
		}
	}
	for _, c := range n.Content {
		if c.Kind != yaml.AliasNode {
			r.checkDuplicates(c, done)
		}
	}
}

// spend counts one value and reports whether decoding may go on; see the
// hostprov spec parser for why.
func (r *reader) spend(n *yaml.Node) bool {
	if r.budget--; r.budget >= 0 {
		return true
	}
	if r.budget == -1 {
		r.add(hooks.Error, r.pos(n), "", "the aliases in this file expand to far more values than it holds; reading stopped here",
			"use anchors and aliases for small shared values")
	}
	return false
}

// manifest reads one document; it returns nil for documents that are not
// kops Cluster or InstanceGroup manifests.
func (r *reader) manifest(root *yaml.Node) *Manifest {
	root = yamlnode.Resolve(root)
	if root.Kind != yaml.MappingNode {
		r.add(hooks.Error, r.pos(root), "", fmt.Sprintf("a kops manifest is a mapping with apiVersion, kind, metadata and spec, not %s", yamlnode.KindName(root)),
			"give a kops Cluster or InstanceGroup manifest, as kops get cluster -o yaml prints it")
		return nil
	}
	ak, av := yamlnode.Lookup(root, "apiVersion")
	kk, kv := yamlnode.Lookup(root, "kind")
	switch {
	case ak == nil || kk == nil:
		missing := "apiVersion"
		if ak != nil {
			missing = "kind"
		} else if kk == nil {
			missing = "apiVersion and kind"
		}
		r.add(hooks.Error, r.pos(root), "", "this document has no "+missing+", so it is not a kops manifest",
			"start it with apiVersion: kops.k8s.io/v1alpha2 and kind: Cluster (or InstanceGroup)")
		return nil
	case !yamlnode.IsString(av) || !yamlnode.IsString(kv):
		return nil // not a Kubernetes object hostprov knows
	}
	group, version, _ := strings.Cut(av.Value, "/")
	if group != "kops.k8s.io" && group != "kops" {
		return nil // another API group: not kops's
	}
	if kv.Value != KindCluster && kv.Value != KindInstanceGroup {
		return nil // SSHCredential, Keyset, ...: kops's, without hooks
	}
	apiVersion := av.Value
	switch {
	case apiVersion == LegacyV1Alpha2:
		apiVersion = V1Alpha2
	case apiVersion == V1Alpha2, apiVersion == V1Alpha3:
	default:
		r.add(hooks.Error, r.pos(av), "apiVersion", fmt.Sprintf("apiVersion %q is not one hostprov reads (%s or %s)", av.Value, V1Alpha2, V1Alpha3),
			fmt.Sprintf("write apiVersion: %s (kops %s has no hooks in version %s)", V1Alpha2, group, version))
		return nil
	}
	m := &Manifest{Kind: kv.Value, APIVersion: apiVersion, File: r.file, Pos: r.pos(root), src: r.src}
	if _, meta := yamlnode.Lookup(root, "metadata"); meta != nil {
		if _, name := yamlnode.Lookup(meta, "name"); yamlnode.IsString(name) {
			m.Name = name.Value
		}
	}
	_, spec := yamlnode.Lookup(root, "spec")
	if spec == nil || yamlnode.IsNull(spec) {
		if m.Kind == KindInstanceGroup {
			r.add(hooks.Error, r.pos(root), "spec.role", "the InstanceGroup has no spec, so no role",
				"give it spec.role: Node, ControlPlane, APIServer or Bastion")
		}
		return m
	}
	if spec.Kind != yaml.MappingNode {
		r.add(hooks.Error, r.pos(spec), "spec", fmt.Sprintf("spec must be a mapping, not %s", yamlnode.KindName(spec)), "")
		return m
	}
	if m.Kind == KindInstanceGroup {
		r.role(m, spec)
	}
	if _, rt := yamlnode.Lookup(spec, "containerRuntime"); yamlnode.IsString(rt) {
		m.ContainerRuntime = rt.Value
	}
	for i := 0; i+1 < len(spec.Content); i += 2 {
		k := spec.Content[i]
		if k.Kind == yaml.ScalarNode && misplaced[k.Value] {
			r.misplaced(m, spec, k)
		}
	}
	hk, hv := yamlnode.Lookup(spec, "hooks")
	if hk == nil {
		return m
	}
	r.hooks(m, hk, hv)
	return m
}

// misplaced are the hook fields that are no field of a Cluster or
// InstanceGroup spec. kops drops unknown fields, so one written at the
// spec level, one indentation too far left, silently changes a hook.
var misplaced = map[string]bool{
	"useRawManifest": true, "manifest": true, "execContainer": true, "before": true, "requires": true, "roles": true,
}

func (r *reader) misplaced(m *Manifest, spec, k *yaml.Node) {
	hint := "indent it under the hook it belongs to, lined up with that hook's name"
	if hk, hv := yamlnode.Lookup(spec, "hooks"); hk != nil && hv != nil && hv.Kind == yaml.SequenceNode && len(hv.Content) > 0 {
		last := yamlnode.Resolve(hv.Content[len(hv.Content)-1])
		for _, c := range hv.Content {
			if c.Line < k.Line {
				last = yamlnode.Resolve(c)
			}
		}
		if last.Kind == yaml.MappingNode && len(last.Content) > 0 {
			hint = fmt.Sprintf("indent it to column %d, under the hook that starts on line %d, if it belongs there", last.Content[0].Column, last.Line)
		}
	}
	extra := ""
	if k.Value == "useRawManifest" {
		extra = ", so no hook is raw: kops pastes the manifest under a [Service] header"
	}
	r.add(hooks.Error, r.pos(k), "spec."+k.Value,
		fmt.Sprintf("%s is a field of a hook, not of the %s spec; kops ignores it here%s", k.Value, m.Kind, extra), hint)
}

func (r *reader) role(m *Manifest, spec *yaml.Node) {
	k, v := yamlnode.Lookup(spec, "role")
	switch {
	case k == nil:
		r.add(hooks.Error, r.pos(spec), "spec.role", "the InstanceGroup has no spec.role",
			"give it role: Node, ControlPlane, APIServer or Bastion")
		return
	case !yamlnode.IsString(v):
		r.add(hooks.Error, r.pos(k), "spec.role", fmt.Sprintf("spec.role must be a role name, not %s", yamlnode.KindName(v)),
			"write role: Node, ControlPlane, APIServer or Bastion")
		return
	}
	role, ok := r.roleName(m, v, "spec.role")
	if ok {
		m.Role = role
	}
}

// roleName reads a role as m's API version spells it.
func (r *reader) roleName(m *Manifest, v *yaml.Node, path string) (Role, bool) {
	s := v.Value
	if s == "Master" {
		if m.APIVersion == V1Alpha2 {
			return ControlPlane, true
		}
		r.add(hooks.Error, r.pos(v), path, "Master is v1alpha2's name of the role; "+V1Alpha3+" calls it ControlPlane",
			"write ControlPlane")
		return "", false
	}
	for _, known := range Roles {
		if s == string(known) {
			return known, true
		}
	}
	names := roleNames(m.APIVersion)
	hint := "the roles are " + strings.Join(names, ", ")
	if sug := suggest.Closest(s, names); sug != "" {
		hint = "did you mean " + sug + "?"
	}
	r.add(hooks.Error, r.pos(v), path, fmt.Sprintf("%q is not a kops instance group role; kops compares roles exactly, so it would match no machine", s), hint)
	return "", false
}

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

// disableHint says how to disable a hook of m, in the field names of m's
// apiVersion and kind: kops reads disabled: the wrong way round in a
// v1alpha2 InstanceGroup, so there the way is another apiVersion or the
// Cluster.
func disableHint(m *Manifest) string {
	switch {
	case m == nil:
		return "disable the hook"
	case m.APIVersion == V1Alpha3:
		return "write enabled: false (kops then stops and disables the unit)"
	case m.Kind == KindCluster:
		return "write disabled: true (kops then stops and disables the unit)"
	}
	return "write the InstanceGroup as " + V1Alpha3 + " with enabled: false, or disable the hook in the Cluster spec (a " +
		V1Alpha2 + " InstanceGroup reads disabled: true as enabled)"
}

// enableHint says how to enable a hook of m, in the field names of m's
// apiVersion and kind (see disableHint).
func enableHint(m *Manifest) string {
	switch {
	case m == nil:
		return "enable the hook"
	case m.APIVersion == V1Alpha3:
		return "write enabled: true"
	case m.Kind == KindCluster:
		return "remove disabled: true"
	}
	return "remove disabled: false (a " + V1Alpha2 + " InstanceGroup reads disabled: false as disabled)"
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
		path = parentPath(path)
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}
