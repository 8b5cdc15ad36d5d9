package agent

// The agent against a real API server (internal/kubetest) and a real
// systemd (internal/systemdtest): the test plays the controller, creating the
// NodeHooks and approving hooks by hand, and reads what the agent did from
// the API server and from systemd.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

func init() { ctrllog.SetLogger(logr.Discard()) }

// rigCluster is one node of a real cluster: a Node object, and a rig as
// its systemd.
type rigCluster struct {
	t    *testing.T
	c    *kubetest.Cluster
	cl   client.Client
	r    *systemdtest.Rig
	node string
	// connect, when set, is the agent's Connect; otherwise Dial, with
	// the rig's journal.
	connect func(ctx context.Context) (*Systemd, error)
}

func newRigCluster(t *testing.T) *rigCluster {
	t.Helper()
	r := systemdtest.Start(t)
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	k := &rigCluster{t: t, c: c, cl: c.Client(t), r: r, node: "node-a"}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.node, Labels: map[string]string{"role": "worker"}}}
	if err := k.cl.Create(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	if err := apply.PrepareDirs(apply.Options{Root: r.Root}); err != nil {
		t.Fatal(err)
	}
	return k
}

// startAgent runs an agent for the node and returns it with the function
// that stops it and waits for its end (also called when the test ends).
func (k *rigCluster) startAgent() (*Agent, func()) {
	k.t.Helper()
	lw := kubetest.NewLogWriter(k.t, "")
	connect := k.connect
	if connect == nil {
		connect = func(ctx context.Context) (*Systemd, error) {
			return Dial(ctx, k.r.Socket, func(ctx context.Context, args ...string) ([]byte, error) {
				out, err := k.r.Run(ctx, append([]string{"journalctl"}, args...)...)
				return []byte(out), err
			})
		}
	}
	a, err := New(Config{NodeName: k.node, REST: k.c.Config(), Options: apply.Options{Root: k.r.Root},
		Log: slog.New(slog.NewTextHandler(lw, nil)), Connect: connect})
	if err != nil {
		k.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					k.t.Errorf("agent: %v", err)
				}
			case <-time.After(30 * time.Second):
				k.t.Error("the agent did not end within 30s of its context")
			}
			lw.Stop()
		})
	}
	k.t.Cleanup(stop)
	return a, stop
}

// approve creates or updates hh, and its NodeHooks approved for its
// hooks, as the controller would.
func (k *rigCluster) approve(hh *v1alpha1.HostHooks) *v1alpha1.NodeHooks {
	k.t.Helper()
	ctx := k.t.Context()
	var cur v1alpha1.HostHooks
	if err := k.cl.Get(ctx, client.ObjectKeyFromObject(hh), &cur); err == nil {
		cur.Spec = hh.Spec
		if err := k.cl.Update(ctx, &cur); err != nil {
			k.t.Fatal(err)
		}
	} else if err := k.cl.Create(ctx, hh); err != nil {
		k.t.Fatal(err)
	}
	name := v1alpha1.NodeHooksName(hh.Name, k.node)
	var nh v1alpha1.NodeHooks
	if err := k.cl.Get(ctx, client.ObjectKey{Name: name}, &nh); err == nil {
		nh.Spec.HooksHash = v1alpha1.HooksHash(hh.Spec.Hooks)
		if err := k.cl.Update(ctx, &nh); err != nil {
			k.t.Fatal(err)
		}
		return &nh
	}
	nh = v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			v1alpha1.LabelNode: v1alpha1.LabelValue(k.node), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: k.node, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
	if err := k.cl.Create(ctx, &nh); err != nil {
		k.t.Fatal(err)
	}
	return &nh
}

// waitFor waits until the NodeHooks named name satisfies ok, and returns
// it.
func (k *rigCluster) waitFor(name, what string, ok func(*v1alpha1.NodeHooks) bool) *v1alpha1.NodeHooks {
	k.t.Helper()
	var nh v1alpha1.NodeHooks
	err := wait.PollUntilContextTimeout(k.t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := k.cl.Get(ctx, client.ObjectKey{Name: name}, &nh); err != nil {
			return false, err
		}
		return ok(&nh), nil
	})
	if err != nil {
		k.t.Fatalf("NodeHooks %s: %s: %v; status:\n%s", name, what, err, statusJSON(&nh))
	}
	return &nh
}

func statusJSON(nh *v1alpha1.NodeHooks) string {
	b, _ := json.MarshalIndent(nh.Status, "", "  ")
	return string(b)
}

// runs counts the lines the hooks appended to file in the rig's /var/lib.
func (k *rigCluster) runs(file string) int {
	k.t.Helper()
	data, err := os.ReadFile(filepath.Join(k.r.Root, "var/lib", file))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		k.t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

func (k *rigCluster) unitStatus(unit string) apply.UnitStatus {
	k.t.Helper()
	m, err := Dial(k.t.Context(), k.r.Socket, nil)
	if err != nil {
		k.t.Fatal(err)
	}
	defer m.Close()
	st, err := m.Status(k.t.Context(), unit)
	if err != nil {
		k.t.Fatal(err)
	}
	return st
}

func hook(h *v1alpha1.HookResult) string { return fmt.Sprintf("%+v", *h) }

func findHook(nh *v1alpha1.NodeHooks, name string) *v1alpha1.HookResult {
	for i := range nh.Status.Hooks {
		if nh.Status.Hooks[i].Name == name {
			return &nh.Status.Hooks[i]
		}
	}
	return nil
}

// The whole life of a HostHooks on one node: applied and reported with its
// steps; a hook that fails after the apply reported through systemd's
// signals, without another apply; a failing step with its exit code and
// output; a restarted agent that changes and runs nothing; the HostHooks
// deleted and its units pruned, the node's own spec untouched throughout.
func TestRigAgentLifecycle(t *testing.T) {
	t.Parallel()
	k := newRigCluster(t)
	own := k.applyOwnSpec()

	prepare := v1alpha1.Hook{Name: "prepare", Steps: []v1alpha1.Step{
		{Name: "mark", Sh: "echo run >> /var/lib/prepare-runs"},
		{Name: "check", Run: []string{"/bin/true"}},
	}}
	daemon := v1alpha1.Hook{Name: "daemon", Exec: []string{"/bin/sleep", "infinity"}}
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.HostHooksSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
		Hooks:        []v1alpha1.Hook{prepare, daemon}}}
	nh := k.approve(hh)
	a, stop := k.startAgent()

	hash := nh.Spec.HooksHash
	got := k.waitFor(nh.Name, "Succeeded", func(nh *v1alpha1.NodeHooks) bool {
		return nh.Status.Phase == v1alpha1.NodeSucceeded && nh.Status.AppliedHash == hash
	})
	k.checkSucceeded(got)
	k.checkLateFailure(a, hh, prepare, daemon)
	nh, before := k.checkFailedStep(hh, prepare, daemon)

	// A new agent: no change on the node, nothing run again (the failed
	// hook included), no status written.
	stop()
	a, _ = k.startAgent()
	k.checkRestartIdle(a, nh, before)
	k.checkDeleted(hh, nh, own)
}

// applyOwnSpec applies the node's own spec, as hostprov apply -d
// /etc/hostprov/hooks.d installs it, and returns its units.
func (k *rigCluster) applyOwnSpec() []compile.Unit {
	t, ctx := k.t, k.t.Context()
	t.Helper()
	r, diags := compile.Build("hooks.d/local.yaml", []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n"+
		"  - name: local\n    steps:\n      - name: mark\n        sh: echo run >> /var/lib/local-runs\n"), compile.Options{})
	own := r.Units
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	opts := apply.Options{Root: k.r.Root}
	st, _ := apply.LoadState(apply.StatePath(opts.StateDirPath()))
	p, err := apply.NewPlanSets(ctx, []apply.SpecSet{{Name: "local", Units: own}}, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Dial(ctx, k.r.Socket, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Execute(ctx, p, m, nil); err != nil {
		t.Fatal(err)
	}
	m.Close()
	return own
}

// checkSucceeded checks the status of the first apply of
// TestRigAgentLifecycle: prepare's two steps succeeded and ran once, and
// daemon is active.
func (k *rigCluster) checkSucceeded(got *v1alpha1.NodeHooks) {
	t := k.t
	t.Helper()
	if p := findHook(got, "prepare"); p == nil || p.Phase != apply.PhaseSucceeded || len(p.Steps) != 2 ||
		p.Steps[0].State != "succeeded" || p.Steps[1].State != "succeeded" || p.Steps[0].ExitCode == nil || *p.Steps[0].ExitCode != 0 ||
		p.Steps[0].StartedAt == nil || len(p.Output) != 0 {
		t.Errorf("prepare: %v; want succeeded, two steps that exited 0, no output", p)
	}
	if d := findHook(got, "daemon"); d == nil || d.Phase != "active" {
		t.Errorf("daemon: %v; want active", d)
	}
	if got.Status.AppliedAt == nil || got.Status.Message != "" {
		t.Errorf("status %s", statusJSON(got))
	}
	if n := k.runs("prepare-runs"); n != 1 {
		t.Errorf("prepare ran %d times, want 1", n)
	}
	for _, u := range []string{"prepare.service", "daemon.service"} {
		if s := k.unitStatus(u); s.ActiveState != "active" || s.UnitFileState != "enabled" {
			t.Errorf("%s: %s, %s; want active, enabled", u, s.ActiveState, s.UnitFileState)
		}
	}
}

// checkLateFailure: a hook that starts well and fails 2s later: the apply
// is over by then, and systemd's signals report it.
func (k *rigCluster) checkLateFailure(a *Agent, hh *v1alpha1.HostHooks, prepare, daemon v1alpha1.Hook) {
	t := k.t
	t.Helper()
	late := v1alpha1.Hook{Name: "late", Type: "exec", Exec: []string{"/bin/sh", "-c", "sleep 2; echo late failure; exit 4"}}
	hh.Spec.Hooks = []v1alpha1.Hook{prepare, daemon, late}
	nh := k.approve(hh)
	hash := nh.Spec.HooksHash
	k.waitFor(nh.Name, "applied the late hook", func(nh *v1alpha1.NodeHooks) bool {
		return nh.Status.AppliedHash == hash && findHook(nh, "late") != nil
	})
	syncs := a.Stats().Syncs
	got := k.waitFor(nh.Name, "Failed by the late hook, with its output", func(nh *v1alpha1.NodeHooks) bool {
		l := findHook(nh, "late")
		return nh.Status.Phase == v1alpha1.NodeFailed && l != nil && len(l.Output) > 0
	})
	if l := findHook(got, "late"); l == nil || l.Phase != "failed" || l.ExitCode == nil || *l.ExitCode != 4 || l.Reason != "exit-code" ||
		!strings.Contains(strings.Join(l.Output, "\n"), "late failure") {
		t.Errorf("late: %v; want failed, exit code 4, reason exit-code, its output", l)
	}
	if s := a.Stats(); s.Syncs != syncs || s.Refreshes == 0 {
		t.Errorf("stats %+v (syncs %d when the late hook was applied): the failure must come from a refresh, not another apply", s, syncs)
	}
	if n := k.runs("prepare-runs"); n != 1 {
		t.Errorf("prepare ran %d times, want 1", n)
	}
}

// checkFailedStep: a failing step reports its exit code and its output,
// the steps after it not run; the late hook is pruned. It returns the
// NodeHooks and its status.
func (k *rigCluster) checkFailedStep(hh *v1alpha1.HostHooks, prepare, daemon v1alpha1.Hook) (*v1alpha1.NodeHooks, v1alpha1.NodeHooksStatus) {
	t := k.t
	t.Helper()
	bad := v1alpha1.Hook{Name: "bad", Steps: []v1alpha1.Step{
		{Name: "fine", Run: []string{"/bin/true"}},
		{Name: "broken", Sh: "echo bad-step-output >&2; echo run >> /var/lib/bad-runs; exit 3"},
		{Name: "never", Run: []string{"/bin/true"}},
	}}
	hh.Spec.Hooks = []v1alpha1.Hook{prepare, daemon, bad}
	nh := k.approve(hh)
	hash := nh.Spec.HooksHash
	got := k.waitFor(nh.Name, "Failed by the bad step", func(nh *v1alpha1.NodeHooks) bool {
		b := findHook(nh, "bad")
		return nh.Status.AppliedHash == hash && b != nil && b.Phase == apply.PhaseFailed
	})
	b := findHook(got, "bad")
	if b.ExitCode == nil || *b.ExitCode != 3 || len(b.Steps) != 3 || b.Steps[1].State != "failed" || b.Steps[1].ExitCode == nil ||
		*b.Steps[1].ExitCode != 3 || b.Steps[2].State != "not run" || !strings.Contains(strings.Join(b.Output, "\n"), "bad-step-output") {
		t.Errorf("bad: %s; want exit code 3 at step broken, never not run, its output", hook(b))
	}
	if got.Status.Phase != v1alpha1.NodeFailed || findHook(got, "late") != nil {
		t.Errorf("status %s; want Failed, the late hook gone", statusJSON(got))
	}
	if _, err := os.Stat(filepath.Join(k.r.UnitDir, "late.service")); !os.IsNotExist(err) {
		t.Errorf("late.service not pruned with its hook: %v", err)
	}
	return nh, got.Status
}

// checkRestartIdle: the agent a, new, changes nothing on the node, runs
// nothing again (the failed hook included) and writes no status, which
// was before.
func (k *rigCluster) checkRestartIdle(a *Agent, nh *v1alpha1.NodeHooks, before v1alpha1.NodeHooksStatus) {
	t, ctx := k.t, k.t.Context()
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Stats().Syncs > 0, nil
	})
	if err != nil {
		t.Fatal("the new agent did not sync")
	}
	// Long enough for a write to show, were one made.
	time.Sleep(time.Second)
	got := &v1alpha1.NodeHooks{}
	if err := k.cl.Get(ctx, client.ObjectKey{Name: nh.Name}, got); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.StatusWrites != 0 {
		t.Errorf("the restarted agent wrote %d statuses; want none: was\n%s\nnow\n%s", s.StatusWrites, statusJSON(&v1alpha1.NodeHooks{Status: before}), statusJSON(got))
	}
	for file, want := range map[string]int{"prepare-runs": 1, "bad-runs": 1, "local-runs": 1} {
		if n := k.runs(file); n != want {
			t.Errorf("%s: %d runs after the agent's restart, want %d", file, n, want)
		}
	}
}

// checkDeleted: the HostHooks hh deleted (no controller holds it with a
// finalizer here): its units are pruned, its NodeHooks nh says Removed,
// the node's own spec, own, stays.
func (k *rigCluster) checkDeleted(hh *v1alpha1.HostHooks, nh *v1alpha1.NodeHooks, own []compile.Unit) {
	t, ctx := k.t, k.t.Context()
	t.Helper()
	if err := k.cl.Delete(ctx, hh); err != nil {
		t.Fatal(err)
	}
	got := k.waitFor(nh.Name, "Removed", func(nh *v1alpha1.NodeHooks) bool { return nh.Status.Phase == v1alpha1.NodeRemoved })
	if got.Status.AppliedHash != "" || len(got.Status.Hooks) != 0 {
		t.Errorf("removed: %s", statusJSON(got))
	}
	for _, u := range []string{"prepare.service", "daemon.service", "bad.service"} {
		if _, err := os.Lstat(filepath.Join(k.r.UnitDir, u)); !os.IsNotExist(err) {
			t.Errorf("%s still in the unit directory (%v)", u, err)
		}
		if s := k.unitStatus(u); s.ActiveState == "active" {
			t.Errorf("%s still active", u)
		}
	}
	if s := k.unitStatus(own[0].Name); s.ActiveState != "active" {
		t.Errorf("the node's own %s: %s; want active, untouched", own[0].Name, s.ActiveState)
	}
	st, err := apply.LoadState(apply.StatePath(apply.Options{Root: k.r.Root}.StateDirPath()))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range st.Units {
		if u.Set != "local" {
			t.Errorf("the state still has %s of %s", u.Name, u.Set)
		}
	}
	if n := k.runs("local-runs"); n != 1 {
		t.Errorf("the node's own hook ran %d times, want 1", n)
	}
}

// A hook that failed on a real systemd runs again once its HostHooks'
// spec.retry changes, and only then: its cause fixed on the node, the
// retry succeeds; neither a new agent nor another change of the node runs
// it once more, and the hook beside it, which succeeded, never runs again.
func TestRigAgentRetry(t *testing.T) {
	t.Parallel()
	k := newRigCluster(t)
	ctx := t.Context()
	fine := v1alpha1.Hook{Name: "fine", Steps: []v1alpha1.Step{{Name: "mark", Sh: "echo run >> /var/lib/fine-runs"}}}
	flaky := v1alpha1.Hook{Name: "flaky", Steps: []v1alpha1.Step{
		{Name: "mark", Sh: "echo run >> /var/lib/flaky-runs"},
		{Name: "check", Run: []string{"/usr/bin/test", "-e", "/var/lib/flaky-ok"}},
	}}
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "retried"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{fine, flaky}}}
	nh := k.approve(hh)
	_, stop := k.startAgent()
	hash := nh.Spec.HooksHash
	k.waitFor(nh.Name, "Failed by flaky", func(nh *v1alpha1.NodeHooks) bool {
		f := findHook(nh, "flaky")
		return nh.Status.Phase == v1alpha1.NodeFailed && nh.Status.AppliedHash == hash && f != nil && f.Phase == apply.PhaseFailed
	})

	// The cause fixed on the node, and a new agent: nothing runs until
	// the retry.
	if err := os.WriteFile(filepath.Join(k.r.Root, "var/lib/flaky-ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stop()
	a, stop := k.startAgent()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Stats().Syncs > 0, nil
	}); err != nil {
		t.Fatal("the new agent did not sync")
	}
	if n := k.runs("flaky-runs"); n != 1 {
		t.Fatalf("flaky ran %d times before the retry, want 1", n)
	}

	var cur v1alpha1.HostHooks
	if err := k.cl.Get(ctx, client.ObjectKeyFromObject(hh), &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Retry = 1
	if err := k.cl.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	got := k.waitFor(nh.Name, "Succeeded at retry 1", func(nh *v1alpha1.NodeHooks) bool {
		return nh.Status.Phase == v1alpha1.NodeSucceeded && nh.Status.Retry == 1 && nh.Status.AppliedHash == hash
	})
	if f := findHook(got, "flaky"); f == nil || f.Phase != apply.PhaseSucceeded {
		t.Errorf("flaky after the retry: %v; want succeeded", f)
	}

	// Another agent, and a change of the node's labels: nothing more.
	stop()
	a, _ = k.startAgent()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Stats().Syncs > 0, nil
	}); err != nil {
		t.Fatal("the third agent did not sync")
	}
	syncs := a.Stats().Syncs
	var n corev1.Node
	if err := k.cl.Get(ctx, client.ObjectKey{Name: k.node}, &n); err != nil {
		t.Fatal(err)
	}
	n.Labels["touched"] = "yes"
	if err := k.cl.Update(ctx, &n); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return a.Stats().Syncs > syncs, nil
	}); err != nil {
		t.Fatal("the relabelled node's agent did not sync")
	}
	for file, want := range map[string]int{"flaky-runs": 2, "fine-runs": 1} {
		if n := k.runs(file); n != want {
			t.Errorf("%s: %d runs, want %d", file, n, want)
		}
	}
}

// TestRigAgentShadowRefused: a HostHooks whose hook is named like a unit
// the node has (systemd-journald.service, the image's) is refused on the
// node, against a real API server and a real systemd: its NodeHooks is
// Failed with the conflict, which names the node's unit file and a fix a
// HostHooks author can make (no flag of hostprov apply); nothing is written
// in /etc/systemd/system, and journald's unit and enablement stay the
// image's. A HostHooks beside it is applied.
func TestRigAgentShadowRefused(t *testing.T) {
	t.Parallel()
	k := newRigCluster(t)
	before := k.unitStatus("systemd-journald.service")
	if before.LoadState != "loaded" {
		t.Fatalf("journald is %s in the rig before the test: the test needs the image's unit", before.LoadState)
	}
	// The agent's pod sees the node's vendor units where the node has
	// them (deploy/agent.yaml mounts the node's / at /host); the rig
	// shows its systemd the host's unit, which the agent, reading below
	// the rig's root, is shown the same way.
	vendor, err := os.ReadFile("/usr/lib/systemd/system/systemd-journald.service")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(k.r.Root, "usr/lib/systemd/system")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "systemd-journald.service"), vendor, 0o644); err != nil {
		t.Fatal(err)
	}
	shadow := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "shadow"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{{Name: "systemd-journald.service", Exec: []string{"/bin/sleep", "infinity"}}}}}
	fine := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "fine"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{{Name: "fine", Exec: []string{"/bin/sleep", "infinity"}}}}}
	snh, fnh := k.approve(shadow), k.approve(fine)
	k.startAgent()

	got := k.waitFor(snh.Name, "Failed", func(nh *v1alpha1.NodeHooks) bool { return nh.Status.Phase == v1alpha1.NodeFailed })
	if msg := got.Status.Message; !strings.Contains(msg, "lib/systemd/system/systemd-journald.service") ||
		!strings.Contains(msg, "drop-ins only") || strings.Contains(msg, "--") {
		t.Errorf("the conflict: %q; want the node's unit file, the drop-in route, and no flag of hostprov apply", msg)
	}
	k.waitFor(fnh.Name, "Succeeded", func(nh *v1alpha1.NodeHooks) bool { return nh.Status.Phase == v1alpha1.NodeSucceeded })
	if _, err := os.Lstat(filepath.Join(k.r.Root, "etc/systemd/system/systemd-journald.service")); !os.IsNotExist(err) {
		t.Errorf("a unit file was written over journald's (%v)", err)
	}
	after := k.unitStatus("systemd-journald.service")
	// (Its sockets may start it meanwhile: the rig's journal is read.)
	if after.LoadState != "loaded" || after.UnitFileState != before.UnitFileState || after.NeedDaemonReload {
		t.Errorf("journald: %s, %s after (%s before); want the image's unit, its enablement untouched",
			after.LoadState, after.UnitFileState, before.UnitFileState)
	}
}
