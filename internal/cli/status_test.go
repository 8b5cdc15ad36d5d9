package cli

import (
	"bytes"
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

// TestWriteSteps checks how status prints a command hook: its phase, one
// line per step with its outcome, and the journal of a failed run.
func TestWriteSteps(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local)
	t1 := t0.Add(2 * time.Second)
	zero, three := int32(0), int32(3)
	r := apply.UnitReport{Unit: "iscsi-setup.service", Phase: apply.PhaseFailed,
		Steps: []apply.StepReport{
			{Name: "detect", State: "succeeded", ExitCode: &zero, Reason: "exited", Start: &t0, End: &t0},
			{Name: "install", State: "failed", ExitCode: &three, Reason: "exited", Start: &t0, End: &t1},
			{Name: "enable", State: "not run"},
		},
		Journal: []string{"E: Unable to locate package open-iscsi"},
	}
	var b bytes.Buffer
	writeSteps(&b, r)
	want := `
iscsi-setup.service: failed
  1  detect   succeeded  exited with 0  2026-11-30 10:00:00  2026-11-30 10:00:00
  2  install  failed     exited with 3  2026-11-30 10:00:00  2026-11-30 10:00:02
  3  enable   not run    -              -                    -
  last journal lines:
    E: Unable to locate package open-iscsi
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestWriteStepsInferred: a step whose outcome was inferred (systemd kept
// no result for it across a reload) is marked so in the text table, as the
// note under the table and -o json say.
func TestWriteStepsInferred(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.Local)
	seven := int32(7)
	r := apply.UnitReport{Unit: "iscsi-setup.service", Phase: apply.PhaseFailed,
		Steps: []apply.StepReport{
			{Name: "detect", State: "succeeded", Reason: "inferred"},
			{Name: "install", State: "failed", ExitCode: &seven, Reason: "exited", Start: &t0, End: &t0},
		},
		StepsNote: "steps marked inferred succeeded, since a later step ran or the hook succeeded",
	}
	var b bytes.Buffer
	writeSteps(&b, r)
	want := `
iscsi-setup.service: failed
  1  detect   succeeded (inferred)  -              -                    -
  2  install  failed                exited with 7  2026-11-30 10:00:00  2026-11-30 10:00:00
  (steps marked inferred succeeded, since a later step ran or the hook succeeded)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestWriteStepsFromStamp: a when: Once hook skipped after a reboot shows
// as skipped, its steps as succeeded and marked as known from the stamp,
// as -o json marks them.
func TestWriteStepsFromStamp(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r := apply.UnitReport{Unit: "once.service", Phase: apply.PhaseSkipped, Stamp: "/var/lib/hostprov/stamps/x", SucceededAt: &at,
		Steps: []apply.StepReport{
			{Name: "detect", State: "succeeded", Reason: "stamp"},
			{Name: "install", State: "succeeded", Reason: "stamp"},
		},
		StepsNote: "steps marked stamp are known from the stamp",
	}
	var b bytes.Buffer
	writeSteps(&b, r)
	want := `
once.service: skipped
  1  detect   succeeded (stamp)  -  -  -
  2  install  succeeded (stamp)  -  -  -
  (steps marked stamp are known from the stamp)
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
