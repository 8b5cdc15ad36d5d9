package agent

// The agent's own status writes against a real API server: a cache that
// lags behind them, and a status someone else writes over them.

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

// laggingCache is the agent's cache with the NodeHooks the test froze kept
// as they were then: a cache that lags behind the agent's own status
// writes for as long as the test wants, as the watch of a loaded API
// server can. Everything else is the real cache.
type laggingCache struct {
	cache.Cache
	mu     sync.Mutex
	frozen map[types.UID]*v1alpha1.NodeHooks
}

func (c *laggingCache) freeze(nh *v1alpha1.NodeHooks) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.frozen[nh.UID] = nh.DeepCopy()
}

func (c *laggingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Cache.List(ctx, list, opts...); err != nil {
		return err
	}
	nhs, ok := list.(*v1alpha1.NodeHooksList)
	if !ok {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range nhs.Items {
		if f := c.frozen[nhs.Items[i].UID]; f != nil {
			nhs.Items[i] = *f.DeepCopy()
		}
	}
	return nil
}

// writtenCluster is a real API server with a Node, and an agent over
// applytest's fake systemd whose cache the test may make lag.
type writtenCluster struct {
	t     *testing.T
	cl    client.Client
	node  *corev1.Node
	sd    *applytest.Fake
	opts  apply.Options // the node's directories, as the agent has them
	agent *Agent
	cache *laggingCache
}

func newWrittenCluster(t *testing.T, nodeName string) *writtenCluster {
	t.Helper()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	k := &writtenCluster{t: t, cl: c.Client(t), sd: applytest.New(),
		node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"round": "0"}}}}
	if err := k.cl.Create(t.Context(), k.node); err != nil {
		t.Fatal(err)
	}
	opts := apply.Options{Root: t.TempDir()}
	if err := apply.PrepareDirs(opts); err != nil {
		t.Fatal(err)
	}
	k.opts = opts
	k.sd.UnitDir = opts.UnitDirPath()
	a, err := New(Config{NodeName: nodeName, REST: c.Config(), Options: opts,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) { return &Systemd{Systemd: k.sd}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	k.cache = &laggingCache{Cache: a.cache, frozen: map[types.UID]*v1alpha1.NodeHooks{}}
	a.cache = k.cache
	k.agent = a
	return k
}

func (k *writtenCluster) run() { runAgent(k.t, k.agent) }

// runAgent runs a until the test ends or the returned stop is called (once
// or more), and waits for it to end, failing the test on its error.
func runAgent(t testing.TB, a *Agent) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// create makes hh and its NodeHooks for the node, approved for its hooks,
// and returns the NodeHooks as created.
func (k *writtenCluster) create(hh *v1alpha1.HostHooks) *v1alpha1.NodeHooks {
	k.t.Helper()
	return createHooks(k.t, k.cl, hh, k.node.Name)
}

// waitStatus waits until the stored status of nh satisfies ok.
func (k *writtenCluster) waitStatus(nh *v1alpha1.NodeHooks, what string, ok func(v1alpha1.NodeHooksStatus) bool) {
	k.t.Helper()
	var got v1alpha1.NodeHooks
	err := wait.PollUntilContextTimeout(k.t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k.cl.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
			return false, err
		}
		return ok(got.Status), nil
	})
	if err != nil {
		k.t.Fatalf("NodeHooks %s: not %s: %v; status %s", nh.Name, what, err, statusJSON(&got))
	}
}

// relabel changes the node's labels, which makes the agent sync, and
// waits for that sync.
func (k *writtenCluster) relabel(round int) {
	k.t.Helper()
	before := k.agent.Stats()
	var n corev1.Node
	if err := k.cl.Get(k.t.Context(), client.ObjectKeyFromObject(k.node), &n); err != nil {
		k.t.Fatal(err)
	}
	n.Labels = map[string]string{"round": string(rune('0' + round))}
	if err := k.cl.Update(k.t.Context(), &n); err != nil {
		k.t.Fatal(err)
	}
	waitStats(k.t, k.agent, func(s Stats) bool { return s.Syncs > before.Syncs })
}

// A hook that failed is not started again for the same hooks, however far
// the agent's cache lags behind the agent's own Failed write: here it
// never catches up, and every relabelling of the node makes a sync that
// sees the NodeHooks as it was before the apply.
func TestKubeAgentFailedNotRetriedWhileCacheLags(t *testing.T) {
	t.Parallel()
	k := newWrittenCluster(t, "node-lag")
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "breaks"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{service("breaks-svc")}}}
	unit := unitOf(t, hh, 0)
	k.sd.FailOn("start", unit, errStart)
	nh := k.create(hh)
	k.cache.freeze(nh) // before the agent runs: it never sees its own writes
	k.run()
	k.waitStatus(nh, "Failed", func(st v1alpha1.NodeHooksStatus) bool {
		return st.Phase == v1alpha1.NodeFailed && st.AppliedHash == nh.Spec.HooksHash
	})
	for round := 1; round <= 3; round++ {
		k.relabel(round)
	}
	starts := 0
	for _, c := range k.sd.Calls() {
		if (c.Method == "start" || c.Method == "restart") && len(c.Units) == 1 && c.Units[0] == unit {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("the failed hook was started %d times, want once: calls %q", starts, k.sd.Log())
	}
	var got v1alpha1.NodeHooks
	if err := k.cl.Get(t.Context(), client.ObjectKeyFromObject(nh), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.NodeFailed || got.Status.AppliedHash != nh.Spec.HooksHash {
		t.Errorf("status after the syncs: %s; want Failed at the approved hash", statusJSON(&got))
	}
}

// A status someone else writes over the agent's is replaced by the
// agent's again, from the watch, without a restart of the agent.
func TestKubeAgentRepairsStatusWrittenByOthers(t *testing.T) {
	t.Parallel()
	k := newWrittenCluster(t, "node-repair")
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "fine"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{service("fine-svc")}}}
	nh := k.create(hh)
	k.run()
	succeeded := func(st v1alpha1.NodeHooksStatus) bool {
		return st.Phase == v1alpha1.NodeSucceeded && st.Message == "" && st.AppliedHash == nh.Spec.HooksHash && len(st.Hooks) == 1
	}
	k.waitStatus(nh, "Succeeded", succeeded)
	// Settled: the watch event of the agent's write has come back.
	waitStats(t, k.agent, func(s Stats) bool { return s.StatusWrites >= 1 })
	time.Sleep(300 * time.Millisecond)
	before := k.agent.Stats()

	for i, forged := range []v1alpha1.NodeHooksStatus{
		{Phase: v1alpha1.NodePending, Message: "written by hand"},
		{Phase: v1alpha1.NodeFailed, AppliedHash: nh.Spec.HooksHash, Message: "written by another client"},
	} {
		var cur v1alpha1.NodeHooks
		if err := k.cl.Get(t.Context(), client.ObjectKeyFromObject(nh), &cur); err != nil {
			t.Fatal(err)
		}
		cur.Status = forged
		if err := k.cl.Status().Update(t.Context(), &cur); err != nil {
			t.Fatal(err)
		}
		k.waitStatus(nh, "written back by the agent after overwrite "+string(rune('1'+i)), succeeded)
	}
	// The agent counts a write once its answer came, which may be after
	// the test saw the write.
	waitStats(t, k.agent, func(s Stats) bool { return s.StatusWrites >= before.StatusWrites+2 })
	if n := k.sd.Count("start") + k.sd.Count("restart"); n != 1 {
		t.Errorf("the hook was started %d times, want once: calls %q", n, k.sd.Log())
	}
}

// A sync that changes nothing, while the cache still holds a status older
// than the agent's own last write, must want no write: the agent's write
// is what the node's NodeHooks says. Made from the cache's stale status,
// the new one undid the write (an older appliedAt, an empty hash), and the
// two took turns for as long as the cache lagged: a loaded API server
// with a thousand agents saw a dozen writes per node per change, and
// hundreds a second at rest.
func TestNextStatusFromOwnWrite(t *testing.T) {
	a := &Agent{written: map[types.UID]writtenStatus{}}
	hash := "sha256-1"
	at := metav1.NewTime(time.Date(2026, 12, 1, 23, 9, 25, 0, time.UTC))
	own := v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeSucceeded, AppliedHash: hash, AppliedAt: &at,
		Hooks: []v1alpha1.HookResult{{Name: "web", Unit: "web.service", Phase: "active"}}}
	// The cache: the NodeHooks as the controller approved it, before the
	// agent's write of own reached it.
	nh := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: "web.n1", UID: "uid-1", ResourceVersion: "10"},
		Spec:   v1alpha1.NodeHooksSpec{NodeName: "n1", HostHooks: "web", HooksHash: hash},
		Status: v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeApplying}}
	a.written[nh.UID] = writtenStatus{status: own, rv: "12"}
	reports := []apply.UnitReport{{Unit: "web.service", Hook: "web", Set: v1alpha1.SetName("web"), StatusOf: "web.service",
		ActiveState: "active", SubState: "running", LoadState: "loaded"}}
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "web", Exec: []string{"/bin/true"}}}}}
	later := at.Add(2 * time.Second)
	known := a.known(nh)
	if diff := cmp.Diff(known.Status, status(known, hh, &outcome{action: applySet, hash: hash}, reports, later)); diff != "" {
		t.Errorf("an unchanged sync over a stale cache wants a write (-known +new):\n%s", diff)
	}
	if nh.Status.Phase != v1alpha1.NodeApplying {
		t.Errorf("the cache's object was changed: %+v", nh.Status)
	}
	// Once the cache has the write, it is the truth again.
	nh.ResourceVersion, nh.Status = "12", own
	if known = a.known(nh); known != nh {
		t.Errorf("the cache caught up with the write, but the agent knows %+v", known.Status)
	}
	if st := status(nh, hh, &outcome{action: applySet, hash: hash}, reports, later); cmp.Diff(nh.Status, st) != "" {
		t.Errorf("an unchanged sync wants a write:\n%s", cmp.Diff(nh.Status, st))
	}
	if _, ok := a.written[nh.UID]; ok {
		t.Error("the write is still remembered after the cache caught up with it")
	}
}

// A version of the NodeHooks later than the agent's last write is someone
// else's (a status written by hand, another client): the cache is the
// truth, and the agent's memory of its write is dropped, so that the
// sync writes the agent's status over it. An earlier version is the cache
// lagging, which the agent's write overrides.
func TestKnownStatusLaterVersionIsSomeoneElses(t *testing.T) {
	a := &Agent{written: map[types.UID]writtenStatus{}}
	own := v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeFailed, AppliedHash: "sha256-1"}
	forged := v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeSucceeded, Message: "written by hand"}
	nh := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: "web.n1", UID: "uid-1", ResourceVersion: "9"}}
	a.written[nh.UID] = writtenStatus{status: own, rv: "12"}
	// "9" < "12" as numbers, though not as strings.
	if got := a.known(nh).Status; !equality.Semantic.DeepEqual(got, own) {
		t.Errorf("cache at 9, own write at 12: the agent knows %+v, want its own write", got)
	}
	if a.ownOrOlder(nh) == false {
		t.Error("a watch event of a version before the agent's write is taken for someone else's")
	}
	nh.ResourceVersion, nh.Status = "100", forged
	if a.ownOrOlder(nh) {
		t.Error("a watch event of a version after the agent's write is taken for the agent's own")
	}
	if got := a.known(nh); got != nh {
		t.Errorf("cache at 100, own write at 12: the agent knows %+v, want the cache's", got.Status)
	}
	if _, ok := a.written[nh.UID]; ok {
		t.Error("the agent still remembers its write after someone else's")
	}
}
