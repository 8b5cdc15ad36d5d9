package sdbus_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/apply"
)

// dialEnv makes the test binary, started inside a rig, dial the socket it
// names as the user it runs as, print the error (or "connected") and exit:
// the only way to be a process that is not root inside the rig's
// namespaces, where the private socket lives.
const dialEnv = "HOSTPROV_SDBUS_TEST_DIAL"

func TestMain(m *testing.M) {
	if sock := os.Getenv(dialEnv); sock != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		mgr, err := sdbus.Dial(ctx, sock)
		if err != nil {
			fmt.Println(err)
			if errors.Is(err, sdbus.ErrNotAuthorized) {
				fmt.Println("cause: ErrNotAuthorized")
			}
			os.Exit(0)
		}
		mgr.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dial connects a Manager to the rig and has it read the rig's journal.
func dial(ctx context.Context, t *testing.T, r *systemdtest.Rig) *sdbus.Manager {
	t.Helper()
	m, err := sdbus.Dial(ctx, r.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.RunJournalctl = func(ctx context.Context, args ...string) ([]byte, error) {
		out, err := r.Run(ctx, append([]string{"journalctl"}, args...)...)
		return []byte(out), err
	}
	return m
}

// TestDialNotRoot runs a process that is not root inside a rig and has it
// dial systemd's private socket: once as systemd makes it (root's alone,
// mode 0700: connect fails with EACCES) and once opened to everyone (then
// systemd itself hangs up on a caller that is not root). Both must read as
// "not authorized: run as root".
func TestDialNotRoot(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := systemdtest.Start(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Install(self, "/opt/sdbus.test"); err != nil {
		t.Fatal(err)
	}
	asNobody := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
		"env", dialEnv + "=" + sdbus.PrivateSocket, "/opt/sdbus.test"}

	out, err := r.Run(ctx, asNobody...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("socket mode 0700: %s", out)
	for _, want := range []string{"not authorized", "Only root may use systemd's private socket /run/systemd/private: run hostprov as root", "cause: ErrNotAuthorized"} {
		if !strings.Contains(out, want) {
			t.Errorf("dial as nobody: %q lacks %q", out, want)
		}
	}

	if _, err := r.Run(ctx, "chmod", "0777", sdbus.PrivateSocket); err != nil {
		t.Fatal(err)
	}
	out, err = r.Run(ctx, asNobody...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("socket mode 0777: %s", out)
	for _, want := range []string{"not authorized", "from root only: run hostprov as root", "cause: ErrNotAuthorized"} {
		if !strings.Contains(out, want) {
			t.Errorf("dial as nobody through an open socket: %q lacks %q", out, want)
		}
	}
	// And root, the same way, is let in: the test proves the uid is what
	// systemd refuses, not the way in.
	out, err = r.Run(ctx, "env", dialEnv+"="+sdbus.PrivateSocket, "/opt/sdbus.test")
	if err != nil || strings.TrimSpace(out) != "connected" {
		t.Errorf("dial as root inside the rig: %q, %v; want connected", out, err)
	}
}

// TestJobWaitSystemdGone starts a slow oneshot in a rig and, while its
// start job is waited for, re-executes systemd or kills it. Either way the
// connection ends and go-systemd never delivers the job's result: the wait
// must end at once (not at the job deadline, here an hour) and say what
// happened and what to check.
func TestJobWaitSystemdGone(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		gone func(ctx context.Context, r *systemdtest.Rig) error
	}{
		{"daemon-reexec", func(ctx context.Context, r *systemdtest.Rig) error {
			_, err := r.Run(ctx, "systemctl", "daemon-reexec")
			return err
		}},
		{"systemd killed", func(ctx context.Context, r *systemdtest.Rig) error {
			return syscall.Kill(r.PID, syscall.SIGKILL)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			r := systemdtest.Start(t)
			m := dial(ctx, t, r)
			m.JobTimeout = time.Hour
			if err := r.WriteUnit("slow.service", []byte("[Service]\nType=oneshot\nExecStart=/bin/sleep 30\n")); err != nil {
				t.Fatal(err)
			}
			if err := m.Reload(ctx); err != nil {
				t.Fatal(err)
			}
			wait, err := m.Queue(ctx, apply.ActStart, "slow.service")
			if err != nil {
				t.Fatal(err)
			}
			for {
				st, err := m.Status(ctx, "slow.service")
				if err != nil {
					t.Fatal(err)
				}
				if st.ActiveState == "activating" {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := c.gone(ctx, r); err != nil {
				t.Fatal(err)
			}
			// Generous: the point is an end at all, against an hour.
			const bound = 20 * time.Second
			done := make(chan error, 1)
			go func() { done <- wait() }()
			select {
			case err = <-done:
			case <-time.After(bound):
				t.Fatalf("the start job's wait did not end within %v of systemd going away", bound)
			}
			t.Logf("start: %v", err)
			if !errors.Is(err, sdbus.ErrConnectionLost) {
				t.Errorf("start: %v; want ErrConnectionLost", err)
			}
			for _, want := range []string{
				"start slow.service: the connection to systemd at " + r.Socket + " was lost while waiting for the start job",
				"daemon-reexec", "check systemctl status slow.service",
			} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("start: %v\nlacks %q", err, want)
				}
			}
		})
	}
}
