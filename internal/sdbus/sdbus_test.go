package sdbus

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/sdbus/sdbustest"
	"github.com/hostprov/hostprov/pkg/apply"
)

// hangBound is how long a test lets a call run that must end by a deadline
// of a few hundred milliseconds. It is generous, for loaded machines: what
// it tells apart is a deadline that works from a wait without end.
const hangBound = 20 * time.Second

// within runs fn and returns its error, failing the test if fn has not
// returned after hangBound.
func within(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangBound):
		t.Fatalf("%s did not return within %v: it would have waited for ever", what, hangBound)
		return nil
	}
}

// wantMessage checks that err has cause and says every one of want.
func wantMessage(t *testing.T, what string, err, cause error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s succeeded", what)
	}
	if !errors.Is(err, cause) {
		t.Errorf("%s: %v\nwant cause %v", what, err, cause)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: %q\nlacks %q", what, err, w)
		}
	}
}

// TestDialNoAnswerAfterAuth: a peer that authenticates as systemd does and
// then answers nothing. go-systemd's first call on a new connection takes no
// context; connecting must end at its deadline all the same.
func TestDialNoAnswerAfterAuth(t *testing.T) {
	p := sdbustest.New(t, sdbustest.Mute)
	err := within(t, "DialTimeout", func() error {
		m, err := DialTimeout(context.Background(), p.Socket, 300*time.Millisecond)
		if err == nil {
			m.Close()
		}
		return err
	})
	wantMessage(t, "dial a peer that answers no call", err, ErrNoAnswer,
		"connect to systemd at "+p.Socket+": systemd did not answer within 300ms",
		"is-system-running")
	// And a context that ends first ends it too.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = within(t, "Dial", func() error {
		m, err := Dial(ctx, p.Socket)
		if err == nil {
			m.Close()
		}
		return err
	})
	if err == nil {
		t.Error("Dial of a peer that answers no call succeeded")
	}
}

// TestCallNoAnswer: a systemd that takes calls and does not answer them.
// Each call ends at its deadline (CallTimeout; JobTimeout for a reload,
// which may take long) with an error that names the socket and the
// deadline; once one went unanswered, later calls fail without asking, so
// that an apply of many units does not wait as long for each.
func TestCallNoAnswer(t *testing.T) {
	p := sdbustest.New(t, sdbustest.AddMatchOnly)
	m, err := DialTimeout(context.Background(), p.Socket, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	err = within(t, "Enable", func() error {
		_, err := m.Enable(context.Background(), []string{"a.service"})
		return err
	})
	wantMessage(t, "enable", err, ErrNoAnswer,
		"enable a.service: systemd did not answer at "+p.Socket+" within 300ms.",
		"does systemctl is-system-running answer?")

	err = within(t, "Status", func() error {
		_, err := m.Status(context.Background(), "a.service")
		return err
	})
	wantMessage(t, "status after a call went unanswered", err, ErrNoAnswer,
		"read the status of a.service: systemd did not answer at "+p.Socket, "not asked")
	if slices.Contains(p.Called(), "GetAll") {
		t.Errorf("systemd was asked again after a call went unanswered: %v", p.Called())
	}

	m2, err := DialTimeout(context.Background(), p.Socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	m2.JobTimeout = 300 * time.Millisecond
	err = within(t, "Reload", func() error { return m2.Reload(context.Background()) })
	wantMessage(t, "reload", err, ErrNoAnswer,
		"reload systemd: systemd did not answer at "+p.Socket+" within 300ms.")
}

// TestJobTimeout: a job that does not end within the Manager's JobTimeout
// is given up, with what to check.
func TestJobTimeout(t *testing.T) {
	p := sdbustest.New(t, sdbustest.SlowJobs)
	m, err := DialTimeout(context.Background(), p.Socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.JobTimeout = 300 * time.Millisecond
	err = within(t, "Start", func() error { return m.Start(context.Background(), "slow.service") })
	wantMessage(t, "a start that does not end", err, ErrJobTimeout,
		"start slow.service: the start job did not finish within 300ms",
		"systemctl status slow.service", "--timeout", "job 7")
}

// TestJobConnectionLost: the connection ends while a job is waited for, as
// when systemd re-executes or dies. go-systemd then never delivers the
// job's result; the wait must end at once all the same, and say so.
func TestJobConnectionLost(t *testing.T) {
	p := sdbustest.New(t, sdbustest.SlowJobs)
	m, err := DialTimeout(context.Background(), p.Socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.JobTimeout = time.Hour
	wait, err := m.Queue(context.Background(), apply.ActStart, "slow.service")
	if err != nil {
		t.Fatal(err)
	}
	p.HangUp()
	err = within(t, "the wait for a job whose connection was lost", wait)
	wantMessage(t, "a start whose connection was lost", err, ErrConnectionLost,
		"start slow.service: the connection to systemd at "+p.Socket+" was lost while waiting for the start job",
		"daemon-reexec", "systemctl status slow.service")
}

// TestJobGaveUp: a wait that the caller ends (hostprov interrupted) says
// that the job goes on, and keeps ctx's error for errors.Is.
func TestJobGaveUp(t *testing.T) {
	p := sdbustest.New(t, sdbustest.SlowJobs)
	m, err := DialTimeout(context.Background(), p.Socket, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := m.Queue(ctx, apply.ActStart, "slow.service")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	err = within(t, "the wait for a job whose context ended", wait)
	wantMessage(t, "a start given up", err, ErrGaveUp,
		"start slow.service: hostprov gave up waiting for the start job. It goes on in systemd: check systemctl status slow.service")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("%v does not match context.Canceled", err)
	}
}

// TestDialUnreachable dials where no systemd answers and checks that the
// error says what to check in that case, names the socket it tried once,
// and never sends the user back to the socket that failed. No rig needed.
func TestDialUnreachable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sock")

	// A socket file that nobody listens on any more.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// A listener that takes connections and never answers.
	mute := filepath.Join(dir, "mute.sock")
	ml, err := netListenUnix(mute)
	if err != nil {
		t.Fatal(err)
	}
	defer ml.Close()

	for _, c := range []struct {
		name, socket string
		timeout      time.Duration
		want         []string
	}{
		{"no socket", missing, 0, []string{
			"connect to systemd at " + missing + ": systemd is not reachable. There is no socket at " + missing + ".",
			"Is systemd PID 1 here (ps -p 1 -o comm= prints systemd)?",
			"mount the host's /run/systemd into the container",
			"is --systemd-socket " + missing + " right? systemd running as PID 1 listens at /run/systemd/private",
		}},
		{"nobody listens", stale, 0, []string{
			"The socket " + stale + " is there, but nothing listens on it",
			"Is systemd PID 1 here",
		}},
		{"not a socket", regular, 0, []string{regular + " is not a socket; is --systemd-socket " + regular + " right?"}},
		{"never answers", mute, 200 * time.Millisecond, []string{
			"connect to systemd at " + mute + ": systemd did not answer within 200ms.",
			"Something at " + mute + " took the connection but did not answer as systemd does",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			timeout, want := c.timeout, ErrNoAnswer
			if timeout == 0 {
				timeout, want = DefaultCallTimeout, ErrUnreachable
			}
			m, err := DialTimeout(context.Background(), c.socket, timeout)
			if err == nil {
				m.Close()
				t.Fatal("Dial succeeded")
			}
			if os.Geteuid() == 0 && !errors.Is(err, want) {
				t.Errorf("cause: %v, want %v", err, want)
			}
			msg := err.Error()
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q\nlacks %q", msg, w)
				}
			}
			if n := strings.Count(msg, "connect to systemd at"); n != 1 {
				t.Errorf("%q says \"connect to systemd at\" %d times", msg, n)
			}
			if strings.Contains(msg, "use the private socket") {
				t.Errorf("the hint sends the user back to the socket:\n%s", msg)
			}
		})
	}
}

// TestUnreachableHintDefaultSocket: at systemd's own socket the hint does
// not ask whether that path is right, only where else it could be.
func TestUnreachableHintDefaultSocket(t *testing.T) {
	h := unreachableHint(PrivateSocket, os.ErrNotExist)
	if strings.Count(h, PrivateSocket) != 1 || !strings.Contains(h, "if systemd's private socket is elsewhere, give its path with --systemd-socket") {
		t.Errorf("hint: %s", h)
	}
}
