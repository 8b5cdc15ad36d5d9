package apply

import "context"

// NewPlanFromState returns the plan NewPlan would make for the units of the
// last apply, without those units: it is for a re-apply whose inputs
// (Options.Inputs) are the ones the state records, and saves rendering the
// spec again, which costs several times more than reading the unit files.
//
// It holds only when the last apply recorded those inputs (it finished what
// it planned and kept no unit of another spec), no unit is marked
// incomplete or failed (whose start NewPlan retries), no drop-in directory is in doubt, every file the state
// records is on disk with the bytes hostprov wrote, and nothing has taken
// the place of a masked unit. The units the inputs make are then the
// state's, file for file, and the plan is NewPlan's: no changes and no
// actions. ok is false when anything of this does not hold, and the caller
// renders the units and calls NewPlan, which finds what differs and says
// why.
func NewPlanFromState(_ context.Context, st *State, opts Options) (p *Plan, ok bool, err error) {
	opts.defaults()
	// Files, directories and links a hook places are compared by NewPlan.
	if st == nil || opts.Inputs == "" || st.Inputs != opts.Inputs || st.UnitDir != opts.UnitDir || len(st.Paths) > 0 || len(opts.Paths) > 0 {
		return nil, false, nil
	}
	node, done, err := planNode(opts)
	if err != nil {
		return nil, false, err
	}
	defer done()
	p = &Plan{opts: opts, state: st, next: st.clone(), Files: []FileChange{}, Actions: []Action{},
		Units: make([]UnitChange, 0, len(st.Units)), Warnings: node.permissions()}
	for _, u := range st.Units {
		if u.Incomplete || u.Failed {
			return nil, false, nil
		}
		for _, f := range u.Files {
			cur, err := node.unitFile(f.Path)
			if err != nil {
				return nil, false, err
			}
			if f.Next != "" || !cur.exists || cur.isLink || cur.bad != "" || cur.hash != f.SHA256 || cur.ino != f.Inode {
				return nil, false, nil
			}
			p.Files = append(p.Files, FileChange{Unit: u.Name, Path: opts.nodePath(f.Path), Op: OpUnchanged,
				OldSHA256: cur.hash, NewSHA256: cur.hash, Old: cur.data, New: cur.data, rel: f.Path})
		}
		if u.Masked {
			// NewPlan's checkMask: a file in the place of the mask
			// link is a conflict.
			cur, err := node.unitFile(u.Name)
			if err != nil {
				return nil, false, err
			}
			if cur.exists && !(cur.isLink && cur.link == "/dev/null") {
				return nil, false, nil
			}
		}
		p.Units = append(p.Units, UnitChange{Unit: u.Name, Hook: u.Hook, Change: "none"})
	}
	return p, true, nil
}
