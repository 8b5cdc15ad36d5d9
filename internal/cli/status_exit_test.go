package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/pkg/apply"
)

// TestNodeExitCodes: status and plan --detailed-exitcode give codes a
// script can act on. status: 0 all well, 3 drift, 4 a unit failed (which
// wins over drift); plan: 0 no changes, 2 changes, 3 no changes but drift.
func TestNodeExitCodes(t *testing.T) {
	n := newLiveNode(t)
	check := func(what string, want int, args ...string) {
		t.Helper()
		if code, o, e := n.run(args...); code != want {
			t.Errorf("%s: exit %d, want %d\n%s%s", what, code, want, o, e)
		}
	}
	check("status with nothing installed", ExitOK, "status")
	if code, _, e := n.run("apply"); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s", code, e)
	}
	check("status after an apply", ExitOK, "status")
	check("plan after an apply", ExitOK, "plan", "--detailed-exitcode")

	// Drift: a unit file edited by hand, which apply leaves alone.
	unit := filepath.Join(n.unitDir, "hello.service")
	if err := os.WriteFile(unit, []byte("[Service]\nExecStart=/bin/edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("status with drift", ExitDrift, "status")
	check("status -o json with drift", ExitDrift, "status", "-o", "json")
	check("plan with drift only", ExitDrift, "plan", "--detailed-exitcode")
	check("plan with drift, without --detailed-exitcode", ExitOK, "plan")

	// Drift and a change: the change wins in plan.
	n.write("- name: hello\n  exec: [/bin/echo, hello]\n- name: b\n  exec: [/bin/true]\n")
	check("plan with drift and a change", ExitChanges, "plan", "--detailed-exitcode")

	// A unit that failed to start wins over drift in status.
	n.sd.FailOn("start", "b.service", &sdbus.JobError{Op: "start", Unit: "b.service", JobResult: "failed"})
	check("apply of a unit that fails", ExitFailure, "apply")
	check("status with a failed unit and drift", ExitUnitFailed, "status")
	check("status -o json with a failed unit", ExitUnitFailed, "status", "-o", "json")

	// systemd cannot be reached: an error.
	n.sd.FailOn("start", "b.service", nil)
	old := connectSystemd
	connectSystemd = func(ctx context.Context, socket string, _ time.Duration) (apply.Systemd, func(), error) {
		return nil, nil, errors.New("connect to systemd at " + socket + ": systemd is not reachable")
	}
	defer func() { connectSystemd = old }()
	check("status without systemd", ExitFailure, "status")
}
