package ignconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/internal/usermerge"
)

// Accounts are merged by the rule of units (CheckUnitClashes): a user or
// group that the spec and a --merge file both make is one account, whose
// fields are those of both; a field both set must have the same value in
// both, or the account is an error at both places. Ignition's merge
// would otherwise let the file's value win without a word, and Butane and
// cloud-init would get the account twice.

// CheckAccountClashes reports each user and group of a user's Ignition
// config (cfg, read from f) that hostprov's config (own) makes too, with
// a field both set to other values. st and us say where the spec makes
// them.
func CheckAccountClashes(own []byte, cfg any, f render.MergeFile, st compile.Storage, us []compile.Unit) (hooks.Diagnostics, error) {
	ours, theirs, err := configLists(own, cfg, "passwd")
	if err != nil {
		return nil, err
	}
	isJSON := bytes.HasPrefix(bytes.TrimLeft(f.Data, " \t\r\n"), []byte("{"))
	at := func(line, col int64) hooks.Position {
		return hooks.Position{File: f.Name, Line: int(line), Column: int(col)}
	}
	var diags hooks.Diagnostics
	for _, list := range []string{"users", "groups"} {
		kind := strings.TrimSuffix(list, "s")
		byName := map[string]map[string]any{}
		for _, e := range ours[list] {
			if n, ok := e["name"].(string); ok {
				byName[n] = e
			}
		}
		for i, e := range theirs[list] {
			name, _ := e["name"].(string)
			o, ok := byName[name]
			if !ok {
				continue
			}
			fields := differentFields(e, o)
			if len(fields) == 0 {
				continue
			}
			pos := hooks.Position{File: f.Name}
			if isJSON {
				pos = ignitionPos(f, true, f.Data, at, "passwd", list, i)
			} else {
				if n := yamlByKey(f, "name", name, "passwd", list); n != nil {
					pos = hooks.Position{File: f.Name, Line: n.Line, Column: n.Column}
				}
				for j := range fields {
					fields[j] = snakeCase(fields[j])
				}
			}
			diags = append(diags, usermerge.AccountClash(pos, fmt.Sprintf("passwd.%s[%d]", list, i), kind, name, usermerge.AccountPlace(st, us, kind, name), "hostprov's spec", fields))
		}
	}
	return diags, nil
}

// differentFields are the keys that a and b both set (to something that
// is not empty) to other values, sorted.
func differentFields(a, b map[string]any) []string {
	var fields []string
	for k, va := range a {
		vb, ok := b[k]
		if !ok {
			continue
		}
		pa, keepA := PruneEmpty(va)
		pb, keepB := PruneEmpty(vb)
		if !keepA || !keepB {
			continue
		}
		ja, _ := json.Marshal(pa)
		jb, _ := json.Marshal(pb)
		if !bytes.Equal(ja, jb) {
			fields = append(fields, k)
		}
	}
	sort.Strings(fields)
	return fields
}

// snakeCase spells an Ignition key as Butane does: homeDir is home_dir.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
