package ignconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	pathpkg "path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// CheckClashes is every check of a user's Ignition config cfg, from file
// f, against hostprov's own config own of the units us and the storage st:
// its units (CheckUnitClashes), files, directories and links
// (CheckStorageClashes) and users and groups (CheckAccountClashes). Both
// outputs that merge a user's config run it, Ignition on the config itself
// and Butane on the Ignition config both translate to, so that a clash is
// reported at the user's entry in either.
func CheckClashes(own []byte, cfg any, f render.MergeFile, st compile.Storage, us []compile.Unit) (hooks.Diagnostics, error) {
	nu, err := NeutralUnits(cfg)
	if err != nil {
		return nil, err
	}
	diags := CheckUnitClashes(us, nu, f)
	for _, check := range []func([]byte, any, render.MergeFile, compile.Storage, []compile.Unit) (hooks.Diagnostics, error){CheckStorageClashes, CheckAccountClashes} {
		d, err := check(own, cfg, f, st, us)
		if err != nil {
			return nil, err
		}
		diags = append(diags, d...)
	}
	return diags, nil
}

// MergedRefused is the error of a merged config that Ignition or Butane
// refuses although each file passed on its own: it is at the files
// together, since no one of them is at fault.
func MergedRefused(files []render.MergeFile, msg, hint string) hooks.Diagnostic {
	var names []string
	for _, f := range files {
		names = append(names, f.Name)
	}
	return hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: strings.Join(names, ", ")}, Message: msg, Hint: hint}
}

// NeutralUnit is a unit of an Ignition config as every spec version has it.
type NeutralUnit struct {
	Name     string          `json:"name"`
	Contents *string         `json:"contents"`
	Enabled  *bool           `json:"enabled"`
	Mask     *bool           `json:"mask"`
	Dropins  []NeutralDropin `json:"dropins"`
}

// NeutralDropin is a drop-in of a NeutralUnit.
type NeutralDropin struct {
	Name     string  `json:"name"`
	Contents *string `json:"contents"`
}

// NeutralUnits are the units of cfg, an Ignition config of any spec
// version as its own types hold it.
func NeutralUnits(cfg any) ([]NeutralUnit, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var c struct {
		Systemd struct {
			Units []NeutralUnit `json:"units"`
		} `json:"systemd"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return c.Systemd.Units, nil
}

// CheckUnitClashes reports a unit (or drop-in) that the user's config and
// the spec both make and make differently, at both places. The rule, the
// same for every output:
//
//   - a unit both list may set contents, enabled and mask in only one of
//     them, or to the same value in both;
//   - a drop-in of that unit both list must have the same contents;
//   - everything else of the two is merged: the fields one of them sets,
//     and the drop-ins of both.
//
// The user's place is the unit (or drop-in) in the user's file, found by
// name; hostprov's is the hook that makes it.
func CheckUnitClashes(us []compile.Unit, user []NeutralUnit, f render.MergeFile) hooks.Diagnostics {
	ius, err := Units(us)
	if err != nil {
		return nil // the output failed on them first
	}
	var diags hooks.Diagnostics
	for _, uu := range user {
		for i, hu := range ius {
			if hu.Name != uu.Name {
				continue
			}
			u := us[i]
			where := fmt.Sprintf("%s (hooks[%d], %s)", u.Pos, u.Hook, u.HookName)
			var fields []string
			if hu.Contents != nil && uu.Contents != nil && string(hu.Contents) != *uu.Contents {
				fields = append(fields, "contents")
			}
			if hu.Enabled != nil && uu.Enabled != nil && *hu.Enabled != *uu.Enabled {
				fields = append(fields, "enabled")
			}
			if hu.Mask != nil && uu.Mask != nil && *hu.Mask != *uu.Mask {
				fields = append(fields, "mask")
			}
			if len(fields) > 0 {
				diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: userUnitPos(f, uu.Name, ""),
					Path:    "systemd.units." + uu.Name,
					Message: fmt.Sprintf("unit %s is made by hostprov's spec too, at %s, with another %s", uu.Name, where, strings.Join(fields, ", ")),
					Hint:    "keep the unit in one place: drop it from your config or the hook from the spec, or make both the same"})
			}
			for _, ud := range uu.Dropins {
				for _, hd := range hu.Dropins {
					if hd.Name == ud.Name && !eqStr(BytesPtr(hd.Contents), ud.Contents) {
						diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: userUnitPos(f, uu.Name, ud.Name),
							Path:    "systemd.units." + uu.Name + ".dropins." + ud.Name,
							Message: fmt.Sprintf("drop-in %s.d/%s is made by hostprov's spec too, at %s, with other contents", uu.Name, ud.Name, where),
							Hint:    "keep the drop-in in one place, or give one of them another name"})
					}
				}
			}
		}
	}
	return diags
}

func eqStr(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// userUnitPos is where a unit (or one of its drop-ins) is written in a
// user's Ignition or Butane file, found by name under systemd.units.
func userUnitPos(f render.MergeFile, unit, dropin string) hooks.Position {
	isJSON := bytes.HasPrefix(bytes.TrimLeft(f.Data, " \t\r\n"), []byte("{"))
	var c struct {
		Systemd struct {
			Units *[]struct {
				Name    string `json:"name" yaml:"name"`
				Dropins []struct {
					Name string `json:"name" yaml:"name"`
				} `json:"dropins" yaml:"dropins"`
			} `json:"units" yaml:"units"`
		} `json:"systemd" yaml:"systemd"`
	}
	var err error
	if isJSON {
		err = json.Unmarshal(f.Data, &c)
	} else {
		err = yaml.Unmarshal(f.Data, &c)
	}
	if err != nil || c.Systemd.Units == nil {
		return hooks.Position{File: f.Name}
	}
	at := func(line, col int64) hooks.Position {
		return hooks.Position{File: f.Name, Line: int(line), Column: int(col)}
	}
	for i, u := range *c.Systemd.Units {
		if u.Name != unit {
			continue
		}
		p := []any{"systemd", "units", i}
		for j, d := range u.Dropins {
			if dropin != "" && d.Name == dropin {
				p = append(p, "dropins", j)
			}
		}
		return ignitionPos(f, isJSON, f.Data, at, p...)
	}
	return hooks.Position{File: f.Name}
}

// configLists decodes the lists of one section of an Ignition config
// (storage: files, directories, links; passwd: users, groups), of
// hostprov's config as JSON (own) and of a user's as decoded (cfg), to
// compare their entries field by field.
func configLists(own []byte, cfg any, section string) (ours, theirs map[string][]map[string]any, err error) {
	if ours, err = SectionLists(own, section); err != nil {
		return nil, nil, err
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, nil, err
	}
	if theirs, err = SectionLists(b, section); err != nil {
		return nil, nil, err
	}
	return ours, theirs, nil
}

// SectionLists decodes the lists of one section of an Ignition config
// given as JSON.
func SectionLists(config []byte, section string) (map[string][]map[string]any, error) {
	var c map[string]json.RawMessage
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	var lists map[string][]map[string]any
	if raw, ok := c[section]; ok {
		if err := json.Unmarshal(raw, &lists); err != nil {
			return nil, err
		}
	}
	return lists, nil
}

// CheckStorageClashes reports each path that hostprov's config (own) and
// a user's config both have in storage, with entries that differ (or of
// another kind: a directory where the spec has a file), at the user's
// entry and, when st has it, at the spec's.
func CheckStorageClashes(own []byte, cfg any, f render.MergeFile, st compile.Storage, us []compile.Unit) (hooks.Diagnostics, error) {
	ours, theirs, err := configLists(own, cfg, "storage")
	if err != nil {
		return nil, err
	}
	var diags hooks.Diagnostics
	kinds := []string{"files", "directories", "links"}
	// byPath is hostprov's entry at each path, and kindOf its kind.
	byPath, kindOf := map[string]map[string]any{}, map[string]string{}
	for _, kind := range kinds {
		for _, e := range ours[kind] {
			if p, ok := e["path"].(string); ok {
				byPath[p], kindOf[p] = e, kind
			}
		}
	}
	ownPaths := make([]string, 0, len(kindOf))
	for p := range kindOf {
		ownPaths = append(ownPaths, p)
	}
	sort.Strings(ownPaths)
	for _, kind := range kinds {
		for i, e := range theirs[kind] {
			p, _ := e["path"].(string)
			diags = append(diags, checkUnder(p, kind, i, f, ownPaths, kindOf, st, us)...)
			o, ok := byPath[p]
			if !ok {
				continue
			}
			if kindOf[p] == kind {
				x, _ := PruneEmpty(e)
				y, _ := PruneEmpty(o)
				xb, _ := json.Marshal(x)
				yb, _ := json.Marshal(y)
				if bytes.Equal(xb, yb) {
					continue
				}
			}
			pos, _ := UserStoragePos(f, kind, i, p)
			in := "hostprov's spec too,"
			if place := usermerge.StoragePlace(st, us, p); place != "" {
				in = "hostprov's spec too, at " + place + ","
			}
			msg := fmt.Sprintf("%s is in %s as another entry: Ignition's merge would keep only yours", p, in)
			if kindOf[p] != kind {
				msg = fmt.Sprintf("%s is a %s in %s and a %s here: there can be only one thing at a path", p, StorageKind[kindOf[p]], in, StorageKind[kind])
			}
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: fmt.Sprintf("storage.%s[%d]", kind, i),
				Message: msg, Hint: "keep the path in one place: your config or the spec"})
		}
	}
	return diags, nil
}

// checkUnder reports a path of a user's file (p, its i-th entry of kind)
// and a path of hostprov's (ownPaths, sorted, kindOf each) of which one is
// under the other when the upper one is a file or a link: Ignition writes
// both, and the lower one fails at boot under a file, or lands wherever
// the link points (Ignition's validation refuses that one, but at no
// line of either file).
func checkUnder(p, kind string, i int, f render.MergeFile, ownPaths []string, kindOf map[string]string, st compile.Storage, us []compile.Unit) hooks.Diagnostics {
	var diags hooks.Diagnostics
	for _, q := range ownPaths {
		var msg, upper string
		switch {
		case kind != "directories" && strings.HasPrefix(q, p+"/"):
			upper = kind
			msg = fmt.Sprintf("%s is a %s here, and hostprov's spec has %s under it", p, StorageKind[kind], q)
		case kindOf[q] != "directories" && strings.HasPrefix(p, q+"/"):
			upper = kindOf[q]
			msg = fmt.Sprintf("%s is under %s, a %s in hostprov's spec", p, q, StorageKind[upper])
		default:
			continue
		}
		if place := usermerge.StoragePlace(st, us, q); place != "" {
			msg += ", at " + place
		}
		msg += ": nothing can be under a file"
		if upper == "links" {
			msg = strings.TrimSuffix(msg, "a file") + "a link (it would land wherever the link points)"
		}
		pos, _ := UserStoragePos(f, kind, i, p)
		diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: fmt.Sprintf("storage.%s[%d]", kind, i),
			Message: msg, Hint: "move one of the two, or keep both in one place: your config or the spec"})
	}
	return diags
}

// UserStoragePos is where a user's file writes the entry at path p, the
// i-th of its Ignition config's storage.<kind>: the entry in an Ignition
// file or in a Butane file's storage.<kind>, or else the Butane tree that
// holds it (fromTree), or else the file alone.
func UserStoragePos(f render.MergeFile, kind string, i int, p string) (pos hooks.Position, fromTree bool) {
	if bytes.HasPrefix(bytes.TrimLeft(f.Data, " \t\r\n"), []byte("{")) {
		at := func(line, col int64) hooks.Position {
			return hooks.Position{File: f.Name, Line: int(line), Column: int(col)}
		}
		return ignitionPos(f, true, f.Data, at, "storage", kind, i), false
	}
	if n := yamlByPath(f, kind, p); n != nil {
		return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column}, false
	}
	if n := yamlTreeOf(f, p); n != nil {
		return hooks.Position{File: f.Name, Line: n.Line, Column: n.Column}, true
	}
	return hooks.Position{File: f.Name}, false
}

// yamlTreeOf is the entry of a Butane file's storage.trees whose
// directory holds path p on the machine (its path:, / when it has none),
// or nil: the entries a tree makes are in no list of the file.
func yamlTreeOf(f render.MergeFile, p string) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(f.Data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	trees := usermerge.YAMLAt(doc.Content[0], "storage", "trees")
	if trees == nil || trees.Kind != yaml.SequenceNode {
		return nil
	}
	var best *yaml.Node
	bestLen := -1
	for _, e := range trees.Content {
		dest := "/"
		if n := usermerge.YAMLAt(e, "path"); n != nil && n.Value != "" {
			dest = pathpkg.Clean(n.Value)
		}
		if (dest == "/" || p == dest || strings.HasPrefix(p, dest+"/")) && len(dest) > bestLen {
			best, bestLen = e, len(dest)
		}
	}
	return best
}

// StorageKind names an entry of an Ignition config's storage lists.
var StorageKind = map[string]string{"files": "file", "directories": "directory", "links": "link"}

// yamlByPath is the entry of a Butane file's storage.<kind> with the path.
func yamlByPath(f render.MergeFile, kind, p string) *yaml.Node {
	return yamlByKey(f, "path", p, "storage", kind)
}

// yamlByKey is the entry of the YAML list at the path p whose key has
// the value want.
func yamlByKey(f render.MergeFile, key, want string, p ...any) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(f.Data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	list := usermerge.YAMLAt(doc.Content[0], p...)
	if list == nil || list.Kind != yaml.SequenceNode {
		return nil
	}
	for _, e := range list.Content {
		if n := usermerge.YAMLAt(e, key); n != nil && n.Value == want {
			return e
		}
	}
	return nil
}
