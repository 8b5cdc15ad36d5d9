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

// recorder is a Logger that keeps the events it is given.
type recorder struct{ events []apply.Event }

func (r *recorder) Log(e apply.Event) { r.events = append(r.events, e) }

func TestLoggers(t *testing.T) {
	var text bytes.Buffer
	var rec recorder
	l := apply.MultiLogger(apply.TextLogger(&text), nil, &rec)
	l.Log(apply.Event{Action: apply.EvStarted, Unit: "a.service", Reason: "new"})
	if text.String() != "hostprov: started a.service (new)\n" {
		t.Errorf("text log %q", text.String())
	}
	js, err := json.Marshal(rec.events)
	var es []apply.Event
	if err == nil {
		err = json.Unmarshal(js, &es)
	}
	if err != nil || len(es) != 1 || es[0].Action != "started" || es[0].Unit != "a.service" {
		t.Errorf("events as JSON %s: %v", js, err)
	}
}

// TestTextLoggerSameError: a call that failed for a batch of units is one
// event per unit with the same error; the text log writes the error once,
// and the other loggers (the JSON events for tools) get it every time.
func TestTextLoggerSameError(t *testing.T) {
	var text bytes.Buffer
	var rec recorder
	l := apply.MultiLogger(apply.TextLogger(&text), &rec)
	for _, u := range []string{"a.service", "b.service", "c.service"} {
		l.Log(apply.Event{Action: apply.EvFailed, Op: "enable", Unit: u, Reason: "new", Error: "read-only"})
	}
	l.Log(apply.Event{Action: apply.EvStarted, Unit: "d.service", Reason: "new"})
	l.Log(apply.Event{Action: apply.EvFailed, Op: "start", Unit: "e.service", Reason: "new", Error: "read-only"})
	want := `hostprov: failed enable a.service (new): read-only
hostprov: failed enable b.service (new): the same error as above
hostprov: failed enable c.service (new): the same error as above
hostprov: started d.service (new)
hostprov: failed start e.service (new): read-only
`
	if text.String() != want {
		t.Errorf("text log:\n%s\nwant:\n%s", text.String(), want)
	}
	js, _ := json.Marshal(rec.events)
	if n := strings.Count(string(js), `"error":"read-only"`); n != 4 {
		t.Errorf("the events have the error %d times, want 4:\n%s", n, js)
	}
}
