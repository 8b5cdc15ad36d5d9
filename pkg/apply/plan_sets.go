package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// SpecSet is one spec of a node that holds several, each owning its
// units: the state records the set of every unit, and a plan of some sets
// prunes, restarts and reports only what is theirs.
type SpecSet struct {
	// Name names the set: the spec's metadata.name, or the name of its
	// file (see hooks.CheckSetName).
	Name string
	// Units are the set's units, as compile.Build makes them; their Pos
	// says where each hook is, for messages, and their HookName is what
	// the state records and status shows.
	Units []compile.Unit
	// Paths are the files, directories and links of the set's hooks,
	// and Accounts their users and groups.
	Paths    []Path
	Accounts []Account
	// Owner says who applies the set: "" for the node's own specs
	// (hostprov apply), or the name of another applier (the Kubernetes
	// agent's sets are "agent"). The state records it (State.Sets), and a
	// set of the state is applied or pruned only by its owner: the name of
	// a set alone does not say whose it is.
	Owner string
}

// ownerName names an owner of spec sets in messages.
func ownerName(owner string) string {
	if owner == "" {
		return "the node's own specs"
	}
	return "the " + owner
}

// NewPlanSets plans the spec sets of one apply together, with at most one
// reload for them all. Each set owns the units it installs:
//
//   - a unit of the state that one of sets owns and its spec no longer
//     has is pruned (unless NoPrune); a unit of a set that is not among
//     sets is left as it is, files, links and running state, and not
//     reported, unless its set was last applied from a file in
//     opts.SpecDir that is gone: then it is pruned too;
//   - a unit that another set owns (one not among sets) is a conflict that
//     names both places, and nothing of the plan may be applied;
//   - a unit recorded before spec sets existed (no set in the state; the
//     node then had one spec) belongs to the apply: a set that has it
//     takes it over, and one that none has is pruned as before;
//   - a set of the state whose recorded owner is not the owner of the set
//     of that name among sets (SpecSet.Owner) is a conflict at each of its
//     units and paths: it is neither applied nor pruned.
//
// Two sets of one apply with the same unit is an error: the caller reads
// the specs and reports that at both hooks first.
func NewPlanSets(ctx context.Context, sets []SpecSet, st *State, opts Options) (*Plan, error) {
	return replannable(opts, func(opts Options) (*Plan, error) { return newPlanSets(ctx, sets, st, opts) })
}

func newPlanSets(ctx context.Context, sets []SpecSet, st *State, opts Options) (*Plan, error) {
	if st == nil {
		st = &State{Version: StateVersion}
	}
	sets, conflicts, err := ownedSets(sets, st, opts)
	if err != nil {
		return nil, err
	}
	applying := map[string]bool{}
	owners := map[string]string{}
	for _, s := range sets {
		applying[s.Name] = true
		owners[s.Name] = s.Owner
	}
	var paths []Path
	var accounts []Account
	for _, s := range sets {
		for _, sp := range s.Paths {
			sp.set = s.Name
			paths = append(paths, sp)
		}
		for _, a := range s.Accounts {
			a.set = s.Name
			accounts = append(accounts, a)
		}
	}
	// The sets last applied from a file of SpecDir that is gone: their
	// paths go with their units.
	gone := map[string]bool{}
	for _, su := range st.Units {
		if opts.SpecDir != "" && su.Set != "" && !applying[su.Set] && inDir(su.Where, opts.SpecDir) {
			gone[su.Set] = true
		}
	}
	seen := map[string]bool{}
	owner := map[string]compile.Unit{}
	meta := map[string]StateUnit{}
	var desired []compile.Unit
	for _, s := range sets {
		for _, u := range s.Units {
			if o, dup := owner[u.Name]; dup {
				return nil, fmt.Errorf("unit %s is claimed by spec sets %s (%s) and %s (%s): a unit belongs to one set",
					u.Name, meta[o.Name].Set, o.Pos, s.Name, u.Pos)
			}
			if err := checkDesired(u, seen); err != nil {
				return nil, err
			}
			owner[u.Name] = u
			if prev := st.Unit(u.Name); prev != nil && prev.Set != "" && prev.Set != s.Name && !applying[prev.Set] {
				conflicts = append(conflicts, Problem{Unit: u.Name, Path: opts.nodePath(u.Name),
					Message: fmt.Sprintf("spec set %s claims it at %s, but spec set %s owns it (its hook at %s, as last applied): a unit belongs to one set; remove the hook from one of them",
						s.Name, u.Pos, prev.Set, orDash(prev.Where))})
				continue
			}
			desired = append(desired, u)
			meta[u.Name] = StateUnit{Set: s.Name, Where: u.Pos.String()}
		}
	}
	p, err := newPlan(ctx, desired, st, opts, rules{
		prune: func(su *StateUnit) string {
			switch {
			case seen[su.Name] || opts.NoPrune:
				return ""
			case su.Set == "" || applying[su.Set]:
				return "removed from the spec"
			case opts.SpecDir != "" && inDir(su.Where, opts.SpecDir):
				return "its spec set " + su.Set + " is gone from " + opts.SpecDir
			}
			return ""
		},
		others: func(su *StateUnit) bool { return su.Set != "" && !applying[su.Set] },
		meta:   meta,
		prunePath: func(sp *PathState) string {
			switch {
			case opts.NoPrune:
				return ""
			case sp.Set == "" || applying[sp.Set]:
				return "removed from the spec"
			case opts.SpecDir != "" && gone[sp.Set]:
				return "its spec set " + sp.Set + " is gone from " + opts.SpecDir
			}
			return ""
		},
		paths:    paths,
		accounts: accounts,
		otherSet: func(set string) bool { return set != "" && !applying[set] },
		owners:   owners,
	})
	if err != nil {
		return nil, err
	}
	p.Conflicts = append(p.Conflicts, conflicts...)
	return p, nil
}

// ownedSets checks the names of sets and returns those the state does not
// record as another owner's, with the conflicts of the others: those are
// not applied, and their units and paths are left as they are, neither
// taken over nor pruned.
func ownedSets(sets []SpecSet, st *State, opts Options) ([]SpecSet, []Problem, error) {
	named := map[string]bool{}
	var conflicts []Problem
	var owned []SpecSet
	for _, s := range sets {
		if err := hooks.CheckSetName(s.Name); err != nil {
			return nil, nil, err
		}
		if named[s.Name] {
			return nil, nil, fmt.Errorf("spec set %s is given twice: each spec of a node needs its own metadata.name", s.Name)
		}
		named[s.Name] = true
		if owner, recorded := st.SetOwner(s.Name); recorded && owner != s.Owner {
			conflicts = append(conflicts, ownerConflicts(s, st, owner, opts)...)
			continue
		}
		owned = append(owned, s)
	}
	return owned, conflicts, nil
}

// ownerConflicts are the conflicts of set s, which the state records as
// owner's: one at each of its units and paths, of the state and of s.
func ownerConflicts(s SpecSet, st *State, owner string, opts Options) []Problem {
	msg := fmt.Sprintf("spec set %s belongs to %s on this node (the state records it so), and %s may not apply or remove it",
		s.Name, ownerName(owner), ownerName(s.Owner))
	fix := &Fix{Spec: "give the spec another metadata.name"}
	var out []Problem
	seen := map[string]bool{}
	add := func(pr Problem) {
		if key := pr.Unit + "\x00" + pr.Path; !seen[key] {
			seen[key] = true
			pr.Fix = fix
			out = append(out, pr)
		}
	}
	for _, u := range st.Units {
		if u.Set == s.Name {
			add(Problem{Unit: u.Name, Path: opts.nodePath(u.Name), Message: msg})
		}
	}
	for _, u := range s.Units {
		add(Problem{Unit: u.Name, Path: opts.nodePath(u.Name), Message: msg + " (its hook at " + u.Pos.String() + ")"})
	}
	for _, sp := range st.Paths {
		if sp.Set == s.Name {
			add(Problem{Unit: sp.Hook, Path: sp.Path, Message: msg})
		}
	}
	for _, sp := range s.Paths {
		add(Problem{Unit: sp.Hook, Path: sp.Path, Message: msg})
	}
	if len(out) == 0 {
		add(Problem{Message: msg})
	}
	return out
}

// inDir reports whether the file of a hook's place ("FILE:LINE:COL") is
// directly in dir.
func inDir(where, dir string) bool {
	file := where
	for range 2 {
		if i := strings.LastIndexByte(file, ':'); i >= 0 {
			file = file[:i]
		}
	}
	return file != "" && filepath.Clean(filepath.Dir(file)) == filepath.Clean(dir)
}
