package apply

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostprov/hostprov/internal/fsutil"
	"github.com/hostprov/hostprov/internal/killpoint"
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
		if ent.Type.IsRegular() && fsutil.TempOf(ent.Name) == StateFileName {
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
	if _, err := e.files.WriteFiles([]fsutil.File{{Dir: e.sdir, Name: StateFileName, Data: data, Perm: 0o600}}); err != nil {
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

// prepareFiles writes the files the plan writes to their temporary files,
// together (fsutil.Prepare: one sync for all), making the drop-in
// directories they need, and records in intent the inode each will have.
func (e *executor) prepareFiles(intent *State) error {
	var batch []fsutil.File
	var rels []string
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if f.Op != OpAdd && f.Op != OpChange || f.Kind != "" {
			continue
		}
		dir, name, err := e.dirOf(f.rel, true)
		if err != nil {
			return err
		}
		batch = append(batch, fsutil.File{Dir: dir, Name: name, Data: f.New, Perm: 0o644})
		rels = append(rels, f.rel)
	}
	if len(batch) == 0 {
		return nil
	}
	b, err := e.files.Prepare(batch)
	if err != nil {
		return writeError(err)
	}
	e.batch = b
	for i, rel := range rels {
		if _, sf := intent.file(rel); sf != nil {
			sf.NextInode = b.Inode(i)
		}
	}
	return nil
}

// dirOf returns the directory of rel (NAME or NAME.d/FILE) in the unit
// directory and its name there; a drop-in directory is made when create
// is set, and is nil when it is missing and create is not.
func (e *executor) dirOf(rel string, create bool) (*fsutil.Dir, string, error) {
	d, name, ok := strings.Cut(rel, "/")
	if !ok {
		return e.udir, rel, nil
	}
	if dir := e.dirs[d]; dir != nil {
		return dir, name, nil
	}
	var dir *fsutil.Dir
	var err error
	if create {
		dir, err = dropinDir(e.udir, d)
	} else if dir, err = e.udir.OpenDir(d); errors.Is(err, fs.ErrNotExist) {
		return nil, name, nil // nothing to remove
	} else if err != nil {
		err = fmt.Errorf("drop-in directory %s: %w; hostprov removes drop-ins only in a real directory: replace it by a directory", e.udir.Join(d), err)
	}
	if err != nil {
		return nil, "", err
	}
	e.dirs[d] = dir
	return dir, name, nil
}

// writeFiles renames the prepared files into place, removes the files the
// plan removes, and updates intent to what is on disk as it goes; events
// follow the plan's order.
func (e *executor) writeFiles(intent *State) error {
	written, werr := 0, error(nil)
	if e.batch != nil {
		written, werr = e.files.Commit(e.batch)
	}
	next := 0 // the file of batch that comes next in plan order
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if f.Stamp || f.Kind != "" {
			continue // removeStamps, after systemd reloaded; writePaths
		}
		switch f.Op {
		case OpUnchanged:
			e.emit(Event{Action: EvUnchanged, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.NewSHA256})
		case OpKeep:
			e.emit(Event{Action: EvKept, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.OldSHA256})
		case OpAdd, OpChange:
			if next >= written {
				return writeError(werr)
			}
			if _, sf := intent.file(f.rel); sf != nil {
				sf.SHA256, sf.Inode, sf.Next, sf.NextInode = f.NewSHA256, e.batch.Inode(next), "", 0
			}
			e.inodes[f.rel] = e.batch.Inode(next)
			next++
			e.emit(Event{Action: EvWrote, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.NewSHA256})
		case OpRemove:
			dir, name, err := e.dirOf(f.rel, false)
			if err != nil {
				return err
			}
			if dir != nil {
				if err := e.files.Remove(dir, name); err != nil {
					return fsError("removing", dir.Join(name), err)
				}
			}
			if su, _ := intent.file(f.rel); su != nil {
				su.dropFile(f.rel)
			}
			if d, _, ok := strings.Cut(f.rel, "/"); ok && dir != nil {
				// An empty drop-in directory goes with its last
				// drop-in; a non-empty one (other drop-ins) stays.
				e.files.RemoveEmptyDir(e.udir, d)
			}
			e.emit(Event{Action: EvRemoved, Unit: f.Unit, Path: f.Path, Reason: f.Reason, SHA256: f.OldSHA256})
		}
	}
	if werr != nil {
		// Every file is in place, but a directory could not be synced.
		return writeError(werr)
	}
	return nil
}

// writeError is fsError for an error of fsutil.WriteFiles, which names the
// file.
func writeError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fsError("writing", pe.Path, err)
	}
	return fmt.Errorf("writing unit files: %w", err)
}

// removeStamps removes the stamps the plan removes. It runs once the unit
// files are written or removed and systemd has reloaded them, so that no
// unit on disk or loaded names a stamp as it goes: removed before, a crash
// could leave the unit of a removed hook, or the earlier version of a
// changed one, to run again at the next boot. A crash after it leaves
// stamps that the next apply, redoing the unit, removes.
func (e *executor) removeStamps() error {
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if !f.Stamp || f.Op != OpRemove {
			continue
		}
		if err := e.removeStamp(f); err != nil {
			e.emit(Event{Action: EvFailed, Op: "remove", Unit: f.Unit, Path: f.Path, Reason: f.Reason, Error: err.Error()})
			return fmt.Errorf("%w; the unit files are in place and recorded: run hostprov apply again", err)
		}
		e.emit(Event{Action: EvRemoved, Unit: f.Unit, Path: f.Path, Reason: f.Reason})
	}
	return nil
}

func (u *StateUnit) dropFile(rel string) {
	for i, f := range u.Files {
		if f.Path == rel {
			u.Files = append(u.Files[:i], u.Files[i+1:]...)
			return
		}
	}
}

// actions runs the plan's actions of phases from to to. Enables, disables,
// masks and unmasks of a phase go to systemd in one call per kind; stops
// one unit at a time, each waiting for its job; starts and restarts, the
// last phase, through startAll.
func (e *executor) actions(ctx context.Context, from, to int) error {
	var batch []Action
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := e.links(ctx, batch)
		batch = nil
		return err
	}
	var jobs []Action
	for _, a := range e.p.Actions {
		if ph := a.Kind.phase(); ph < from || ph > to {
			continue
		}
		if a.Kind.phase() == ActStart.phase() {
			jobs = append(jobs, a)
			continue
		}
		switch a.Kind {
		case ActEnable, ActDisable, ActMask, ActUnmask:
			if len(batch) > 0 && batch[0].Kind != a.Kind {
				if err := flush(); err != nil {
					return err
				}
			}
			batch = append(batch, a)
			continue
		}
		if err := flush(); err != nil {
			return err
		}
		if err := e.one(ctx, a); err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	e.startAll(ctx, jobs)
	return nil
}

// maxJobs is how many starts and restarts may be queued in systemd at once:
// enough for systemd to run them in parallel, few enough that a spec of many
// heavy hooks does not start them all at the same instant.
const maxJobs = 64

// startAll runs the starts, restarts and try-restarts of the last phase.
// Through a Queuer their jobs are queued in plan order, up to maxJobs at a
// time, and waited for in the same order, so that the log is in plan order
// while systemd runs the jobs in parallel; otherwise one at a time. A unit
// that fails is recorded in e.failed and the others go on.
func (e *executor) startAll(ctx context.Context, jobs []Action) {
	q, ok := e.sd.(Queuer)
	window := maxJobs
	if !ok {
		q, window = waitingQueuer{e.sd}, 1
	}
	var pending []func()
	for _, a := range jobs {
		if len(pending) == window {
			pending[0]()
			pending = pending[1:]
		}
		pending = append(pending, e.queue(ctx, q, a))
	}
	for _, finish := range pending {
		finish()
	}
}

// waitingQueuer is the Queuer of a Systemd that has none: its jobs run
// when they are waited for.
type waitingQueuer struct{ sd Systemd }

func (w waitingQueuer) Queue(ctx context.Context, kind ActionKind, name string) (func() error, error) {
	if kind == ActStart {
		return func() error { return w.sd.Start(ctx, name) }, nil
	}
	return func() error { return w.sd.Restart(ctx, name) }, nil
}

// queue queues one start, restart or try-restart (a restart only if the
// unit runs) and returns the function that waits for it and logs how it
// ended.
func (e *executor) queue(ctx context.Context, q Queuer, a Action) (finish func()) {
	if e.mayBeStarting(a) {
		if st, err := e.sd.Status(ctx, a.Unit); err == nil && e.stillStarting(a, st) {
			// A start joins the start job that runs (systemd merges
			// them) and waits for its result, within the job
			// timeout as any start: the start's outcome is the
			// hook's.
			a.Kind, a.Reason = ActStart, a.Reason+"; it was still starting, so that start was waited for, not restarted"
		}
	}
	kind := a.Kind
	if kind == ActTryRestart {
		st, err := e.sd.Status(ctx, a.Unit)
		switch {
		case errors.Is(err, ErrSkipped):
			return func() { e.jobDone(ctx, a, err) }
		case err == nil && !isRunning(st.ActiveState):
			return func() {
				e.emit(Event{Action: EvSkipped, Op: string(ActRestart), Unit: a.Unit, Reason: a.Reason + "; not running"})
			}
		}
		kind = ActRestart
	}
	killpoint.At("systemd")
	wait, err := q.Queue(ctx, kind, a.Unit)
	return func() {
		if err == nil {
			err = wait()
		}
		e.jobDone(ctx, a, err)
	}
}

// mayBeStarting reports whether a is a restart or try-restart of a unit
// that an earlier apply left incomplete (it was killed, or the machine
// went down), whose files this apply leaves as they are: the restart may
// be of a start that apply asked for, and that still runs.
func (e *executor) mayBeStarting(a Action) bool {
	if a.Kind != ActRestart && a.Kind != ActTryRestart {
		return false
	}
	unit := e.owner(a.Unit)
	if u := e.p.state.Unit(unit); u == nil || !u.Incomplete {
		return false
	}
	for i := range e.p.Files {
		if f := &e.p.Files[i]; f.Unit == unit && f.changes() {
			return false
		}
	}
	return true
}

// stillStarting reports whether a restart that mayBeStarting allows is to
// wait for the start that runs instead: the unit is activating (a
// oneshot's ExecStart runs, a service starts), and its activation began
// no earlier than its files on disk were written, so that what runs is
// what the files say. Restarted, it would be stopped half-way (SIGTERM to
// an apt-get or a dpkg that the hook runs) and run again. A service
// waiting to be restarted after it failed (auto-restart) is not
// starting: it is restarted as before. The times cannot tell a start that
// someone else asked for between the files' write and the daemon-reload
// after it (then the old definition runs): a window of the apply's own
// steps, milliseconds long.
func (e *executor) stillStarting(a Action, st UnitStatus) bool {
	if st.ActiveState != "activating" || strings.HasPrefix(st.SubState, "auto-restart") || st.InactiveExit.IsZero() {
		return false
	}
	u := e.p.state.Unit(e.owner(a.Unit))
	for _, f := range u.Files {
		fi, err := os.Lstat(filepath.Join(e.p.opts.UnitDirPath(), f.Path))
		if err != nil || fi.ModTime().After(st.InactiveExit) {
			return false
		}
	}
	return true
}

// links runs one batch of enables, disables, masks or unmasks.
func (e *executor) links(ctx context.Context, batch []Action) error {
	names := make([]string, len(batch))
	for i, a := range batch {
		names[i] = a.Unit
	}
	var (
		changes []LinkChange
		err     error
		done    string
	)
	killpoint.At("systemd")
	switch batch[0].Kind {
	case ActEnable:
		done = EvEnabled
		changes, err = e.sd.Enable(ctx, names)
	case ActDisable:
		done = EvDisabled
		changes, err = e.sd.Disable(ctx, names)
	case ActMask:
		done = EvMasked
		changes, err = e.sd.Mask(ctx, names)
	case ActUnmask:
		done = EvUnmasked
		changes, err = e.sd.Unmask(ctx, names)
	}
	// A Systemd that acts unit by unit (the offline one) says which
	// units failed: the others were done, and the apply goes on.
	var some UnitErrors
	if err != nil && !errors.As(err, &some) {
		for _, a := range batch {
			e.emit(Event{Action: EvFailed, Op: string(a.Kind), Unit: a.Unit, Reason: a.Reason, Error: err.Error(), Err: err})
		}
		return fmt.Errorf("%s %s: %w", batch[0].Kind, strings.Join(names, " "), err)
	}
	// Give each unit the links that name it; the rest (Also=, aliases)
	// go with the first.
	byUnit := map[string][]LinkChange{}
	for _, c := range changes {
		u := names[0]
		for _, n := range names {
			if filepath.Base(c.Path) == n || filepath.Base(c.Destination) == n {
				u = n
				break
			}
		}
		byUnit[u] = append(byUnit[u], c)
	}
	for _, a := range batch {
		if uerr := some[a.Unit]; uerr != nil {
			e.linkFailed[e.owner(a.Unit)] = true
			e.emit(Event{Action: EvFailed, Op: string(a.Kind), Unit: a.Unit, Reason: a.Reason, Error: uerr.Error(), Err: uerr})
			continue
		}
		e.emit(Event{Action: done, Unit: a.Unit, Reason: a.Reason, Links: byUnit[a.Unit]})
	}
	for _, c := range changes {
		if c.Type == ChangeAuxiliaryFailed {
			e.emit(Event{Action: EvSkipped, Op: string(batch[0].Kind), Unit: c.Path, Reason: "named by Also=; it is missing or masked, and systemctl skips it too"})
		}
	}
	return nil
}

// one runs a reload or a stop; a failure is returned, as nothing after it
// may run.
func (e *executor) one(ctx context.Context, a Action) error {
	var err error
	done := ""
	switch a.Kind {
	case ActReload:
		killpoint.At("systemd")
		done, err = EvReloaded, e.sd.Reload(ctx)
	case ActStop:
		// Only a unit that runs is stopped: systemd refuses to stop a
		// unit it does not know, such as one masked before it was ever
		// installed.
		st, serr := e.sd.Status(ctx, a.Unit)
		switch {
		case errors.Is(serr, ErrSkipped):
			err = serr
		case serr == nil && (st.LoadState == "not-found" || !isRunning(st.ActiveState)):
			e.emit(Event{Action: EvSkipped, Op: string(ActStop), Unit: a.Unit, Reason: a.Reason + "; not running"})
			return nil
		default:
			killpoint.At("systemd")
			done, err = EvStopped, e.sd.Stop(ctx, a.Unit)
		}
	}
	if errors.Is(err, ErrSkipped) {
		e.emit(Event{Action: EvSkipped, Op: string(a.Kind), Unit: a.Unit, Reason: a.Reason + "; " + err.Error()})
		return nil
	}
	if err != nil {
		e.emit(Event{Action: EvFailed, Op: string(a.Kind), Unit: a.Unit, Reason: a.Reason, Error: err.Error(), Err: err})
		if a.Kind == ActReload {
			return fmt.Errorf("daemon-reload: %w; the files are written and recorded; run hostprov apply again once systemd can reload", err)
		}
		return fmt.Errorf("%s %s: %w; nothing after it was done: run hostprov apply again", a.Kind, a.Unit, err)
	}
	e.emit(Event{Action: done, Unit: a.Unit, Reason: a.Reason})
	return nil
}

// jobDone logs how a start, restart or try-restart ended. A unit that
// failed is recorded in e.failed and the others go on.
func (e *executor) jobDone(ctx context.Context, a Action, err error) {
	switch {
	case errors.Is(err, ErrSkipped):
		e.emit(Event{Action: EvSkipped, Op: string(a.Kind), Unit: a.Unit, Reason: a.Reason + "; " + err.Error()})
	case err != nil:
		e.failed[e.owner(a.Unit)] = true
		e.emit(Event{Action: EvFailed, Op: string(a.Kind), Unit: a.Unit, Reason: a.Reason, Error: err.Error() + e.describe(ctx, a.Unit), Err: err})
	case a.Kind == ActStart:
		e.emit(Event{Action: EvStarted, Unit: a.Unit, Reason: a.Reason})
	default:
		e.emit(Event{Action: EvRestarted, Unit: a.Unit, Reason: a.Reason})
	}
}

func isRunning(active string) bool {
	switch active {
	case "active", "activating", "reloading", "deactivating":
		return true
	}
	return false
}

// describe adds what systemd says about a unit that failed.
func (e *executor) describe(ctx context.Context, unit string) string {
	st, err := e.sd.Status(ctx, unit)
	if err != nil {
		return ""
	}
	s := fmt.Sprintf(" (%s/%s", orDash(st.ActiveState), orDash(st.SubState))
	if st.Result != "" {
		s += ", result " + st.Result
	}
	if st.ExecMainCode == 1 { // CLD_EXITED
		s += fmt.Sprintf(", exit status %d", st.ExecMainStatus)
	} else if st.ExecMainCode != 0 {
		s += fmt.Sprintf(", killed by signal %d", st.ExecMainStatus)
	}
	return s + ")"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// owner maps a unit acted on (maybe a template's instance) to the unit of
// the plan it belongs to.
func (e *executor) owner(unit string) string {
	for _, u := range e.p.Units {
		if u.Unit == unit {
			return unit
		}
	}
	if at := strings.IndexByte(unit, '@'); at >= 0 {
		if dot := strings.LastIndexByte(unit, '.'); dot > at {
			return unit[:at+1] + unit[dot:]
		}
	}
	return unit
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
