package importer

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
)

// importKops imports the hooks of a kops Cluster manifest and of at most
// one InstanceGroup in the same file, as kops nodeup renders them on a
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
	nhs, d := ms.Hooks("", "")
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
	for _, h := range nhs {
		if len(h.Roles) > 0 {
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
	k := &kopsImporter{file: in.Name}
	k.docs(in.Data)
	diags = append(diags, k.diags...)
	if diags.HasErrors(false) {
		return nil, diags
	}
	res := &Result{Format: FormatKops, Hooks: spec.Hooks, origins: make([]hookOrigins, len(spec.Hooks))}
	if k.h.HasStorage() {
		k.h.Name = StorageHook(in.setName, res.Hooks)
		res.Hooks = append([]hooks.Hook{k.h}, res.Hooks...)
		res.origins = append([]hookOrigins{k.origins}, res.origins...)
	}
	return res, diags
}

type kopsImporter struct {
	file    string
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
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := yamlnode.Decode(dec, &doc); err != nil {
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
				k.diags = append(k.diags, warn(k.pos(key), p+".roles",
					"kept out: the roles of the file asset; a hostprov spec goes to every machine it is given to",
					"give the spec only to machines of those roles, or split it into a spec per role"))
			default:
				k.diags = append(k.diags, warn(k.pos(key), p+"."+key.Value,
					"kept out: "+key.Value+" of a file asset has no hostprov equivalent",
					"the fields of a hostprov file are path, contents, local, source, verification, mode, user, group and overwrite"))
			}
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
			k.diags = append(k.diags, warn(k.pos(item), p, "kept out: "+f.Path+": the contents are not UTF-8 text, which a hook spec's contents: cannot carry",
				"put the file next to the spec and name it with local:"))
			continue
		}
		s := string(data)
		f.Contents = &s
		k.h.Files = append(k.h.Files, f)
		k.origins.files = append(k.origins.files, origin{pos: k.pos(item), path: p})
	}
}
