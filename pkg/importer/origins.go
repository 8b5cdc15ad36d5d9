package importer

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/hostprov/hostprov/pkg/hooks"
)

// origin is where an entry of the imported spec comes from: its place and
// its path in the input.
type origin struct {
	pos  hooks.Position
	path string
}

// hookOrigins are the origins of one hook and of its entries, index for
// index; a zero origin is not known.
type hookOrigins struct {
	hook                                              origin
	dropins, files, directories, links, users, groups []origin
}

// entryRE reads a path of the spec into its hook, its list and its entry:
// hooks[2].files[0].mode is hook 2, "files", 0.
var entryRE = regexp.MustCompile(`^hooks\[(\d+)\](?:\.(dropins|files|directories|links|users|groups)\[(\d+)\])?`)

// refuse keeps out of res the entries that hostprov's own checks refuse
// (diags, of the spec Encode wrote of res), each with a warning at its
// origin that says hostprov's reason. It reports false, changing nothing,
// when an error is about a part of the spec whose origin is not known:
// then the import fails with it.
func (res *Result) refuse(diags hooks.Diagnostics, file string) (hooks.Diagnostics, bool) {
	type key struct {
		hook  int
		list  string
		entry int
	}
	drop := map[key]bool{}
	var warnings hooks.Diagnostics
	for _, d := range diags {
		if d.Severity != hooks.Error {
			continue
		}
		m := entryRE.FindStringSubmatch(d.Path)
		if m == nil {
			return nil, false
		}
		h, _ := strconv.Atoi(m[1])
		if h >= len(res.origins) {
			return nil, false
		}
		o, k := res.origins[h].hook, key{hook: h, entry: -1}
		if m[2] != "" {
			i, _ := strconv.Atoi(m[3])
			os := res.origins[h].list(m[2])
			if i >= len(os) {
				return nil, false
			}
			o, k = os[i], key{h, m[2], i}
		}
		if o.path == "" {
			return nil, false
		}
		if !drop[k] {
			warnings = append(warnings, hooks.Diagnostic{Severity: hooks.Warning, Pos: o.pos, Path: o.path,
				Message: fmt.Sprintf(leftoversPrefix+"hostprov refuses it: %s", d.Message), Hint: d.Hint})
			res.rest.add(parsePath(o.path)...)
		}
		drop[k] = true
	}
	var hs []hooks.Hook
	var os []hookOrigins
	for i, h := range res.Hooks {
		if drop[key{i, "", -1}] {
			continue
		}
		o := res.origins[i]
		keep := func(list string, n int) []int {
			var idx []int
			for j := 0; j < n; j++ {
				if !drop[key{i, list, j}] {
					idx = append(idx, j)
				}
			}
			return idx
		}
		h.Dropins, o.dropins = pick(h.Dropins, o.dropins, keep("dropins", len(h.Dropins)))
		h.Files, o.files = pick(h.Files, o.files, keep("files", len(h.Files)))
		h.Directories, o.directories = pick(h.Directories, o.directories, keep("directories", len(h.Directories)))
		h.Links, o.links = pick(h.Links, o.links, keep("links", len(h.Links)))
		h.Users, o.users = pick(h.Users, o.users, keep("users", len(h.Users)))
		h.Groups, o.groups = pick(h.Groups, o.groups, keep("groups", len(h.Groups)))
		if h.Name == "" || h.UseRawManifest || h.Mask || h.Enabled != nil || len(h.Dropins) > 0 || h.Generated() || h.HasStorage() {
			hs = append(hs, h)
			os = append(os, o)
		}
	}
	res.Hooks, res.origins = hs, os
	return warnings, true
}

func (o *hookOrigins) list(name string) []origin {
	switch name {
	case "dropins":
		return o.dropins
	case "files":
		return o.files
	case "directories":
		return o.directories
	case "links":
		return o.links
	case "users":
		return o.users
	}
	return o.groups
}

// pick keeps the entries of es (and their origins) at the indexes idx.
func pick[E any](es []E, os []origin, idx []int) ([]E, []origin) {
	if len(idx) == len(es) {
		return es, os
	}
	var oute []E
	var outo []origin
	for _, i := range idx {
		oute = append(oute, es[i])
		if i < len(os) {
			outo = append(outo, os[i])
		}
	}
	return oute, outo
}
