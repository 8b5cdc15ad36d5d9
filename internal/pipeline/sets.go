package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// sets builds the spec sets of hostprov specs and objects, one input at a
// time, and finds what two of them both make: a set name, a unit, a path.
type sets struct {
	opts      Options
	r         *Result
	bySet     map[string]hooks.Position // set name -> where it is named
	byUnit    map[string]compile.Unit   // unit -> the first hook that makes it
	setOfUnit map[string]string         // unit -> its set
	claimed   map[string]hooks.Position // path -> the entry that claims it
	specs     []*hooks.Spec             // the specs of r.Sets, for the node's checks
}

// loadSets renders each hostprov spec as its own spec set, named by its
// metadata.name or else after its file, and each object as the set it
// names, and reports, at both hooks, a unit that two of them make and a
// name that two of them have.
func loadSets(in []Input, opts Options) (*Result, error) {
	s := &sets{opts: opts, r: &Result{}, bySet: map[string]hooks.Position{}, byUnit: map[string]compile.Unit{},
		setOfUnit: map[string]string{}, claimed: map[string]hooks.Position{}}
	var labels []string
	for _, i := range in {
		s.add(i)
		labels = append(labels, i.Name)
	}
	if opts.Node != nil && !s.r.Diagnostics.HasErrors(false) {
		d, err := runAsWarnings(s.specs, s.r.Storage, *opts.Node)
		if err != nil {
			return &Result{}, err
		}
		s.r.Diagnostics = append(s.r.Diagnostics, d...)
	}
	s.r.Label = strings.Join(labels, ", ")
	if opts.Dir != "" {
		s.r.Label = opts.Dir
	}
	if len(in) == 0 {
		s.r.Label = opts.Dir + " (no *.yaml file)"
	}
	return s.r, nil
}

// add renders one input as a spec set.
func (s *sets) add(i Input) {
	r, d := compile.Build(i.Name, i.Data, compile.Options{})
	if i.Object != nil {
		atFields(i.Name, &r, d)
	}
	s.r.Diagnostics = append(s.r.Diagnostics, d...)
	s.r.Diagnostics = append(s.r.Diagnostics, s.addStorage(r.Storage)...)
	if r.Spec == nil {
		return
	}
	set := apply.SpecSet{}
	if i.Object != nil {
		set.Name, set.Owner = i.Object.Set, i.Object.Owner
	} else if set.Name = s.fileSetName(i.Name, r.Spec); set.Name == "" {
		return
	}
	for _, u := range r.Units {
		if o, dup := s.byUnit[u.Name]; dup {
			s.r.Diagnostics = append(s.r.Diagnostics, hooks.Diagnostic{Severity: hooks.Error, Pos: u.Pos, Path: fmt.Sprintf("hooks[%d]", u.Hook),
				Message: fmt.Sprintf("%s is made by spec set %s already, at %s: a unit belongs to one set", u.Name, s.setOfUnit[u.Name], o.Pos),
				Hint:    "remove the hook from one of the specs, or give it another name"})
			continue
		}
		s.byUnit[u.Name], s.setOfUnit[u.Name] = u, set.Name
	}
	s.r.Units = append(s.r.Units, r.Units...)
	set.Units = r.Units
	set.Paths = apply.PathsOf(r.Storage, r.Spec)
	set.Accounts = apply.AccountsOf(r.Storage, r.Spec)
	s.r.Sets = append(s.r.Sets, set)
	s.noteDisruptions(r.Spec, r.Units)
	s.specs = append(s.specs, r.Spec)
}

// fileSetName is the name of the spec set of the spec of file: its
// metadata.name, or else its file's name. It is "" when the spec cannot
// have it, and the diagnostics say why.
func (s *sets) fileSetName(file string, spec *hooks.Spec) string {
	name, where := spec.Name, spec.Where("metadata.name")
	if name == "" {
		name, where = setName(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))), hooks.Position{File: file}
		if err := hooks.CheckSetName(name); err != nil {
			s.r.Diagnostics = append(s.r.Diagnostics, hooks.Diagnostic{Severity: hooks.Error, Pos: hooks.Position{File: file}, Message: fmt.Sprintf("the spec has no metadata.name, and its file's name does not make one: %v", err),
				Hint: "give the spec a name: metadata: {name: NAME}"})
			return ""
		}
	}
	if d, reserved := agentSetName(name, where, spec.Name != ""); reserved {
		s.r.Diagnostics = append(s.r.Diagnostics, d)
		return ""
	}
	if prev, dup := s.bySet[name]; dup {
		s.r.Diagnostics = append(s.r.Diagnostics, hooks.Diagnostic{Severity: hooks.Error, Pos: where, Path: "metadata.name",
			Message: fmt.Sprintf("spec set %s is named already at %s: each spec of a node is its own set", name, prev),
			Hint:    "give one of them another metadata.name"})
		return ""
	}
	s.bySet[name] = where
	return name
}

// agentSetName refuses a node's own spec set whose name the agent's sets
// have (hooks.AgentSetPrefix): the agent would take it for one of its own
// and prune it. named tells whether the name is the spec's metadata.name
// or its file's.
func agentSetName(name string, where hooks.Position, named bool) (hooks.Diagnostic, bool) {
	if !strings.HasPrefix(name, hooks.AgentSetPrefix) {
		return hooks.Diagnostic{}, false
	}
	d := hooks.Diagnostic{Severity: hooks.Error, Pos: where,
		Message: fmt.Sprintf("spec set %s: names that start with %q are the sets hostprov's agent applies for HostHooks, which it prunes when their HostHooks is gone", name, hooks.AgentSetPrefix),
		Hint:    "give the spec a metadata.name that does not start with " + hooks.AgentSetPrefix}
	if named {
		d.Path = "metadata.name"
	} else {
		d.Hint = "rename the file, or give the spec a metadata.name that does not start with " + hooks.AgentSetPrefix
	}
	return d, true
}

// noteDisruptions records, for each unit of us, the disruption its hook
// of spec declares, when it declares one.
func (s *sets) noteDisruptions(spec *hooks.Spec, us []compile.Unit) {
	for _, u := range us {
		if u.Hook < 0 || u.Hook >= len(spec.Hooks) {
			continue
		}
		h := &spec.Hooks[u.Hook]
		if !h.NeedsDrain() {
			continue
		}
		if s.r.Disruptions == nil {
			s.r.Disruptions = map[string]Disruption{}
		}
		s.r.Disruptions[u.Name] = Disruption{Hook: h.Name, Kind: h.Disruption}
	}
}
