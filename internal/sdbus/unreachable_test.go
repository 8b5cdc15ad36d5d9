package sdbus

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
