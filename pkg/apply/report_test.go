package apply_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

// TestReportOnceFromStamp: a when: Once hook that ran, after a reboot (or a
// start by hand), is skipped by its condition, and systemd 252 says only
// ConditionResult=no, with no timestamp and no per-step results: status
// reports it skipped, its steps succeeded as its stamp says, and when.
func TestReportOnceFromStamp(t *testing.T) {
	n := newNode(t)
	n.mustApply(onceHook)
	n.sd.SetActive("setup.service", false) // rebooted: systemd knows of no run
	report := func() apply.UnitReport {
		t.Helper()
		rs, err := apply.Report(context.Background(), n.sd, n.state(), n.opts)
		if err != nil || len(rs) != 1 {
			t.Fatalf("report: %+v, %v", rs, err)
		}
		return rs[0]
	}
	// Not run yet: pending, and no time.
	r := report()
	if r.Phase != apply.PhasePending || r.SucceededAt != nil || r.Steps[0].State != "not run" {
		t.Errorf("before the hook ran: phase %q, succeeded at %v, steps %+v; want pending", r.Phase, r.SucceededAt, r.Steps)
	}

	stamp := n.stampOfUnit("setup.service")
	n.touch(stamp)
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	if err := os.Chtimes(stamp, at, at); err != nil {
		t.Fatal(err)
	}
	r = report()
	if r.Phase != apply.PhaseSkipped {
		t.Errorf("phase %q, want %q", r.Phase, apply.PhaseSkipped)
	}
	if r.SucceededAt == nil || !r.SucceededAt.Equal(at) || r.Stamp != strings.TrimPrefix(stamp, n.root) {
		t.Errorf("succeeded at %v, stamp %q; want %v, %s", r.SucceededAt, r.Stamp, at, strings.TrimPrefix(stamp, n.root))
	}
	if len(r.Steps) != 1 || r.Steps[0].State != "succeeded" || r.Steps[0].Reason != "stamp" {
		t.Errorf("steps %+v; want succeeded, known from the stamp", r.Steps)
	}
	if !strings.Contains(r.StepsNote, r.Stamp) || !strings.Contains(r.StepsNote, "marked stamp") {
		t.Errorf("steps note %q does not say where the outcome comes from", r.StepsNote)
	}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"succeededAt":"2026-03-04T05:06:07Z"`) || !strings.Contains(string(data), `"phase":"skipped"`) {
		t.Errorf("JSON lacks the phase or the stamp's time: %s", data)
	}
}
