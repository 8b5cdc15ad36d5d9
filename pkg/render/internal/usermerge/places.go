package usermerge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// AccountPlace is where the spec makes the user (kind "user") or group
// named name, or "" when st does not say.
func AccountPlace(st compile.Storage, us []compile.Unit, kind, name string) string {
	if kind == "user" {
		if i := slices.IndexFunc(st.Users, func(u compile.User) bool { return u.Name == name }); i >= 0 {
			return specPlace(st.Users[i].Pos, st.Users[i].Hook, us)
		}
		return ""
	}
	if i := slices.IndexFunc(st.Groups, func(g compile.Group) bool { return g.Name == name }); i >= 0 {
		return specPlace(st.Groups[i].Pos, st.Groups[i].Hook, us)
	}
	return ""
}

// AccountClash is the diagnostic of an account both make with other
// values of fields, at pos in the user's file; place is where the spec
// makes it ("" when not known), and other what else made it then.
func AccountClash(pos hooks.Position, path, kind, name, place, other string, fields []string) hooks.Diagnostic {
	by := other + " too"
	if place != "" {
		by = "hostprov's spec too, at " + place
	}
	return hooks.Diagnostic{Severity: hooks.Error, Pos: pos, Path: path,
		Message: fmt.Sprintf("%s %s is made by %s, with another %s", kind, name, by, strings.Join(fields, ", ")),
		Hint:    "an account is the same on the whole machine: drop it from your config or from the spec, or give both the same " + strings.Join(fields, ", ")}
}

// StoragePlace is where the spec puts something at path p, or "" when st
// does not say.
func StoragePlace(st compile.Storage, us []compile.Unit, p string) string {
	for _, x := range st.Files {
		if x.Path == p {
			return specPlace(x.Pos, x.Hook, us)
		}
	}
	for _, x := range st.Directories {
		if x.Path == p {
			return specPlace(x.Pos, x.Hook, us)
		}
	}
	for _, x := range st.Links {
		if x.Path == p {
			return specPlace(x.Pos, x.Hook, us)
		}
	}
	return ""
}

// specPlace says where an entry of hostprov's spec is, for a message about
// a clash with a --merge file: its position, its hook's index, and the
// hook's name when one of the units says it.
func specPlace(pos hooks.Position, hook int, us []compile.Unit) string {
	for _, u := range us {
		if u.Hook == hook && u.HookName != "" {
			return fmt.Sprintf("%s (hooks[%d], %s)", pos, hook, u.HookName)
		}
	}
	return fmt.Sprintf("%s (hooks[%d])", pos, hook)
}
