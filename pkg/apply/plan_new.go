package apply

import (
	"context"
	"fmt"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
)

// NewPlan compares the desired units with the state and the unit directory
// and returns the plan that makes the node match the spec. It reads files
// and never changes anything. Conflicts (a file hostprov did not write in
// the way, a symlinked drop-in directory) are in Plan.Conflicts, and
// Execute refuses a plan that has any; an error is returned only when the
// plan cannot be made at all (unreadable files, invalid names, a state for
// another unit directory).
func NewPlan(ctx context.Context, desired []compile.Unit, st *State, opts Options) (*Plan, error) {
	return replannable(opts, func(opts Options) (*Plan, error) { return newSpecPlan(ctx, desired, st, opts) })
}

// replannable makes a plan with plan, and lets Execute make it again from
// the same inputs with hooks held (Plan.replan) when a download fails.
func replannable(opts Options, plan func(Options) (*Plan, error)) (*Plan, error) {
	p, err := plan(opts)
	if err == nil {
		p.replan = func(hold map[hookKey]bool) (*Plan, error) {
			opts.hold = hold
			return plan(opts)
		}
	}
	return p, err
}

func newSpecPlan(ctx context.Context, desired []compile.Unit, st *State, opts Options) (*Plan, error) {
	seen := map[string]bool{}
	for _, u := range desired {
		if err := checkDesired(u, seen); err != nil {
			return nil, err
		}
	}
	return newPlan(ctx, desired, st, opts, rules{prune: func(su *StateUnit) string {
		if opts.NoPrune || seen[su.Name] {
			return ""
		}
		return "removed from the spec"
	}, prunePath: func(*PathState) string {
		if opts.NoPrune {
			return ""
		}
		return "removed from the spec"
	}, paths: opts.Paths, accounts: opts.Accounts})
}

// checkDesired refuses a unit whose name or drop-in names would leave the
// unit directory, or that seen holds already, and adds it to seen.
func checkDesired(u compile.Unit, seen map[string]bool) error {
	if err := checkUnitName(u.Name); err != nil {
		return err
	}
	if seen[u.Name] {
		return fmt.Errorf("unit %s is in the spec twice", u.Name)
	}
	seen[u.Name] = true
	for _, d := range u.Dropins {
		if err := checkDropinName(d.Name); err != nil {
			return fmt.Errorf("unit %s: %v", u.Name, err)
		}
	}
	return nil
}

// rules say what a plan does with the units of the state that it does not
// desire, and what it records of those it does.
type rules struct {
	// prune gives the reason to remove a unit of the state that is not
	// desired (the action log's "why"), or "" to keep it as it is.
	prune func(*StateUnit) string
	// others reports a kept unit of another spec set: keeping it does
	// not make the state's units any other than those of the inputs.
	others func(*StateUnit) bool
	// meta holds, by desired unit, its Set and Where.
	meta map[string]StateUnit
	// paths are the desired files, directories and links, and prunePath
	// gives the reason to remove a path of the state the spec does not
	// have, or "" to keep it.
	paths     []Path
	prunePath func(*PathState) string
	// accounts are the desired users and groups.
	accounts []Account
	// otherSet reports a spec set that is not among those applied.
	otherSet func(string) bool
	// owners are the owners of the sets applied (SpecSet.Owner), recorded
	// in the next state.
	owners map[string]string
}

// NewRemovePlan plans removing the owned units with the given unit or hook
// names (hostprov remove): stop, disable, delete their files, reload. Other
// units are left as they are. A name hostprov does not own is an error.
func NewRemovePlan(ctx context.Context, names []string, st *State, opts Options) (*Plan, error) {
	want := map[string]bool{}
	for _, n := range names {
		found := false
		for _, u := range st.Units {
			if u.Name == n || u.Hook == n {
				want[u.Name] = true
				found = true
			}
		}
		for _, sp := range st.Paths {
			found = found || sp.Hook == n
		}
		if !found {
			var owned []string
			for _, u := range st.Units {
				owned = append(owned, u.Name)
			}
			if len(owned) == 0 {
				return nil, fmt.Errorf("%s: hostprov owns no unit on this node", n)
			}
			return nil, fmt.Errorf("%s: not a unit or hook hostprov installed; it owns %s", n, strings.Join(owned, ", "))
		}
	}
	hooks := map[string]bool{}
	for _, u := range st.Units {
		if want[u.Name] && u.Hook != "" {
			hooks[u.Hook] = true
		}
	}
	for _, n := range names {
		hooks[n] = true
	}
	return newPlan(ctx, nil, st, opts, rules{prune: func(su *StateUnit) string {
		if !want[su.Name] {
			return ""
		}
		return "removed by hostprov remove"
	}, prunePath: func(sp *PathState) string {
		if !hooks[sp.Hook] {
			return ""
		}
		return "removed by hostprov remove"
	}})
}

// planner carries a plan being made.
type planner struct {
	*Plan
	// node is all the planner knows of the node: it only reads.
	node nodeView
	// keepStamps are the stamps that the node's unit files name after
	// the apply (node paths); stamps is the stamp directory, read once.
	keepStamps map[string]bool
	stamps     *stampDir
	// desired are the desired units by name.
	desired map[string]*compile.Unit
	// rewritten are the files of hooks the plan writes (node paths).
	rewritten map[string]bool
	// otherSet is rules.otherSet.
	otherSet func(string) bool
	// nodeUnits indexes the node's unit search path (see shadows); read
	// once a plan writes a unit file that hostprov does not own yet.
	nodeUnits map[string][]nodeEntry
}

// newPlan plans the desired units and, of the state's other units, removes
// those for which r.prune gives a reason (the action log's "why"), keeping
// the others as they are.
func newPlan(_ context.Context, desired []compile.Unit, st *State, opts Options, r rules) (*Plan, error) {
	opts.defaults()
	if st == nil {
		st = &State{Version: StateVersion}
	}
	if len(opts.hold) > 0 {
		desired, r = holdHooks(desired, st, opts, r)
	}
	prune := r.prune
	if st.UnitDir != "" && st.UnitDir != opts.UnitDir {
		return nil, fmt.Errorf("the state in %s records units in %s, not in %s: give --unit-dir %s, or another --state-dir for another unit directory",
			StatePath(opts.stateDir()), st.UnitDir, opts.UnitDir, st.UnitDir)
	}
	node, done, err := planNode(opts)
	if err != nil {
		return nil, err
	}
	defer done()
	p := &planner{
		Plan: &Plan{opts: opts, state: st, Files: []FileChange{}, Actions: []Action{}, Units: []UnitChange{},
			Warnings: node.permissions()},
		node: node,
	}
	next := &State{Version: StateVersion, UnitDir: opts.UnitDir}
	inSpec := map[string]bool{}
	p.desired = map[string]*compile.Unit{}
	for i := range desired {
		inSpec[desired[i].Name] = true
		p.desired[desired[i].Name] = &desired[i]
	}
	p.keepStamps = p.stampsKept(desired, inSpec, prune)
	for i := range desired {
		su, err := p.unit(&desired[i])
		if err != nil {
			return nil, err
		}
		if m, ok := r.meta[su.Name]; ok {
			su.Set, su.Where = m.Set, m.Where
		}
		next.Units = append(next.Units, su)
	}
	// The state's units are the inputs' only when none of another spec
	// stays; a remove plan (no desired units) leaves none recorded.
	// A held hook is not as the inputs say: the next apply renders
	// them again, and so tries the hook again.
	if desired != nil && len(opts.hold) == 0 {
		next.Inputs = opts.Inputs
	}
	for _, prev := range st.Units {
		if inSpec[prev.Name] {
			continue
		}
		why := prune(prev)
		if why == "" {
			next.Units = append(next.Units, prev.clone1())
			if r.others == nil || !r.others(prev) {
				next.Inputs = ""
			}
			continue
		}
		su, err := p.remove(prev, why)
		if err != nil {
			return nil, err
		}
		if su != nil {
			next.Units = append(next.Units, su)
		}
	}
	prunePath := r.prunePath
	if prunePath == nil {
		prunePath = func(*PathState) string { return "" }
	}
	p.otherSet = r.otherSet
	if err := p.planPaths(r.paths, r.accounts, next, prunePath); err != nil {
		return nil, err
	}
	// The owners the state records, and those of the sets applied; the
	// records of sets left with nothing go (usedSets).
	for _, rec := range st.Sets {
		next.Sets = append(next.Sets, &SetState{Name: rec.Name, Owner: rec.Owner})
	}
	for set, owner := range r.owners {
		next.recordOwner(set, owner)
	}
	next.Sets = next.usedSets()
	p.finish()
	p.next = next
	return p.Plan, nil
}

// stampsKept are the stamps that the node's unit files name after the
// apply: no such stamp is removed, even one whose name another unit's
// stamps share (stamp names keep only the plain characters of a unit
// name).
func (p *planner) stampsKept(desired []compile.Unit, inSpec map[string]bool, prune func(*StateUnit) string) map[string]bool {
	keep := map[string]bool{}
	for i := range desired {
		if s := stampOf(desired[i].Contents); s != "" && !desired[i].Mask {
			keep[s] = true
		}
	}
	for _, prev := range p.state.Units {
		if !inSpec[prev.Name] && prune(prev) == "" {
			if s := stampOf(p.current(prev.Name)); s != "" {
				keep[s] = true
			}
		}
	}
	return keep
}

// holdHooks takes the units and paths of the hooks opts holds out of
// desired and r.paths, and makes r keep (not prune) what the state records
// of them and the directories hostprov made for their paths: the plan then
// does nothing to a held hook, and the next state carries it over as the
// last apply left it, so that an apply once the hook can be applied again
// goes on from there.
func holdHooks(desired []compile.Unit, st *State, opts Options, r rules) ([]compile.Unit, rules) {
	heldUnits := map[string]bool{}
	var kept []compile.Unit
	for _, u := range desired {
		if opts.held(r.meta[u.Name].Set, u.HookName) {
			heldUnits[u.Name] = true
			continue
		}
		kept = append(kept, u)
	}
	if kept == nil && desired != nil {
		kept = []compile.Unit{}
	}
	heldPaths := map[string]bool{}
	var paths []Path
	for _, p := range r.paths {
		if opts.held(p.set, p.Hook) {
			heldPaths[p.Path] = true
			continue
		}
		paths = append(paths, p)
	}
	for _, sp := range st.Paths {
		if opts.held(sp.Set, sp.Hook) {
			heldPaths[sp.Path] = true
		}
	}
	prune, prunePath := r.prune, r.prunePath
	r.prune = func(su *StateUnit) string {
		if heldUnits[su.Name] || opts.held(su.Set, su.Hook) {
			return ""
		}
		return prune(su)
	}
	r.prunePath = func(sp *PathState) string {
		if heldPaths[sp.Path] {
			return ""
		}
		if sp.Parent {
			for hp := range heldPaths {
				if strings.HasPrefix(hp, sp.Path+"/") {
					return ""
				}
			}
		}
		if prunePath == nil {
			return ""
		}
		return prunePath(sp)
	}
	r.paths = paths
	return kept, r
}

// finish places the actions in execution order and adds the reload.
func (p *planner) finish() {
	reload := false
	nfiles := 0
	for _, f := range p.Files {
		if f.changesUnit() {
			nfiles++
		}
	}
	links := 0
	for _, a := range p.Actions {
		switch a.Kind {
		case ActEnable, ActDisable, ActMask, ActUnmask:
			links++
		}
	}
	for _, u := range p.state.Units {
		if u.Incomplete {
			reload = true
		}
	}
	if nfiles > 0 || links > 0 {
		reload = true
	}
	var acts []Action
	for phase := 0; phase <= 4; phase++ {
		if phase == ActReload.phase() {
			if reload && !p.opts.Offline {
				acts = append(acts, Action{Kind: ActReload, Reason: reloadReason(nfiles, links)})
			}
			continue
		}
		for _, a := range p.Actions {
			if a.Kind.phase() != phase {
				continue
			}
			if !p.opts.manages() && (a.Kind == ActStart || a.Kind == ActRestart || a.Kind == ActTryRestart) {
				continue
			}
			if p.opts.Offline && a.Kind == ActStop {
				continue
			}
			acts = append(acts, a)
		}
	}
	if acts == nil {
		acts = []Action{}
	}
	p.Actions = acts
}

func reloadReason(files, links int) string {
	var parts []string
	if files > 0 {
		parts = append(parts, plural(files, "file")+" changed")
	}
	if links > 0 {
		parts = append(parts, plural(links, "enable/disable/mask action"))
	}
	if len(parts) == 0 {
		return "an earlier apply did not finish"
	}
	return strings.Join(parts, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
