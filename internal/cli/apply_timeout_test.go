package cli

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"github.com/hostprov/hostprov/internal/sdbus/sdbustest"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apply"
)

// hangBound is how long a test lets hostprov run that must end by a
// deadline or a signal. It is generous, for loaded machines: what it tells
// apart is an end from a wait without one.
const hangBound = 20 * time.Second

// helloSpec is a spec of one service; applied, it is enabled and started.
const helloSpec = "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: hello\n  exec: [/bin/echo, hello]\n"

// applyArgs are the arguments of an apply of helloSpec in a fresh
// directory, through socket; the unit directory is returned too.
func applyArgs(t *testing.T, socket string) (args []string, unitDir, stateDir string) {
	t.Helper()
	dir := t.TempDir()
	unitDir, stateDir = filepath.Join(dir, "units"), filepath.Join(dir, "state")
	if err := os.Mkdir(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "hostprov.yaml")
	if err := os.WriteFile(spec, []byte(helloSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"apply", "-f", spec, "--unit-dir", unitDir, "--state-dir", stateDir, "--systemd-socket", socket},
		unitDir, stateDir
}

// runWithin runs hostprov in this process and returns its exit code and
// standard error, failing the test if it has not ended after hangBound.
func runWithin(t *testing.T, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var o, e bytes.Buffer
		code := Run(args, strings.NewReader(""), &o, &e)
		done <- result{code, e.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.stderr
	case <-time.After(hangBound):
		t.Fatalf("hostprov %s did not end within %v", strings.Join(args, " "), hangBound)
		return 0, ""
	}
}

// muteListener listens on a unix socket, takes every connection and never
// answers.
func muteListener(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "mute.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for _, c := range held {
			c.Close()
		}
	})
	return sock
}

// TestApplyNoAnswer: apply where something takes the connection and does
// not answer, before the handshake or after it, ends at the call deadline,
// says what to check, and changes nothing.
func TestApplyNoAnswer(t *testing.T) {
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })
	for _, c := range []struct{ name, socket string }{
		{"no handshake", muteListener(t)},
		{"nothing after the handshake", sdbustest.New(t, sdbustest.Mute).Socket},
	} {
		t.Run(c.name, func(t *testing.T) {
			args, unitDir, _ := applyArgs(t, c.socket)
			code, stderr := runWithin(t, args...)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			for _, want := range []string{
				"hostprov: connect to systemd at " + c.socket + ": systemd did not answer within 300ms.",
				"does systemctl is-system-running answer?",
			} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(unitDir, "hello.service")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("apply wrote hello.service without systemd: %v", err)
			}
		})
	}
}

// slowStart answers what an apply of helloSpec asks, except that the start
// job it queues never ends, and that it never tells a unit's state.
func slowStart(call *godbus.Message) ([]any, bool) {
	switch sdbustest.Member(call) {
	case "EnableUnitFiles":
		return []any{true, []struct{ Type, Filename, Destination string }{}}, true
	case "Reload":
		return nil, true
	}
	return sdbustest.SlowJobs(call)
}

// TestApplyTimeoutFlag: --timeout bounds the wait for a start job, and the
// apply says which start did not finish and what to check.
func TestApplyTimeoutFlag(t *testing.T) {
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })
	p := sdbustest.New(t, slowStart)
	args, _, _ := applyArgs(t, p.Socket)
	code, stderr := runWithin(t, append(args, "--timeout", "500ms")...)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	for _, want := range []string{
		"start hello.service: the start job did not finish within 500ms.",
		"check systemctl status hello.service",
		"give hostprov a longer --timeout",
		"hostprov: stopped waiting for systemd to start hello.service",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !slices.Contains(p.Called(), "StartUnit") {
		t.Errorf("systemd was not asked to start the unit: %v", p.Called())
	}
	if code, _ := runWithin(t, append(args, "--timeout", "-1s")...); code != ExitInvalid {
		t.Errorf("--timeout -1s: exit %d, want %d", code, ExitInvalid)
	}
}

// TestApplySIGTERMWhileConnecting sends SIGTERM to hostprov apply (the
// built binary) while it waits for the first answer of a systemd that took
// the connection, authenticated it and hung: a wait that no context
// reaches inside go-systemd. hostprov must end all the same, say so, leave
// the lock free and change nothing.
func TestApplySIGTERMWhileConnecting(t *testing.T) {
	bin := testbin.Hostprov(t)
	p := sdbustest.New(t, sdbustest.Mute)
	args, unitDir, stateDir := applyArgs(t, p.Socket)
	cmd := exec.Command(bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// AddMatch is go-systemd's first call: hostprov has connected, holds
	// the lock and handles signals.
	for !slices.Contains(p.Called(), "AddMatch") {
		select {
		case err := <-done:
			t.Fatalf("hostprov ended before it connected: %v\n%s", err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(hangBound):
		cmd.Process.Kill()
		<-done
		t.Fatalf("hostprov did not end within %v of SIGTERM\n%s", hangBound, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit code %d (%v), want %d", code, cmd.ProcessState, 128+int(syscall.SIGTERM))
	}
	for _, want := range []string{"hostprov: interrupted by SIGTERM", "nothing was changed"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(unitDir, "hello.service")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an interrupted apply wrote hello.service: %v", err)
	}
	unlock, err := apply.Lock(context.Background(), stateDir, true, nil)
	if err != nil {
		t.Fatalf("the lock is not free after hostprov ended: %v", err)
	}
	unlock()
}
