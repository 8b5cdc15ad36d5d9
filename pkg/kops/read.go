package kops

import (
	"bytes"
	"fmt"
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
		rel = hooks.ParentPath(rel)
	}
}

// node returns the YAML node of the field at rel, or nil.
func (h *Hook) node(rel string) *yaml.Node { return h.nodes[rel] }

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
	seen := 0
	for doc, err := range yamlnode.Documents(r.src) {
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
	for _, known := range allRoles {
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
