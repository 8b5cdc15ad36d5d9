package agent

// The agent against a real API server with applytest's fake systemd: what
// makes it apply, and what must not.

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
	"github.com/hostprov/hostprov/pkg/compile"
)

// An agent that has applied does nothing more while nothing that matters
// changes: not for the controller's HostHooks status, a Node's status or
// annotations, the labels of a NodeHooks, or its own status writes. A
// signal of one of its units makes a refresh (a report, no apply), one of
// another unit nothing; a lost connection to systemd a new one and a sync
// that changes nothing. A label change that deselects the node prunes; one
// that selects it again applies again, for the hooks still approved; a
// deletion that the controller's finalizer holds prunes.
func TestKubeAgentIdleSignalsLabels(t *testing.T) {
	k := startIdleAgent(t)
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.HostHooksSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
		Hooks:        []v1alpha1.Hook{service("web-svc")}}}
	nh := createHooks(t, k.cl, hh, k.node.Name)
	waitNodeHooksPhase(t, k.cl, nh, v1alpha1.NodeSucceeded)
	unit := unitOf(t, hh, 0)
	if !k.sd.Active(unit) {
		t.Fatalf("%s not started: %q", unit, k.sd.Log())
	}
	// Settled: the watch event of the agent's own write has come back.
	time.Sleep(500 * time.Millisecond)
	before := k.a.Stats()
	k.sd.Reset()

	k.writeWhatOthersWrite(hh, nh)
	time.Sleep(time.Second)
	if after := k.a.Stats(); after != before || len(k.sd.Log()) != 0 {
		t.Errorf("an idle agent worked: stats %+v, then %+v; systemd calls %q", before, after, k.sd.Log())
	}
	k.checkSignals(unit, before)
	k.checkSelection(nh, unit)
	k.checkDeletion(hh, nh, unit)
}

// idleAgent is the agent of TestKubeAgentIdleSignalsLabels, of node-b (a
// worker), over applytest's fake systemd.
type idleAgent struct {
	t    *testing.T
	cl   client.Client
	node *corev1.Node
	a    *Agent
	sd   *applytest.Fake
	// conns are the agent's connections to systemd, as it makes them:
	// each has its signals and its end, which the test controls.
	conns chan *fakeConn
}

func startIdleAgent(t *testing.T) *idleAgent {
	t.Helper()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	k := &idleAgent{t: t, cl: c.Client(t), sd: applytest.New(), conns: make(chan *fakeConn, 10),
		node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{"role": "worker"}}}}
	if err := k.cl.Create(t.Context(), k.node); err != nil {
		t.Fatal(err)
	}
	opts := apply.Options{Root: t.TempDir()}
	if err := apply.PrepareDirs(opts); err != nil {
		t.Fatal(err)
	}
	var err error
	k.a, err = New(Config{NodeName: k.node.Name, REST: c.Config(), Options: opts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) {
			fc := &fakeConn{changes: make(chan UnitState, 1), lost: make(chan struct{})}
			k.conns <- fc
			return &Systemd{Systemd: k.sd, Changes: fc.changes, Lost: fc.lost}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.a.Run(actx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	return k
}

// writeWhatOthersWrite writes what the controller and the kubelet write
// all the time: hh's status, the node's status and annotations, and the
// labels of nh.
func (k *idleAgent) writeWhatOthersWrite(hh *v1alpha1.HostHooks, nh *v1alpha1.NodeHooks) {
	t, cl, ctx, node := k.t, k.cl, k.t.Context(), k.node
	t.Helper()
	for i := range 3 {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(hh), hh); err != nil {
			t.Fatal(err)
		}
		hh.Status.MatchedNodes = int32(i + 1)
		hh.Status.ObservedGeneration = hh.Generation
		if err := cl.Status().Update(ctx, hh); err != nil {
			t.Fatal(err)
		}
		if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
			LastHeartbeatTime: metav1.NewTime(time.Now().Add(time.Duration(i) * time.Second))}}
		if err := cl.Status().Update(ctx, node); err != nil {
			t.Fatal(err)
		}
		node.Annotations = map[string]string{"beat": time.Now().String()}
		if err := cl.Update(ctx, node); err != nil {
			t.Fatal(err)
		}
		var cur v1alpha1.NodeHooks
		if err := cl.Get(ctx, client.ObjectKeyFromObject(nh), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Labels["extra"] = "x"
		if err := cl.Update(ctx, &cur); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSignals: a signal of the agent's unit is a refresh, no sync; of
// another unit, nothing. A lost connection makes the agent connect again
// and sync, which changes nothing on the node and writes nothing.
func (k *idleAgent) checkSignals(unit string, before Stats) {
	t, a, sd := k.t, k.a, k.sd
	t.Helper()
	conn := <-k.conns
	conn.changes <- UnitState{Unit: "other.service", ActiveState: "failed"}
	time.Sleep(200 * time.Millisecond)
	if after := a.Stats(); after != before {
		t.Errorf("a signal of a unit not the agent's: stats %+v, then %+v", before, after)
	}
	conn.changes <- UnitState{Unit: unit, ActiveState: "deactivating"}
	waitStats(t, a, func(s Stats) bool { return s.Refreshes == before.Refreshes+1 })
	if after := a.Stats(); after.Syncs != before.Syncs || after.StatusWrites != before.StatusWrites {
		t.Errorf("a signal of the agent's unit, whose status did not change: stats %+v, then %+v; want one refresh only", before, after)
	}
	before = a.Stats()
	close(conn.lost)
	select {
	case <-k.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not connect again")
	}
	waitStats(t, a, func(s Stats) bool { return s.Syncs > before.Syncs })
	if after := a.Stats(); after.StatusWrites != before.StatusWrites || len(sd.Log()) != 0 {
		t.Errorf("a new connection: stats %+v, then %+v, systemd calls %q; want a sync that changes nothing", before, after, sd.Log())
	}
}

// checkSelection: deselected, and the removal approved as the controller
// does, the node's hooks are pruned, Removed; selected again, they apply
// again, still approved.
func (k *idleAgent) checkSelection(nh *v1alpha1.NodeHooks, unit string) {
	t, cl, ctx, node := k.t, k.cl, k.t.Context(), k.node
	t.Helper()
	node.Labels = map[string]string{"role": "infra"}
	if err := cl.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := cl.Patch(ctx, &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: nh.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"remove":true}}`))); err != nil {
		t.Fatal(err)
	}
	waitNodeHooksPhase(t, cl, nh, v1alpha1.NodeRemoved)
	if k.sd.Active(unit) {
		t.Errorf("%s still active after the node left the selector", unit)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	node.Labels = map[string]string{"role": "worker"}
	if err := cl.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	waitNodeHooksPhase(t, cl, nh, v1alpha1.NodeSucceeded)
	if !k.sd.Active(unit) {
		t.Errorf("%s not started again: %q", unit, k.sd.Log())
	}
}

// checkDeletion: hh deleted while the controller's finalizer holds it:
// pruned, Removed, and the object stays until the finalizer goes.
func (k *idleAgent) checkDeletion(hh *v1alpha1.HostHooks, nh *v1alpha1.NodeHooks, unit string) {
	t, cl, ctx := k.t, k.cl, k.t.Context()
	t.Helper()
	if err := cl.Get(ctx, client.ObjectKeyFromObject(hh), hh); err != nil {
		t.Fatal(err)
	}
	hh.Finalizers = []string{v1alpha1.Finalizer}
	if err := cl.Update(ctx, hh); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(ctx, hh); err != nil {
		t.Fatal(err)
	}
	waitNodeHooksPhase(t, cl, nh, v1alpha1.NodeRemoved)
	if k.sd.Active(unit) {
		t.Errorf("%s still active after its HostHooks was deleted", unit)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(hh), hh); err != nil || hh.DeletionTimestamp == nil {
		t.Fatalf("the HostHooks held by its finalizer: %v, deletion %v", err, hh.DeletionTimestamp)
	}
	hh.Finalizers = nil
	if err := cl.Update(ctx, hh); err != nil {
		t.Fatal(err)
	}
}

// createHooks creates hh and its NodeHooks for node, approved for its
// hooks as the controller approves them, and returns the NodeHooks as
// created.
func createHooks(t *testing.T, cl client.Client, hh *v1alpha1.HostHooks, node string) *v1alpha1.NodeHooks {
	t.Helper()
	if err := cl.Create(t.Context(), hh); err != nil {
		t.Fatal(err)
	}
	nh := &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, node), Labels: map[string]string{
			v1alpha1.LabelNode: v1alpha1.LabelValue(node), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: node, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
	if err := cl.Create(t.Context(), nh); err != nil {
		t.Fatal(err)
	}
	return nh
}

// waitNodeHooksPhase waits until the stored status of nh is in phase.
func waitNodeHooksPhase(t *testing.T, cl client.Client, nh *v1alpha1.NodeHooks, phase v1alpha1.NodePhase) {
	t.Helper()
	var got v1alpha1.NodeHooks
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
			return false, err
		}
		return got.Status.Phase == phase, nil
	})
	if err != nil {
		t.Fatalf("NodeHooks not %s: %v; status %s", phase, err, statusJSON(&got))
	}
}

type fakeConn struct {
	changes chan UnitState
	lost    chan struct{}
}

func waitStats(t *testing.T, a *Agent, ok func(Stats) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return ok(a.Stats()), nil
	})
	if err != nil {
		t.Fatalf("stats %+v: %v", a.Stats(), err)
	}
}

// gatedSystemd is the fake systemd whose starts wait for the test.
type gatedSystemd struct {
	*applytest.Fake
	gate chan struct{}
}

func (g *gatedSystemd) Start(ctx context.Context, name string) error {
	<-g.gate
	return g.Fake.Start(ctx, name)
}

func (g *gatedSystemd) Queue(ctx context.Context, kind apply.ActionKind, name string) (func() error, error) {
	return func() error {
		<-g.gate
		w, err := g.Fake.Queue(ctx, kind, name)
		if err != nil {
			return err
		}
		return w()
	}, nil
}

// While the starts of an apply wait, the NodeHooks says Applying; when
// they are done, Succeeded.
func TestKubeAgentApplying(t *testing.T) {
	t.Parallel()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	cl := c.Client(t)
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-d"}}
	if err := cl.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	opts := apply.Options{Root: t.TempDir()}
	sd := &gatedSystemd{Fake: applytest.New(), gate: make(chan struct{})}
	a, err := New(Config{NodeName: node.Name, REST: c.Config(), Options: opts,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) { return &Systemd{Systemd: sd}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	released := false
	t.Cleanup(func() {
		if !released {
			close(sd.gate)
		}
		cancel()
		<-done
	})
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{service("slow-svc")}}}
	nh := createHooks(t, cl, hh, node.Name)
	waitNodeHooksPhase(t, cl, nh, v1alpha1.NodeApplying)
	if u := unitOf(t, hh, 0); sd.Active(u) {
		t.Fatalf("%s active before its start was let through", u)
	}
	close(sd.gate)
	released = true
	waitNodeHooksPhase(t, cl, nh, v1alpha1.NodeSucceeded)
}

// TestKubeAgentKeepsNodeSetOfAgentName, against a real API server: a
// node's own spec set named like one of the agent's (hosthooks.base, which
// an earlier hostprov accepted in hooks.d) is not the agent's. With no
// HostHooks base in the cluster the agent neither prunes nor reports it,
// while it applies and later prunes a HostHooks of its own beside it.
func TestKubeAgentKeepsNodeSetOfAgentName(t *testing.T) {
	k := newWrittenCluster(t, "node-o")
	ctx := t.Context()

	// The node's own set, as an earlier hostprov apply -d hooks.d left it.
	r, diags := compile.Build("/etc/hostprov/hooks.d/hosthooks.base.yaml", []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n  - name: local\n    exec: [/bin/sleep, infinity]\n"), compile.Options{})
	own := r.Units
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	state := func() *apply.State {
		st, err := apply.LoadState(apply.StatePath(k.opts.StateDirPath()))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	p, err := apply.NewPlanSets(ctx, []apply.SpecSet{{Name: "hosthooks.base", Units: own}}, state(), k.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Execute(ctx, p, k.sd, nil); err != nil {
		t.Fatal(err)
	}
	sets := func() []string {
		var out []string
		for _, u := range state().Units {
			if !slices.Contains(out, u.Set) {
				out = append(out, u.Set)
			}
		}
		slices.Sort(out)
		return out
	}

	k.run()
	hh := &v1alpha1.HostHooks{Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{service("other-svc")}}}
	hh.Name = "other"
	nh := k.create(hh)
	k.waitStatus(nh, "Succeeded", func(st v1alpha1.NodeHooksStatus) bool { return st.Phase == v1alpha1.NodeSucceeded })
	if want := []string{"hosthooks.base", "hosthooks.other"}; !slices.Equal(sets(), want) {
		t.Errorf("sets %q, want %q: the node's own set was pruned", sets(), want)
	}
	if owner, _ := state().SetOwner("hosthooks.other"); owner != kube.SetOwner {
		t.Errorf("hosthooks.other is recorded as %q's", owner)
	}

	// The HostHooks goes (no controller holds it): its set is pruned, the
	// node's own stays, running.
	if err := k.cl.Delete(ctx, hh); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !slices.Contains(sets(), "hosthooks.other"), nil
	})
	if err != nil {
		t.Fatalf("hosthooks.other not pruned: sets %q", sets())
	}
	if want := []string{"hosthooks.base"}; !slices.Equal(sets(), want) {
		t.Errorf("sets %q after other is gone, want %q", sets(), want)
	}
	if !k.sd.Active(own[0].Name) {
		t.Errorf("the node's own %s was stopped: %q", own[0].Name, k.sd.Log())
	}
}

// A change of spec.retry starts the failed hook again exactly once,
// against a real API server: not again on the syncs after it while the
// agent's cache lags behind its writes (here it never catches up), nor
// when a new agent takes over the node, nor on its syncs; the next change
// runs it once more, and it succeeds.
func TestKubeAgentRetryOnce(t *testing.T) {
	t.Parallel()
	k := newWrittenCluster(t, "node-retry")
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "flaky"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{service("flaky-svc")}}}
	unit := unitOf(t, hh, 0)
	k.sd.FailOn("start", unit, errStart)
	nh := k.create(hh)
	stop := k.start(k.agent)
	defer func() { stop() }()
	starts := func() int {
		n := 0
		for _, c := range k.sd.Calls() {
			if (c.Method == "start" || c.Method == "restart") && len(c.Units) == 1 && c.Units[0] == unit {
				n++
			}
		}
		return n
	}
	k.waitStatus(nh, "Failed", func(st v1alpha1.NodeHooksStatus) bool {
		return st.Phase == v1alpha1.NodeFailed && st.AppliedHash == nh.Spec.HooksHash
	})
	// From here on the agent's cache shows the NodeHooks as it is now:
	// Failed, before any retry.
	var cur v1alpha1.NodeHooks
	if err := k.cl.Get(t.Context(), client.ObjectKeyFromObject(nh), &cur); err != nil {
		t.Fatal(err)
	}
	k.cache.freeze(&cur)

	k.setRetry(hh, 1)
	k.waitStatus(nh, "Failed at retry 1", func(st v1alpha1.NodeHooksStatus) bool {
		return st.Phase == v1alpha1.NodeFailed && st.Retry == 1 && st.AppliedHash == nh.Spec.HooksHash
	})
	if n := starts(); n != 2 {
		t.Fatalf("retry 1: the failed hook was started %d times in all, want twice: calls %q", n, k.sd.Log())
	}
	for round := 1; round <= 3; round++ {
		k.relabel(round)
	}
	if n := starts(); n != 2 {
		t.Errorf("syncs over a cache that lags behind the retry's write started the hook again: %d starts, want 2", n)
	}

	// A new agent for the node, with a cache of its own.
	stop()
	next, err := New(k.agent.cfg)
	if err != nil {
		t.Fatal(err)
	}
	k.agent = next
	stop = k.start(next)
	waitStats(t, next, func(s Stats) bool { return s.Syncs >= 1 })
	k.relabel(4)
	if n := starts(); n != 2 {
		t.Errorf("a new agent started the hook of a retry carried out already: %d starts, want 2", n)
	}

	// Fixed on the node; the next retry runs it once, and it succeeds.
	k.sd.FailOn("start", unit, nil)
	k.setRetry(hh, 2)
	k.waitStatus(nh, "Succeeded at retry 2", func(st v1alpha1.NodeHooksStatus) bool {
		return st.Phase == v1alpha1.NodeSucceeded && st.Retry == 2 && st.AppliedHash == nh.Spec.HooksHash
	})
	k.relabel(5)
	if n := starts(); n != 3 {
		t.Errorf("retry 2: the hook was started %d times in all, want 3: calls %q", n, k.sd.Log())
	}
}

// start runs a until the test ends or the returned stop is called.
func (k *writtenCluster) start(a *Agent) (stop func()) { return runAgent(k.t, a) }

// setRetry sets the spec.retry of hh to n, as hostprov retry does.
func (k *writtenCluster) setRetry(hh *v1alpha1.HostHooks, n int32) {
	k.t.Helper()
	var cur v1alpha1.HostHooks
	if err := k.cl.Get(k.t.Context(), client.ObjectKeyFromObject(hh), &cur); err != nil {
		k.t.Fatal(err)
	}
	base := cur.DeepCopy()
	cur.Spec.Retry = n
	if err := k.cl.Patch(k.t.Context(), &cur, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		k.t.Fatal(err)
	}
}
