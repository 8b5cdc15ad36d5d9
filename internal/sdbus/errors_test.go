package sdbus

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	godbus "github.com/godbus/dbus/v5"
)

// TestClassify checks the mapping from what godbus returns to a cause and
// a message that says what to do, on errors built as godbus builds them:
// D-Bus error replies as godbus.Error values, socket errors as *net.OpError.
func TestClassify(t *testing.T) {
	const sock = "/run/test/private"
	dialErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", errno)}
	}
	for _, c := range []struct {
		name  string
		err   error
		cause error
		want  []string // substrings of the message
	}{
		{"polkit by name", godbus.Error{Name: errInteractiveAuth, Body: []any{"Interactive authentication required."}},
			ErrNotAuthorized, []string{"enable a.service: systemd refused: not authorized. Run hostprov as root, or give this user the polkit action org.freedesktop.systemd1.manage-units (and manage-unit-files for enable/disable)", errInteractiveAuth, "Interactive authentication required."}},
		{"polkit by text", godbus.Error{Name: "org.freedesktop.DBus.Error.Failed", Body: []any{"Interactive authentication required."}},
			ErrNotAuthorized, []string{"polkit action org.freedesktop.systemd1.manage-units"}},
		{"polkit pointer", godbus.NewError(errInteractiveAuth, []any{"Interactive authentication required."}),
			ErrNotAuthorized, []string{"not authorized"}},
		{"access denied", godbus.Error{Name: errAccessDenied, Body: []any{"Access denied"}},
			ErrAccessDenied, []string{"systemd refused: access denied. Run hostprov as root", "SELinux", errAccessDenied + ": Access denied"}},
		{"no such unit", godbus.Error{Name: errNoSuchUnit, Body: []any{"Unit a.service not found."}},
			ErrNoSuchUnit, []string{"no such unit", "daemon-reload", "Unit a.service not found."}},
		{"masked", godbus.Error{Name: errUnitMasked, Body: []any{"Unit a.service is masked."}},
			ErrMasked, []string{"unit is masked. Unmask it"}},
		{"exists", godbus.Error{Name: errUnitExists, Body: []any{"File /etc/systemd/system/a.service already exists."}},
			ErrUnitExists, []string{"a unit file is in the way", "remove it"}},
		{"read-only by name", godbus.Error{Name: errEROFS, Body: []any{"Read-only file system"}},
			ErrReadOnly, []string{"the unit directory is read-only", "Remount /etc read-write"}},
		{"read-only: no .wants directory", godbus.Error{Name: errNoSuchUnit, Body: []any{"Unit file /etc/systemd/system/multi-user.target.wants/a.service does not exist."}},
			ErrReadOnly, []string{"the unit directory is read-only"}},
		{"read-only by text", godbus.Error{Name: "org.freedesktop.DBus.Error.Failed", Body: []any{"Failed to enable: Read-only file system"}},
			ErrReadOnly, []string{"read-only"}},
		{"refused", dialErr(syscall.ECONNREFUSED),
			ErrUnreachable, []string{"systemd is not reachable. There is no socket at " + sock + ". Is systemd PID 1 here"}},
		{"no socket", dialErr(syscall.ENOENT), ErrUnreachable, []string{sock}},
		{"closed", godbus.ErrClosed, ErrUnreachable, []string{sock}},
		{"socket is root's", dialErr(syscall.EACCES), ErrNotAuthorized, []string{"Only root may use systemd's private socket " + sock}},
		{"other D-Bus error", godbus.Error{Name: "org.freedesktop.systemd1.TransactionIsDestructive", Body: []any{"Transaction is destructive."}},
			nil, []string{"enable a.service: org.freedesktop.systemd1.TransactionIsDestructive: Transaction is destructive."}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := classify("enable", []string{"a.service"}, sock, c.err)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("classify returned %T, want *Error", err)
			}
			if e.Cause != c.cause {
				t.Errorf("cause %v, want %v", e.Cause, c.cause)
			}
			if c.cause != nil && !errors.Is(err, c.cause) {
				t.Errorf("errors.Is(err, %v) is false", c.cause)
			}
			// Not errors.Is: a godbus.Error (its Body a slice) is not
			// comparable.
			if e.Err == nil || e.Err.Error() != c.err.Error() {
				t.Errorf("the error wraps %v, not what godbus returned", e.Err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q\nlacks %q", err, w)
				}
			}
		})
	}
	if classify("reload", nil, sock, nil) != nil {
		t.Error("classify(nil) is not nil")
	}
}

// TestDialErrorNotRoot checks that an authentication the private socket
// ends without an answer reads "not root" to a caller that is not root.
func TestDialErrorNotRoot(t *testing.T) {
	authErr := fmt.Errorf("authenticate: %w", errors.New("dbus: authentication failed"))
	err := dialError("/run/systemd/private", 0, authErr)
	want := ErrUnreachable
	if os.Geteuid() != 0 {
		want = ErrNotAuthorized
	}
	if !errors.Is(err, want) {
		t.Errorf("dialError(%v) = %v, want cause %v", authErr, err, want)
	}
}

// TestJobErrorMessage checks that a failed job reads as what happened: the
// job's result, the unit's, how its main process ended, its journal.
func TestJobErrorMessage(t *testing.T) {
	for _, c := range []struct {
		err  *JobError
		want string
	}{
		{&JobError{Op: "start", Unit: "a.service", JobResult: "failed", ActiveState: "failed", Result: "exit-code",
			ExecMainCode: 1, ExecMainStatus: 3, Journal: []string{"boom", "a.service: Failed with result 'exit-code'."}},
			"start a.service: the job failed; the unit is failed with result \"exit-code\", its main process exited with status 3; its last journal lines:\n    boom\n    a.service: Failed with result 'exit-code'."},
		{&JobError{Op: "restart", Unit: "b.service", JobResult: "failed", ActiveState: "failed", Result: "signal",
			ExecMainCode: 2, ExecMainStatus: 9, JournalErr: errors.New("journalctl: executable file not found")},
			"restart b.service: the job failed; the unit is failed with result \"signal\", its main process was killed by signal 9 (killed) (its journal could not be read: journalctl: executable file not found; see journalctl -u b.service)"},
		{&JobError{Op: "start", Unit: "s.swap", JobResult: "unsupported", ActiveState: "inactive", Result: "success"},
			"start s.swap: systemd does not support this unit's type here (no swap, and only some mounts, in a container) (job result \"unsupported\"); the unit is inactive with result \"success\" (it logged nothing; see journalctl -u s.swap)"},
		{&JobError{Op: "start", Unit: "c.service", JobResult: "dependency", ActiveState: "inactive", Result: "success"},
			"start c.service: a unit it requires failed, so the job was not run (job result \"dependency\"); the unit is inactive with result \"success\" (it logged nothing; see journalctl -u c.service)"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
		if !errors.Is(c.err, ErrJobFailed) {
			t.Errorf("%v is not ErrJobFailed", c.err)
		}
	}
}

func TestTypeInterface(t *testing.T) {
	for name, want := range map[string]string{
		"a.service": "Service", "swap1.swap": "Swap", "mnt-data.mount": "Mount", "x.timer": "Timer",
		"multi-user.target": "", "system.slice": "", "noext": "",
	} {
		if got := typeInterface(name); got != want {
			t.Errorf("typeInterface(%q) = %q, want %q", name, got, want)
		}
	}
}
