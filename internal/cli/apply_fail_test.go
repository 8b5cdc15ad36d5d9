package cli

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// TestApplyFailedDownload: a file whose source cannot be downloaded fails
// its hook, not the apply: the other hooks are applied, the failed hook's
// unit and file are not, the action log names the hook and the error once,
// and apply exits 1 with what to do.
func TestApplyFailedDownload(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	old := fetchClient
	fetchClient = srv.Client()
	defer func() { fetchClient = old }()
	spec := filepath.Join(t.TempDir(), "hooks.yaml")
	os.WriteFile(spec, []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n"+
		"- name: fetcher\n  exec: [/usr/local/bin/tool]\n  files:\n    - path: /usr/local/bin/tool\n      source: "+srv.URL+"/tool\n"+
		"      verification: {hash: sha256-"+strings.Repeat("ab", 32)+"}\n      mode: 0755\n"+
		"- name: plain\n  exec: [/bin/true]\n"), 0o644)
	for _, output := range []string{"text", "json"} {
		t.Run(output, func(t *testing.T) {
			root := t.TempDir()
			var o, e strings.Builder
			code := Run([]string{"apply", "--root", root, "-f", spec, "--fetch-wait", "0", "-o", output}, strings.NewReader(""), &o, &e)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d\n%s", code, ExitFailure, e.String())
			}
			if _, err := os.Stat(filepath.Join(root, "etc/systemd/system/plain.service")); err != nil {
				t.Errorf("the plain hook was not applied: %v", err)
			}
			for _, p := range []string{"etc/systemd/system/fetcher.service", "usr/local/bin/tool"} {
				if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
					t.Errorf("%s of the failed hook is there (%v)", p, err)
				}
			}
			if c := strings.Count(e.String(), "404 Not Found"); c != 1 {
				t.Errorf("the error is in stderr %d times, want once:\n%s", c, e.String())
			}
			last := "hostprov: 1 hook failed: 1 file could not be downloaded, or did not have the hash its verification gives"
			if !strings.Contains(e.String(), last) || !strings.Contains(e.String(), "units and files of fetcher are left as the last apply left them") {
				t.Errorf("stderr does not say which hook failed and what to do:\n%s", e.String())
			}
			if output == "text" && !strings.Contains(e.String(), "hostprov: failed download /usr/local/bin/tool (hook fetcher is left as it was): downloading "+srv.URL+"/tool: the server answered 404") {
				t.Errorf("the action log does not name the failed hook:\n%s", e.String())
			}
			if output == "json" {
				var res applyResult
				if err := json.Unmarshal([]byte(o.String()), &res); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(res.Error, "/usr/local/bin/tool (hook fetcher)") {
					t.Errorf("JSON error %q does not name the file and hook", res.Error)
				}
			}
		})
	}
}
