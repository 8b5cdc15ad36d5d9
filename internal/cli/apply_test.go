package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	godbus "github.com/godbus/dbus/v5"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/sdbus/sdbustest"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

// liveNode is a node without --root: a unit dir and a state dir in temp
// dirs, and a fake systemd behind connectSystemd.
type liveNode struct {
	t                 *testing.T
	unitDir, stateDir string
	spec              string
	sd                *applytest.Fake
	dials             int
}

func newLiveNode(t *testing.T) *liveNode {
	dir := t.TempDir()
	n := &liveNode{t: t, unitDir: filepath.Join(dir, "units"), stateDir: filepath.Join(dir, "state"), sd: applytest.New()}
	os.Mkdir(n.unitDir, 0o755)
	n.spec = filepath.Join(dir, "hostprov.yaml")
	n.write("- name: hello\n  exec: [/bin/echo, hello]\n")
	old := connectSystemd
	connectSystemd = func(ctx context.Context, socket string, _ time.Duration) (apply.Systemd, func(), error) {
		n.dials++
		return n.sd, func() {}, nil
	}
	t.Cleanup(func() { connectSystemd = old })
	return n
}

func (n *liveNode) write(hooks string) {
	os.WriteFile(n.spec, []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n"+hooks), 0o644)
}

func (n *liveNode) run(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	args = append(args, "--unit-dir", n.unitDir, "--state-dir", n.stateDir)
	if args[0] != "status" && args[0] != "remove" {
		args = append(args, "-f", n.spec)
	}
	code = Run(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

func TestApplyLive(t *testing.T) {
	n := newLiveNode(t)
	code, o, e := n.run("apply", "-o", "json")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, e)
	}
	var res applyResult
	if err := json.Unmarshal([]byte(o), &res); err != nil {
		t.Fatalf("apply -o json: %v\n%s", err, o)
	}
	if c := res.Counts; c.Writes != 1 || c.Reloads != 1 || c.Enables != 1 || c.Starts != 1 {
		t.Errorf("counts %+v", c)
	}
	if got := strings.Join(n.sd.Log(), "; "); got != "enable hello.service; reload; start hello.service" {
		t.Errorf("systemd calls: %s", got)
	}
	// A re-apply does not even connect to systemd.
	n.dials = 0
	code, _, e = n.run("apply")
	if code != 0 || n.dials != 0 {
		t.Errorf("re-apply: exit %d, %d dials\n%s", code, n.dials, e)
	}
	// status shows the unit and its state.
	code, o, e = n.run("status")
	if code != 0 || !strings.Contains(o, "hello.service") || !strings.Contains(o, "active") || !strings.Contains(o, "enabled") && !strings.Contains(o, "ok") {
		t.Errorf("status: exit %d\n%s%s", code, o, e)
	}
	code, o, _ = n.run("status", "-o", "json")
	var rs []apply.UnitReport
	if err := json.Unmarshal([]byte(o), &rs); err != nil || code != 0 || len(rs) != 1 || rs[0].ActiveState != "active" || rs[0].Drift {
		t.Errorf("status -o json: %v %+v", err, rs)
	}
	// A failing start: exit 1, the result named, the file kept.
	n.write("- name: hello\n  exec: [/bin/echo, bonjour]\n")
	n.sd.FailOn("restart", "hello.service", fmt.Errorf("job failed"))
	code, _, e = n.run("apply")
	if code != ExitFailure || !strings.Contains(e, "exit-code") || !strings.Contains(e, "run hostprov apply again") {
		t.Errorf("failing restart: exit %d\n%s", code, e)
	}
	// remove
	n.sd.FailOn("restart", "hello.service", nil)
	if code, _, e := n.run("remove", "hello"); code != 0 {
		t.Errorf("remove: exit %d\n%s", code, e)
	}
	if _, err := os.Stat(filepath.Join(n.unitDir, "hello.service")); !os.IsNotExist(err) {
		t.Errorf("remove left the file: %v", err)
	}
	if code, _, e := n.run("remove", "nope"); code != ExitInvalid || !strings.Contains(e, "no hook or unit named nope is installed here") {
		t.Errorf("remove of an unknown hook: exit %d\n%s", code, e)
	}
}

func TestApplyWaitsForTheLock(t *testing.T) {
	n := newLiveNode(t)
	os.Mkdir(n.stateDir, 0o755)
	unlock, err := apply.Lock(context.Background(), n.stateDir, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	code, _, e := n.run("apply", "--no-wait")
	if code != ExitFailure || !strings.Contains(e, fmt.Sprintf("another hostprov apply (pid %d) is running", os.Getpid())) {
		t.Errorf("--no-wait: exit %d\n%s", code, e)
	}
	done := make(chan string)
	go func() {
		_, _, e := n.run("apply")
		done <- e
	}()
	time.Sleep(200 * time.Millisecond)
	unlock()
	select {
	case e := <-done:
		want := fmt.Sprintf("hostprov: waiting for another hostprov apply (pid %d) to finish\n", os.Getpid())
		if strings.Count(e, want) != 1 {
			t.Errorf("stderr lacks the waiting message once:\n%s", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("apply did not go on after the lock was released")
	}
}

func TestApplyClearFailures(t *testing.T) {
	n := newLiveNode(t)
	os.Remove(n.unitDir)
	if code, _, e := n.run("apply"); code != ExitFailure || !strings.Contains(e, "unit directory") || !strings.Contains(e, "--unit-dir") {
		t.Errorf("missing unit dir: exit %d\n%s", code, e)
	}
	os.Mkdir(n.unitDir, 0o755)
	n.stateDir = filepath.Join(n.stateDir, "a", "b")
	if code, _, e := n.run("apply"); code != ExitFailure || !strings.Contains(e, "nor does its parent") || !strings.Contains(e, "--state-dir") {
		t.Errorf("missing state dir parent: exit %d\n%s", code, e)
	}
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	n.stateDir = notDir
	if code, _, e := n.run("apply"); code != ExitFailure || !strings.Contains(e, "not a directory") {
		t.Errorf("state dir is a file: exit %d\n%s", code, e)
	}
	n.stateDir = t.TempDir()
	os.WriteFile(filepath.Join(n.stateDir, "state.json"), []byte("{"), 0o600)
	if code, _, e := n.run("apply"); code != ExitFailure || !strings.Contains(e, "corrupt") {
		t.Errorf("corrupt state: exit %d\n%s", code, e)
	}
	if code, _, e := n.run("plan", "-o", "yaml"); code != ExitInvalid || !strings.Contains(e, "unknown --output") {
		t.Errorf("bad -o: exit %d\n%s", code, e)
	}
}

// TestReapplyRendersNothing: a re-apply of the inputs of the last apply,
// and a plan or apply --dry-run of them, plans from the state and the unit
// files, without rendering; anything that may make the units differ (the
// spec, drift on disk) or a spec with warnings (printed by every apply and
// plan) renders again.
func TestReapplyRendersNothing(t *testing.T) {
	n := newLiveNode(t)
	apply := func(want int64, args ...string) string {
		t.Helper()
		before := renders.Load()
		code, o, e := n.run(append([]string{"apply"}, args...)...)
		if code != 0 {
			t.Fatalf("apply: exit %d\n%s%s", code, o, e)
		}
		if got := renders.Load() - before; got != want {
			t.Errorf("apply %v rendered %d times, want %d\n%s%s", args, got, want, o, e)
		}
		return o + e
	}
	// plan, or apply --dry-run (args[0]), of the same inputs.
	plan := func(want int64, args ...string) (int, string) {
		t.Helper()
		before := renders.Load()
		cmd := []string{"plan"}
		if len(args) > 0 && args[0] == "--dry-run" {
			cmd = []string{"apply"}
		}
		code, o, e := n.run(append(cmd, args...)...)
		if got := renders.Load() - before; got != want {
			t.Errorf("%v %v rendered %d times, want %d\n%s%s", cmd, args, got, want, o, e)
		}
		return code, o + e
	}
	apply(1)
	state, _ := os.ReadFile(filepath.Join(n.stateDir, "state.json"))
	if !bytes.Contains(state, []byte(`"inputs": "sha256:`)) {
		t.Fatalf("the state records no inputs:\n%s", state)
	}
	if out := apply(0); !strings.Contains(out, "No changes.") || !strings.Contains(out, "unchanged "+filepath.Join(n.unitDir, "hello.service")) {
		t.Errorf("re-apply:\n%s", out)
	}
	if code, out := plan(0, "--detailed-exitcode"); code != 0 || !strings.Contains(out, "No changes.") {
		t.Errorf("plan: exit %d\n%s", code, out)
	}
	plan(0, "-o", "json")
	plan(0, "--dry-run")

	// Drift: rendered, reported, kept; --force renders and overwrites;
	// then nothing again.
	unit := filepath.Join(n.unitDir, "hello.service")
	os.WriteFile(unit, []byte("[Service]\nExecStart=/bin/edited\n"), 0o644)
	if code, out := plan(1, "--detailed-exitcode"); code != ExitDrift || !strings.Contains(out, "drift") {
		t.Errorf("plan of drift: exit %d\n%s", code, out)
	}
	if out := apply(1); !strings.Contains(out, "drift") {
		t.Errorf("drift not reported:\n%s", out)
	}
	apply(1, "--force")
	apply(0)

	// Another spec: rendered. --strict does not count: only a spec
	// without warnings is skipped, and for it --strict changes nothing.
	n.write("- name: hello\n  exec: [/bin/echo, bonjour]\n")
	apply(1)
	apply(0)
	apply(0, "--strict")

	// kops manifests: the instance group chosen is part of the inputs.
	kopsSpec, err := os.ReadFile(filepath.Join("..", "..", "examples", "kops", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(n.spec, kopsSpec, 0o644)
	for _, ig := range []string{"nodes-eu-west-1a", "control-plane-eu-west-1a"} {
		apply(1, "--instance-group", ig)
		apply(0, "--instance-group", ig)
	}

	// A warning is printed by every apply.
	n.write("- name: hello\n  exec: [/bin/echo, bonjour]\n  directives:\n    Service: [ExecStrat=/bin/false]\n")
	for range 2 {
		if out := apply(1); !strings.Contains(out, "warning") {
			t.Errorf("no warning:\n%s", out)
		}
		if _, out := plan(1); !strings.Contains(out, "warning") {
			t.Errorf("plan: no warning:\n%s", out)
		}
	}
}

// TestApplyDirChangedDuring: a spec changed in the directory while apply -d
// runs (which the path unit does not see: it watches only while no apply it
// started runs) is applied by the same apply, which reads the directory
// again once done.
func TestApplyDirChangedDuring(t *testing.T) {
	n := newLiveNode(t)
	dir := filepath.Join(t.TempDir(), "hooks.d")
	os.Mkdir(dir, 0o755)
	spec := func(msg string) []byte {
		return []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: hello\n  exec: [/bin/echo, " + msg + "]\n")
	}
	os.WriteFile(filepath.Join(dir, "a.yaml"), spec("one"), 0o644)
	rounds := 0
	appliedDir = func(round int) {
		rounds = round
		if round == 1 {
			os.WriteFile(filepath.Join(dir, "a.yaml"), spec("two"), 0o644)
		}
	}
	t.Cleanup(func() { appliedDir = nil })
	var o, e bytes.Buffer
	if code := Run([]string{"apply", "-d", dir, "--unit-dir", n.unitDir, "--state-dir", n.stateDir}, strings.NewReader(""), &o, &e); code != 0 {
		t.Fatalf("apply -d: exit %d\n%s", code, e.String())
	}
	data, _ := os.ReadFile(filepath.Join(n.unitDir, "hello.service"))
	if !strings.Contains(string(data), "/bin/echo two") || rounds != 2 || !strings.Contains(e.String(), "changed during the apply; applying it again") {
		t.Errorf("after %d rounds hello.service is\n%s\nstderr:\n%s", rounds, data, e.String())
	}
}

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

// hangBound is how long a test lets hostprov run that must end by a
// deadline or a signal. It is generous, for loaded machines: what it tells
// apart is an end from a wait without one.
const hangBound = 20 * time.Second

// helloSpec is a spec of one service; applied, it is enabled and started.
const helloSpec = "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: hello\n  exec: [/bin/echo, hello]\n"

// applyArgs are the arguments of an apply of helloSpec in a fresh
// directory, through socket; the unit directory is returned too.
func applyArgs(t *testing.T, socket string) (args []string, unitDir, stateDir string) {
	t.Helper()
	dir := t.TempDir()
	unitDir, stateDir = filepath.Join(dir, "units"), filepath.Join(dir, "state")
	if err := os.Mkdir(unitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "hostprov.yaml")
	if err := os.WriteFile(spec, []byte(helloSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"apply", "-f", spec, "--unit-dir", unitDir, "--state-dir", stateDir, "--systemd-socket", socket},
		unitDir, stateDir
}

// runWithin runs hostprov in this process and returns its exit code and
// standard error, failing the test if it has not ended after hangBound.
func runWithin(t *testing.T, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		var o, e bytes.Buffer
		code := Run(args, strings.NewReader(""), &o, &e)
		done <- result{code, e.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.stderr
	case <-time.After(hangBound):
		t.Fatalf("hostprov %s did not end within %v", strings.Join(args, " "), hangBound)
		return 0, ""
	}
}

// muteListener listens on a unix socket, takes every connection and never
// answers.
func muteListener(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "mute.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		for _, c := range held {
			c.Close()
		}
	})
	return sock
}

// TestApplyNoAnswer: apply where something takes the connection and does
// not answer, before the handshake or after it, ends at the call deadline,
// says what to check, and changes nothing.
func TestApplyNoAnswer(t *testing.T) {
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })
	for _, c := range []struct{ name, socket string }{
		{"no handshake", muteListener(t)},
		{"nothing after the handshake", sdbustest.New(t, sdbustest.Mute).Socket},
	} {
		t.Run(c.name, func(t *testing.T) {
			args, unitDir, _ := applyArgs(t, c.socket)
			code, stderr := runWithin(t, args...)
			if code != ExitFailure {
				t.Errorf("exit %d, want %d", code, ExitFailure)
			}
			for _, want := range []string{
				"hostprov: connect to systemd at " + c.socket + ": systemd did not answer within 300ms.",
				"does systemctl is-system-running answer?",
			} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(unitDir, "hello.service")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("apply wrote hello.service without systemd: %v", err)
			}
		})
	}
}

// slowStart answers what an apply of helloSpec asks, except that the start
// job it queues never ends, and that it never tells a unit's state.
func slowStart(call *godbus.Message) ([]any, bool) {
	switch sdbustest.Member(call) {
	case "EnableUnitFiles":
		return []any{true, []struct{ Type, Filename, Destination string }{}}, true
	case "Reload":
		return nil, true
	}
	return sdbustest.SlowJobs(call)
}

// TestApplyTimeoutFlag: --timeout bounds the wait for a start job, and the
// apply says which start did not finish and what to check.
func TestApplyTimeoutFlag(t *testing.T) {
	old := callTimeout
	callTimeout = 300 * time.Millisecond
	t.Cleanup(func() { callTimeout = old })
	p := sdbustest.New(t, slowStart)
	args, _, _ := applyArgs(t, p.Socket)
	code, stderr := runWithin(t, append(args, "--timeout", "500ms")...)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	for _, want := range []string{
		"start hello.service: the start job did not finish within 500ms.",
		"check systemctl status hello.service",
		"give hostprov a longer --timeout",
		"hostprov: stopped waiting for systemd to start hello.service",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !slices.Contains(p.Called(), "StartUnit") {
		t.Errorf("systemd was not asked to start the unit: %v", p.Called())
	}
	if code, _ := runWithin(t, append(args, "--timeout", "-1s")...); code != ExitInvalid {
		t.Errorf("--timeout -1s: exit %d, want %d", code, ExitInvalid)
	}
}
