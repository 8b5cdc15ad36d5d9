package apply

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// pathChange is what a plan knows of a path beyond its FileChange.
type pathChange struct {
	want   *Path
	owner  *fsutil.Owner
	mode   fs.FileMode
	parent bool       // a missing parent directory
	done   *PathState // its state after the apply (the plan's next)
	// pendingUser and pendingGroup name an owner that the accounts of
	// the same apply create, whose id systemd-sysusers picks: owner
	// gets it once systemd-sysusers ran.
	pendingUser, pendingGroup string
	// first marks a sysusers.d file or a directory it is in: placed
	// before systemd-sysusers runs.
	first bool
}

// pathOrder is the paths a plan places, in the order it places them.
type pathOrder struct {
	wanted  map[string]*Path // the desired paths by node path
	parents map[string]bool  // missing parents that no hook names
	first   map[string]bool  // sysusers.d files and the directories they are in
	order   []string
}

// planPaths plans the desired paths and the pruning of the state's others,
// after the units. prune gives the reason to remove a path of the state
// that is not desired, or "" to keep it.
func (p *planner) planPaths(desired []Path, accounts []Account, next *State, prune func(*PathState) string) error {
	desired = append(accountPaths(accounts), desired...)
	if len(desired) == 0 && len(p.state.Paths) == 0 {
		return nil
	}
	acc, err := p.node.accounts(slices.ContainsFunc(accounts, func(a Account) bool { return a.PasswordHash != "" }))
	if err != nil {
		return err
	}
	keys, problems := keyPaths(accounts, acc)
	desired = append(desired, keys...)
	p.Conflicts = append(p.Conflicts, problems...)
	p.checkSysusers(accounts)
	po, err := p.orderPaths(desired)
	if err != nil {
		return err
	}
	changed := map[string][]string{} // hook -> paths changed
	p.rewritten = map[string]bool{}
	for _, np := range po.order {
		if err := p.planWanted(po, np, acc, accounts, next, changed); err != nil {
			return err
		}
	}
	if err := p.prunePaths(po, next, prune); err != nil {
		return err
	}
	p.restartFor(changed)
	p.planAccounts(accounts, acc)
	return nil
}

// checkSysusers makes a conflict of a spec with accounts for a node with
// no systemd-sysusers. With Tools the node's own systemd-sysusers runs,
// and the node must have one; this machine's (a container's) is none of
// its business.
func (p *planner) checkSysusers(accounts []Account) {
	if len(accounts) == 0 {
		return
	}
	if _, err := p.node.findTool(sysusersCommand); err != nil {
		machine := "this machine has none"
		if p.opts.Tools != nil {
			machine = "the node has none"
		}
		p.Conflicts = append(p.Conflicts, Problem{Unit: hookOr(&Path{Hook: accounts[0].Hook}), Path: SysusersConfig(accounts[0].set),
			Message: fmt.Sprintf("%s: the spec has users or groups, which hostprov creates with systemd-sysusers, and %s (%v): install systemd's sysusers, or create the accounts in the image", orDash(accounts[0].Where), machine, err)})
	}
}

// orderPaths checks the desired paths and orders them with the parents
// they need.
func (p *planner) orderPaths(desired []Path) (*pathOrder, error) {
	po := &pathOrder{wanted: map[string]*Path{}, parents: map[string]bool{}, first: map[string]bool{}}
	wanted := po.wanted
	for i := range desired {
		d := &desired[i]
		if err := checkNodePath(d.Path, p.opts); err != nil {
			return nil, fmt.Errorf("%shook %s: %v", at(d.Where), d.Hook, err)
		}
		if o := wanted[d.Path]; o != nil {
			return nil, fmt.Errorf("%s%s is placed by hook %s (%s) and by hook %s: a path belongs to one hook", at(d.Where), d.Path, o.Hook, orDash(o.Where), d.Hook)
		}
		wanted[d.Path] = d
		po.order = append(po.order, d.Path)
	}
	// Parents a path needs that no hook names: made 0755 root, and
	// recorded so that pruning takes them away again.
	for _, d := range desired {
		missing, err := p.node.missingParents(d.Path)
		if err != nil {
			return nil, err
		}
		for _, m := range missing {
			if wanted[m] == nil && !po.parents[m] {
				po.parents[m] = true
				po.order = append(po.order, m)
			}
		}
	}
	// Parents before what is in them, so that Execute can make them in
	// order; a parent of an earlier apply that is still needed stays.
	for _, sp := range p.state.Paths {
		if sp.Parent && wanted[sp.Path] == nil && !po.parents[sp.Path] && p.needed(sp.Path, wanted) {
			po.parents[sp.Path] = true
			po.order = append(po.order, sp.Path)
		}
	}
	// The sysusers.d files and the directories they need first, so that
	// systemd-sysusers runs before any path is given to an account it
	// creates. Then directories, parents before what is in them; then
	// files; then links, a hard link after the file it links to.
	for _, d := range desired {
		if d.sysusers {
			for q := d.Path; q != "/"; q = path.Dir(q) {
				po.first[q] = true
			}
		}
	}
	rank := func(np string) int {
		if po.first[np] {
			return -1
		}
		if w := wanted[np]; w != nil && w.Kind == KindFile {
			return 1
		} else if w != nil && w.Kind == KindLink {
			return 2
		}
		return 0
	}
	sort.SliceStable(po.order, func(i, j int) bool {
		if ri, rj := rank(po.order[i]), rank(po.order[j]); ri != rj {
			return ri < rj
		}
		return depth(po.order[i]) < depth(po.order[j])
	})
	return po, nil
}

// planWanted plans the path np of the order, and records its state in
// next and, when it changes, its hook in changed.
func (p *planner) planWanted(po *pathOrder, np string, acc *accounts, accounts []Account, next *State, changed map[string][]string) error {
	want := po.wanted[np]
	if want == nil {
		want = &Path{Kind: KindDirectory, Path: np, Mode: 0o755}
	}
	pc := &pathChange{want: want, parent: po.wanted[np] == nil, mode: want.mode()}
	uid, pendingUser, err := ownerID(acc, accounts, want.User, true)
	if err != nil {
		return fmt.Errorf("%shook %s: %s: %v", at(want.Where), want.Hook, np, err)
	}
	gid, pendingGroup, err := ownerID(acc, accounts, want.Group, false)
	if err != nil {
		return fmt.Errorf("%shook %s: %s: %v", at(want.Where), want.Hook, np, err)
	}
	if (pendingUser != "" || pendingGroup != "") && po.first[np] {
		return fmt.Errorf("%shook %s: %s is to be owned by an account this apply creates, but the sysusers.d file that creates it is below it: give the owner a numeric id, or create the account first",
			at(want.Where), want.Hook, np)
	}
	pc.owner = &fsutil.Owner{UID: uid, GID: gid}
	pc.pendingUser, pc.pendingGroup = pendingUser, pendingGroup
	pc.first = po.first[np]
	fc, sp, err := p.planPath(pc)
	if err != nil {
		return err
	}
	p.Files = append(p.Files, fc)
	if sp != nil {
		sp.Set = want.set
		next.Paths = append(next.Paths, sp)
		pc.done = sp
	}
	if fc.changes() && want.Kind == KindFile {
		p.rewritten[np] = true
	}
	if fc.changes() && want.Hook != "" {
		changed[want.Hook] = append(changed[want.Hook], np)
	}
	return nil
}

// prunePaths plans the state's paths the spec no longer has: deepest
// first, so that a directory is empty when its turn comes.
func (p *planner) prunePaths(po *pathOrder, next *State, prune func(*PathState) string) error {
	var gone []*PathState
	whys := map[*PathState]string{}
	for _, sp := range p.state.Paths {
		if po.wanted[sp.Path] != nil || po.parents[sp.Path] {
			continue
		}
		why := prune(sp)
		if sp.Parent && why == "" && !p.needed(sp.Path, po.wanted) && !p.keptBelow(sp.Path, prune) {
			why = "no path below it is placed any more"
		}
		if why == "" {
			next.Paths = append(next.Paths, cloneStatePath(sp))
			continue
		}
		gone = append(gone, sp)
		whys[sp] = why
	}
	sort.SliceStable(gone, func(i, j int) bool { return depth(gone[i].Path) > depth(gone[j].Path) })
	removing := map[string]bool{}
	for _, sp := range gone {
		fc, keep, err := p.prunePath(sp, whys[sp], removing)
		if err != nil {
			return err
		}
		if fc != nil {
			p.Files = append(p.Files, *fc)
			if fc.Op == OpRemove {
				removing[sp.Path] = true
			}
		}
		if keep {
			next.Paths = append(next.Paths, cloneStatePath(sp))
		}
	}
	return nil
}

// ownerText is the owner as the plan shows it, "UID:GID", with the name
// of an owner whose id systemd-sysusers has yet to pick.
func (pc *pathChange) ownerText() string {
	u, g := strconv.Itoa(pc.owner.UID), strconv.Itoa(pc.owner.GID)
	if pc.pendingUser != "" {
		u = pc.pendingUser + "(new)"
	}
	if pc.pendingGroup != "" {
		g = pc.pendingGroup + "(new)"
	}
	return u + ":" + g
}

// ownerID resolves the owner of a path: on the node, or, for a name the
// node lacks, from the account of this apply that creates it. When that
// account's id is left to systemd-sysusers, the name is returned as
// pending, and the id is -1, which no file on disk has.
func ownerID(acc *accounts, accounts []Account, name string, user bool) (int, string, error) {
	id, err := acc.id(name, user)
	if err == nil {
		return id, "", nil
	}
	a := createdBy(accounts, name, user)
	if a == nil {
		return 0, "", err
	}
	if a.ID != nil && (a.Kind == KindUser) == user {
		return int(*a.ID), "", nil
	}
	return -1, name, nil
}

// needed reports whether a wanted path is below dir.
func (p *planner) needed(dir string, wanted map[string]*Path) bool {
	for w := range wanted {
		if strings.HasPrefix(w, dir+"/") {
			return true
		}
	}
	return false
}

// keptBelow reports whether a path of the state below dir stays.
func (p *planner) keptBelow(dir string, prune func(*PathState) string) bool {
	for _, sp := range p.state.Paths {
		if strings.HasPrefix(sp.Path, dir+"/") && !sp.Parent && prune(sp) == "" {
			return true
		}
	}
	return false
}

func depth(p string) int { return strings.Count(p, "/") }

func cloneStatePath(sp *PathState) *PathState {
	c := *sp
	return &c
}

// prunePath plans removing a path of the state. keep reports that it stays
// recorded (left alone with a warning); fc is nil when it is gone already
// or is only forgotten.
func (p *planner) prunePath(sp *PathState, why string, removing map[string]bool) (*FileChange, bool, error) {
	fc := &FileChange{Hook: sp.Hook, Path: sp.Path, Kind: sp.Kind, Target: sp.Target, Op: OpRemove, Reason: why, parentDir: sp.Parent}
	if sp.Existed {
		// Forgotten, left in place: see PathState.Existed.
		fc.Op, fc.Reason = OpKeep, why+"; left in place, as it was there before hostprov took it over"
		return fc, false, nil
	}
	cur, err := p.node.path(sp.Path)
	if err != nil {
		return nil, false, err
	}
	if cur.bad != "" {
		fc.Op, fc.Reason = OpKeep, cur.bad
		p.Warnings = append(p.Warnings, Problem{Unit: hookOr(&Path{Hook: sp.Hook}), Path: sp.Path, Message: "not removed: " + cur.bad})
		return fc, true, nil
	}
	if !cur.exists {
		return nil, false, nil
	}
	fc.Old, fc.OldSHA256, fc.OldLink, fc.oldIno = cur.data, cur.hash, cur.link, cur.st.Ino
	var mine bool
	switch sp.Kind {
	case KindFile:
		mine = cur.isFile() && sp.owns(cur.hash) && cur.st.Ino != 0 &&
			(cur.hash == sp.SHA256 && cur.st.Ino == sp.Inode || cur.hash == sp.Next && cur.st.Ino == sp.NextInode)
	case KindLink:
		mine = cur.st.Ino == sp.Inode && sp.Inode != 0 && (sp.Hard || cur.isLink() && cur.link == sp.Target)
	case KindDirectory:
		mine = cur.isDir() && cur.st.Ino == sp.Inode && sp.Inode != 0
		if mine {
			empty, err := p.emptyBut(sp.Path, removing)
			if err != nil {
				return nil, false, err
			}
			if !empty {
				// Kept and recorded: it goes once what is in it
				// does (a drifted file of hostprov's, say).
				fc.Op, fc.Reason = OpKeep, why+"; not empty, so left in place"
				return fc, true, nil
			}
		}
	}
	if mine {
		return fc, false, nil
	}
	if p.opts.Force && sp.Kind != KindDirectory {
		fc.Drift, fc.Reason = true, why+"; changed since hostprov placed it (--force)"
		return fc, false, nil
	}
	fc.Op, fc.Drift = OpKeep, true
	fc.Reason = "changed since hostprov placed it (drift); left alone: remove it by hand, or run with --force to remove it"
	p.Warnings = append(p.Warnings, Problem{Unit: hookOr(&Path{Hook: sp.Hook}), Path: sp.Path, Message: fc.Reason})
	return fc, true, nil
}

// emptyBut reports whether the node directory dir holds nothing but
// entries the plan removes.
func (p *planner) emptyBut(dir string, removing map[string]bool) (bool, error) {
	names, err := p.node.dirNames(dir)
	if err != nil {
		return false, err
	}
	for _, name := range names {
		if !removing[path.Join(dir, name)] {
			return false, nil
		}
	}
	return true, nil
}

// restartFor restarts the units of every hook a changed path belongs to,
// which read it: a service does not see a new config file until it
// restarts. Units started or restarted anyway, masked or disabled ones,
// are left as planned.
func (p *planner) restartFor(changed map[string][]string) {
	if len(changed) == 0 {
		return
	}
	for i := range p.Units {
		uc := &p.Units[i]
		paths := changed[uc.Hook]
		if len(paths) == 0 || uc.Change == "remove" {
			continue
		}
		d := p.desired[uc.Unit]
		if d == nil || d.Mask || d.Enabled != nil && !*d.Enabled {
			continue
		}
		run := runName(d.Name, d.Contents)
		if run == "" || slices.ContainsFunc(p.Actions, func(a Action) bool {
			return a.Unit == run && (a.Kind == ActStart || a.Kind == ActRestart || a.Kind == ActTryRestart || a.Kind == ActStop)
		}) {
			continue
		}
		kind := ActRestart
		if d.Enabled == nil {
			kind = ActTryRestart
		}
		p.Actions = append(p.Actions, Action{Kind: kind, Unit: run, Reason: "a file of its hook changed: " + strings.Join(paths, ", ")})
		if uc.Change == "none" {
			uc.Change = "change"
		}
	}
}
