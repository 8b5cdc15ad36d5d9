package apply

import (
	"fmt"
	"io/fs"
	"strings"
)

// pathPlan is one wanted path being planned: what the spec wants, what the
// last apply recorded and what is on disk.
type pathPlan struct {
	*planner
	pc   *pathChange
	want *Path
	prev *PathState // as the last apply left it; nil when new
	cur  onDisk
	fc   FileChange
	done *PathState // its state after the apply
	// metaOK says the mode and owner on disk are the spec's.
	metaOK bool
}

// planPath plans one wanted path and returns its FileChange and its state
// after the apply (nil when the plan cannot be applied).
func (p *planner) planPath(pc *pathChange) (FileChange, *PathState, error) {
	want := pc.want
	pp := &pathPlan{planner: p, pc: pc, want: want, prev: p.state.Path(want.Path)}
	pp.fc = FileChange{Hook: want.Hook, Path: want.Path, Kind: want.Kind, Mode: fmt.Sprintf("%04o", modeNum(pc.mode)),
		Owner: pc.ownerText(), Target: want.Target, Source: want.Source, path: pc, parentDir: pc.parent}
	if want.Kind == KindLink {
		// A link has no mode of its own, and an owner only when the
		// spec gives a symbolic link one.
		pp.fc.Mode = ""
		if want.Hard || want.User == "" && want.Group == "" {
			pp.fc.Owner = ""
		}
	}
	if want.Kind == KindFile {
		if want.Contents != nil {
			pp.fc.New, pp.fc.NewSHA256 = want.Contents, hashOf(want.Contents)
		} else {
			if !strings.HasPrefix(want.Source, "https://") && !strings.HasPrefix(want.Source, "http://") {
				return pp.conflict(sourceHint(want.Source))
			}
			if algo, hex, ok := strings.Cut(want.Hash, "-"); ok && algo == "sha256" {
				pp.fc.NewSHA256 = hex
			}
		}
	}
	at, err := p.node.path(want.Path)
	if err != nil {
		return pp.fc, nil, err
	}
	if at.bad != "" {
		return pp.conflict(at.bad)
	}
	pp.cur = at.onDisk
	prev, cur := pp.prev, pp.cur
	if prev != nil && prev.Kind != want.Kind && !(prev.Parent && want.Kind == KindDirectory) {
		return pp.conflict(fmt.Sprintf("hostprov placed a %s here, and the spec now has a %s: apply the spec without this entry once (which removes the %s), then with it",
			prev.Kind, want.Kind, prev.Kind))
	}
	if prev != nil && p.otherSet != nil && p.otherSet(prev.Set) {
		return pp.conflict(fmt.Sprintf("spec set %s places it (hook %s, %s), but spec set %s owns it (hook %s, as last applied): a path belongs to one set; remove it from one of them",
			orDash(want.set), want.Hook, orDash(want.Where), prev.Set, orDash(prev.Hook)))
	}
	pp.fc.Old, pp.fc.OldSHA256, pp.fc.OldLink, pp.fc.oldIno = cur.data, cur.hash, cur.link, cur.st.Ino
	pp.done = &PathState{Path: want.Path, Kind: want.Kind, Hook: want.Hook, Parent: pc.parent, Target: want.Target, Hard: want.Hard}
	if prev != nil {
		pp.done.Existed, pp.done.PriorSHA256 = prev.Existed, prev.PriorSHA256
	}
	pp.metaOK = cur.exists && cur.st.UID == pc.owner.UID && cur.st.GID == pc.owner.GID &&
		cur.st.Mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == pc.mode
	switch want.Kind {
	case KindDirectory:
		return pp.directory()
	case KindLink:
		return pp.link()
	}
	return pp.file()
}

// conflict keeps the path as it is and makes why a conflict: the plan
// cannot be applied.
func (pp *pathPlan) conflict(why string) (FileChange, *PathState, error) {
	pp.fc.Op, pp.fc.Reason = OpKeep, why
	pp.Conflicts = append(pp.Conflicts, Problem{Unit: hookOr(pp.want), Path: pp.want.Path, Message: why})
	return pp.fc, nil, nil
}

// notPlaced is the conflict of something hostprov did not place where the
// spec puts a file, directory or link.
func (pp *pathPlan) notPlaced(why string) (FileChange, *PathState, error) {
	fc, ps, err := pp.conflict(why)
	pp.Conflicts[len(pp.Conflicts)-1].Fix = &Fix{Manual: "move it away", Spec: "set overwrite: true on it",
		Flag: "--adopt", Does: "to replace it"}
	return fc, ps, err
}

// keep leaves a path hostprov placed, and which drifted, as it is, with a
// warning.
func (pp *pathPlan) keep(why string) (FileChange, *PathState, error) {
	pp.fc.Op, pp.fc.Drift, pp.fc.Reason = OpKeep, true, why
	pp.Warnings = append(pp.Warnings, Problem{Unit: hookOr(pp.want), Path: pp.want.Path, Message: why})
	c := cloneStatePath(pp.prev)
	c.Hook = pp.want.Hook
	return pp.fc, c, nil
}

// adopt records that the path was there before hostprov took it over.
func (pp *pathPlan) adopt(reason string) {
	pp.done.Existed = true
	if pp.cur.isFile() {
		pp.done.PriorSHA256 = pp.cur.hash
	}
	pp.fc.Reason = reason
}

// mayReplace says the spec or the flags let hostprov replace what it did
// not place.
func (pp *pathPlan) mayReplace() bool { return pp.want.Overwrite || pp.opts.Adopt }

func (pp *pathPlan) directory() (FileChange, *PathState, error) {
	fc, cur, prev := &pp.fc, pp.cur, pp.prev
	switch {
	case !cur.exists:
		fc.Op, fc.Reason = OpAdd, "new"
		if pp.pc.parent {
			fc.Reason = "new, for what is placed in it"
		}
		if prev != nil {
			fc.Reason = "missing on disk"
		}
	case !cur.isDir():
		if prev != nil {
			return pp.keep(fmt.Sprintf("hostprov made this directory, but it is now a %s; left alone: move it away", describe(cur)))
		}
		return pp.conflict(fmt.Sprintf("a %s that hostprov did not place is where the spec puts a directory; move it away", describe(cur)))
	case pp.metaOK:
		fc.Op = OpUnchanged
		pp.done.Inode = cur.st.Ino
		if prev == nil {
			pp.adopt("exists already")
		}
	default:
		fc.Op, fc.Reason = OpChange, "mode or owner differs from the spec"
		pp.done.Inode = cur.st.Ino
		if prev == nil {
			pp.adopt("exists already; mode and owner set as the spec says")
		}
	}
	return pp.fc, pp.done, nil
}

func (pp *pathPlan) link() (FileChange, *PathState, error) {
	fc, cur, prev, want, done := &pp.fc, pp.cur, pp.prev, pp.want, pp.done
	if want.Hard {
		tino, bad, err := pp.hardTarget(want.Target)
		if err != nil {
			return pp.fc, nil, err
		}
		if bad != "" {
			return pp.conflict(bad)
		}
		// A file of the spec that is rewritten gets a new inode (it is
		// replaced by rename): the link is made again.
		if cur.isFile() && tino != 0 && cur.st.Ino == tino && !pp.rewritten[want.Target] {
			fc.Op, done.Inode = OpUnchanged, cur.st.Ino
			return pp.fc, done, nil
		}
	} else if cur.isLink() && cur.link == want.Target && cur.st.UID == pp.pc.owner.UID && cur.st.GID == pp.pc.owner.GID {
		fc.Op, done.Inode = OpUnchanged, cur.st.Ino
		return pp.fc, done, nil
	}
	switch {
	case !cur.exists:
		fc.Op, fc.Reason = OpAdd, "new"
	case !want.Hard && cur.isLink() && cur.link == want.Target:
		// Made again, with the owner (a link's owner is set as it is
		// made).
		fc.Op, fc.Reason = OpChange, "owner differs from the spec"
		if prev == nil {
			pp.adopt("exists already; owner set as the spec says")
		}
	case cur.isDir():
		return pp.conflict("a directory is where the spec puts a link; move it away")
	case prev != nil && prev.Kind == KindLink && (cur.isLink() && cur.link == prev.Target && !prev.Hard || prev.Hard && cur.st.Ino == prev.Inode):
		fc.Op, fc.Reason = OpChange, "target changed"
		if want.Hard && prev.Hard && prev.Target == want.Target {
			fc.Reason = "its target is rewritten"
		}
	case prev != nil && !pp.opts.Force:
		return pp.keep("hostprov made this link, but it was changed since (drift); left alone: put the change into the hook spec, or run apply with --force to replace it")
	case prev != nil:
		fc.Op, fc.Drift, fc.Reason = OpChange, true, "changed since hostprov made it; replaced (--force)"
	case !pp.mayReplace():
		return pp.notPlaced(fmt.Sprintf("a %s that hostprov did not place is where the spec puts a link", describe(cur)))
	default:
		fc.Op = OpChange
		pp.adopt("replaces what was there (overwrite)")
	}
	return pp.fc, done, nil
}

// same says the file on disk has the bytes the spec wants.
func (pp *pathPlan) same() bool {
	if pp.want.Contents != nil {
		return pp.cur.hash == pp.fc.NewSHA256
	}
	return pp.cur.isFile() && hashMatches(pp.want.Hash, pp.cur.data)
}

func (pp *pathPlan) file() (FileChange, *PathState, error) {
	fc, cur, prev, done := &pp.fc, pp.cur, pp.prev, pp.done
	switch {
	case !cur.exists:
		fc.Op, fc.Reason = OpAdd, "new"
		if prev != nil {
			fc.Reason = "missing on disk"
		}
	case cur.isDir() || !cur.isFile() && !cur.isLink():
		return pp.conflict(fmt.Sprintf("a %s is where the spec puts a file; move it away", describe(cur)))
	case prev != nil && !cur.isLink() && prev.owns(cur.hash):
		switch {
		case pp.same() && pp.metaOK:
			fc.Op = OpUnchanged
		case pp.same():
			fc.Op, fc.Reason = OpChange, "mode or owner differs from the spec"
		default:
			fc.Op, fc.Reason = OpChange, "content changed"
		}
	case prev != nil:
		switch {
		case pp.same() && pp.metaOK:
			fc.Op, fc.Reason = OpUnchanged, "edited on disk to what the spec says"
		case pp.opts.Force:
			fc.Op, fc.Drift, fc.Reason = OpChange, true, "edited since hostprov wrote it; overwritten (--force)"
		default:
			return pp.keep("edited since hostprov wrote it (drift); left alone: put the edit into the hook spec, or run apply with --force to overwrite it")
		}
	case pp.same() && pp.metaOK:
		fc.Op = OpUnchanged
		pp.adopt("exists already with what the spec says")
	case !pp.mayReplace():
		return pp.notPlaced(fmt.Sprintf("this %s exists and hostprov did not write it; hostprov never overwrites a file it does not own", describe(cur)))
	default:
		fc.Op = OpChange
		pp.adopt("replaces a file hostprov did not write (overwrite)")
	}
	if pp.want.Source != "" && cur.isFile() && pp.same() {
		// The bytes are on disk already (only the mode or owner
		// differs): nothing to download.
		fc.New, fc.NewSHA256 = cur.data, cur.hash
	}
	if fc.Op == OpUnchanged {
		done.SHA256, done.Inode = cur.hash, cur.st.Ino
	} else {
		done.SHA256 = fc.NewSHA256 // filled in for a download by Execute
	}
	pp.pc.done = done
	return pp.fc, done, nil
}

// hardTarget returns the inode of the file a hard link points to, or 0
// when it does not exist yet (a file of the spec, written first).
func (p *planner) hardTarget(target string) (uint64, string, error) {
	cur, err := p.node.path(target)
	if err != nil {
		return 0, "", err
	}
	if cur.bad != "" {
		return 0, "the hard link's target: " + cur.bad, nil
	}
	if cur.exists && !cur.isFile() {
		return 0, fmt.Sprintf("the hard link's target %s is a %s, not a file", target, describe(cur.onDisk)), nil
	}
	return cur.st.Ino, "", nil
}
