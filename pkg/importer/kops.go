package importer

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
)

// importKops imports the hooks of a kops Cluster manifest and of one of
// its InstanceGroups in the same file (the only one, or the one
// in.InstanceGroup or in.Role chooses), as kops nodeup renders them on a
// machine of that group (kops.Manifests.Hooks): the instance group's
// hooks first, a hook of a name the group has already left out. Each
// becomes the hook hostprov renders to kops's own unit (kops.Spec): a raw
// manifest as written, a manifest hook with kops's description, requires
// and before, an execContainer hook as a oneshot service that runs the
// image with the cluster's container runtime. spec.fileAssets become files
// of the storage hook. Every other field of a spec, and a hook's roles
// (hostprov puts a spec on the machines it is given to), are warned about
// and kept out.
func importKops(in Input) (*Result, hooks.Diagnostics) {
	ms, diags := kops.Read(in.Name, in.Data)
	if diags.HasErrors(false) {
		return nil, diags
	}
	nhs, d := ms.Hooks(in.Role, in.InstanceGroup)
	diags = append(diags, d...)
	if diags.HasErrors(false) {
		return nil, diags
	}
	rt := kops.Containerd
	var manifests []*kops.Manifest
	if ms.Cluster != nil {
		manifests = append(manifests, ms.Cluster)
	}
	manifests = append(manifests, ms.InstanceGroups...)
	for _, m := range manifests {
		if m.ContainerRuntime == string(kops.Docker) {
			rt = kops.Docker
		}
	}
	// The hooks of the manifests that are not the machine's: for another
	// role, or of another InstanceGroup, or overridden by one of the
	// InstanceGroup's of the same name.
	chosen, names := map[*kops.Hook]bool{}, map[string]bool{}
	for _, h := range nhs {
		chosen[h.Hook] = true
		names[h.Name] = true
	}
	for _, m := range manifests {
		mine := m.Kind == kops.KindCluster
		for i := range m.Hooks {
			mine = mine || chosen[&m.Hooks[i]]
		}
		for i := range m.Hooks {
			h := &m.Hooks[i]
			if chosen[h] {
				continue
			}
			var what string
			hint := "import the manifests again with --instance-group (or --role) of the machines it is for"
			switch {
			case !mine:
				what = fmt.Sprintf("the hook %s is InstanceGroup %s's, not this machine's", hookName(h, i), m.Name)
			case len(h.Roles) > 0:
				what = fmt.Sprintf("the hook %s is for %s, not this machine", hookName(h, i), rolesText(h.Roles))
			case h.Name != "" && names[h.Name]:
				what = fmt.Sprintf("the hook %s is overridden by the InstanceGroup's hook of that name", h.Name)
				hint = "nothing to do: kops puts the InstanceGroup's hook on the machine too"
			default:
				what = fmt.Sprintf("the hook %s is not for this machine", hookName(h, i))
			}
			diags = append(diags, warn(h.Where(""), h.Path, "kept out: "+what, hint))
		}
	}
	for _, h := range nhs {
		// With an InstanceGroup (or a role) the hooks are those of its
		// machines already; without, every hook is imported, whatever
		// its roles.
		if len(h.Roles) > 0 && in.Role == "" && len(ms.InstanceGroups) == 0 {
			diags = append(diags, warn(h.Where("roles"), h.Path+".roles",
				"kept out: the roles of the hook "+h.Name+"; a hostprov spec goes to every machine it is given to",
				"give the spec only to machines of those roles, or split it into a spec per role"))
		}
	}
	spec, _, d := kops.Spec(nhs, rt)
	diags = append(diags, d...)
	if diags.HasErrors(false) {
		return nil, diags
	}
	// The role of the machine, when the manifests say: what file assets
	// with roles are chosen by.
	role, group := in.Role, ""
	for _, m := range ms.InstanceGroups {
		if m.Name == in.InstanceGroup || len(ms.InstanceGroups) == 1 || in.InstanceGroup == "" && in.Role != "" && m.Role == in.Role {
			group = m.Name
			if role == "" {
				role = m.Role
			}
		}
	}
	k := &kopsImporter{file: in.Name, role: role, group: group, locals: newLocalFiles(in)}
	k.docs(in.Data)
	diags = append(diags, k.diags...)
	if diags.HasErrors(false) {
		return nil, diags
	}
	res := &Result{Format: FormatKops, Hooks: spec.Hooks, origins: make([]hookOrigins, len(spec.Hooks)), Locals: k.locals.files}
	if k.h.HasStorage() {
		k.h.Name = storageHookName(in.setName, res.Hooks)
		res.Hooks = append([]hooks.Hook{k.h}, res.Hooks...)
		res.origins = append([]hookOrigins{k.origins}, res.origins...)
	}
	return res, diags
}

type kopsImporter struct {
	file string
	// locals are the contents that go beside the spec.
	locals *localFiles
	// role and group are the machine's role and InstanceGroup, when the
	// manifests say.
	role    kops.Role
	group   string
	diags   hooks.Diagnostics
	h       hooks.Hook
	origins hookOrigins
}

func (k *kopsImporter) pos(n *yaml.Node) hooks.Position {
	return hooks.Position{File: k.file, Line: n.Line, Column: n.Column}
}

// docs warns about every field of a Cluster or InstanceGroup spec besides
// hooks and fileAssets, and imports the file assets.
func (k *kopsImporter) docs(data []byte) {
	for doc, err := range yamlnode.Documents(data) {
		if err != nil {
			return // kops.Read has reported what does not read
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		kind := mapValue(root, "kind")
		if kind == nil || (kind.Value != kops.KindCluster && kind.Value != kops.KindInstanceGroup) {
			continue
		}
		spec := mapValue(root, "spec")
		if spec == nil || spec.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(spec.Content); i += 2 {
			key, v := spec.Content[i], spec.Content[i+1]
			switch key.Value {
			case "hooks":
			case "fileAssets":
				if name := mapValue(mapValue(root, "metadata"), "name"); kind.Value == kops.KindInstanceGroup && (name == nil || name.Value != k.group) {
					for i, item := range v.Content {
						k.diags = append(k.diags, warn(k.pos(item), fmt.Sprintf("spec.fileAssets[%d]", i),
							"kept out: the file asset is another InstanceGroup's, not this machine's",
							"import the manifests again with --instance-group of the machines it is for"))
					}
					continue
				}
				k.fileAssets(v)
			case "role", "containerRuntime":
				// What kops.Read reads to select and render the hooks.
			default:
				k.diags = append(k.diags, warn(k.pos(key), "spec."+key.Value,
					"kept out: spec."+key.Value+" of the "+kind.Value+" is kops's business, not a hook's",
					"keep it in your kops manifest; hostprov's kops set-hooks changes only spec.hooks"))
			}
		}
	}
}

func (k *kopsImporter) fileAssets(v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		return
	}
	for i, item := range v.Content {
		p := fmt.Sprintf("spec.fileAssets[%d]", i)
		if item.Kind != yaml.MappingNode {
			k.diags = append(k.diags, hooks.Diagnostic{Severity: hooks.Error, Pos: k.pos(item), Path: p,
				Message: "a fileAssets entry must be a mapping, not " + yamlnode.KindName(item), Hint: "write it as {name: ..., path: ..., content: ...}"})
			continue
		}
		var f hooks.File
		var content string
		var isBase64, hasContent bool
		var notMine string
		for j := 0; j+1 < len(item.Content); j += 2 {
			key, val := item.Content[j], item.Content[j+1]
			switch key.Value {
			case "name":
			case "path":
				f.Path = val.Value
			case "content":
				content, hasContent = val.Value, true
			case "isBase64":
				isBase64 = val.Value == "true"
			case "roles":
				var roles []kops.Role
				for _, r := range val.Content {
					if role, err := kops.ParseRole(r.Value); err == nil {
						roles = append(roles, role)
					}
				}
				switch {
				case k.role == "":
					k.diags = append(k.diags, warn(k.pos(key), p+".roles",
						"kept out: the roles of the file asset; a hostprov spec goes to every machine it is given to",
						"give the spec only to machines of those roles, or split it into a spec per role"))
				case !slices.Contains(roles, k.role):
					notMine = fmt.Sprintf("kept out: the file asset is for %s, not this machine (%s)", rolesText(roles), k.role)
				}
			default:
				k.diags = append(k.diags, warn(k.pos(key), p+"."+key.Value,
					"kept out: "+key.Value+" of a file asset has no hostprov equivalent",
					"the fields of a hostprov file are path, contents, local, source, verification, mode, user, group and overwrite"))
			}
		}
		if notMine != "" {
			k.diags = append(k.diags, warn(k.pos(item), p, notMine,
				"import the manifests again with --instance-group (or --role) of the machines it is for"))
			continue
		}
		if f.Path == "" || !hasContent {
			k.diags = append(k.diags, warn(k.pos(item), p, "kept out: a file asset without path or content",
				"give the file asset its path and content"))
			continue
		}
		data := []byte(content)
		if isBase64 {
			b, err := base64.StdEncoding.DecodeString(content)
			if err != nil {
				k.diags = append(k.diags, hooks.Diagnostic{Severity: hooks.Error, Pos: k.pos(item), Path: p + ".content",
					Message: "the content is not base64: " + err.Error(), Hint: "fix the content, or set isBase64: false"})
				continue
			}
			data = b
		}
		if !utf8.Valid(data) {
			name := k.locals.add(f.Path, data)
			if name == "" {
				k.diags = append(k.diags, warn(k.pos(item), p, "kept out: "+f.Path+": the contents are not UTF-8 text, which a hook spec's contents: cannot carry, and the spec goes to no directory for a local: file to be beside it",
					"import with -o FILE: such contents go beside it as local: files"))
				continue
			}
			f.Local = name
		} else {
			s := string(data)
			f.Contents = &s
		}
		k.h.Files = append(k.h.Files, f)
		k.origins.files = append(k.origins.files, origin{pos: k.pos(item), path: p})
	}
}

func hookName(h *kops.Hook, i int) string {
	if h.Name != "" {
		return h.Name
	}
	return fmt.Sprintf("#%d (unnamed)", i)
}

func rolesText(rs []kops.Role) string {
	var names []string
	for _, r := range rs {
		names = append(names, string(r))
	}
	if len(names) == 1 {
		return "role " + names[0]
	}
	return "roles " + strings.Join(names, ", ")
}
