package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostprov/hostprov/internal/killpoint"
)

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

// linkCalls are the Systemd methods of the actions that change links, and
// the event of each that is done.
var linkCalls = map[ActionKind]struct {
	do   func(Systemd, context.Context, []string) ([]LinkChange, error)
	done string
}{
	ActEnable:  {Systemd.Enable, EvEnabled},
	ActDisable: {Systemd.Disable, EvDisabled},
	ActMask:    {Systemd.Mask, EvMasked},
	ActUnmask:  {Systemd.Unmask, EvUnmasked},
}

// links runs one batch of enables, disables, masks or unmasks.
func (e *executor) links(ctx context.Context, batch []Action) error {
	names := make([]string, len(batch))
	for i, a := range batch {
		names[i] = a.Unit
	}
	killpoint.At("systemd")
	call := linkCalls[batch[0].Kind]
	changes, err := call.do(e.sd, ctx, names)
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
		e.emit(Event{Action: call.done, Unit: a.Unit, Reason: a.Reason, Links: byUnit[a.Unit]})
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
