package sdbus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	godbus "github.com/godbus/dbus/v5"
)

// The causes a Manager's errors are classified by. Test for them with
// errors.Is; the error's own message adds the operation, the units, what to
// do and what systemd said.
var (
	// ErrNotAuthorized: systemd refused the caller, who is not root and
	// has no polkit authorization (or, on the private socket, is not root).
	ErrNotAuthorized = errors.New("systemd refused: not authorized")
	// ErrAccessDenied: systemd or a security policy denied the call.
	ErrAccessDenied = errors.New("systemd refused: access denied")
	// ErrUnreachable: no systemd answers on the socket.
	ErrUnreachable = errors.New("systemd is not reachable")
	// ErrNoSuchUnit: systemd has no unit, or no unit file, of that name.
	ErrNoSuchUnit = errors.New("no such unit")
	// ErrUnitExists: enabling or masking would replace a file that is not
	// a link.
	ErrUnitExists = errors.New("a unit file is in the way")
	// ErrMasked: the unit is masked, so it cannot be started or enabled.
	ErrMasked = errors.New("unit is masked")
	// ErrReadOnly: systemd could not write links into a read-only unit
	// directory.
	ErrReadOnly = errors.New("the unit directory is read-only")
	// ErrJobFailed: a start, restart or stop job ended with a result
	// other than "done". The error is a *JobError.
	ErrJobFailed = errors.New("job failed")
	// ErrNoAnswer: systemd, or whatever listens on the socket, did not
	// answer a call, or the handshake of a new connection, within its
	// deadline. Once a call went unanswered, a Manager fails every later
	// call at once with this cause.
	ErrNoAnswer = errors.New("systemd did not answer in time")
	// ErrJobTimeout: a start, restart or stop job did not end within the
	// Manager's JobTimeout. The job goes on in systemd.
	ErrJobTimeout = errors.New("the job did not finish in time")
	// ErrConnectionLost: the connection to systemd ended while a job was
	// waited for, as when systemd re-executes, restarts or dies. What
	// became of the job is not known.
	ErrConnectionLost = errors.New("the connection to systemd was lost")
	// ErrGaveUp: the caller's context ended while a job was waited for
	// (hostprov was interrupted). The job goes on in systemd.
	ErrGaveUp = errors.New("gave up waiting for the job")
)

// causeText is a cause in the words of one case (with the socket, the
// deadline, the job) that matches its Err* value under errors.Is.
type causeText struct {
	err  error
	text string
}

func (c *causeText) Error() string { return c.text }
func (c *causeText) Unwrap() error { return c.err }

// D-Bus error names that systemd, polkit and the bus send.
const (
	errInteractiveAuth = "org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"
	errAccessDenied    = "org.freedesktop.DBus.Error.AccessDenied"
	errAuthFailed      = "org.freedesktop.DBus.Error.AuthFailed"
	errNoSuchUnit      = "org.freedesktop.systemd1.NoSuchUnit"
	errLoadFailed      = "org.freedesktop.systemd1.LoadFailed"
	errUnitMasked      = "org.freedesktop.systemd1.UnitMasked"
	errUnitExists      = "org.freedesktop.systemd1.UnitExists"
	errEROFS           = "System.Error.EROFS"
	errEACCES          = "System.Error.EACCES"
	errEPERM           = "System.Error.EPERM"
)

// Error is a systemd call that failed: which operation on which units, the
// classified cause (one of the Err* values, or nil when hostprov has no
// advice to give), what to do about it, and the error as it came.
type Error struct {
	Op    string   // "dial", "reload", "enable", "start", ...
	Units []string // the units the call was about; none for dial and reload
	Cause error    // ErrNotAuthorized, ErrUnreachable, ... or nil
	Hint  string   // what to do, in a full sentence; "" when Cause is nil
	Err   error    // what godbus or systemd said
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if len(e.Units) > 0 {
		b.WriteString(" ")
		b.WriteString(strings.Join(e.Units, ", "))
	}
	b.WriteString(": ")
	if e.Cause != nil {
		b.WriteString(e.Cause.Error())
		if e.Hint != "" {
			b.WriteString(". ")
			b.WriteString(e.Hint)
		}
		fmt.Fprintf(&b, " (%s)", describe(e.Err))
	} else {
		b.WriteString(describe(e.Err))
	}
	return b.String()
}

// Unwrap gives errors.Is and errors.As both the cause and what systemd said.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Err}
	}
	return []error{e.Cause, e.Err}
}

// describe renders a D-Bus error with its name, which godbus's own Error()
// leaves out and which is what one searches for.
func describe(err error) string {
	if name, msg, ok := dbusError(err); ok {
		if msg == "" {
			return name
		}
		return name + ": " + msg
	}
	return err.Error()
}

// dbusError finds a D-Bus error reply in err's chain. godbus returns the
// value type; NewError returns a pointer: accept both.
func dbusError(err error) (name, msg string, ok bool) {
	var v godbus.Error
	if errors.As(err, &v) {
		return v.Name, bodyText(v.Body), true
	}
	var p *godbus.Error
	if errors.As(err, &p) && p != nil {
		return p.Name, bodyText(p.Body), true
	}
	return "", "", false
}

func bodyText(body []any) string {
	if len(body) > 0 {
		if s, ok := body[0].(string); ok {
			return s
		}
	}
	return ""
}

// Hints, each naming the fix.
const (
	hintNotAuthorized = "Run hostprov as root, or give this user the polkit action " +
		"org.freedesktop.systemd1.manage-units (and manage-unit-files for enable/disable)"
	hintAccessDenied = "Run hostprov as root; if it already runs as root, a security policy " +
		"(SELinux, AppArmor) or a polkit rule denies the call: see the audit log and the journal of systemd"
	hintNoSuchUnit = "Check the unit's name; its file must be in a unit directory " +
		"(/etc/systemd/system) and systemd reloaded (daemon-reload) before it can be used"
	hintUnitExists = "A file that is not a link has the name the link needs: remove it, " +
		"or leave that unit out of the spec"
	hintMasked   = "Unmask it (mask: false in the spec, or systemctl unmask) before enabling or starting it"
	hintReadOnly = "systemd could not make the links under /etc/systemd/system (nor the directories for them). " +
		"Remount /etc read-write, or on an image-based system install through its writable " +
		"configuration layer (or render the units into the image with --root)"
)

// socketHint is what a hint adds about the socket: where systemd's is when
// hostprov was not told, whether it was told right otherwise.
func socketHint(socket string) string {
	if socket != PrivateSocket {
		return "; is --systemd-socket " + socket + " right? systemd running as PID 1 listens at " + PrivateSocket
	}
	return "; if systemd's private socket is elsewhere, give its path with --systemd-socket"
}

// noAnswerHint says what to check when systemd took a call and did not
// answer it.
func noAnswerHint(socket string) string {
	return "It may be hung, or too busy to answer: does systemctl is-system-running answer? " +
		"systemd's own log may say why (journalctl -b _PID=1)" + socketHint(socket)
}

// classify turns what a D-Bus call returned into an *Error that says what
// to do; socket is where the Manager dialled, for the unreachable hint.
// A nil error stays nil.
func classify(op string, units []string, socket string, err error) error {
	if err == nil {
		return nil
	}
	e := &Error{Op: op, Units: units, Err: err}
	e.Cause, e.Hint = cause(socket, err)
	return e
}

// cause finds the classified cause of err, and the hint for it.
func cause(socket string, err error) (error, string) {
	if name, msg, ok := dbusError(err); ok {
		switch {
		case name == errInteractiveAuth,
			strings.Contains(msg, "Interactive authentication required"):
			return ErrNotAuthorized, hintNotAuthorized
		case name == errAccessDenied, name == errAuthFailed, name == errEACCES, name == errEPERM:
			return ErrAccessDenied, hintAccessDenied
		case name == errNoSuchUnit && isLinkPath(msg):
			// systemd makes a missing .wants directory, ignoring failure,
			// then reports the link that could not be made as a unit file
			// that "does not exist": on a read-only /etc, that is how the
			// first enable fails.
			return ErrReadOnly, hintReadOnly
		case name == errNoSuchUnit, name == errLoadFailed && strings.Contains(msg, "not found"):
			return ErrNoSuchUnit, hintNoSuchUnit
		case name == errUnitMasked:
			return ErrMasked, hintMasked
		case name == errUnitExists:
			return ErrUnitExists, hintUnitExists
		case name == errEROFS, strings.Contains(msg, "Read-only file system"):
			return ErrReadOnly, hintReadOnly
		}
		return nil, ""
	}
	switch {
	case errors.Is(err, syscall.EROFS):
		return ErrReadOnly, hintReadOnly
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		// The private socket is root's alone (mode 0600 and a uid check).
		return ErrNotAuthorized, "Only root may use systemd's private socket " + socket +
			": run hostprov as root"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT),
		errors.Is(err, syscall.ENOTSOCK), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF),
		errors.Is(err, godbus.ErrClosed):
		return ErrUnreachable, unreachableHint(socket, err)
	}
	return nil, ""
}

// isLinkPath tells whether a systemd message names a path inside a .wants,
// .requires or .upholds directory: an enable link, never a unit file.
func isLinkPath(msg string) bool {
	for _, d := range []string{".wants/", ".requires/", ".upholds/"} {
		if strings.Contains(msg, d) {
			return true
		}
	}
	return false
}

// unreachableHint says what to check when no systemd answers at socket,
// by how it failed: no file there, a file that is no socket, a socket that
// nobody listens on, a peer that hung up or never answered. It looks at
// the path only to tell the first three apart.
func unreachableHint(socket string, err error) string {
	pid1 := "Is systemd PID 1 here (ps -p 1 -o comm= prints systemd)? In a container, hostprov needs the " +
		"host's systemd: mount the host's /run/systemd into the container (-v /run/systemd:/run/systemd) and run it " +
		"as root, or run hostprov on the host"
	path := socketHint(socket)
	fi, serr := os.Stat(socket)
	switch {
	case errors.Is(err, syscall.ENOENT) || errors.Is(serr, fs.ErrNotExist):
		return "There is no socket at " + socket + ". " + pid1 + path
	case serr == nil && fi.Mode().Type() != fs.ModeSocket, errors.Is(err, syscall.ENOTSOCK):
		return socket + " is not a socket" + path
	case errors.Is(err, syscall.ECONNREFUSED):
		return "The socket " + socket + " is there, but nothing listens on it: the systemd that made it has " +
			"exited or is re-executing (systemctl daemon-reexec), or the socket belongs to another machine's " +
			"/run (a container with a copied or stale /run/systemd). " + pid1 + path
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "Something at " + socket + " took the connection but did not answer as systemd does: " +
			"systemd may be hung or busy (does systemctl is-system-running answer?), or the socket is not systemd's" + path
	case strings.Contains(err.Error(), "authenticate"):
		// systemd hangs up only on a caller that is not root, which
		// dialError tells apart; for root, what listens is not systemd.
		return "Something at " + socket + " took the connection but hung up before it was authenticated: " +
			"it is not systemd's private socket, or systemd is shutting down" + path
	}
	// The peer hung up during a call.
	return "The connection to " + socket + " was closed: systemd may be re-executing, restarting or shutting down " +
		"(does systemctl is-system-running answer?); run hostprov again once it runs" + path
}
