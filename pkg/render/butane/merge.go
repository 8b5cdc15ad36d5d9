package butane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	butaneconfig "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"github.com/coreos/go-semver/semver"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/ignconfig"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
	"github.com/hostprov/hostprov/pkg/render/internal/yamlwrite"
)

// Merge returns own, hostprov's Butane config of the units
// (and whatever else the spec puts there) for opts, with the user's
// Butane configs merged into it, in order. The rule:
//
//   - a file is a Butane config of the output's variant, at the output's
//     version or an older one of that variant; the merged config has the
//     output's version (Butane's versions of a variant only add fields).
//     An Ignition config is refused: Butane embeds one with
//     ignition.config.merge instead.
//   - the file's keys are kept as written (styles and comments as yaml.v3
//     reads them), after hostprov's; variant and version are hostprov's.
//   - a unit in systemd.units that the spec makes too is one entry, in
//     hostprov's place: the file's entry as written, with the fields only
//     hostprov sets (contents, enabled, mask) added, and hostprov's
//     drop-ins the file does not name added before the file's own new
//     ones. A unit or drop-in that both make differently is an error at
//     both places (ignconfig.CheckUnitClashes, the rule of ignition.Merge).
//   - a file, directory or link at a path hostprov writes too must be the
//     same entry (ignconfig.CheckStorageClashes, the rule of ignition.Merge), and is
//     then written once; so must one at a path of an earlier file, and a
//     tree's may be at no such path (checkMergedStorage).
//   - the merged config reads its local: files from one directory, the
//     spec's when the spec has local: files, else that of the first file
//     that has: a file with local: files elsewhere is refused. A user or group hostprov makes too is one entry,
//     in hostprov's place: the file's entry as written with the fields
//     only hostprov sets added; a field both set to other values is an
//     error at both places (ignconfig.CheckAccountClashes).
//   - other units are added after hostprov's, and any other key hostprov
//     writes too is merged as cloud-config keys are (mappings key by key,
//     lists appended, a different value an error).
//
// Butane then translates the merged config to the same Ignition config as
// ignition.Merge makes of the same units and files translated by Butane.
// The merged config is translated with Butane as a check, from that
// directory; its errors are reported. The output is
// nil when there is an error.
func Merge(own []byte, us []compile.Unit, opts Options, files []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
	opts, err := opts.Resolve()
	if err != nil {
		return nil, nil, err
	}
	var root yaml.Node
	if err := yaml.Unmarshal(own, &root); err != nil {
		return nil, nil, err
	}
	doc := root.Content[0]
	ownIgn, err := ownIgnitionStorage(opts.Storage, opts.IgnitionVersion)
	if err != nil {
		return nil, nil, err
	}
	seen, err := ownStorageSources(ownIgn)
	if err != nil {
		return nil, nil, err
	}
	// The merged config is translated with one --files-dir: the spec's
	// directory when the spec has local: files (hostprov's output names
	// them from there), else the directory of the first file that has.
	filesDir, err := specFilesDir(opts.Storage)
	if err != nil {
		return nil, nil, err
	}
	dirOf := "the spec's directory, which its own local: files are read from"
	var diags hooks.Diagnostics
	for _, f := range files {
		froot, user, bad := configOfFile(f, opts)
		if bad != nil {
			diags = append(diags, *bad)
			continue
		}
		cfg, d := ignconfig.UserConfig(f, opts.IgnitionVersion, "--format butane")
		diags = append(diags, d...)
		if cfg == nil {
			continue
		}
		// Checked as ignition.Merge checks them, in the Ignition config
		// both translate to, so that a clash is at the user's entry
		// rather than at Butane's duplicate in the merged output.
		clashes, err := ignconfig.CheckClashes(ownIgn, cfg, f, opts.Storage, us)
		if err != nil {
			return nil, nil, err
		}
		d, err = checkMergedStorage(seen, cfg, f, opts.Storage, us)
		if err != nil {
			return nil, nil, err
		}
		clashes = append(clashes, d...)
		if k, v := firstLocalKey(user); k != nil {
			dir, err := filepath.Abs(f.Dir)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case filesDir == "":
				filesDir, dirOf = dir, "the directory of "+f.Name+", whose local: files come first"
			case dir != filesDir:
				clashes = append(clashes, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: f.Name, Line: k.Line, Column: k.Column}, Path: k.Value,
					Message: fmt.Sprintf("%s is read from %s, the directory of this config, but the merged Butane config reads every local: file from one directory, %s (%s)", v, dir, filesDir, dirOf),
					Hint:    "put this config and its local files in " + filesDir + ", write the contents inline, or render --format ignition --merge, which reads each config's local: files from its own directory"})
			}
		}
		diags = append(diags, clashes...)
		if len(clashes) > 0 {
			continue
		}
		liftTopComments(froot, user)
		diags = append(diags, mergeDoc(doc, user, f)...)
	}
	diags.Sort()
	if diags.HasErrors(false) {
		return nil, diags, nil
	}
	var buf bytes.Buffer
	if err := yamlwrite.Encode(&buf, doc); err != nil {
		return nil, nil, err
	}
	out := buf.Bytes()
	if d := translateMerged(out, filesDir, files); d != nil {
		return nil, append(diags, *d), nil
	}
	return out, diags, nil
}

// configOfFile reads f as a Butane config that can be merged into the
// output of opts: YAML, a mapping with variant: and version:, of the
// output's variant and no newer than its version. It returns the
// document and its mapping, or the diagnostic that says why not.
func configOfFile(f render.MergeFile, opts Options) (*yaml.Node, *yaml.Node, *hooks.Diagnostic) {
	fail := func(pos hooks.Position, msg, hint string) (*yaml.Node, *yaml.Node, *hooks.Diagnostic) {
		return nil, nil, &hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Message: msg, Hint: hint}
	}
	if bytes.HasPrefix(bytes.TrimLeft(f.Data, " \t\r\n"), []byte("{")) {
		return fail(hooks.Position{File: f.Name}, "an Ignition config cannot be merged into Butane output: Butane would have to rewrite it",
			fmt.Sprintf("render --format ignition --merge %s, or name it in your own Butane config under ignition.config.merge (local: %s) and translate that with butane --files-dir", f.Name, f.Name))
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(f.Data, &doc); err != nil {
		return fail(usermerge.YAMLErrPos(f.Name, err), "not valid YAML: "+err.Error(), "check the file with butane --strict")
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return fail(hooks.Position{File: f.Name}, "not a Butane config: a Butane config is a mapping with variant: and version:", "give --merge a Butane config")
	}
	user := doc.Content[0]
	variant, version := usermerge.YAMLAt(user, "variant"), usermerge.YAMLAt(user, "version")
	switch {
	case variant == nil || version == nil:
		return fail(hooks.Position{File: f.Name, Line: user.Line, Column: user.Column}, "not a Butane config: it has no variant: or no version:", "give --merge a Butane config")
	case variant.Value != opts.Variant:
		return fail(hooks.Position{File: f.Name, Line: variant.Line, Column: variant.Column},
			fmt.Sprintf("the config is for variant %s, the output for %s: Butane's variants are for different systems", variant.Value, opts.Variant),
			fmt.Sprintf("render with --variant %s, or write the config for %s", variant.Value, opts.Variant))
	}
	v, verr := semver.NewVersion(version.Value)
	if verr != nil || semver.New(opts.Version).LessThan(*v) {
		return fail(hooks.Position{File: f.Name, Line: version.Line, Column: version.Column},
			fmt.Sprintf("the config is Butane %s %s, newer than the output's %s", variant.Value, version.Value, opts.Version),
			fmt.Sprintf("render with --butane-version %s, or write the config for %s", version.Value, opts.Version))
	}
	return &doc, user, nil
}

// liftTopComments moves the comments at the top of a user's Butane config
// to its first key that the merge keeps (variant and version are
// hostprov's), so that they are not lost with them.
func liftTopComments(froot, user *yaml.Node) {
	var top []string
	for _, c := range []string{froot.HeadComment, user.HeadComment} {
		if c != "" {
			top = append(top, c)
		}
	}
	for i := 0; i+1 < len(user.Content); i += 2 {
		k := user.Content[i]
		if k.Value != "variant" && k.Value != "version" {
			if len(top) > 0 {
				k.HeadComment = strings.Join(append(top, k.HeadComment), "\n")
				k.HeadComment = strings.TrimSuffix(k.HeadComment, "\n")
			}
			break
		}
		if k.HeadComment != "" {
			top = append(top, k.HeadComment)
		}
	}
}

// translateMerged translates the merged config with Butane, from
// filesDir, and returns what stops Butane as an error at the files
// merged, or nil.
func translateMerged(out []byte, filesDir string, files []render.MergeFile) *hooks.Diagnostic {
	if _, rpt, err := butaneconfig.TranslateBytes(out, butanecommon.TranslateBytesOptions{TranslateOptions: butanecommon.TranslateOptions{FilesDir: filesDir}}); err != nil || rpt.IsFatal() {
		// Only what stops Butane: its warnings are of the files, and
		// were reported with them.
		var fatal []string
		for _, e := range rpt.Entries {
			if e.Kind.IsFatal() {
				fatal = append(fatal, strings.TrimSpace(e.String()))
			}
		}
		msg := strings.Join(fatal, "\n")
		if err != nil && msg == "" {
			msg = err.Error()
		}
		d := ignconfig.MergedRefused(files, "Butane cannot translate the merged config: "+msg,
			"change your config so that, merged with hostprov's units, it translates")
		return &d
	}
	return nil
}

// mergeDoc merges a user's Butane document into hostprov's by the
// rule of Merge; the units are checked already.
func mergeDoc(doc, user *yaml.Node, f render.MergeFile) hooks.Diagnostics {
	var diags hooks.Diagnostics
	rest := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(user.Content); i += 2 {
		k, v := user.Content[i], user.Content[i+1]
		switch k.Value {
		case "variant", "version":
			continue
		case "systemd":
			if v.Kind == yaml.MappingNode {
				mergeSystemd(doc, k, v)
				continue
			}
		case "storage":
			// An entry at a path hostprov's has is the same entry
			// (checked): Butane refuses a path twice.
			for _, kind := range []string{"files", "directories", "links"} {
				dropSame(usermerge.YAMLAt(doc, "storage", kind), usermerge.YAMLAt(v, kind), "path", nil)
			}
		case "passwd":
			// An account both make is one entry, in hostprov's place,
			// with the fields of both (checked: those both set agree).
			for _, list := range []string{"users", "groups"} {
				dropSame(usermerge.YAMLAt(doc, "passwd", list), usermerge.YAMLAt(v, list), "name", usermerge.MergeYAMLEntry)
			}
		}
		rest.Content = append(rest.Content, k, v)
	}
	return append(diags, usermerge.MergeYAML(doc, rest, f.Name, "")...)
}

// mergeSystemd merges the user's systemd: mapping into hostprov's.
func mergeSystemd(doc, key, user *yaml.Node) {
	own := usermerge.YAMLAt(doc, "systemd")
	if own == nil {
		doc.Content = append(doc.Content, key, user)
		return
	}
	ownUnits := usermerge.YAMLAt(own, "units")
	for i := 0; i+1 < len(user.Content); i += 2 {
		k, v := user.Content[i], user.Content[i+1]
		if k.Value != "units" || ownUnits == nil || v.Kind != yaml.SequenceNode {
			own.Content = append(own.Content, k, v)
			continue
		}
		for _, uu := range v.Content {
			name := usermerge.YAMLAt(uu, "name")
			j := -1
			for m, hu := range ownUnits.Content {
				if n := usermerge.YAMLAt(hu, "name"); name != nil && n != nil && n.Value == name.Value {
					j = m
				}
			}
			if j < 0 {
				ownUnits.Content = append(ownUnits.Content, uu)
				continue
			}
			ownUnits.Content[j] = mergeUnit(ownUnits.Content[j], uu)
		}
	}
}

// mergeUnit is the user's unit entry with what only hostprov's sets.
func mergeUnit(own, user *yaml.Node) *yaml.Node {
	has := func(n *yaml.Node, prefix string) bool {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if strings.HasPrefix(n.Content[i].Value, prefix) {
				return true
			}
		}
		return false
	}
	for i := 0; i+1 < len(own.Content); i += 2 {
		k, v := own.Content[i], own.Content[i+1]
		switch k.Value {
		case "name":
		case "contents", "enabled", "mask":
			if !has(user, k.Value) {
				user.Content = append(user.Content, k, v)
			}
		case "dropins":
			ud := usermerge.YAMLAt(user, "dropins")
			if ud == nil {
				user.Content = append(user.Content, k, v)
				continue
			}
			var list []*yaml.Node
			seen := map[string]bool{}
			for _, d := range v.Content {
				n := usermerge.YAMLAt(d, "name")
				for _, e := range ud.Content {
					if en := usermerge.YAMLAt(e, "name"); en != nil && n != nil && en.Value == n.Value {
						d = e
					}
				}
				seen[n.Value] = true
				list = append(list, d)
			}
			for _, e := range ud.Content {
				if en := usermerge.YAMLAt(e, "name"); en == nil || !seen[en.Value] {
					list = append(list, e)
				}
			}
			ud.Content = list
		}
	}
	return user
}

// dropSame takes out of the user's list each entry whose key has the
// value of an entry of hostprov's list own; with merge, that entry of
// own becomes what merge makes of the two.
func dropSame(own, user *yaml.Node, key string, merge func(own, user *yaml.Node) *yaml.Node) {
	if own == nil || user == nil || own.Kind != yaml.SequenceNode || user.Kind != yaml.SequenceNode {
		return
	}
	kept := user.Content[:0:0]
	for _, e := range user.Content {
		n := usermerge.YAMLAt(e, key)
		j := -1
		for m, o := range own.Content {
			if on := usermerge.YAMLAt(o, key); n != nil && on != nil && on.Value == n.Value {
				j = m
			}
		}
		if j < 0 {
			kept = append(kept, e)
			continue
		}
		if merge != nil {
			own.Content[j] = merge(own.Content[j], e)
		}
	}
	user.Content = kept
}

// ownIgnitionStorage is the storage and passwd of the Ignition config
// that hostprov's Butane output of st translates to.
func ownIgnitionStorage(st compile.Storage, version string) ([]byte, error) {
	s, err := ignconfig.Storage(st, version)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Passwd  *ignconfig.PasswdJSON  `json:"passwd,omitempty"`
		Storage *ignconfig.StorageJSON `json:"storage,omitempty"`
	}{ignconfig.Passwd(st), s})
}

// storageSource is where an entry of the merged Butane config's storage
// comes from: hostprov's spec, or a --merge file's lists or one of its
// trees.
type storageSource struct {
	kind  string
	entry []byte // as Ignition has it, without empty fields
	spec  bool
	tree  bool
	pos   hooks.Position
}

// ownStorageSources is hostprov's storage (own, as Ignition JSON) by path.
func ownStorageSources(own []byte) (map[string]storageSource, error) {
	lists, err := ignconfig.SectionLists(own, "storage")
	if err != nil {
		return nil, err
	}
	seen := map[string]storageSource{}
	for _, kind := range []string{"files", "directories", "links"} {
		for _, e := range lists[kind] {
			if p, ok := e["path"].(string); ok {
				seen[p] = storageSource{kind: kind, entry: prunedEntry(e), spec: true}
			}
		}
	}
	return seen, nil
}

func prunedEntry(e map[string]any) []byte {
	x, _ := ignconfig.PruneEmpty(e)
	b, _ := json.Marshal(x)
	return b
}

// checkMergedStorage checks the storage of a user's file (cfg, its
// Ignition config) where the Butane output needs more than the Ignition
// output's check against hostprov's config (ignconfig.CheckStorageClashes), and
// adds the file's entries to seen, the paths of the merged config so far.
// The Butane output holds one entry per path, so that:
//
//   - a path that an earlier --merge file has too must be the same entry
//     (Ignition's merge would let the later one win, field by field; the
//     Butane output would have to pick one, or two, which Butane refuses);
//   - an entry of a tree (storage.trees) must be at a path nothing else
//     has: Butane refuses a tree's file or link where its config has one,
//     even the same.
func checkMergedStorage(seen map[string]storageSource, cfg any, f render.MergeFile, st compile.Storage, us []compile.Unit) (hooks.Diagnostics, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	lists, err := ignconfig.SectionLists(b, "storage")
	if err != nil {
		return nil, err
	}
	var diags hooks.Diagnostics
	for _, kind := range []string{"files", "directories", "links"} {
		for i, e := range lists[kind] {
			p, _ := e["path"].(string)
			pos, tree := ignconfig.UserStoragePos(f, kind, i, p)
			cur := storageSource{kind: kind, entry: prunedEntry(e), tree: tree, pos: pos}
			prev, ok := seen[p]
			if !ok {
				seen[p] = cur
				continue
			}
			same := prev.kind == kind && bytes.Equal(prev.entry, cur.entry)
			if prev.spec && !same {
				continue // ignconfig.CheckStorageClashes says so
			}
			where := "an earlier --merge file too, at " + prev.pos.String() + ","
			if prev.spec {
				where = "hostprov's spec too,"
				if place := usermerge.StoragePlace(st, us, p); place != "" {
					where = "hostprov's spec too, at " + place + ","
				}
			}
			d := hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: fmt.Sprintf("storage.%s[%d]", kind, i)}
			switch {
			case prev.kind != kind:
				d.Message = fmt.Sprintf("%s is a %s in %s and a %s here: there can be only one thing at a path", p, ignconfig.StorageKind[prev.kind], where, ignconfig.StorageKind[kind])
				d.Hint = "keep the path in one of your configs"
			case !same:
				d.Message = fmt.Sprintf("%s is in %s as another entry: the Butane output can hold only one of them", p, where)
				d.Hint = "keep the path in one of your configs, or render --format ignition --merge, where the later config's entry wins as in Ignition's merge"
			case tree:
				d.Message = fmt.Sprintf("%s is in %s and in this tree (storage.trees) as the same entry: Butane refuses a tree's file or link at a path its config has, even the same", p, where)
				d.Hint = "leave " + p + " out of the tree's directory, or render --format ignition --merge, which takes the same entry once"
			case prev.tree:
				d.Message = fmt.Sprintf("%s is in a tree (storage.trees) of %s as the same entry: Butane refuses a tree's file or link at a path its config has, even the same", p, where)
				d.Hint = "leave " + p + " out of the tree's directory, or render --format ignition --merge, which takes the same entry once"
			default:
				continue // the same entry, written once (dropSame)
			}
			diags = append(diags, d)
		}
	}
	return diags, nil
}

// specFilesDir is the directory the spec's local: files are read from
// (the spec's own, as hostprov's Butane output names them), or "" when
// the spec has none.
func specFilesDir(st compile.Storage) (string, error) {
	for _, x := range st.Files {
		if x.Local != "" {
			return filepath.Abs(filepath.Dir(x.Pos.File))
		}
	}
	return "", nil
}

// firstLocalKey is the first key of a Butane document that names a local
// file (local:, or a key ending in _local such as contents_local and
// ssh_authorized_keys_local), and what it names; nil when there is none.
func firstLocalKey(n *yaml.Node) (key *yaml.Node, names string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "local" || strings.HasSuffix(k.Value, "_local") {
				switch {
				case v.Kind == yaml.ScalarNode && v.Value != "" && v.Tag != "!!null":
					return k, v.Value
				case v.Kind == yaml.SequenceNode && len(v.Content) > 0:
					return k, v.Content[0].Value
				}
			}
			if l, names := firstLocalKey(v); l != nil {
				return l, names
			}
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			if l, names := firstLocalKey(c); l != nil {
				return l, names
			}
		}
	}
	return nil, ""
}
