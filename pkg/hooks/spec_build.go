package hooks

import "gopkg.in/yaml.v3"

// NewSpec returns a Spec holding hooks that were read from another format,
// such as a kops cluster manifest, so that package render can render them
// and report its findings at the places they were written there. file is
// the Spec's File: what Where reports for a path that was never located,
// and the file of every WhereInScalar position.
//
// The Spec knows no positions until Locate and LocateLines record them;
// Where falls back to the nearest located ancestor of a path, as it does
// for a parsed spec.
func NewSpec(file string, hs []Hook) *Spec {
	return &Spec{
		APIVersion: specAPIVersion,
		Kind:       specKind,
		Hooks:      hs,
		File:       file,
		pos:        positions{file: file},
	}
}

// Locate records that the value at path (a path of a hostprov spec, such as
// "hooks[0].exec" or "hooks[2].manifest") was written at pos. pos may name
// another file than the Spec's.
func (s *Spec) Locate(path string, pos Position) {
	s.pos.set(path, pos)
}

// LocateLines records where each line of the string value at path starts,
// for WhereInScalar: n is the YAML scalar node the value was decoded from
// and src the whole source that n was parsed from (its line numbers count
// from the start of src). Like Parse, it records lines only for block (| and
// >) and quoted scalars; a plain scalar's lines are where Locate put it.
// The positions are reported in the Spec's File.
func (s *Spec) LocateLines(path string, n *yaml.Node, src []byte) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	d := &decoder{file: s.File, src: string(src), spec: s}
	d.recordScalar(path, n)
}
