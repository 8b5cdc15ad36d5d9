package pipeline

import (
	"fmt"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// atFields places what the hook spec of the object named file made at the
// object (see Object): each diagnostic at the object, with its field as
// path; each unit, file, directory, link and account at the object and its
// field.
func atFields(file string, r *compile.Result, diags hooks.Diagnostics) {
	for i := range diags {
		diags[i].Path = fieldPath(diags[i].Path)
		diags[i].Pos = hooks.Position{File: file}
	}
	if r.Spec == nil {
		return
	}
	for i := range r.Units {
		r.Units[i].Pos = hooks.Position{File: fmt.Sprintf("%s spec.hooks[%d]", file, r.Units[i].Hook)}
	}
	st := &r.Storage
	at := entryFields(file, r.Spec)
	for i := range st.Files {
		st.Files[i].Pos = at(st.Files[i].Pos)
	}
	for i := range st.Directories {
		st.Directories[i].Pos = at(st.Directories[i].Pos)
	}
	for i := range st.Links {
		st.Links[i].Pos = at(st.Links[i].Pos)
	}
	for i := range st.Users {
		st.Users[i].Pos = at(st.Users[i].Pos)
	}
	for i := range st.Groups {
		st.Groups[i].Pos = at(st.Groups[i].Pos)
	}
}

// entryFields returns a function that turns the position of an entry of
// a hook's files, directories, links, users or groups in the hook spec
// document of an object into its field ("hosthooks/NAME
// spec.hooks[1].files[0]").
func entryFields(file string, spec *hooks.Spec) func(hooks.Position) hooks.Position {
	field := map[hooks.Position]string{}
	for i, h := range spec.Hooks {
		for _, list := range []struct {
			name string
			n    int
		}{{"files", len(h.Files)}, {"directories", len(h.Directories)}, {"links", len(h.Links)}, {"users", len(h.Users)}, {"groups", len(h.Groups)}} {
			for k := range list.n {
				p := fmt.Sprintf("hooks[%d].%s[%d]", i, list.name, k)
				field[spec.Where(p)] = "spec." + p
			}
		}
	}
	return func(pos hooks.Position) hooks.Position {
		if f, ok := field[pos]; ok {
			return hooks.Position{File: file + " " + f}
		}
		return hooks.Position{File: file}
	}
}

// fieldPath is the object's field of a hook spec's path: "hooks[1].exec"
// is "spec.hooks[1].exec". The spec's own fields (apiVersion, kind,
// metadata) are made from the object, so their problems are its name's.
func fieldPath(p string) string {
	if p == "hooks" || strings.HasPrefix(p, "hooks[") || strings.HasPrefix(p, "hooks.") {
		return "spec." + p
	}
	if p == "" || p == "metadata.name" || p == "metadata" {
		return "metadata.name"
	}
	return p
}
