package cloudinit

import (
	"bytes"
	"fmt"
	"path"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// Merge returns own, hostprov's cloud-config of the units
// (and whatever else the spec puts there), without MIME, with the user's
// cloud-configs merged into it, in order, by the rule cloud-init's
// merge_how writes "list(append)+dict(no_replace,recurse_list)+str()":
// mappings merged key by key and recursively, lists appended (hostprov's
// items first, then the file's), and a value both set to something else
// a clash (cloud-init's no_replace would keep hostprov's silently;
// hostprov says so instead). The file's keys stay as written (comments
// and styles kept, as yaml.v3 reads them), write_files and runcmd after
// hostprov's. A write_files entry for a path hostprov writes is a clash
// unless it is the same entry; a user hostprov makes too is one entry
// (see mergeCloudInitAccounts); a clash is an error at both places. The
// output is nil when there is an error.
//
// A write_files path of own that no unit writes is a clash at hostprov's
// spec as a whole.
func Merge(own []byte, us []compile.Unit, opts Options, files []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(own, &root); err != nil {
		return nil, nil, fmt.Errorf("hostprov's own cloud-config: %v", err)
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	if len(root.Content) > 0 && root.Content[0].Kind == yaml.MappingNode {
		doc = root.Content[0]
		for _, n := range []*yaml.Node{&root, doc, firstKey(doc)} {
			if n != nil {
				n.HeadComment = stripHeader(n.HeadComment)
			}
		}
	}
	byPath := writeOrigins(doc, us, opts.Storage)
	var diags hooks.Diagnostics
	for _, f := range files {
		pos := func(n *yaml.Node) hooks.Position { return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column} }
		if !bytes.HasPrefix(f.Data, []byte("#cloud-config")) {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: f.Name, Line: 1, Column: 1},
				Message: "not a cloud-config: its first line is not #cloud-config",
				Hint:    "start the file with the line #cloud-config (a MIME message or a script cannot be merged)"})
			continue
		}
		var root yaml.Node
		if err := yaml.Unmarshal(f.Data, &root); err != nil {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: usermerge.YAMLErrPos(f.Name, err),
				Message: "not valid YAML: " + err.Error(), Hint: "check the file with cloud-init schema -c FILE"})
			continue
		}
		if len(root.Content) == 0 {
			continue // only the header: nothing to merge
		}
		user := root.Content[0]
		// The header line is a comment to YAML: it goes with whichever
		// node yaml.v3 hangs the first comments on, and hostprov's own
		// header is written already.
		for _, n := range []*yaml.Node{&root, user, firstKey(user)} {
			if n != nil {
				n.HeadComment = stripHeader(n.HeadComment)
			}
		}
		if user.Kind != yaml.MappingNode {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos(user),
				Message: "a cloud-config is a mapping of module keys", Hint: "write keys such as write_files:, users:, packages:"})
			continue
		}
		diags = append(diags, dropOwnWriteFiles(doc, user, byPath, f)...)
		diags = append(diags, mergeCloudInitAccounts(doc, user, f, opts.Storage, us)...)
		diags = append(diags, usermerge.MergeYAML(doc, user, f.Name, "")...)
	}
	diags.Sort()
	if diags.HasErrors(false) {
		return nil, diags, nil
	}
	out, err := encodeCloudConfig(doc, opts)
	return out, diags, err
}

// writeOrigin is where a file hostprov writes comes from: a unit (or
// drop-in) of a hook, or a hook's files: (place says where the spec has
// it, when known).
type writeOrigin struct {
	unit  *compile.Unit
	place string
}

// writeOrigins are the origins of the files of doc's write_files and of
// the units, by path.
func writeOrigins(doc *yaml.Node, us []compile.Unit, st compile.Storage) map[string]writeOrigin {
	byPath := map[string]writeOrigin{}
	if wf := usermerge.YAMLAt(doc, "write_files"); wf != nil {
		for _, item := range wf.Content {
			if p := usermerge.YAMLAt(item, "path"); p != nil {
				byPath[p.Value] = writeOrigin{place: usermerge.StoragePlace(st, us, p.Value)}
			}
		}
	}
	for i, u := range us {
		if u.Contents != nil && !u.Mask {
			byPath[unitDir+"/"+u.Name] = writeOrigin{unit: &us[i]}
		}
		for _, d := range u.Dropins {
			byPath[unitDir+"/"+u.Name+".d/"+d.Name] = writeOrigin{unit: &us[i]}
		}
	}
	return byPath
}

// dropOwnWriteFiles takes the write_files entries of user for paths
// hostprov writes out of it: identical ones are dropped, others are
// clashes, an error each.
func dropOwnWriteFiles(doc, user *yaml.Node, byPath map[string]writeOrigin, f render.MergeFile) hooks.Diagnostics {
	pos := func(n *yaml.Node) hooks.Position { return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column} }
	var diags hooks.Diagnostics
	if wf := usermerge.YAMLAt(user, "write_files"); wf != nil && wf.Kind == yaml.SequenceNode {
		kept := wf.Content[:0:0]
		for _, item := range wf.Content {
			p := usermerge.YAMLAt(item, "path")
			if p == nil || p.Kind != yaml.ScalarNode {
				kept = append(kept, item)
				continue
			}
			o, ours := byPath[p.Value]
			if !ours {
				kept = append(kept, item)
				continue
			}
			if usermerge.SameYAML(item, ownWriteFile(doc, p.Value)) {
				continue
			}
			if u := o.unit; u != nil {
				// The unit file itself, or one of its drop-ins:
				// the hint says which, and what the user can do.
				hint := "the unit file belongs to the spec: add a drop-in through the hook, or drop the entry from your cloud-config"
				if p.Value != unitDir+"/"+u.Name {
					hint = "this drop-in belongs to the spec's hook: change it there, or give yours another name in " + path.Dir(p.Value) + ", or drop the entry from your cloud-config"
				}
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos(p), Path: "write_files.path",
					Message: fmt.Sprintf("%s is written by hostprov too, for %s at %s (hooks[%d], %s), with other contents or mode", p.Value, u.Name, u.Pos, u.Hook, u.HookName),
					Hint:    hint})
				continue
			}
			by := "hostprov's spec,"
			if o.place != "" {
				by = "hostprov's spec too, at " + o.place + ","
			}
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos(p), Path: "write_files.path",
				Message: fmt.Sprintf("%s is written by %s with other contents or mode", p.Value, by),
				Hint:    "keep the file in one place: drop the entry from your cloud-config or the file from the spec, or make both the same"})
		}
		wf.Content = kept
	}
	return diags
}

// ownWriteFile is hostprov's write_files entry for path.
func ownWriteFile(doc *yaml.Node, path string) *yaml.Node {
	wf := usermerge.YAMLAt(doc, "write_files")
	if wf == nil {
		return nil
	}
	for _, item := range wf.Content {
		if p := usermerge.YAMLAt(item, "path"); p != nil && p.Value == path {
			return item
		}
	}
	return nil
}

func firstKey(n *yaml.Node) *yaml.Node {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		return nil
	}
	return n.Content[0]
}

// stripHeader drops a leading #cloud-config line from a comment.
func stripHeader(c string) string {
	if rest, ok := strings.CutPrefix(c, "#cloud-config"); ok && (rest == "" || rest[0] == '\n') {
		return strings.TrimLeft(rest, "\n")
	}
	return c
}
