package apply

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/units"
)

func (u *StateUnit) clone1() *StateUnit {
	return (&State{Units: []*StateUnit{u}}).clone().Units[0]
}

// unitPlan collects the plan of one unit before its actions are placed.
type unitPlan struct {
	name    string
	files   []FileChange
	actions []Action
}

func (up *unitPlan) act(kind ActionKind, unit, reason string) {
	if unit == "" {
		return // a template without DefaultInstance: nothing to run
	}
	up.actions = append(up.actions, Action{Kind: kind, Unit: unit, Reason: reason})
}

// unit plans one desired unit and returns its state after the apply.
func (p *planner) unit(u *compile.Unit) (*StateUnit, error) {
	prev := p.state.Unit(u.Name)
	up := &unitPlan{name: u.Name}
	next := &StateUnit{Name: u.Name, Hook: u.HookName, Masked: u.Mask}
	if !u.Mask && u.Enabled != nil {
		e := *u.Enabled
		next.Enabled = &e
	}
	unitIdx, err := p.unitFiles(u, prev, up, next)
	if err != nil {
		return nil, err
	}
	// A copy of the unit file's change, not a pointer into up.files,
	// which grows below: a pointer would go stale when it moves.
	var unitFile *FileChange
	if unitIdx >= 0 {
		fc := up.files[unitIdx]
		unitFile = &fc
	}
	if u.Mask {
		p.checkMask(u, prev, up)
	}
	bodyChanged, installChanged := definitionChanged(up, unitIdx)

	// The stamps of the hook's earlier contents: only the current one
	// can matter. Left alone while the unit file stays as it was (drift),
	// as it may name one of them.
	prevOwned := prev != nil && slices.ContainsFunc(prev.Files, func(f StateFile) bool { return f.Path == u.Name })
	if (u.Contents != nil && !u.Mask || prevOwned) && (unitFile == nil || unitFile.Op != OpKeep) {
		stamps, err := p.removeStamps(u.Name, "stamp of an earlier version of the hook")
		if err != nil {
			return nil, err
		}
		up.files = append(up.files, stamps...)
	}
	unknown := prev != nil && prev.Incomplete
	// A unit that failed to start at an apply that finished: its files
	// and links are right, so only the start is tried again.
	retry := prev != nil && prev.Failed && !unknown
	if u.Mask {
		up.maskActions(u, prev)
	} else {
		// Whether systemd can disable the unit before the files
		// change: disable reads the [Install] of the unit's file, and
		// refuses a unit without one. A unit whose file an interrupted
		// apply never wrote has no links of hostprov's to undo; the
		// enable, after the files are written, makes them.
		onDisk := unitFile == nil || unitFile.Op != OpAdd
		up.unitActions(u, prev, bodyChanged, installChanged, onDisk, retry)
	}
	// Without starts (--no-start) the failure stays to be retried.
	next.Failed = retry && !p.opts.manages() && !u.Mask && (u.Enabled == nil || *u.Enabled)
	change := "change"
	if prev == nil {
		change = "add"
	}
	p.add(up, change, u.HookName)
	return next, nil
}

// unitFiles plans the files the spec wants of u, then the owned files it
// no longer has, into up and next. It returns the index of the unit file's
// change in up.files, -1 when the spec has no unit file: an index, as
// appending to up.files may move its changes.
func (p *planner) unitFiles(u *compile.Unit, prev *StateUnit, up *unitPlan, next *StateUnit) (int, error) {
	type want struct {
		rel  string
		data []byte
	}
	var wants []want
	if u.Contents != nil && !u.Mask {
		wants = append(wants, want{u.Name, u.Contents})
	}
	for _, d := range u.Dropins {
		wants = append(wants, want{u.Name + ".d/" + d.Name, d.Contents})
	}
	wanted := map[string]bool{}
	unitFile := -1
	for _, w := range wants {
		wanted[w.rel] = true
		fc, sf, err := p.write(u.Name, w.rel, w.data, prev)
		if err != nil {
			return -1, err
		}
		if sf != nil {
			next.Files = append(next.Files, *sf)
		}
		if w.rel == u.Name {
			unitFile = len(up.files)
		}
		up.files = append(up.files, fc)
	}
	if prev != nil {
		for _, f := range prev.Files {
			if wanted[f.Path] {
				continue
			}
			fc, keep, err := p.delete(u.Name, f, "no longer in the spec")
			if err != nil {
				return -1, err
			}
			if fc != nil {
				up.files = append(up.files, *fc)
			}
			if keep {
				next.Files = append(next.Files, f)
			}
		}
	}
	return unitFile, nil
}

// definitionChanged says what changed in the unit's definition: its body
// (a drop-in is part of it) and its [Install] section. unitFile is the
// index of the unit file's change in up.files, -1 when there is none.
func definitionChanged(up *unitPlan, unitFile int) (body, install bool) {
	for i := range up.files {
		f := &up.files[i]
		if !f.changes() {
			continue
		}
		if i != unitFile {
			body = true // a drop-in: part of the definition
			continue
		}
		b, in := compareUnit(f.Old, f.New, f.Op == OpAdd || f.OldLink != "")
		body = body || b
		install = install || in
	}
	return body, install
}

// maskActions plans the actions of masking the unit u.
func (up *unitPlan) maskActions(u *compile.Unit, prev *StateUnit) {
	unknown := prev != nil && prev.Incomplete
	prevMasked := prev != nil && prev.Masked
	prevEnabled := prev != nil && prev.Enabled != nil && *prev.Enabled
	if !prevMasked || unknown {
		up.act(ActStop, runName(u.Name, u.Contents), "masked")
		// Not on unknown alone: the unit may not exist, and systemd
		// refuses to disable what it cannot find.
		if prevEnabled {
			up.act(ActDisable, u.Name, "masked")
		}
		up.act(ActMask, u.Name, "mask: true")
	}
}

// unitActions plans the actions of a unit that is not masked, from what
// changed in its definition since the last apply.
func (up *unitPlan) unitActions(u *compile.Unit, prev *StateUnit, bodyChanged, installChanged, onDisk, retry bool) {
	isNew := prev == nil
	unknown := prev != nil && prev.Incomplete
	prevMasked := prev != nil && prev.Masked
	prevEnabled := prev != nil && prev.Enabled != nil && *prev.Enabled
	content := u.Contents
	run := runName(u.Name, content)
	if prevMasked {
		up.act(ActUnmask, u.Name, "no longer masked")
	}
	switch {
	case u.Enabled == nil:
		if (bodyChanged || unknown) && restartable(u.Name) {
			up.act(ActTryRestart, run, orReason(unknown, "drop-ins changed"))
		}
	case *u.Enabled:
		started := false
		switch {
		case isNew:
			up.act(ActEnable, u.Name, "new")
			up.act(ActStart, run, "new")
			started = true
		case !prevEnabled || prevMasked:
			up.act(ActEnable, u.Name, "enabled: true")
			up.act(ActStart, run, "enabled: true")
			started = true
		case installChanged || unknown:
			r := orReason(unknown, "[Install] changed")
			if onDisk {
				up.act(ActDisable, u.Name, r)
			}
			up.act(ActEnable, u.Name, r)
		}
		if !started && (bodyChanged || unknown) {
			up.act(ActRestart, run, orReason(unknown, restartReason(content)))
		}
	default:
		if (prevEnabled || unknown) && onDisk {
			up.act(ActDisable, u.Name, "enabled: false")
			up.act(ActStop, run, "enabled: false")
		}
	}
	if retry && !up.starts() {
		switch {
		case u.Enabled == nil && !restartable(u.Name):
		case u.Enabled == nil:
			up.act(ActTryRestart, run, retryReason)
		case *u.Enabled:
			up.act(ActStart, run, retryReason)
		}
	}
}

// retryReason labels the start of a unit that failed to start at the last
// apply, which finished: a result, not an interrupted apply.
const retryReason = "retry: it failed to start at the last apply"

// restartable reports whether a unit whose drop-ins changed can be
// restarted for them to take effect: not a device, whose unit systemd
// makes for a device the kernel has and refuses to start or restart; the
// drop-in of a device (a hook's deviceTimeout) applies from the reload on.
func restartable(name string) bool { return units.Type(name) != "device" }

// starts reports whether the unit's plan starts or restarts it.
func (up *unitPlan) starts() bool {
	for _, a := range up.actions {
		if a.Kind == ActStart || a.Kind == ActRestart || a.Kind == ActTryRestart {
			return true
		}
	}
	return false
}

func orReason(unknown bool, r string) string {
	if unknown {
		return "an earlier apply did not finish"
	}
	return r
}

// restartReason explains a restart: a oneshot service that does not remain
// after exit runs again.
func restartReason(content []byte) string {
	if f, err := units.Parse(content); err == nil {
		typ := lastValue(f.Values(units.SectionService, "Type"))
		rae := lastValue(f.Values(units.SectionService, "RemainAfterExit"))
		if typ == "oneshot" && !isYes(rae) {
			return "changed; a oneshot service, so it runs again"
		}
	}
	return "changed"
}

func lastValue(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[len(vs)-1]
}

func isYes(s string) bool {
	switch strings.ToLower(s) {
	case "yes", "y", "true", "t", "on", "1":
		return true
	}
	return false
}

// remove plans pruning an owned unit that is no longer wanted, for the
// reason why, and returns what remains of it in the state (files left
// alone), or nil.
func (p *planner) remove(prev *StateUnit, why string) (*StateUnit, error) {
	up := &unitPlan{name: prev.Name}
	rest := &StateUnit{Name: prev.Name, Hook: prev.Hook, Set: prev.Set, Where: prev.Where}
	ownsUnitFile := false
	dropins := false
	for _, f := range prev.Files {
		if f.Path == prev.Name {
			ownsUnitFile = true
		} else {
			dropins = true
		}
	}
	changedDropins, removesUnitFile := false, false
	for _, f := range prev.Files {
		fc, keep, err := p.delete(prev.Name, f, why)
		if err != nil {
			return nil, err
		}
		if fc != nil {
			up.files = append(up.files, *fc)
			changedDropins = changedDropins || fc.changes() && f.Path != prev.Name
			removesUnitFile = removesUnitFile || f.Path == prev.Name && fc.Op == OpRemove
		}
		if keep {
			rest.Files = append(rest.Files, f)
		}
	}
	if ownsUnitFile && removesUnitFile {
		// Stop and disable only while the file is there: once it is
		// gone, an earlier apply did both before deleting it, and
		// systemd would refuse to disable a unit without a file. And
		// only when the file goes: one edited since hostprov wrote it
		// (drift) is not hostprov's to stop, disable or unlink, and
		// stays as it is with everything systemd does with it.
		if cur := p.current(prev.Name); cur != nil {
			up.act(ActStop, runName(prev.Name, cur), why)
			up.act(ActDisable, prev.Name, why)
		}
	}
	if prev.Masked {
		up.act(ActUnmask, prev.Name, why)
	}
	// Its stamps go with it, so that the hook runs again when it is added
	// back; not while its unit file stays (drift), which names one.
	if !slices.ContainsFunc(rest.Files, func(f StateFile) bool { return f.Path == prev.Name }) {
		stamps, err := p.removeStamps(prev.Name, "stamp of the hook, "+why)
		if err != nil {
			return nil, err
		}
		up.files = append(up.files, stamps...)
	}
	if !ownsUnitFile && !prev.Masked && dropins && changedDropins && restartable(prev.Name) {
		up.act(ActTryRestart, prev.Name, "drop-ins removed")
	}
	p.add(up, "remove", prev.Hook)
	if len(rest.Files) == 0 {
		return nil, nil
	}
	return rest, nil
}

// add records a unit's files and actions in the plan.
func (p *planner) add(up *unitPlan, change, hook string) {
	changed := len(up.actions) > 0
	for _, f := range up.files {
		if f.changes() {
			changed = true
		}
	}
	if !changed && change != "remove" {
		change = "none"
	}
	if change == "remove" && !changed && len(up.files) == 0 {
		change = "none" // only forgotten: its files were gone already
	}
	p.Units = append(p.Units, UnitChange{Unit: up.name, Hook: hook, Change: change})
	p.Files = append(p.Files, up.files...)
	p.Actions = append(p.Actions, up.actions...)
}

// write plans writing data to rel for unit and returns the file's state
// after the apply (nil when the plan cannot be applied).
func (p *planner) write(unit, rel string, data []byte, prev *StateUnit) (FileChange, *StateFile, error) {
	fc := FileChange{Unit: unit, Path: p.opts.nodePath(rel), rel: rel, New: data, NewSHA256: hashOf(data)}
	cur, err := p.node.unitFile(rel)
	if err != nil {
		return fc, nil, err
	}
	sf := prev.fileAt(rel)
	fc.Old, fc.OldSHA256, fc.OldLink, fc.oldIno = cur.data, cur.hash, cur.link, cur.ino
	done := &StateFile{Path: rel, SHA256: fc.NewSHA256}
	keep := func(why string) (FileChange, *StateFile, error) {
		fc.Op, fc.Drift, fc.Reason = OpKeep, true, why
		p.Warnings = append(p.Warnings, Problem{Unit: unit, Path: fc.Path, Message: why})
		old := *sf
		return fc, &old, nil
	}
	conflict := func(why string) (FileChange, *StateFile, error) {
		fc.Op, fc.Reason = OpKeep, why
		p.Conflicts = append(p.Conflicts, Problem{Unit: unit, Path: fc.Path, Message: why})
		return fc, nil, nil
	}
	// A unit file hostprov does not own yet may not take the name of a
	// unit the node has: not even with --adopt, which is for a stray
	// file in the unit directory, not for the node's own units.
	if rel == unit && sf == nil && cur.bad == "" {
		why, err := p.shadows(unit, cur)
		if err != nil {
			return fc, nil, err
		}
		if why != "" {
			return conflict(why)
		}
	}
	fixable := func(why string, fix Fix) (FileChange, *StateFile, error) {
		fc, sf, err := conflict(why)
		p.Conflicts[len(p.Conflicts)-1].Fix = &fix
		return fc, sf, err
	}
	switch {
	case cur.bad != "":
		return conflict(cur.bad)
	case !cur.exists:
		fc.Op, fc.Reason = OpAdd, "new"
		if sf != nil {
			fc.Reason = "missing on disk"
		}
	case cur.isLink && rel == unit && prev != nil && prev.Masked && cur.link == "/dev/null":
		// hostprov's own mask, undone by the unmask before files change.
		fc.Op, fc.Reason, fc.OldLink = OpAdd, "new (was masked)", ""
	case cur.isLink && sf != nil:
		if !p.opts.Force {
			return keep(fmt.Sprintf("hostprov wrote this file, but it is now a symbolic link to %s; left alone: run apply with --force to replace the link by the file", cur.link))
		}
		fc.Op, fc.Drift, fc.Reason = OpChange, true, "replaces a symbolic link (--force)"
	case cur.isLink:
		if !p.opts.Adopt {
			return fixable(fmt.Sprintf("a symbolic link to %s that hostprov did not make is where the spec puts this file", cur.link),
				Fix{Manual: "move it away", Flag: "--adopt", Does: "to replace it"})
		}
		fc.Op, fc.Reason = OpChange, "replaces a symbolic link (--adopt)"
	case sf != nil && sf.owns(cur.hash):
		fc.Op, fc.Reason = OpChange, "content changed"
		if cur.hash == fc.NewSHA256 {
			fc.Op, fc.Reason = OpUnchanged, ""
		}
	case sf != nil:
		switch {
		case cur.hash == fc.NewSHA256:
			fc.Op, fc.Reason = OpUnchanged, "edited on disk to what the spec says"
		case p.opts.Force:
			fc.Op, fc.Drift, fc.Reason = OpChange, true, "edited since hostprov wrote it; overwritten (--force)"
		default:
			return keep("edited since hostprov wrote it (drift); left alone: put the edit into the hook spec, or run apply with --force to overwrite it")
		}
	default:
		same := ""
		if cur.hash == fc.NewSHA256 {
			same = " (its content is what the spec says)"
		}
		if !p.opts.Adopt {
			return fixable("this file exists and hostprov did not write it"+same+"; hostprov never overwrites a file it does not own",
				Fix{Manual: "move it away", Flag: "--adopt", Does: "to take it over"})
		}
		fc.Op, fc.Reason = OpChange, "adopted (--adopt)"
		if same != "" {
			fc.Op = OpUnchanged
		}
	}
	// The inode of a file written is known once it is: Execute records
	// it. A file left as it is is the one on disk.
	if fc.Op == OpUnchanged {
		done.Inode = cur.ino
	}
	return fc, done, nil
}

// fileAt is the last apply's record of the file rel of the unit, nil when
// there is none (or no unit).
func (u *StateUnit) fileAt(rel string) *StateFile {
	var sf *StateFile
	if u != nil {
		for i := range u.Files {
			if u.Files[i].Path == rel {
				sf = &u.Files[i]
			}
		}
	}
	return sf
}

// delete plans removing an owned file. keep reports that the file stays
// hostprov's (it is left alone); fc is nil when the file is gone already.
func (p *planner) delete(unit string, sf StateFile, reason string) (fc *FileChange, keep bool, err error) {
	cur, err := p.node.unitFile(sf.Path)
	if err != nil {
		return nil, false, err
	}
	f := &FileChange{Unit: unit, Path: p.opts.nodePath(sf.Path), rel: sf.Path, Op: OpRemove, Reason: reason,
		Old: cur.data, OldSHA256: cur.hash, OldLink: cur.link}
	switch {
	case cur.bad != "":
		f.Op, f.Reason = OpKeep, cur.bad
		p.Conflicts = append(p.Conflicts, Problem{Unit: unit, Path: f.Path, Message: cur.bad})
		return f, true, nil
	case !cur.exists:
		return nil, false, nil
	case cur.isLink || !sf.owns(cur.hash):
		return p.notHostprovs(f, reason, "edited since hostprov wrote it", "edited since hostprov wrote it (drift)")
	case !sf.created(cur.hash, cur.ino):
		// The bytes are hostprov's, the file is not: a copy put in
		// place of hostprov's (a package's, a restore), or a state
		// entry that names a file hostprov never wrote. A hash alone
		// does not make a file hostprov's to delete.
		return p.notHostprovs(f, reason, "not the file hostprov wrote",
			"has the bytes hostprov wrote, but is not the file hostprov wrote (replaced since, or recorded without the file's identity by an earlier hostprov)")
	}
	return f, false, nil
}

// notHostprovs plans an owned file's removal when the file on disk is no
// longer the one hostprov wrote, for the reason why (short, and as a
// warning): removed with --force, kept with a warning otherwise.
func (p *planner) notHostprovs(f *FileChange, reason, short, why string) (*FileChange, bool, error) {
	if p.opts.Force {
		f.Drift, f.Reason = true, reason+"; "+short+" (--force)"
		return f, false, nil
	}
	f.Op, f.Drift, f.Reason = OpKeep, true, why+"; left alone: remove it by hand, or run with --force to remove it"
	p.Warnings = append(p.Warnings, Problem{Unit: f.Unit, Path: f.Path, Message: f.Reason})
	return f, true, nil
}

// checkMask adds a conflict when the unit file's place is taken by a file
// that will still be there when the unit is masked: systemd refuses to
// mask over a file.
func (p *planner) checkMask(u *compile.Unit, prev *StateUnit, up *unitPlan) {
	for _, f := range up.files {
		if f.rel == u.Name && f.Op == OpRemove {
			return // hostprov's own file, removed before the mask
		}
	}
	cur, err := p.node.unitFile(u.Name)
	if err != nil || !cur.exists || cur.isLink && cur.link == "/dev/null" {
		return
	}
	what := "a unit file hostprov did not write"
	if cur.isLink {
		what = "a symbolic link to " + cur.link
	} else if prev != nil {
		for _, f := range prev.Files {
			if f.Path == u.Name {
				what = "the unit file hostprov wrote, edited since"
			}
		}
	}
	p.Conflicts = append(p.Conflicts, Problem{Unit: u.Name, Path: p.opts.nodePath(u.Name),
		Message: fmt.Sprintf("cannot mask %s: %s is in its place", u.Name, what),
		Fix:     &Fix{Manual: "move it away", Flag: "--force", Does: "if hostprov wrote it"}})
}

// current returns the unit file on disk, or nil.
func (p *planner) current(name string) []byte {
	cur, err := p.node.unitFile(name)
	if err != nil || !cur.exists || cur.isLink {
		return nil
	}
	return cur.data
}

// compareUnit reports whether a unit file's definition (everything outside
// [Install]) and its [Install] differ between old and new. Comments and
// layout do not count. A file that cannot be parsed counts as changed.
func compareUnit(old, new []byte, added bool) (body, install bool) {
	if added {
		return true, true
	}
	of, err1 := units.Parse(old)
	nf, err2 := units.Parse(new)
	if err1 != nil || err2 != nil {
		return true, true
	}
	ob, oi := entries(of)
	nb, ni := entries(nf)
	return ob != nb, oi != ni
}

// entries flattens a unit's entries, outside and inside [Install].
func entries(f *units.File) (body, install string) {
	var b, in strings.Builder
	for _, s := range f.Sections {
		w := &b
		if s.Name == units.SectionInstall {
			w = &in
		}
		for _, e := range s.Entries {
			fmt.Fprintf(w, "[%s]%s=%s\n", s.Name, e.Key, e.Value)
		}
	}
	return b.String(), in.String()
}

// runName is the unit to start, stop or restart for a unit file: the unit
// itself, or for a template its DefaultInstance ("" when it has none, as a
// template cannot run).
func runName(name string, content []byte) string {
	at := strings.IndexByte(name, '@')
	if at < 0 || !strings.HasPrefix(name[at:], "@.") {
		return name
	}
	f, err := units.Parse(content)
	if err != nil {
		return ""
	}
	inst := lastValue(f.Values(units.SectionInstall, "DefaultInstance"))
	if inst == "" {
		return ""
	}
	return name[:at+1] + inst + name[at+1:]
}
