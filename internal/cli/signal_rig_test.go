package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apply"
)

// TestRigApplySIGTERM runs hostprov apply (the built binary, inside a rig,
// as on a node) on a hook whose start takes 30 seconds, and sends it
// SIGTERM while it waits for that start. It must end well before the start
// does, with the exit code of SIGTERM and a message that says what was left
// going on, leave the unit file whole, the state readable and the lock
// free; and the next apply must find nothing but the start to retry.
func TestRigApplySIGTERM(t *testing.T) {
	t.Parallel()
	r := systemdtest.Start(t)
	bin := testbin.Hostprov(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := r.Install(bin, "/opt/hostprov"); err != nil {
		t.Fatal(err)
	}
	spec := "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: slow\n  type: oneshot\n  exec: [/bin/sleep, \"30\"]\n"
	if err := os.WriteFile(filepath.Join(r.Root, "root/hostprov.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := sdbus.Dial(ctx, r.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// Killed from inside the rig by its pid there: ending Run's context
	// would kill nsenter, not hostprov.
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, "sh", "-c", `echo $$ > /run/apply.pid && exec /opt/hostprov apply -f /root/hostprov.yaml`)
		done <- err
	}()
	for {
		st, err := m.Status(ctx, "slow.service")
		if err != nil {
			t.Fatal(err)
		}
		if st.ActiveState == "activating" {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("apply ended before the start: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	pid, err := os.ReadFile(filepath.Join(r.Root, "run/apply.pid"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, "kill", "-TERM", strings.TrimSpace(string(pid))); err != nil {
		t.Fatal(err)
	}
	// Generous, against a start of 30 seconds: the point is an end at all.
	const bound = 20 * time.Second
	select {
	case err = <-done:
	case <-time.After(bound):
		t.Fatalf("hostprov apply did not end within %v of SIGTERM", bound)
	}
	t.Logf("apply after SIGTERM: %v", err)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
		t.Errorf("apply after SIGTERM: %v; want exit status %d", err, 128+int(syscall.SIGTERM))
	}
	for _, want := range []string{
		"hostprov: interrupted by SIGTERM",
		"hostprov apply stopped where it was", "the start of slow.service goes on in systemd: check systemctl status slow.service",
		"Run hostprov apply again to finish",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("apply after SIGTERM: stderr lacks %q", want)
		}
	}

	// Files old or new, the state readable, the lock free.
	unit, err := os.ReadFile(filepath.Join(r.UnitDir, "slow.service"))
	if err != nil || !strings.Contains(string(unit), "ExecStart=/bin/sleep 30") {
		t.Errorf("slow.service after SIGTERM: %v\n%s", err, unit)
	}
	stateDir := filepath.Join(r.Root, apply.DefaultStateDir)
	if _, err := apply.LoadState(apply.StatePath(stateDir)); err != nil {
		t.Errorf("the state after SIGTERM: %v", err)
	}
	unlock, err := apply.Lock(ctx, stateDir, true, nil)
	if err != nil {
		t.Fatalf("the lock is not free after SIGTERM: %v", err)
	}
	unlock()

	// The start went on in systemd; the next apply finds the files in
	// place and only the start to retry.
	out, err := r.Run(ctx, "/opt/hostprov", "plan", "-f", "/root/hostprov.yaml")
	if err != nil {
		t.Fatalf("plan after SIGTERM: %v\n%s", err, out)
	}
	t.Logf("plan after SIGTERM:\n%s", out)
	if strings.Contains(out, "diff ") || !regexp.MustCompile(`start +slow\.service`).MatchString(out) {
		t.Errorf("plan after SIGTERM: want only the start of slow.service again:\n%s", out)
	}
}
