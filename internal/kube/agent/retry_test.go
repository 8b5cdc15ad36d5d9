package agent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

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
