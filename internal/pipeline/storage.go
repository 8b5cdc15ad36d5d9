package pipeline

import (
	"fmt"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// addStorage adds a spec's storage to the result's and reports what
// another spec claims already, and, when the caller cannot make storage
// (Options.NoStorage), every entry.
func (s *sets) addStorage(st compile.Storage) hooks.Diagnostics {
	var diags hooks.Diagnostics
	noStorage := s.opts.NoStorage
	check := func(kind, p string, pos hooks.Position) bool {
		if noStorage != "" {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos,
				Message: fmt.Sprintf("%s %s: %s", kind, p, noStorage),
				Hint:    "render the spec into user data with --format ignition, butane or cloud-init, which carry files, directories and links"})
			return false
		}
		if first, dup := s.claimed[p]; dup && first.File != pos.File {
			diags = append(diags, hooks.Diagnostic{Severity: hooks.Error, Pos: pos,
				Message: fmt.Sprintf("%s is claimed already by another spec, at %s", p, first),
				Hint:    "there can be only one thing at a path: keep it in one of the specs"})
			return false
		}
		s.claimed[p] = pos
		return true
	}
	all := &s.r.Storage
	for _, x := range st.Files {
		if check("file", x.Path, x.Pos) {
			all.Files = append(all.Files, x)
		}
	}
	for _, x := range st.Directories {
		if check("directory", x.Path, x.Pos) {
			all.Directories = append(all.Directories, x)
		}
	}
	for _, x := range st.Links {
		if check("link", x.Path, x.Pos) {
			all.Links = append(all.Links, x)
		}
	}
	if noStorage != "" {
		for _, x := range st.Groups {
			check("group", x.Name, x.Pos)
		}
		for _, x := range st.Users {
			check("user", x.Name, x.Pos)
		}
		return diags
	}
	return append(diags, all.AddAccounts(st)...)
}
