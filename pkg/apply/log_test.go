package apply_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

func TestEventText(t *testing.T) {
	for _, tc := range []struct {
		e    apply.Event
		want string
	}{
		{apply.Event{Action: apply.EvWrote, Unit: "a.service", Path: "/etc/systemd/system/a.service", Reason: "new", SHA256: strings.Repeat("1a2b", 16)},
			"wrote /etc/systemd/system/a.service (new, sha256:1a2b1a2b1a2b)"},
		{apply.Event{Action: apply.EvReloaded, Reason: "1 file changed"}, "reloaded systemd (1 file changed)"},
		{apply.Event{Action: apply.EvSkipped, Op: "start", Unit: "a.service", Reason: "new; offline"}, "skipped start a.service (new; offline)"},
		{apply.Event{Action: apply.EvFailed, Op: "start", Unit: "a.service", Reason: "new", Error: "job failed"}, "failed start a.service (new): job failed"},
	} {
		if got := tc.e.Text(); got != tc.want {
			t.Errorf("Text() = %q, want %q", got, tc.want)
		}
	}
}

func TestLoggers(t *testing.T) {
	var text, js bytes.Buffer
	l := apply.MultiLogger(apply.TextLogger(&text), nil, apply.JSONLogger(&js))
	l.Log(apply.Event{Action: apply.EvStarted, Unit: "a.service", Reason: "new"})
	if text.String() != "hostprov: started a.service (new)\n" {
		t.Errorf("text log %q", text.String())
	}
	var e apply.Event
	if err := json.Unmarshal(js.Bytes(), &e); err != nil || e.Action != "started" || e.Unit != "a.service" {
		t.Errorf("JSON log %q: %v", js.String(), err)
	}
}

// TestPlanJSON checks the shape tools read: unit counts, files without the
// unchanged ones, actions in order.
func TestPlanJSON(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	p := n.plan(strings.Replace(twoHooks, "[/bin/true]", "[/bin/false]", 1))
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var j apply.PlanJSON
	if err := json.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if j.Summary != (apply.PlanSummary{Change: 1, Changes: true}) || len(j.Files) != 1 || j.Files[0].Op != apply.OpChange ||
		len(j.Actions) != 2 || j.Actions[0].Kind != apply.ActReload || j.Actions[1].Kind != apply.ActRestart {
		t.Errorf("plan JSON: %s", data)
	}
}
