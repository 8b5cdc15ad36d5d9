package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

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
