package apply

import (
	"context"
	"sort"
	"strings"
	"time"
)

// Systemd is what apply needs from systemd. The D-Bus implementation talks
// to a running manager; the offline one (for --root) only makes the links
// that systemctl would make; tests use a recording fake. Every method waits
// until systemd has finished (a start returns when its job is done) and
// returns an error that says what happened and what to do about it.
type Systemd interface {
	// Reload makes systemd re-read unit files (daemon-reload).
	Reload(ctx context.Context) error
	// Enable enables units as their [Install] sections say, and reports
	// the links it created or removed.
	Enable(ctx context.Context, names []string) ([]LinkChange, error)
	// Disable removes the links that enabling made.
	Disable(ctx context.Context, names []string) ([]LinkChange, error)
	// Mask links units to /dev/null in the unit directory; Unmask removes
	// such links.
	Mask(ctx context.Context, names []string) ([]LinkChange, error)
	Unmask(ctx context.Context, names []string) ([]LinkChange, error)
	// Start, Restart and Stop run a job for the unit and wait for its
	// result; a result other than "done" is an error that names it.
	Start(ctx context.Context, name string) error
	Restart(ctx context.Context, name string) error
	Stop(ctx context.Context, name string) error
	// Status reads a unit's state.
	Status(ctx context.Context, name string) (UnitStatus, error)
}

// Queuer is implemented by a Systemd that can queue a start or restart
// without waiting for it. Execute then queues the starts and restarts of an
// apply one after another and waits for them afterwards, so that systemd
// runs them as it does at boot: in parallel, but a unit ordered After=
// another whose job is queued waits for that one.
type Queuer interface {
	// Queue queues a job of kind ActStart or ActRestart for the unit and
	// returns a function that waits for its result and returns what
	// Start or Restart would have. wait is called once.
	Queue(ctx context.Context, kind ActionKind, name string) (wait func() error, err error)
}

// LinkChange is a symlink that enabling, disabling or masking created or
// removed, or a unit it skipped.
type LinkChange struct {
	// Type is systemd's name of the change: "symlink" or "unlink", or
	// ChangeAuxiliaryFailed for a unit of Also= that could not be
	// enabled and was skipped (Path is then its name).
	Type        string
	Path        string
	Destination string
}

// ChangeAuxiliaryFailed is the LinkChange type of a unit named by Also=
// that enabling skipped because it is missing or masked, as systemd 252
// names it.
const ChangeAuxiliaryFailed = "auxiliary unit failed"

// UnitErrors is the error of a call on several units that failed for some
// of them only: each unit that failed, with its error. The units not in it
// were done.
type UnitErrors map[string]error

func (u UnitErrors) Error() string {
	names := make([]string, 0, len(u))
	for n := range u {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + u[n].Error()
	}
	return strings.Join(parts, "; ")
}

// UnitStatus is what systemd says about a unit.
type UnitStatus struct {
	Name        string
	LoadState   string // loaded, not-found, masked, error
	ActiveState string // active, inactive, failed, activating, ...
	SubState    string // running, exited, dead, ...
	// Result is the service's result: success, exit-code, signal,
	// timeout, ... Empty for units that have none.
	Result string
	// ExecMainCode and ExecMainStatus say how the main process ended
	// (CLD_EXITED=1 with the exit status, or a signal number).
	ExecMainCode   int32
	ExecMainStatus int32
	// UnitFileState is enabled, disabled, masked, static, ...
	UnitFileState string
	// NeedDaemonReload is true when the file on disk changed since
	// systemd loaded it.
	NeedDaemonReload bool
	// ActiveEnter and InactiveEnter are when the unit last became active
	// and inactive, InactiveExit when it last left inactive (its last
	// activation began); zero when it never did.
	ActiveEnter   time.Time
	InactiveEnter time.Time
	InactiveExit  time.Time
	// Exec is what systemd keeps of each ExecStart= command of a
	// service's last run, in the unit's order, commands that did not run
	// included (with zero times); nil for other units.
	Exec []ExecStatus
	// ConditionResult is false when the last start was skipped because
	// a Condition*= did not hold (a command hook that ran once already);
	// ConditionTimestamp is when that was checked, zero if never.
	ConditionResult    bool
	ConditionTimestamp time.Time
	// Journal holds the last lines the unit logged in its last run, for a
	// unit that failed; nil otherwise.
	Journal []string
}

// ExecStatus is how one command of a service last ran.
type ExecStatus struct {
	Argv []string
	// Start and Exit are zero when the command did not start or has not
	// ended.
	Start time.Time
	Exit  time.Time
	PID   uint32
	// Code is how the process ended, as in waitid(2): CLDExited with the
	// exit status in Status, or CLDKilled or CLDDumped with the signal.
	Code   int32
	Status int32
}

// Codes of ExecStatus.Code (CLD_* of waitid(2)).
const (
	CLDExited int32 = 1
	CLDKilled int32 = 2
	CLDDumped int32 = 3
)
