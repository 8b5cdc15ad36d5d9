package apply

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// Result is what Execute did: every event of the action log, and their
// counts.
type Result struct {
	Events []Event `json:"events"`
	Counts Counts  `json:"counts"`
}

// PrepareDirs checks that the unit and state directories exist and can be
// written, before anything else happens (the lock lives in the state
// directory), and that the state directory is not a symbolic link. With Root set they are created as systemctl --root creates
// them; on a live node a missing unit directory is an error (is this a
// systemd machine?) and the state directory is created only when its parent
// exists.
func PrepareDirs(opts Options) error {
	unitMissing, stateMissing := mustExist, createLast
	if opts.Root != "" {
		unitMissing, stateMissing = createAll, createAll
	}
	if err := checkDir(opts.UnitDirPath(), "unit directory", "--unit-dir", unitMissing, 0o755); err != nil {
		return err
	}
	// The lock and the state are created in the state directory, never
	// through a link: refused here, before the lock is taken, nothing is
	// created anywhere (LoadState refuses such a directory too, but only
	// after the lock file was made in the link's target).
	if fi, err := os.Lstat(opts.StateDirPath()); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return linkedStateDir(opts.StateDirPath())
	}
	return checkDir(opts.StateDirPath(), "state directory", "--state-dir", stateMissing, 0o755)
}

// Execute carries out the plan through sd and reports every action to log
// (which may be nil). A plan with conflicts is refused before anything is
// done.
//
// A crash at any instant leaves every file either old or new (files are
// replaced by rename) and the state file true to the disk, because the
// state is written three times: before files change, recording for every
// file to be written both its current hash and the hash about to be
// written (so a file is never on disk without hostprov knowing it wrote
// it), and marking every unit being worked on incomplete; after the files
// changed, with their new hashes; and at the end, with the enablement
// applied and the incomplete marks cleared. The next apply redoes the
// idempotent steps of an incomplete unit (reload, enable, restart), so it
// converges.
//
// A unit that fails to start or restart does not stop the others and is
// not rolled back: its files stay, it is marked failed (the next apply
// starts it again, and only that), and the error names its result.
func Execute(ctx context.Context, p *Plan, sd Systemd, log Logger) (*Result, error) {
	return execute(ctx, p, sd, log, osFiles{})
}

type executor struct {
	p      *Plan
	sd     Systemd
	log    Logger
	files  fileOps
	res    *Result
	udir   *fsutil.Dir            // the unit dir, opened once: see fsutil.Dir
	sdir   *fsutil.Dir            // the state dir
	dirs   map[string]*fsutil.Dir // drop-in directories, opened once
	batch  *fsutil.Batch          // the files to write, prepared
	inodes map[string]uint64      // path in the unit dir -> inode of the file written
	saved  *State                 // the state as last written (or read)
	path   string                 // the state file, for messages
	failed map[string]bool
	// linkFailed are the units whose enable, disable, mask or unmask
	// failed while the others went on (UnitErrors).
	linkFailed map[string]bool
	// pathInodes are the inodes of the paths placed outside the unit dir.
	pathInodes map[string]uint64
	// sysusersRan is set once systemd-sysusers ran.
	sysusersRan bool
}

func execute(ctx context.Context, p *Plan, sd Systemd, log Logger, files fileOps) (*Result, error) {
	if len(p.Conflicts) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "the plan has %s; nothing was changed:", plural(len(p.Conflicts), "conflict"))
		for _, c := range p.Conflicts {
			b.WriteString("\n\t" + c.String())
		}
		return &Result{Events: []Event{}}, errors.New(b.String())
	}
	if err := PrepareDirs(p.opts); err != nil {
		return &Result{Events: []Event{}}, err
	}
	e := &executor{p: p, sd: sd, log: log, files: files, res: &Result{Events: []Event{}},
		path: StatePath(p.opts.StateDirPath()), failed: map[string]bool{}, linkFailed: map[string]bool{}}
	var err error
	if e.udir, err = fsutil.OpenDir(p.opts.UnitDirPath()); err != nil {
		return e.res, dirOpenError(p.opts.UnitDirPath(), "unit directory", "--unit-dir", err)
	}
	defer e.udir.Close()
	if e.sdir, err = fsutil.OpenDir(p.opts.StateDirPath()); err != nil {
		return e.res, dirOpenError(p.opts.StateDirPath(), "state directory", "--state-dir", err)
	}
	defer e.sdir.Close()
	e.dirs, e.inodes = map[string]*fsutil.Dir{}, map[string]uint64{}
	defer func() {
		if e.batch != nil {
			e.batch.Abort()
		}
		for _, d := range e.dirs {
			d.Close()
		}
	}()
	if p.state.interrupted() {
		e.removeTemps()
		e.removePathTemps()
	}
	e.removeStateTemps()
	e.saved = p.state.clone()
	if err := e.run(ctx); err != nil {
		return e.res, err
	}
	return e.res, e.failure()
}

// removeTemps removes the temporary files that an apply killed in the
// middle of a write left beside the files of the units it works on
// (".NAME.tmp-*", see fsutil.WriteFiles). systemd ignores hidden files, but
// they are litter in the unit directory; only names of units this apply
// owns or writes are touched. Each directory is listed once, so that a
// re-apply of many units stays linear. It is called only after an
// interrupted apply (State.interrupted), the only one that leaves any.
func (e *executor) removeTemps() {
	names := map[string]bool{}
	for _, u := range e.p.state.Units {
		names[u.Name] = true
	}
	for _, u := range e.p.Units {
		names[u.Unit] = true
	}
	entries, err := e.udir.ReadDir()
	if err != nil {
		return
	}
	for _, ent := range entries {
		n := ent.Name
		switch {
		case ent.Type.IsRegular() && names[fsutil.TempOf(n)]:
			e.udir.Remove(n)
		case ent.Type.IsDir() && strings.HasSuffix(n, ".d") && names[strings.TrimSuffix(n, ".d")]:
			dir, err := e.udir.OpenDir(n)
			if err != nil {
				continue
			}
			dropins, _ := dir.ReadDir()
			for _, d := range dropins {
				if d.Type.IsRegular() && strings.HasSuffix(fsutil.TempOf(d.Name), ".conf") {
					dir.Remove(d.Name)
				}
			}
			dir.Close()
		}
	}
}

// removeStateTemps removes the temporary files of the state file that an
// apply killed while it saved the state left in the state directory. The
// state is saved before anything else changes, so a kill there leaves the
// old state intact and not interrupted: the directory is listed at every
// apply (it holds the state and the lock, and nothing else of hostprov's).
func (e *executor) removeStateTemps() {
	entries, err := e.sdir.ReadDir()
	if err != nil {
		return
	}
	for _, ent := range entries {
		if ent.Type.IsRegular() && fsutil.TempOf(ent.Name) == stateFileName {
			e.sdir.Remove(ent.Name)
		}
	}
}

func (e *executor) emit(ev Event) {
	e.res.Events = append(e.res.Events, ev)
	e.res.Counts.count(ev.Action)
	if e.log != nil {
		e.log.Log(ev)
	}
}

// save writes the state when it differs from what is on disk. Compared
// as data, not encoded: a re-apply that changes nothing encodes nothing.
func (e *executor) save(st *State) error {
	if st.equal(e.saved) {
		return nil
	}
	data, err := st.marshal()
	if err != nil {
		return err
	}
	if _, err := e.files.WriteFiles([]fsutil.File{{Dir: e.sdir, Name: stateFileName, Data: data, Perm: 0o600}}); err != nil {
		return fsError("writing the state file", e.path, err)
	}
	e.saved = st.clone()
	e.res.Counts.StateSaves++
	return nil
}

func (e *executor) run(ctx context.Context) error {
	// Every download is made and checked before anything is written; a
	// hook whose file could not be had is held, and the plan made again
	// without it (see fetchSources): p is the plan carried out.
	if err := e.fetchSources(ctx); err != nil {
		return err
	}
	p := e.p
	intent := p.intent()
	if err := e.save(intent); err != nil {
		return err
	}
	// The new files are written and synced under temporary names, and
	// their inodes recorded, before any is renamed into place: so that
	// the state knows, whenever one is in place, that it is the file
	// hostprov created.
	if err := e.prepareFiles(intent); err != nil {
		return err
	}
	if err := e.save(intent); err != nil {
		return err
	}
	if err := e.actions(ctx, 0, 1); err != nil {
		return err
	}
	if err := e.writeFiles(intent); err != nil {
		return err
	}
	if err := e.save(intent); err != nil {
		return err
	}
	if err := e.writePaths(ctx, intent); err != nil {
		return err
	}
	if err := e.save(intent); err != nil {
		return err
	}
	if err := e.actions(ctx, 2, 3); err != nil {
		return err
	}
	if err := e.removeStamps(); err != nil {
		return err
	}
	e.actions(ctx, 4, 4) // failures are collected in e.failed
	// A unit that failed to start is a result of an apply that finished,
	// not an interrupted one: marked failed, its start is retried next
	// time, and nothing else is redone for it.
	final := p.next.clone()
	for _, u := range final.Units {
		if e.failed[u.Name] {
			u.Failed = true
		}
		// Its links are not all made: the next apply makes them.
		if e.linkFailed[u.Name] {
			u.Incomplete = true
		}
		for i := range u.Files {
			if ino, ok := e.inodes[u.Files[i].Path]; ok {
				u.Files[i].Inode = ino
			}
		}
	}
	e.finalPaths(final)
	return e.save(final)
}

// failure summarises the units that failed to start or restart, and those
// whose links could not be made while the others went on.
func (e *executor) failure() error {
	var started, linked, fetched []Event
	for _, ev := range e.res.Events {
		if ev.Action != EvFailed {
			continue
		}
		switch ActionKind(ev.Op) {
		case OpDownload:
			fetched = append(fetched, ev)
		case ActEnable, ActDisable, ActMask, ActUnmask:
			linked = append(linked, ev)
		default:
			started = append(started, ev)
		}
	}
	var msgs []string
	if len(fetched) > 0 {
		msgs = append(msgs, FetchFailure(fetched, false))
	}
	if len(linked) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s could not be linked:", plural(len(linked), "unit"))
		for _, ev := range linked {
			fmt.Fprintf(&b, "\n\t%s %s: %s", ev.Op, ev.Unit, ev.Error)
		}
		b.WriteString("\nthe other units are applied, and the files of these are in place and recorded; do what the error says, and run hostprov apply again (it makes the links that are missing)")
		msgs = append(msgs, b.String())
	}
	if len(started) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%s failed to start:", plural(len(started), "unit"))
		for _, ev := range started {
			fmt.Fprintf(&b, "\n\t%s: %s", ev.Unit, ev.Error)
		}
		fmt.Fprintf(&b, "\nthe files and links are in place and recorded; see journalctl -u %s, fix the hook, and run hostprov apply again (it retries the units that failed)", started[0].Unit)
		msgs = append(msgs, b.String())
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// intent is the state to write before files change: for every file about
// to be written, the hash on disk now and the hash to come; every unit
// the plan acts on marked incomplete.
func (p *Plan) intent() *State {
	s := p.state.clone()
	s.UnitDir = p.opts.unitDir()
	if len(p.Actions) > 0 || p.changesFiles() {
		// Until the apply finishes, the units are no inputs' own.
		s.Inputs = ""
	}
	unitOf := func(name string) *StateUnit {
		if u := s.Unit(name); u != nil {
			return u
		}
		u := &StateUnit{Name: name}
		if n := p.next.Unit(name); n != nil {
			u.Hook, u.Set, u.Where = n.Hook, n.Set, n.Where
		}
		s.Units = append(s.Units, u)
		return u
	}
	for _, uc := range p.Units {
		if uc.Change != "none" {
			unitOf(uc.Unit).Incomplete = true
		}
	}
	// The owners of sets the apply adds, before any of their files is
	// written: an apply killed now leaves them recorded as the owner's.
	for _, r := range p.next.Sets {
		if owner, recorded := s.SetOwner(r.Name); !recorded || owner != r.Owner {
			s.recordOwner(r.Name, r.Owner)
		}
	}
	p.pathIntent(s)
	for _, f := range p.Files {
		if f.Op != OpAdd && f.Op != OpChange || f.Kind != "" {
			continue
		}
		u := unitOf(f.Unit)
		var sf *StateFile
		for i := range u.Files {
			if u.Files[i].Path == f.rel {
				sf = &u.Files[i]
			}
		}
		if sf == nil {
			u.Files = append(u.Files, StateFile{Path: f.rel})
			sf = &u.Files[len(u.Files)-1]
		}
		if f.OldSHA256 != "" {
			// The bytes on disk now (hostprov's, or adopted or
			// forced over): the file has these or the new ones.
			sf.SHA256, sf.Inode = f.OldSHA256, f.oldIno
		}
		sf.Next = f.NewSHA256
	}
	return s
}

// FetchFailure says which hooks failed because a file's source could not
// be downloaded (the failed events of OpDownload), and what to do; with
// logged, the errors are in the action log already and not repeated.
func FetchFailure(evs []Event, logged bool) string {
	var hooks []string
	var b strings.Builder
	for _, ev := range evs {
		if !slices.Contains(hooks, ev.Hook) {
			hooks = append(hooks, ev.Hook)
		}
	}
	fmt.Fprintf(&b, "%s failed: %s could not be downloaded, or did not have the hash its verification gives", plural(len(hooks), "hook"), plural(len(evs), "file"))
	if !logged {
		b.WriteString(":")
		for _, ev := range evs {
			fmt.Fprintf(&b, "\n\t%s (hook %s): %s", ev.Path, ev.Hook, ev.Error)
		}
		b.WriteString("\n")
	} else {
		b.WriteString(" (see above); ")
	}
	fmt.Fprintf(&b, "the other hooks are applied, and the units and files of %s are left as the last apply left them (still hostprov's): make the sources reachable or fix their hashes, and run hostprov apply again", strings.Join(hooks, ", "))
	return b.String()
}
