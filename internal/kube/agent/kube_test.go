package agent

// The agent against a real API server with applytest's fake systemd: what
// makes it apply, and what must not.

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
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
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	cl := c.Client(t)
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{"role": "worker"}}}
	if err := cl.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	opts := apply.Options{Root: t.TempDir()}
	if err := apply.PrepareDirs(opts); err != nil {
		t.Fatal(err)
	}
	sd := applytest.New()
	// Each connection has its signals and its end, which the test
	// controls.
	conns := make(chan *fakeConn, 10)
	a, err := New(Config{NodeName: node.Name, REST: c.Config(), Options: opts,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) {
			fc := &fakeConn{changes: make(chan UnitState, 1), lost: make(chan struct{})}
			conns <- fc
			return &Systemd{Systemd: sd, Changes: fc.changes, Lost: fc.lost}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})

	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1alpha1.HostHooksSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}},
		Hooks:        []v1alpha1.Hook{service("web-svc")}}}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	nh := &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, node.Name), Labels: map[string]string{
			v1alpha1.LabelNode: v1alpha1.LabelValue(node.Name), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: node.Name, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
	if err := cl.Create(ctx, nh); err != nil {
		t.Fatal(err)
	}
	waitPhase := func(phase v1alpha1.NodePhase) {
		t.Helper()
		var got v1alpha1.NodeHooks
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
				return false, err
			}
			return got.Status.Phase == phase, nil
		})
		if err != nil {
			t.Fatalf("NodeHooks not %s: %v; status %s", phase, err, statusJSON(&got))
		}
	}
	waitPhase(v1alpha1.NodeSucceeded)
	unit := unitOf(t, hh, 0)
	if !sd.Active(unit) {
		t.Fatalf("%s not started: %q", unit, sd.Log())
	}
	// Settled: the watch event of the agent's own write has come back.
	time.Sleep(500 * time.Millisecond)
	before := a.Stats()
	sd.Reset()

	// What the controller and the kubelet write all the time.
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
	time.Sleep(time.Second)
	if after := a.Stats(); after != before || len(sd.Log()) != 0 {
		t.Errorf("an idle agent worked: stats %+v, then %+v; systemd calls %q", before, after, sd.Log())
	}

	// A signal of one of its units: a refresh, no sync; of another
	// unit: nothing.
	conn := <-conns
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
	// The connection lost: the agent connects again and syncs, which
	// changes nothing on the node and writes nothing.
	before = a.Stats()
	close(conn.lost)
	select {
	case <-conns:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not connect again")
	}
	waitStats(t, a, func(s Stats) bool { return s.Syncs > before.Syncs })
	if after := a.Stats(); after.StatusWrites != before.StatusWrites || len(sd.Log()) != 0 {
		t.Errorf("a new connection: stats %+v, then %+v, systemd calls %q; want a sync that changes nothing", before, after, sd.Log())
	}

	// Deselected, and the removal approved as the controller does: pruned,
	// Removed.
	node.Labels = map[string]string{"role": "infra"}
	if err := cl.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := cl.Patch(ctx, &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: nh.Name}},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"remove":true}}`))); err != nil {
		t.Fatal(err)
	}
	waitPhase(v1alpha1.NodeRemoved)
	if sd.Active(unit) {
		t.Errorf("%s still active after the node left the selector", unit)
	}
	// Selected again: the hooks are still approved for it.
	if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	node.Labels = map[string]string{"role": "worker"}
	if err := cl.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	waitPhase(v1alpha1.NodeSucceeded)
	if !sd.Active(unit) {
		t.Errorf("%s not started again: %q", unit, sd.Log())
	}

	// Deleted while the controller's finalizer holds it: pruned,
	// Removed, and the object stays until the finalizer goes.
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
	waitPhase(v1alpha1.NodeRemoved)
	if sd.Active(unit) {
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
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	nh := &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, node.Name), Labels: map[string]string{
			v1alpha1.LabelNode: v1alpha1.LabelValue(node.Name), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: node.Name, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
	if err := cl.Create(ctx, nh); err != nil {
		t.Fatal(err)
	}
	phase := func(want v1alpha1.NodePhase) {
		t.Helper()
		var got v1alpha1.NodeHooks
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
				return false, err
			}
			return got.Status.Phase == want, nil
		})
		if err != nil {
			t.Fatalf("NodeHooks not %s: %v; status %s", want, err, statusJSON(&got))
		}
	}
	phase(v1alpha1.NodeApplying)
	if u := unitOf(t, hh, 0); sd.Active(u) {
		t.Fatalf("%s active before its start was let through", u)
	}
	close(sd.gate)
	released = true
	phase(v1alpha1.NodeSucceeded)
}
