// Package sdbus is apply's way to a running systemd: a Manager implements
// apply.Systemd with go-systemd's D-Bus client over systemd's private socket,
// waits for every job's result, and turns what systemd refuses into errors
// that say what to do.
//
// It speaks to the manager directly (peer to peer on /run/systemd/private,
// or any socket that relays to it), not through the system bus: apply must
// work early in boot, before the bus daemon runs.
package sdbus

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/hostprov/hostprov/pkg/apply"
)

// statusJournalSlack is how long before a failed run's InactiveExitTimestamp
// Status looks for its journal lines. Lines of an earlier run in that
// window are left out by their invocation id, unless the process exited too
// soon for journald to learn it: a rare line too many, for a person to read.
const statusJournalSlack = time.Second

// PrivateSocket is where a systemd running as PID 1 listens for direct,
// root-only D-Bus connections.
const PrivateSocket = "/run/systemd/private"

// Deadlines of a Manager's waits, unless the caller sets others.
const (
	// DefaultCallTimeout bounds connecting and each call that systemd
	// answers at once (enable, read a unit's state, queue a job): it
	// answers those within milliseconds, unless it is hung.
	DefaultCallTimeout = 30 * time.Second
	// DefaultJobTimeout bounds each job wait and daemon-reload. A
	// Type=oneshot hook may run for minutes (systemd gives one no start
	// timeout of its own), so it is long; a systemd that dies or
	// re-executes during a wait is noticed at once, without it.
	DefaultJobTimeout = 10 * time.Minute
)

// Manager is a connection to a systemd manager. It implements apply.Systemd.
// Its methods may be called from several goroutines; set the exported
// fields before the first call.
//
// Every call and every wait has a deadline: a call that systemd does not
// answer within CallTimeout fails with ErrNoAnswer, and so does every call
// after it, at once; a job that does not end within JobTimeout fails with
// ErrJobTimeout; a job whose connection is lost while it is waited for
// fails with ErrConnectionLost. A ctx that ends ends every wait too.
type Manager struct {
	conn   *sddbus.Conn
	bus    *godbus.Conn // conn's one connection; its context ends with it
	socket string

	// noAnswer is the first call that systemd left unanswered, or nil.
	noAnswer atomic.Pointer[Error]

	// CallTimeout bounds each call; 0 means none. DialTimeout sets it to
	// the timeout it connected with.
	CallTimeout time.Duration
	// JobTimeout bounds each wait for a job (counted from when the job
	// was queued) and each daemon-reload; 0 means none. Dial sets it to
	// DefaultJobTimeout.
	JobTimeout time.Duration

	// RunJournalctl runs journalctl with args and returns its standard
	// output. A failed job's error quotes the unit's last journal lines
	// through it. Dial sets it to run the journalctl of this machine; a
	// caller whose systemd logs elsewhere (a test rig in its own
	// namespaces) replaces it.
	RunJournalctl func(ctx context.Context, args ...string) ([]byte, error)
}

var (
	_ apply.Systemd = (*Manager)(nil)
	_ apply.Queuer  = (*Manager)(nil)
)

// Dial connects to the systemd manager listening at socketPath, normally
// PrivateSocket, and waits for it at most DefaultCallTimeout, or until ctx
// ends. ctx bounds connecting only; the connection lives until Close. A
// failure is an *Error whose cause is ErrUnreachable (nothing answers
// there), ErrNoAnswer (something took the connection and did not answer in
// time) or ErrNotAuthorized (the socket is root's and the caller is not
// root).
func Dial(ctx context.Context, socketPath string) (*Manager, error) {
	return dialTimeout(ctx, socketPath, DefaultCallTimeout, false)
}

// DialUnitChanges is Dial for a Manager whose connection also hands on
// the PropertiesChanged signals of units, for a caller that follows them
// (go-systemd's SetPropertiesSubscriber); Dial's drops them, as an apply
// needs only the end of its jobs.
func DialUnitChanges(ctx context.Context, socketPath string) (*Manager, error) {
	return dialTimeout(ctx, socketPath, DefaultCallTimeout, true)
}

// DialTimeout is Dial with timeout in place of DefaultCallTimeout, for
// connecting and as the Manager's CallTimeout; it must be more than 0.
func DialTimeout(ctx context.Context, socketPath string, timeout time.Duration) (*Manager, error) {
	return dialTimeout(ctx, socketPath, timeout, false)
}

func dialTimeout(ctx context.Context, socketPath string, timeout time.Duration, unitChanges bool) (*Manager, error) {
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, bus, err := dialPrivate(dctx, socketPath, unitChanges)
	if err != nil {
		if ctx.Err() != nil {
			// The caller's deadline, or the caller gave up.
			timeout = 0
		}
		return nil, dialError(socketPath, timeout, err)
	}
	return &Manager{conn: conn, bus: bus, socket: socketPath, CallTimeout: timeout, JobTimeout: DefaultJobTimeout,
		RunJournalctl: runJournalctl}, nil
}

// dialError classifies a failed dial; timeout is the deadline that ended
// it, 0 when it was not Dial's own. systemd hangs up on a private-socket
// client that is not root once it has read its credentials, so an
// authentication that ends without an answer means "not root" for a caller
// who is not root, and a socket with no systemd behind it for root.
func dialError(socket string, timeout time.Duration, err error) error {
	e := &Error{Op: "connect to systemd at " + socket, Err: err}
	switch {
	case errors.Is(err, context.Canceled):
		// The caller gave up: nothing to advise about systemd.
		return e
	case errors.Is(err, context.DeadlineExceeded):
		text := "systemd did not answer before the deadline"
		if timeout > 0 {
			text = fmt.Sprintf("systemd did not answer within %v", timeout)
		}
		e.Cause, e.Hint = &causeText{ErrNoAnswer, text}, unreachableHint(socket, err)
		return e
	}
	e.Cause, e.Hint = cause(socket, err)
	if e.Cause == nil && (strings.Contains(err.Error(), "authenticate") || errors.Is(err, errFirstCall)) {
		e.Cause, e.Hint = ErrUnreachable, unreachableHint(socket, err)
	}
	if (e.Cause == ErrUnreachable || e.Cause == ErrAccessDenied) && os.Geteuid() != 0 &&
		strings.Contains(err.Error(), "authenticate") {
		e.Cause = ErrNotAuthorized
		e.Hint = "systemd accepts connections on its private socket " + socket +
			" from root only: run hostprov as root"
	}
	return e
}

// Close closes the connection.
func (m *Manager) Close() {
	m.conn.Close()
}

// Conn returns the underlying go-systemd connection, for reads that
// apply.Systemd does not offer. Calls through it have only the deadlines
// their caller gives them.
func (m *Manager) Conn() *sddbus.Conn {
	return m.conn
}

// call runs fn, one exchange with systemd about op on units, under the
// deadline timeout (0: none), and classifies its error.
//
// A call that systemd leaves unanswered until its deadline marks the
// Manager: later calls fail at once with the same cause instead of asking.
// A systemd that did not answer for that long is hung, and asking again
// would make an apply of many units wait as long again for each of them.
func (m *Manager) call(ctx context.Context, op string, units []string, timeout time.Duration, fn func(context.Context) error) error {
	if first := m.noAnswer.Load(); first != nil {
		return &Error{Op: op, Units: units, Cause: first.Cause, Hint: first.Hint,
			Err: fmt.Errorf("not asked: systemd left an earlier call (%s) unanswered", first.Op)}
	}
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err := fn(cctx)
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		e := &Error{Op: op, Units: units, Err: err,
			Cause: &causeText{ErrNoAnswer, fmt.Sprintf("systemd did not answer at %s within %v", m.socket, timeout)},
			Hint:  noAnswerHint(m.socket)}
		m.noAnswer.CompareAndSwap(nil, e)
		return e
	}
	return classify(op, units, m.socket, err)
}

// Reload makes systemd re-read all unit files (daemon-reload) and returns
// once it has. It may take as long as a job: systemd reloads every unit,
// and on a large machine that takes a while (systemctl allows it minutes).
func (m *Manager) Reload(ctx context.Context) error {
	return m.call(ctx, "reload systemd", nil, m.JobTimeout, m.conn.ReloadContext)
}

// fileChange is the shape of go-systemd's four ...UnitFileChange types.
type fileChange = struct{ Type, Filename, Destination string }

// linkChanges converts go-systemd's report of changed links.
func linkChanges[C ~fileChange](changes []C) []apply.LinkChange {
	out := make([]apply.LinkChange, len(changes))
	for i, c := range changes {
		f := fileChange(c)
		out[i] = apply.LinkChange{Type: f.Type, Path: f.Filename, Destination: f.Destination}
	}
	return out
}

// linkCall makes one call that changes links (op, on names) through
// m.call, and returns systemd's changes as apply's.
func linkCall[C ~fileChange](ctx context.Context, m *Manager, op string, names []string, do func(context.Context) ([]C, error)) ([]apply.LinkChange, error) {
	var changes []C
	err := m.call(ctx, op, names, m.CallTimeout, func(ctx context.Context) (err error) {
		changes, err = do(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return linkChanges(changes), nil
}

// Enable enables units persistently (links under /etc), as their [Install]
// sections say, replacing links that point elsewhere. A unit without an
// [Install] section is no error and makes no change. systemd needs no reload
// afterwards for the links to count, but does for a unit file written since
// the last one.
func (m *Manager) Enable(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	return linkCall(ctx, m, "enable", names, func(ctx context.Context) ([]sddbus.EnableUnitFileChange, error) {
		_, changes, err := m.conn.EnableUnitFilesContext(ctx, names, false, true)
		return changes, err
	})
}

// Disable removes the persistent links that enabling made.
func (m *Manager) Disable(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	return linkCall(ctx, m, "disable", names, func(ctx context.Context) ([]sddbus.DisableUnitFileChange, error) {
		return m.conn.DisableUnitFilesContext(ctx, names, false)
	})
}

// Mask links units to /dev/null under /etc. Without force: a unit file of
// that name in /etc is never replaced (systemd refuses with ErrUnitExists),
// nor is a link that points elsewhere, which someone else may own.
func (m *Manager) Mask(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	return linkCall(ctx, m, "mask", names, func(ctx context.Context) ([]sddbus.MaskUnitFileChange, error) {
		return m.conn.MaskUnitFilesContext(ctx, names, false, false)
	})
}

// Unmask removes the /dev/null links of masked units.
func (m *Manager) Unmask(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	return linkCall(ctx, m, "unmask", names, func(ctx context.Context) ([]sddbus.UnmaskUnitFileChange, error) {
		return m.conn.UnmaskUnitFilesContext(ctx, names, false)
	})
}

// jobFunc is the shape of go-systemd's Start/Restart/StopUnitContext.
type jobFunc func(ctx context.Context, name, mode string, ch chan<- string) (int, error)

// Start starts a unit ("replace" mode) and waits for the job's result. A
// result other than "done" is a *JobError with the unit's result, how its
// main process ended and its last journal lines.
func (m *Manager) Start(ctx context.Context, name string) error {
	return m.job(ctx, "start", name, m.conn.StartUnitContext)
}

// Restart restarts a unit, or starts it if it is not running, and waits as
// Start does. A oneshot service runs again.
func (m *Manager) Restart(ctx context.Context, name string) error {
	return m.job(ctx, "restart", name, m.conn.RestartUnitContext)
}

// Stop stops a unit and waits as Start does.
func (m *Manager) Stop(ctx context.Context, name string) error {
	return m.job(ctx, "stop", name, m.conn.StopUnitContext)
}

// Queue queues a start or a restart ("replace" mode) and returns a function
// that waits for the job's result, as Start and Restart do.
func (m *Manager) Queue(ctx context.Context, kind apply.ActionKind, name string) (func() error, error) {
	switch kind {
	case apply.ActStart:
		return m.queue(ctx, "start", name, m.conn.StartUnitContext)
	case apply.ActRestart:
		return m.queue(ctx, "restart", name, m.conn.RestartUnitContext)
	}
	return nil, fmt.Errorf("sdbus: cannot queue a %s job", kind)
}

// job enqueues a job and waits for its result.
func (m *Manager) job(ctx context.Context, op, name string, enqueue jobFunc) error {
	wait, err := m.queue(ctx, op, name, enqueue)
	if err != nil {
		return err
	}
	return wait()
}

// queue enqueues a job and returns a function that waits for its result,
// until JobTimeout has passed since it was queued, the connection is lost,
// or ctx ends. In each of those cases the job may go on in systemd; the
// error says so.
func (m *Manager) queue(ctx context.Context, op, name string, enqueue jobFunc) (func() error, error) {
	// Buffered: go-systemd delivers results while holding the lock every
	// other job needs, so a result nobody reads yet must not block it.
	done := make(chan string, 1)
	asked := time.Now()
	var id int
	err := m.call(ctx, op, []string{name}, m.CallTimeout, func(ctx context.Context) (err error) {
		id, err = enqueue(ctx, name, "replace", done)
		return err
	})
	if err != nil {
		return nil, err
	}
	return func() error { return m.wait(ctx, op, name, id, asked, done) }, nil
}

// wait waits for the result of job id, a job of kind op for unit name
// queued at the time asked, on done.
func (m *Manager) wait(ctx context.Context, op, name string, id int, asked time.Time, done <-chan string) error {
	result := func(r string) error {
		if r == "done" {
			return nil
		}
		return m.jobError(ctx, op, name, r, asked)
	}
	var deadline <-chan time.Time
	if m.JobTimeout > 0 {
		t := time.NewTimer(time.Until(asked.Add(m.JobTimeout)))
		defer t.Stop()
		deadline = t.C
	}
	waited := func() error {
		return fmt.Errorf("waited %v for job %d", time.Since(asked).Round(time.Millisecond), id)
	}
	select {
	case r := <-done:
		return result(r)
	case <-m.bus.Context().Done():
		// When the connection closes, godbus closes the channel that
		// go-systemd reads signals from, and go-systemd stops reading:
		// a result that has not arrived by then never does.
		select {
		case r := <-done:
			return result(r)
		default:
		}
		return &Error{Op: op, Units: []string{name}, Err: waited(),
			Cause: &causeText{ErrConnectionLost, fmt.Sprintf("the connection to systemd at %s was lost while waiting for the %s job", m.socket, op)},
			Hint: "systemd may have been re-executed (systemctl daemon-reexec), restarted or killed, or be shutting down; " +
				"the job may go on or be gone: check systemctl status " + name + ", then run hostprov again"}
	case <-deadline:
		return &Error{Op: op, Units: []string{name}, Err: waited(),
			Cause: &causeText{ErrJobTimeout, fmt.Sprintf("the %s job did not finish within %v", op, m.JobTimeout)},
			Hint: "It goes on in systemd, unless systemd was restarted meanwhile: check systemctl status " + name +
				" and systemctl list-jobs. If the unit needs longer, give hostprov a longer --timeout"}
	case <-ctx.Done():
		return &Error{Op: op, Units: []string{name}, Err: fmt.Errorf("%w: %w", waited(), ctx.Err()),
			Cause: &causeText{ErrGaveUp, fmt.Sprintf("hostprov gave up waiting for the %s job", op)},
			Hint:  "It goes on in systemd: check systemctl status " + name}
	}
}

// Status reads a unit's state. The type-specific fields (Result, how the
// main process ended) are filled for the unit types that have them; a unit
// that systemd does not know has LoadState "not-found" and no error.
func (m *Manager) Status(ctx context.Context, name string) (apply.UnitStatus, error) {
	st := apply.UnitStatus{Name: name}
	var props map[string]any
	err := m.call(ctx, "read the status of", []string{name}, m.CallTimeout, func(ctx context.Context) (err error) {
		if props, err = m.conn.GetUnitPropertiesContext(ctx, name); err != nil {
			return err
		}
		st.LoadState, _ = props["LoadState"].(string)
		st.ActiveState, _ = props["ActiveState"].(string)
		st.SubState, _ = props["SubState"].(string)
		st.UnitFileState, _ = props["UnitFileState"].(string)
		st.NeedDaemonReload, _ = props["NeedDaemonReload"].(bool)
		st.ActiveEnter = usecTime(props["ActiveEnterTimestamp"])
		st.InactiveEnter = usecTime(props["InactiveEnterTimestamp"])
		st.InactiveExit = usecTime(props["InactiveExitTimestamp"])
		st.ConditionResult, _ = props["ConditionResult"].(bool)
		st.ConditionTimestamp = usecTime(props["ConditionTimestamp"])
		if st.LoadState == "not-found" {
			return nil
		}
		if err := m.readResult(ctx, name, &st); err != nil {
			return err
		}
		if typeInterface(name) == "Service" {
			st.Exec, err = ExecStart(ctx, m.conn, name)
		}
		return err
	})
	if err != nil || st.LoadState == "not-found" {
		return st, err
	}
	if st.ActiveState == "failed" {
		// Why it failed, for status: the journal of its last run.
		var invocation string
		if id, ok := props["InvocationID"].([]byte); ok {
			invocation = hex.EncodeToString(id)
		}
		// From a moment before the run's InactiveExitTimestamp: systemd
		// stamps it after forking the run's first process, whose first
		// lines can reach the journal before that (the rig shows it).
		since := usecTime(props["InactiveExitTimestamp"])
		if !since.IsZero() {
			since = since.Add(-statusJournalSlack)
		}
		st.Journal, _ = m.journal(ctx, name, since, invocation)
	}
	return st, nil
}

// execCommand is one element of a service's ExecStart property, D-Bus type
// (sasbttttuii): the binary's path, its argv (argv[0] included), whether
// failure is ignored ("-" prefix), when the last run started and exited
// (realtime and monotonic, in µs), its pid, and how it ended (a CLD_* code
// and an exit status or signal). godbus fills the fields in this order.
type execCommand struct {
	Path           string
	Argv           []string
	IgnoreErrors   bool
	StartRealtime  uint64
	StartMonotonic uint64
	ExitRealtime   uint64
	ExitMonotonic  uint64
	PID            uint32
	Code           int32
	Status         int32
}

// ExecStart reads the ExecStart property of a service: every command as
// systemd parsed it from the unit file, with how it last ran. This is the
// per-command status systemd keeps, which status shows per step.
func ExecStart(ctx context.Context, conn *sddbus.Conn, unit string) ([]apply.ExecStatus, error) {
	cmds, err := ServiceProperty[[]execCommand](ctx, conn, unit, "ExecStart")
	if err != nil {
		return nil, err
	}
	out := make([]apply.ExecStatus, len(cmds))
	for i, c := range cmds {
		out[i] = apply.ExecStatus{Argv: c.Argv, Start: usecTime(c.StartRealtime), Exit: usecTime(c.ExitRealtime),
			PID: c.PID, Code: c.Code, Status: c.Status}
	}
	return out, nil
}

// ServiceProperty reads the property name of a service into a T. Its
// errors name the unit and the property, and the property's D-Bus
// signature when it is not a T.
func ServiceProperty[T any](ctx context.Context, conn *sddbus.Conn, unit, name string) (T, error) {
	var v T
	prop, err := conn.GetServicePropertyContext(ctx, unit, name)
	if err != nil {
		return v, fmt.Errorf("%s: %s: %w", unit, name, err)
	}
	if err := prop.Value.Store(&v); err != nil {
		return v, fmt.Errorf("%s: %s: decode %s: %w", unit, name, prop.Value.Signature(), err)
	}
	return v, nil
}

// readResult fills the fields that live on the unit type's own interface.
func (m *Manager) readResult(ctx context.Context, name string, st *apply.UnitStatus) error {
	iface := typeInterface(name)
	if iface == "" {
		return nil
	}
	p, err := m.conn.GetUnitTypePropertyContext(ctx, name, iface, "Result")
	if err != nil {
		return err
	}
	st.Result, _ = p.Value.Value().(string)
	if iface != "Service" {
		return nil
	}
	for _, f := range []struct {
		prop string
		dst  *int32
	}{{"ExecMainCode", &st.ExecMainCode}, {"ExecMainStatus", &st.ExecMainStatus}} {
		p, err := m.conn.GetServicePropertyContext(ctx, name, f.prop)
		if err != nil {
			return err
		}
		*f.dst, _ = p.Value.Value().(int32)
	}
	return nil
}

// typeInterface names the D-Bus interface, after org.freedesktop.systemd1.,
// of the unit types that have a Result property; "" for the others
// (targets, slices, devices).
func typeInterface(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return ""
	}
	switch t := name[i+1:]; t {
	case "service", "socket", "mount", "automount", "swap", "timer", "path", "scope":
		return strings.ToUpper(t[:1]) + t[1:]
	}
	return ""
}

// usecTime converts one of systemd's timestamps, µs since the epoch with 0
// for "never", to a time.Time, zero for never.
func usecTime(v any) time.Time {
	us, ok := v.(uint64)
	if !ok || us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(int64(us))
}

// Done is closed when the connection to systemd ends: Close, or systemd
// hung up (it stopped, or re-executed). A caller that follows systemd's
// signals learns there that it must dial again.
func (m *Manager) Done() <-chan struct{} {
	return m.bus.Context().Done()
}
