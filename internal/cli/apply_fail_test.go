package cli

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/sdbus"
)

// TestApplyFailurePrintedOnce: a failed apply prints each error once (the
// action log has it; the last message does not repeat it), and its advice
// follows the cause: a unit that ran and failed points to status and the
// unit's journal; systemd refusing a call, or a reload failing, is the
// machine's to fix, not the hook's.
func TestApplyFailurePrintedOnce(t *testing.T) {
	const twoHooks = "- name: hello\n  exec: [/bin/echo, hello]\n- name: b\n  exec: [/bin/true]\n"
	jobFailed := &sdbus.JobError{Op: "start", Unit: "hello.service", JobResult: "failed", ActiveState: "failed",
		Result: "exit-code", ExecMainCode: 1, ExecMainStatus: 7, Journal: []string{"hello: no such greeting"}}
	readOnly := &sdbus.Error{Op: "enable", Units: []string{"hello.service", "b.service"}, Cause: sdbus.ErrReadOnly,
		Hint: "Remount /etc read-write", Err: errors.New("System.Error.EROFS: Read-only file system")}
	masked := &sdbus.Error{Op: "start", Units: []string{"b.service"}, Cause: sdbus.ErrMasked,
		Hint: "Unmask it", Err: errors.New("org.freedesktop.systemd1.UnitMasked: Unit b.service is masked.")}
	for _, tc := range []struct {
		name   string
		method string // the call that fails
		unit   string
		err    error
		once   string   // the error's text: in stderr exactly once
		want   []string // in the last message
		not    []string // nowhere in stderr
		output string
	}{
		{name: "unit ran and failed", method: "start", unit: "hello.service", err: jobFailed,
			once: "hello: no such greeting",
			want: []string{"hostprov: 1 unit failed to start: hello.service (see above); the files and links are in place and recorded. " +
				"See why with hostprov status and journalctl -u hello.service, fix the hook or what it needs on this machine, " +
				"then run hostprov apply again: it retries the units that failed\n"}},
		{name: "read-only enable", method: "enable", unit: "b.service", err: readOnly,
			once: "Read-only file system",
			want: []string{"hostprov: apply stopped: systemd could not enable hello.service, b.service (see above); what was done before is recorded. " +
				"That is a matter of this machine, not of the hooks: do what the error says, then run hostprov apply again: it goes on from there\n"},
			not: []string{"fix the hook", "journalctl -u"}},
		{name: "start refused", method: "start", unit: "b.service", err: masked,
			once: "Unit b.service is masked.",
			want: []string{"hostprov: systemd refused to start b.service (see above). That is a matter of this machine, not of the hooks: do what the error says"},
			not:  []string{"fix the hook"}},
		{name: "reload fails", method: "reload", err: errors.New("org.freedesktop.DBus.Error.NoReply: did not receive a reply"),
			once: "did not receive a reply",
			want: []string{"hostprov: apply stopped: systemd could not reload (see above); what was done before is recorded. " +
				"That is a matter of this machine or of systemd, not of the hooks: systemd's own log says why (journalctl -b _PID=1)"},
			not: []string{"fix the hook"}},
		{name: "json: no action log on stderr, so the message has the error", method: "start", unit: "hello.service", err: jobFailed,
			output: "json", once: "hello: no such greeting",
			want: []string{"hostprov: 1 unit failed to start: hello.service; the files", "\n\tstart hello.service: start hello.service: the job failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newLiveNode(t)
			n.write(twoHooks)
			n.sd.FailOn(tc.method, tc.unit, tc.err)
			args := []string{"apply"}
			if tc.output != "" {
				args = append(args, "-o", tc.output)
			}
			code, o, e := n.run(args...)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			if tc.output == "json" {
				// The document's error is the message stderr has.
				var res applyResult
				if err := json.Unmarshal([]byte(o), &res); err != nil {
					t.Fatalf("apply -o json: %v\n%s", err, o)
				}
				if e != "hostprov: "+res.Error+"\n" {
					t.Errorf("JSON error %q\nis not what stderr says:\n%s", res.Error, e)
				}
			}
			if c := strings.Count(e, tc.once); c != 1 {
				t.Errorf("stderr has %q %d times, want once:\n%s", tc.once, c, e)
			}
			for _, w := range tc.want {
				if !strings.Contains(e, w) {
					t.Errorf("stderr lacks %q:\n%s", w, e)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(e, w) {
					t.Errorf("stderr has %q:\n%s", w, e)
				}
			}
		})
	}
}
