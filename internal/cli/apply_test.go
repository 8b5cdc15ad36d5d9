package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func TestPlanDetailedExitCode(t *testing.T) {
	n := newLiveNode(t)
	if code, _, e := n.run("plan", "--detailed-exitcode"); code != 2 {
		t.Errorf("plan with changes: exit %d, want 2\n%s", code, e)
	}
	if code, _, e := n.run("plan"); code != 0 {
		t.Errorf("plan without --detailed-exitcode: exit %d, want 0\n%s", code, e)
	}
	if code, _, e := n.run("apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, e)
	}
	if code, o, e := n.run("plan", "--detailed-exitcode"); code != 0 || !strings.Contains(o, "No changes.") {
		t.Errorf("plan without changes: exit %d, want 0\n%s%s", code, o, e)
	}
	n.write("- name: a/b\n  exec: [/bin/true]\n")
	if code, _, e := n.run("plan", "--detailed-exitcode"); code != 1 {
		t.Errorf("plan of an invalid spec: exit %d, want 1\n%s", code, e)
	}
	if code, _, e := n.run("plan"); code != ExitInvalid {
		t.Errorf("plan of an invalid spec without --detailed-exitcode: exit %d, want %d\n%s", code, ExitInvalid, e)
	}
	n.write("- name: hello\n  exec: [/bin/echo, hello]\n- name: x\n  exec: [/bin/true]\n")
	os.WriteFile(filepath.Join(n.unitDir, "x.service"), []byte("[Service]\nExecStart=/bin/mine\n"), 0o644)
	if code, _, e := n.run("plan", "--detailed-exitcode"); code != 1 || !strings.Contains(e, "apply would refuse") {
		t.Errorf("plan with a conflict: exit %d, want 1\n%s", code, e)
	}
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
