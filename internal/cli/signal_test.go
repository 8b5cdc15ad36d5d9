package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/sdbus/sdbustest"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apply"
)

// TestInterrupted: a command that a signal ended exits with 128 plus the
// signal's number and names it; a context that ended otherwise is no
// interrupt.
func TestInterrupted(t *testing.T) {
	for sig, code := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(interrupt{sig})
		err := interrupted(ctx, nothingChanged)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != code {
			t.Errorf("%v: %v, want exit code %d", sig, err, code)
			continue
		}
		if want := fmt.Sprintf("interrupted by %s: nothing was changed", map[int]string{130: "SIGINT", 143: "SIGTERM"}[code]); ee.msg != want {
			t.Errorf("%v: %q, want %q", sig, ee.msg, want)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := interrupted(ctx, nothingChanged); err != nil {
		t.Errorf("a context canceled without a signal: %v, want no interrupt", err)
	}
}

// TestInterruptedApply: the message of an interrupted apply or remove names
// the jobs that go on in systemd (those it gave up waiting for, not those
// that failed or were never queued) and the command to run again.
func TestInterruptedApply(t *testing.T) {
	gaveUp := &sdbus.Error{Op: "start", Cause: sdbus.ErrGaveUp, Err: context.Canceled}
	failed := func(op apply.ActionKind, unit string, err error) apply.Event {
		return apply.Event{Action: apply.EvFailed, Op: string(op), Unit: unit, Err: err}
	}
	for _, c := range []struct {
		cmd    string
		events []apply.Event
		want   string
	}{
		{"apply", nil, "hostprov apply stopped where it was: each file it touched is whole, in its old or its new version, " +
			"and its state says which. Run hostprov apply again to finish: it goes on from there"},
		{"apply", []apply.Event{failed(apply.ActStart, "a.service", gaveUp), failed(apply.ActStart, "b.service", errors.New("job failed")),
			failed(apply.ActStart, "c.service", gaveUp)},
			"hostprov apply stopped where it was: each file it touched is whole, in its old or its new version, " +
				"and its state says which; the starts of a.service, c.service go on in systemd: check systemctl status a.service c.service. " +
				"Run hostprov apply again to finish: it goes on from there"},
		{"remove", []apply.Event{failed(apply.ActStop, "a.service", gaveUp), failed(apply.ActRestart, "b.service", gaveUp)},
			"hostprov remove stopped where it was: each file it touched is whole, in its old or its new version, " +
				"and its state says which; the jobs of a.service, b.service go on in systemd: check systemctl status a.service b.service. " +
				"Run hostprov remove again to finish: it goes on from there"},
	} {
		if got := interruptedApply(c.cmd, c.events); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
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
