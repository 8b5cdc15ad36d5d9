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

// planPaths plans the desired paths and the pruning of the state's others,
// after the units. prune gives the reason to remove a path of the state
// that is not desired, or "" to keep it.
func (p *planner) planPaths(desired []Path, accounts []Account, next *State, prune func(*PathState) string) error {
	desired = append(accountPaths(accounts), desired...)
	if len(desired) == 0 && len(p.state.Paths) == 0 {
		return nil
	}
	n := newNodeFS(p.opts)
	acc, err := readAccounts(n)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(accounts, func(a Account) bool { return a.PasswordHash != "" }) {
		acc.readShadow(n)
	}
	keys, problems := keyPaths(accounts, acc)
	desired = append(desired, keys...)
	p.Conflicts = append(p.Conflicts, problems...)
	if len(accounts) > 0 {
		// With Tools the node's own systemd-sysusers runs, and the
		// node must have one; this machine's (a container's) is none
		// of its business.
		if _, err := p.opts.tool(sysusersCommand); err != nil {
			machine := "this machine has none"
			if p.opts.Tools != nil {
				machine = "the node has none"
			}
			p.Conflicts = append(p.Conflicts, Problem{Unit: hookOr(&Path{Hook: accounts[0].Hook}), Path: SysusersConfig(accounts[0].set),
				Message: fmt.Sprintf("%s: the spec has users or groups, which hostprov creates with systemd-sysusers, and %s (%v): install systemd's sysusers, or create the accounts in the image", orDash(accounts[0].Where), machine, err)})
		}
	}
	wanted := map[string]*Path{}
	var order []string
	for i := range desired {
		d := &desired[i]
		if err := checkNodePath(d.Path, p.opts); err != nil {
			return fmt.Errorf("%shook %s: %v", at(d.Where), d.Hook, err)
		}
		if o := wanted[d.Path]; o != nil {
			return fmt.Errorf("%s%s is placed by hook %s (%s) and by hook %s: a path belongs to one hook", at(d.Where), d.Path, o.Hook, orDash(o.Where), d.Hook)
		}
		wanted[d.Path] = d
		order = append(order, d.Path)
	}
	// Parents a path needs that no hook names: made 0755 root, and
	// recorded so that pruning takes them away again.
	parents := map[string]bool{}
	for _, d := range desired {
		w, err := n.walk(d.Path)
		if err != nil {
			return err
		}
		if w.dir != nil {
			w.dir.Close()
		}
		for _, m := range w.missing {
			if wanted[m] == nil && !parents[m] {
				parents[m] = true
				order = append(order, m)
			}
		}
	}
	// Parents before what is in them, so that Execute can make them in
	// order; a parent of an earlier apply that is still needed stays.
	for _, sp := range p.state.Paths {
		if sp.Parent && wanted[sp.Path] == nil && !parents[sp.Path] && p.needed(sp.Path, wanted) {
			parents[sp.Path] = true
			order = append(order, sp.Path)
		}
	}
	// The sysusers.d files and the directories they need first, so that
	// systemd-sysusers runs before any path is given to an account it
	// creates. Then directories, parents before what is in them; then
	// files; then links, a hard link after the file it links to.
	first := map[string]bool{}
	for _, d := range desired {
		if d.sysusers {
			for q := d.Path; q != "/"; q = path.Dir(q) {
				first[q] = true
			}
		}
	}
	rank := func(np string) int {
		if first[np] {
			return -1
		}
		if w := wanted[np]; w != nil && w.Kind == KindFile {
			return 1
		} else if w != nil && w.Kind == KindLink {
			return 2
		}
		return 0
	}
	sort.SliceStable(order, func(i, j int) bool {
		if ri, rj := rank(order[i]), rank(order[j]); ri != rj {
			return ri < rj
		}
		return depth(order[i]) < depth(order[j])
	})
	changed := map[string][]string{} // hook -> paths changed
	p.rewritten = map[string]bool{}
	for _, np := range order {
		want := wanted[np]
		if want == nil {
			want = &Path{Kind: KindDirectory, Path: np, Mode: 0o755}
		}
		pc := &pathChange{want: want, parent: wanted[np] == nil, mode: want.mode()}
		uid, pendingUser, err := ownerID(acc, accounts, want.User, true)
		if err != nil {
			return fmt.Errorf("%shook %s: %s: %v", at(want.Where), want.Hook, np, err)
		}
		gid, pendingGroup, err := ownerID(acc, accounts, want.Group, false)
		if err != nil {
			return fmt.Errorf("%shook %s: %s: %v", at(want.Where), want.Hook, np, err)
		}
		if (pendingUser != "" || pendingGroup != "") && first[np] {
			return fmt.Errorf("%shook %s: %s is to be owned by an account this apply creates, but the sysusers.d file that creates it is below it: give the owner a numeric id, or create the account first",
				at(want.Where), want.Hook, np)
		}
		pc.owner = &fsutil.Owner{UID: uid, GID: gid}
		pc.pendingUser, pc.pendingGroup = pendingUser, pendingGroup
		pc.first = first[np]
		fc, sp, err := p.planPath(n, pc)
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
	}
	// The state's paths the spec no longer has: deepest first, so that
	// a directory is empty when its turn comes.
	var gone []*PathState
	whys := map[*PathState]string{}
	for _, sp := range p.state.Paths {
		if wanted[sp.Path] != nil || parents[sp.Path] {
			continue
		}
		why := prune(sp)
		if sp.Parent && why == "" && !p.needed(sp.Path, wanted) && !p.keptBelow(sp.Path, prune) {
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
		fc, keep, err := p.prunePath(n, sp, whys[sp], removing)
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
	p.restartFor(changed)
	p.planAccounts(accounts, acc)
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

// planPath plans one wanted path and returns its FileChange and its state
// after the apply (nil when the plan cannot be applied).
func (p *planner) planPath(n nodeFS, pc *pathChange) (FileChange, *PathState, error) {
	want := pc.want
	fc := FileChange{Hook: want.Hook, Path: want.Path, Kind: want.Kind, Mode: fmt.Sprintf("%04o", modeNum(pc.mode)),
		Owner: pc.ownerText(), Target: want.Target, Source: want.Source, path: pc, parentDir: pc.parent}
	if want.Kind == KindLink {
		// A link has no mode of its own, and an owner only when the
		// spec gives a symbolic link one.
		fc.Mode = ""
		if want.Hard || want.User == "" && want.Group == "" {
			fc.Owner = ""
		}
	}
	prev := p.state.Path(want.Path)
	conflict := func(why string) (FileChange, *PathState, error) {
		fc.Op, fc.Reason = OpKeep, why
		p.Conflicts = append(p.Conflicts, Problem{Unit: hookOr(want), Path: want.Path, Message: why})
		return fc, nil, nil
	}
	// notPlaced is the conflict of something hostprov did not place
	// where the spec puts a file, directory or link.
	notPlaced := func(why string) (FileChange, *PathState, error) {
		fc, ps, err := conflict(why)
		p.Conflicts[len(p.Conflicts)-1].Fix = &Fix{Manual: "move it away", Spec: "set overwrite: true on it",
			Flag: "--adopt", Does: "to replace it"}
		return fc, ps, err
	}
	keep := func(why string) (FileChange, *PathState, error) {
		fc.Op, fc.Drift, fc.Reason = OpKeep, true, why
		p.Warnings = append(p.Warnings, Problem{Unit: hookOr(want), Path: want.Path, Message: why})
		c := cloneStatePath(prev)
		c.Hook = want.Hook
		return fc, c, nil
	}
	if want.Kind == KindFile {
		if want.Contents != nil {
			fc.New, fc.NewSHA256 = want.Contents, hashOf(want.Contents)
		} else {
			if !strings.HasPrefix(want.Source, "https://") && !strings.HasPrefix(want.Source, "http://") {
				return conflict(sourceHint(want.Source))
			}
			if algo, hex, ok := strings.Cut(want.Hash, "-"); ok && algo == "sha256" {
				fc.NewSHA256 = hex
			}
		}
	}
	w, err := n.walk(want.Path)
	if err != nil {
		return fc, nil, err
	}
	var cur onDisk
	if w.dir != nil {
		cur, err = look(w.dir, path.Base(want.Path))
		w.dir.Close()
		if err != nil {
			return fc, nil, err
		}
	}
	if w.bad != "" {
		return conflict(w.bad)
	}
	if prev != nil && prev.Kind != want.Kind && !(prev.Parent && want.Kind == KindDirectory) {
		return conflict(fmt.Sprintf("hostprov placed a %s here, and the spec now has a %s: apply the spec without this entry once (which removes the %s), then with it",
			prev.Kind, want.Kind, prev.Kind))
	}
	if prev != nil && p.otherSet != nil && p.otherSet(prev.Set) {
		return conflict(fmt.Sprintf("spec set %s places it (hook %s, %s), but spec set %s owns it (hook %s, as last applied): a path belongs to one set; remove it from one of them",
			orDash(want.set), want.Hook, orDash(want.Where), prev.Set, orDash(prev.Hook)))
	}
	fc.Old, fc.OldSHA256, fc.OldLink, fc.oldIno = cur.data, cur.hash, cur.link, cur.st.Ino
	done := &PathState{Path: want.Path, Kind: want.Kind, Hook: want.Hook, Parent: pc.parent, Target: want.Target, Hard: want.Hard}
	if prev != nil {
		done.Existed, done.PriorSHA256 = prev.Existed, prev.PriorSHA256
	}
	metaOK := cur.exists && cur.st.UID == pc.owner.UID && cur.st.GID == pc.owner.GID &&
		cur.st.Mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == pc.mode
	mayReplace := want.Overwrite || p.opts.Adopt
	adopt := func(reason string) {
		done.Existed = true
		if cur.isFile() {
			done.PriorSHA256 = cur.hash
		}
		fc.Reason = reason
	}
	switch want.Kind {
	case KindDirectory:
		switch {
		case !cur.exists:
			fc.Op, fc.Reason = OpAdd, "new"
			if pc.parent {
				fc.Reason = "new, for what is placed in it"
			}
			if prev != nil {
				fc.Reason = "missing on disk"
			}
		case !cur.isDir():
			if prev != nil {
				return keep(fmt.Sprintf("hostprov made this directory, but it is now a %s; left alone: move it away", describe(cur)))
			}
			return conflict(fmt.Sprintf("a %s that hostprov did not place is where the spec puts a directory; move it away", describe(cur)))
		case metaOK:
			fc.Op = OpUnchanged
			done.Inode = cur.st.Ino
			if prev == nil {
				adopt("exists already")
			}
		default:
			fc.Op, fc.Reason = OpChange, "mode or owner differs from the spec"
			done.Inode = cur.st.Ino
			if prev == nil {
				adopt("exists already; mode and owner set as the spec says")
			}
		}
		return fc, done, nil
	case KindLink:
		if want.Hard {
			tino, bad, err := p.hardTarget(n, want.Target)
			if err != nil {
				return fc, nil, err
			}
			if bad != "" {
				return conflict(bad)
			}
			// A file of the spec that is rewritten gets a new inode
			// (it is replaced by rename): the link is made again.
			if cur.isFile() && tino != 0 && cur.st.Ino == tino && !p.rewritten[want.Target] {
				fc.Op, done.Inode = OpUnchanged, cur.st.Ino
				return fc, done, nil
			}
		} else if cur.isLink() && cur.link == want.Target && cur.st.UID == pc.owner.UID && cur.st.GID == pc.owner.GID {
			fc.Op, done.Inode = OpUnchanged, cur.st.Ino
			return fc, done, nil
		}
		switch {
		case !cur.exists:
			fc.Op, fc.Reason = OpAdd, "new"
		case !want.Hard && cur.isLink() && cur.link == want.Target:
			// Made again, with the owner (a link's owner is set as
			// it is made).
			fc.Op, fc.Reason = OpChange, "owner differs from the spec"
			if prev == nil {
				adopt("exists already; owner set as the spec says")
			}
		case cur.isDir():
			return conflict("a directory is where the spec puts a link; move it away")
		case prev != nil && prev.Kind == KindLink && (cur.isLink() && cur.link == prev.Target && !prev.Hard || prev.Hard && cur.st.Ino == prev.Inode):
			fc.Op, fc.Reason = OpChange, "target changed"
			if want.Hard && prev.Hard && prev.Target == want.Target {
				fc.Reason = "its target is rewritten"
			}
		case prev != nil && !p.opts.Force:
			return keep("hostprov made this link, but it was changed since (drift); left alone: put the change into the hook spec, or run apply with --force to replace it")
		case prev != nil:
			fc.Op, fc.Drift, fc.Reason = OpChange, true, "changed since hostprov made it; replaced (--force)"
		case !mayReplace:
			return notPlaced(fmt.Sprintf("a %s that hostprov did not place is where the spec puts a link", describe(cur)))
		default:
			fc.Op = OpChange
			adopt("replaces what was there (overwrite)")
		}
		return fc, done, nil
	}
	// A file.
	same := func() bool {
		if want.Contents != nil {
			return cur.hash == fc.NewSHA256
		}
		return cur.isFile() && hashMatches(want.Hash, cur.data)
	}
	switch {
	case !cur.exists:
		fc.Op, fc.Reason = OpAdd, "new"
		if prev != nil {
			fc.Reason = "missing on disk"
		}
	case cur.isDir() || !cur.isFile() && !cur.isLink():
		return conflict(fmt.Sprintf("a %s is where the spec puts a file; move it away", describe(cur)))
	case prev != nil && !cur.isLink() && prev.owns(cur.hash):
		switch {
		case same() && metaOK:
			fc.Op = OpUnchanged
		case same():
			fc.Op, fc.Reason = OpChange, "mode or owner differs from the spec"
		default:
			fc.Op, fc.Reason = OpChange, "content changed"
		}
	case prev != nil:
		switch {
		case same() && metaOK:
			fc.Op, fc.Reason = OpUnchanged, "edited on disk to what the spec says"
		case p.opts.Force:
			fc.Op, fc.Drift, fc.Reason = OpChange, true, "edited since hostprov wrote it; overwritten (--force)"
		default:
			return keep("edited since hostprov wrote it (drift); left alone: put the edit into the hook spec, or run apply with --force to overwrite it")
		}
	case same() && metaOK:
		fc.Op = OpUnchanged
		adopt("exists already with what the spec says")
	case !mayReplace:
		return notPlaced(fmt.Sprintf("this %s exists and hostprov did not write it; hostprov never overwrites a file it does not own", describe(cur)))
	default:
		fc.Op = OpChange
		adopt("replaces a file hostprov did not write (overwrite)")
	}
	if want.Source != "" && cur.isFile() && same() {
		// The bytes are on disk already (only the mode or owner
		// differs): nothing to download.
		fc.New, fc.NewSHA256 = cur.data, cur.hash
	}
	if fc.Op == OpUnchanged {
		done.SHA256, done.Inode = cur.hash, cur.st.Ino
	} else {
		done.SHA256 = fc.NewSHA256 // filled in for a download by Execute
	}
	pc.done = done
	return fc, done, nil
}

// hardTarget returns the inode of the file a hard link points to, or 0
// when it does not exist yet (a file of the spec, written first).
func (p *planner) hardTarget(n nodeFS, target string) (uint64, string, error) {
	w, err := n.walk(target)
	if err != nil {
		return 0, "", err
	}
	if w.bad != "" {
		return 0, "the hard link's target: " + w.bad, nil
	}
	if w.dir == nil {
		return 0, "", nil
	}
	defer w.dir.Close()
	cur, err := look(w.dir, path.Base(target))
	if err != nil {
		return 0, "", err
	}
	if cur.exists && !cur.isFile() {
		return 0, fmt.Sprintf("the hard link's target %s is a %s, not a file", target, describe(cur)), nil
	}
	return cur.st.Ino, "", nil
}

// prunePath plans removing a path of the state. keep reports that it stays
// recorded (left alone with a warning); fc is nil when it is gone already
// or is only forgotten.
func (p *planner) prunePath(n nodeFS, sp *PathState, why string, removing map[string]bool) (*FileChange, bool, error) {
	fc := &FileChange{Hook: sp.Hook, Path: sp.Path, Kind: sp.Kind, Target: sp.Target, Op: OpRemove, Reason: why, parentDir: sp.Parent}
	if sp.Existed {
		// Forgotten, left in place: see PathState.Existed.
		fc.Op, fc.Reason = OpKeep, why+"; left in place, as it was there before hostprov took it over"
		return fc, false, nil
	}
	w, err := n.walk(sp.Path)
	if err != nil {
		return nil, false, err
	}
	if w.bad != "" {
		fc.Op, fc.Reason = OpKeep, w.bad
		p.Warnings = append(p.Warnings, Problem{Unit: hookOr(&Path{Hook: sp.Hook}), Path: sp.Path, Message: "not removed: " + w.bad})
		return fc, true, nil
	}
	if w.dir == nil {
		return nil, false, nil
	}
	cur, err := look(w.dir, path.Base(sp.Path))
	if err != nil {
		w.dir.Close()
		return nil, false, err
	}
	fc.Old, fc.OldSHA256, fc.OldLink, fc.oldIno = cur.data, cur.hash, cur.link, cur.st.Ino
	if !cur.exists {
		w.dir.Close()
		return nil, false, nil
	}
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
			empty, err := emptyBut(w.dir, path.Base(sp.Path), sp.Path, removing)
			if err != nil {
				w.dir.Close()
				return nil, false, err
			}
			if !empty {
				// Kept and recorded: it goes once what is in it
				// does (a drifted file of hostprov's, say).
				w.dir.Close()
				fc.Op, fc.Reason = OpKeep, why+"; not empty, so left in place"
				return fc, true, nil
			}
		}
	}
	w.dir.Close()
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

// emptyBut reports whether the directory name in dir holds nothing but
// entries the plan removes.
func emptyBut(dir *fsutil.Dir, name, nodePath string, removing map[string]bool) (bool, error) {
	sub, err := dir.OpenDir(name)
	if err != nil {
		return false, fsError("reading", nodePath, err)
	}
	defer sub.Close()
	ents, err := sub.ReadDir()
	if err != nil {
		return false, fsError("reading", nodePath, err)
	}
	for _, e := range ents {
		if !removing[path.Join(nodePath, e.Name)] {
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
