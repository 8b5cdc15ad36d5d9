package controller_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// inParallel calls f(0) to f(n-1), eight at a time, and fails the test
// with their errors.
func inParallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestControllerThousandNodes rolls a HostHooks out to 1,000 nodes, 10%
// at a time, with agents that succeed as soon as they are approved: the
// controller makes one NodeHooks and one approval per node, reads nothing
// but by its watches, and writes the status once a second at most, not
// once a node. The time it takes is logged, not judged: a benchmark's to
// measure.
func TestControllerThousandNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 nodes take a while: not with -short")
	}
	const n = 1000
	c, _ := startCluster(t)
	ctx := t.Context()
	fast := c.Config()
	fast.QPS = -1
	cl, err := client.New(fast, client.Options{Scheme: kubetest.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	inParallel(t, n, func(i int) error {
		return cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%04d", i), Labels: map[string]string{"pool": "big"}}})
	})

	var reqs requests
	cfg := c.Config()
	cfg.Wrap(reqs.wrap)
	started := time.Now()
	startController(t, cfg, controller.Options{})

	hooks := []v1alpha1.Hook{{Name: "hello", Exec: []string{"/bin/echo", "hello"}}}
	h := v1alpha1.HooksHash(hooks)
	start := time.Now()
	if err := cl.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Spec: v1alpha1.HostHooksSpec{
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "big"}},
		Rollout:      v1alpha1.Rollout{MaxUnavailable: new(intstr.FromString("10%"))},
		Hooks:        hooks,
	}}); err != nil {
		t.Fatal(err)
	}

	// The agents: each approved node reports success, once.
	reported := map[string]bool{}
	maxApplying := 0
	// Minutes on a loaded machine; seconds on a quiet one.
	eventuallyWithin(t, 10*time.Minute, "the rollout to 1,000 nodes", func() error {
		nhs, err := nodeHooks(ctx, cl, "big")
		if err != nil {
			return err
		}
		var todo []*v1alpha1.NodeHooks
		for _, nh := range nhs {
			if nh.Spec.HooksHash == h && !reported[nh.Name] {
				todo = append(todo, nh)
			}
		}
		maxApplying = max(maxApplying, len(todo))
		for _, nh := range todo {
			now := metav1.Now()
			nh.Status = v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeSucceeded, AppliedHash: h, AppliedAt: &now}
			if err := cl.Status().Update(ctx, nh); err != nil {
				return err
			}
			reported[nh.Name] = true
		}
		hh, err := getHostHooks(ctx, cl, "big")
		if err != nil {
			return err
		}
		if hh.Status.Phase != v1alpha1.PhaseComplete || hh.Status.SucceededNodes != n {
			return fmt.Errorf("%d NodeHooks, %d reported; status %s, %d of %d succeeded",
				len(nhs), len(reported), hh.Status.Phase, hh.Status.SucceededNodes, hh.Status.MatchedNodes)
		}
		return nil
	})
	t.Logf("1,000 nodes complete in %v; the controller's requests:\n%s", time.Since(start).Round(time.Millisecond), &reqs)
	if maxApplying > n/10 {
		t.Errorf("%d nodes approved and applying at once, more than maxUnavailable 10%%", maxApplying)
	}
	if got := reqs.count("PATCH /apis/hostprov.dev/v1alpha1/nodehooks/NAME"); got != n {
		t.Errorf("%d approvals for %d nodes", got, n)
	}
	if got := reqs.count("POST /apis/hostprov.dev/v1alpha1/nodehooks"); got < n || got > n+n/10 {
		t.Errorf("%d creates of NodeHooks for %d nodes", got, n)
	}
	// At most one status write a second (DefaultStatusInterval), however
	// many nodes report.
	if got, most := reqs.count("PATCH /apis/hostprov.dev/v1alpha1/hosthooks/NAME/status"), int(time.Since(started)/controller.DefaultStatusInterval)+1; got > most {
		t.Errorf("%d status writes in %v, more than one a %v", got, time.Since(started), controller.DefaultStatusInterval)
	}
	for _, key := range []string{"GET /apis/hostprov.dev/v1alpha1/nodehooks/NAME", "GET /api/v1/nodes/NAME", "GET /apis/hostprov.dev/v1alpha1/hosthooks/NAME"} {
		if got := reqs.count(key); got != 0 {
			t.Errorf("%d requests %s", got, key)
		}
	}
}

// events are the reasons of the Events about the HostHooks name.
func events(ctx context.Context, cl client.Client, name string) ([]string, error) {
	var l eventsv1.EventList
	if err := cl.List(ctx, &l); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range l.Items {
		if e.Regarding.Kind == "HostHooks" && e.Regarding.Name == name {
			out = append(out, e.Type+" "+e.Reason)
		}
	}
	return out, nil
}

// TestControllerFailureWithinThreshold: with maxUnavailable 1 and
// failureThreshold 5, a failed node does not hold the others: every node
// is approved in turn, and the HostHooks ends FinishedWithFailures, in its
// phase as in its condition, and says so in an Event.
func TestControllerFailureWithinThreshold(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	startController(t, c.Config(), controller.Options{})
	for _, n := range []string{"node-1", "node-2", "node-3", "node-4"} {
		createNode(t, cl, n, nil)
	}
	hooks := []v1alpha1.Hook{{Name: "iscsi", Exec: []string{"/bin/true"}}}
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "iscsi"},
		Spec: v1alpha1.HostHooksSpec{
			Rollout: v1alpha1.Rollout{MaxUnavailable: new(intstr.FromInt32(1)), FailureThreshold: new(int32(5))},
			Hooks:   hooks,
		},
	}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	h := v1alpha1.HooksHash(hooks)
	failed := v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeFailed, AppliedHash: h,
		Hooks: []v1alpha1.HookResult{{Name: "iscsi", Unit: "iscsi.service", Phase: "failed", Reason: "exit-code"}}}
	for i, node := range []string{"node-1", "node-2", "node-3", "node-4"} {
		want := []string{"node-1", "node-2", "node-3", "node-4"}[:i+1]
		eventually(t, "approval of "+node, func() error {
			got, err := approved(ctx, cl, "iscsi", h)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("approved %v, want %v", got, want)
			}
			return err
		})
		if node == "node-2" {
			report(t, cl, "iscsi", node, failed)
		} else {
			report(t, cl, "iscsi", node, succeeded(h))
		}
	}
	got := statusIs(t, cl, "iscsi", 4, 4, 3, 1, v1alpha1.PhaseFinishedWithFailures)
	if c := condition(got, v1alpha1.ConditionProgressing); c.Status != metav1.ConditionFalse || c.Reason != controller.ReasonFinishedWithFailures {
		t.Errorf("Progressing: %+v", c)
	}
	eventually(t, "the Event of the end of the rollout", func() error {
		evs, err := events(ctx, cl, "iscsi")
		if err == nil && !slices.Contains(evs, "Normal "+controller.ReasonFinishedWithFailures) {
			err = fmt.Errorf("events %v", evs)
		}
		return err
	})
}

// TestControllerNameCollision: base on node w1.lab and base.w1 on node
// lab, whose NodeHooks had one name, each get one; the one of the earlier
// name, base.w1.lab, is replaced by one of today's name, which its agent
// watches.
func TestControllerNameCollision(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	createNode(t, cl, "w1.lab", map[string]string{"site": "w1"})
	createNode(t, cl, "lab", map[string]string{"site": "lab"})
	earlier := &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "base.w1.lab", Labels: map[string]string{
			v1alpha1.LabelNode: "w1.lab", v1alpha1.LabelHostHooks: "base"}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: "w1.lab", HostHooks: "base"},
	}
	if err := cl.Create(ctx, earlier); err != nil {
		t.Fatal(err)
	}
	hooks := []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}
	for name, site := range map[string]string{"base": "w1", "base.w1": "lab"} {
		hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.HostHooksSpec{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"site": site}}, Hooks: hooks}}
		if err := cl.Create(ctx, hh); err != nil {
			t.Fatal(err)
		}
	}
	startController(t, c.Config(), controller.Options{})
	h := v1alpha1.HooksHash(hooks)
	for name, node := range map[string]string{"base": "w1.lab", "base.w1": "lab"} {
		eventually(t, "the approved NodeHooks of "+name, func() error {
			var l v1alpha1.NodeHooksList
			if err := cl.List(ctx, &l); err != nil {
				return err
			}
			var of []string
			for _, nh := range l.Items {
				if nh.Spec.HostHooks == name {
					of = append(of, nh.Name+" on "+nh.Spec.NodeName+" for "+nh.Spec.HooksHash)
				}
			}
			if len(of) != 1 || !strings.HasSuffix(of[0], " on "+node+" for "+h) {
				return fmt.Errorf("NodeHooks %v, want one on %s, approved", of, node)
			}
			return nil
		})
	}
	// The one of the earlier name, which no agent watches, is replaced.
	eventually(t, "the NodeHooks of the earlier name deleted", func() error {
		err := cl.Get(ctx, client.ObjectKey{Name: "base.w1.lab"}, &v1alpha1.NodeHooks{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("getting it: %v, want not found", err)
		}
		return nil
	})
	report(t, cl, "base.w1", "lab", succeeded(h))
	statusIs(t, cl, "base.w1", 1, 1, 1, 0, v1alpha1.PhaseComplete)
}

// TestControllerStalledNoAgent: a node whose agent never reports, and
// whose name sorts first, holds the rollout; once its deadline passed,
// the Stalled condition and an Event name it, with no change to wake the
// controller but its own deadline.
func TestControllerStalledNoAgent(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	startController(t, c.Config(), controller.Options{})
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		createNode(t, cl, n, nil)
	}
	hooks := []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "stuck"},
		Spec: v1alpha1.HostHooksSpec{
			Rollout: v1alpha1.Rollout{ProgressDeadlineSeconds: new(int32(2))},
			Hooks:   hooks,
		},
	}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the NodeHooks", func() error {
		nhs, err := nodeHooks(ctx, cl, "stuck")
		if err == nil && len(nhs) != 3 {
			err = fmt.Errorf("%d NodeHooks", len(nhs))
		}
		return err
	})
	// node-2's and node-3's agents are there, waiting their turn.
	report(t, cl, "stuck", "node-2", v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodePending})
	report(t, cl, "stuck", "node-3", v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodePending})
	var got *v1alpha1.HostHooks
	eventually(t, "Stalled naming node-1", func() error {
		var err error
		if got, err = getHostHooks(ctx, cl, "stuck"); err != nil {
			return err
		}
		c := condition(got, v1alpha1.ConditionStalled)
		if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "node-1 (no agent") || got.Status.Phase != v1alpha1.PhaseStalled {
			return fmt.Errorf("phase %s, Stalled %+v", got.Status.Phase, c)
		}
		return nil
	})
	if c := condition(got, v1alpha1.ConditionStalled); strings.Contains(c.Message, "node-2") || strings.Contains(c.Message, "node-3") {
		t.Errorf("Stalled names nodes whose agents reported: %s", c.Message)
	}
	eventually(t, "the Event of the stall", func() error {
		evs, err := events(ctx, cl, "stuck")
		if err == nil && !slices.Contains(evs, "Warning "+controller.ReasonProgressDeadline) {
			err = fmt.Errorf("events %v", evs)
		}
		return err
	})
}

// setReady sets the Ready condition of the node name, as its kubelet
// would.
func setReady(t *testing.T, cl client.Client, name string, status corev1.ConditionStatus) {
	t.Helper()
	var n corev1.Node
	if err := cl.Get(t.Context(), client.ObjectKey{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	if status != corev1.ConditionTrue {
		n.Status.Conditions[0].Reason = "KubeletNotReady"
	}
	if err := cl.Status().Update(t.Context(), &n); err != nil {
		t.Fatal(err)
	}
}

// TestControllerNotReady: a node that is not Ready is not approved, and
// takes a slot of maxUnavailable; once Ready, it gets its turn.
func TestControllerNotReady(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		createNode(t, cl, n, nil)
		setReady(t, cl, n, corev1.ConditionTrue)
	}
	setReady(t, cl, "node-1", corev1.ConditionFalse)
	startController(t, c.Config(), controller.Options{})
	hooks := []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "ready"},
		Spec:       v1alpha1.HostHooksSpec{Rollout: v1alpha1.Rollout{MaxUnavailable: new(intstr.FromInt32(2))}, Hooks: hooks},
	}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	h := v1alpha1.HooksHash(hooks)
	isApproved := func(want ...string) func() error {
		return func() error {
			got, err := approved(ctx, cl, "ready", h)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("approved %v, want %v", got, want)
			}
			return err
		}
	}
	eventually(t, "node-2 approved, node-1 passed over", isApproved("node-2"))
	never(t, "a second approval while node-1 is not Ready", isApproved("node-2"))
	setReady(t, cl, "node-1", corev1.ConditionTrue)
	eventually(t, "node-1 approved once Ready", isApproved("node-1", "node-2"))
}
