package controller_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// poolAgents play the agents of every node over a watch of every
// NodeHooks: a node applies what it is approved for and removes what it
// is approved to remove, unless the test holds it. The watch also records
// how many nodes were unavailable at once, at every version of every
// NodeHooks the API server sends, not only at the moments the test looks.
type poolAgents struct {
	t    *testing.T
	cl   client.Client
	c    cache.Cache
	wake chan struct{}

	mu   sync.Mutex
	held map[string]bool               // "HOSTHOOKS/NODE" whose agent does nothing
	nhs  map[string]v1alpha1.NodeHooks // by name, as last seen
	most int
	// worst is the NodeHooks when most were unavailable.
	worst []string
	errs  []error
}

func startPoolAgents(t *testing.T, c *kubetest.Cluster, cl client.Client, held ...string) *poolAgents {
	t.Helper()
	ca, err := cache.New(c.Config(), cache.Options{Scheme: cl.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := ca.GetInformer(t.Context(), &v1alpha1.NodeHooks{})
	if err != nil {
		t.Fatal(err)
	}
	a := &poolAgents{t: t, cl: cl, c: ca, wake: make(chan struct{}, 1), held: map[string]bool{}, nhs: map[string]v1alpha1.NodeHooks{}}
	for _, h := range held {
		a.held[h] = true
	}
	record := func(obj any, deleted bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if nh, ok := obj.(*v1alpha1.NodeHooks); ok {
			a.record(nh, deleted)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record(obj, false) },
		UpdateFunc: func(_, obj any) { record(obj, false) },
		DeleteFunc: func(obj any) { record(obj, true) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ca.Start(ctx) })
	wg.Go(func() { a.run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if err := errors.Join(a.errs...); err != nil {
			t.Errorf("the agents: %v", err)
		}
	})
	if !ca.WaitForCacheSync(t.Context()) {
		t.Fatal("the NodeHooks watch did not sync")
	}
	return a
}

// unavailable says whether an agent is changing nh's node, or may now:
// approved for hooks it did not apply (and succeed with), or approved to
// remove them and not done.
func unavailable(nh *v1alpha1.NodeHooks) bool {
	if nh.Spec.Remove {
		return nh.Status.Phase != v1alpha1.NodeRemoved && nh.Status.AppliedHash != ""
	}
	h := nh.Spec.HooksHash
	return h != "" && !(nh.Status.AppliedHash == h && nh.Status.Phase == v1alpha1.NodeSucceeded)
}

func (a *poolAgents) record(nh *v1alpha1.NodeHooks, deleted bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if deleted {
		delete(a.nhs, nh.Name)
	} else {
		a.nhs[nh.Name] = *nh
	}
	var nodes, why []string
	for _, nh := range a.nhs {
		if unavailable(&nh) {
			why = append(why, fmt.Sprintf("%s/%s (hash %.15s, remove %t, applied %.15s %s)", nh.Spec.HostHooks, nh.Spec.NodeName,
				nh.Spec.HooksHash, nh.Spec.Remove, nh.Status.AppliedHash, nh.Status.Phase))
			if !slices.Contains(nodes, nh.Spec.NodeName) {
				nodes = append(nodes, nh.Spec.NodeName)
			}
		}
	}
	if len(nodes) > a.most {
		a.most = len(nodes)
		slices.Sort(why)
		a.worst = why
	}
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// mostUnavailable is the most nodes seen unavailable at once, and why.
func (a *poolAgents) mostUnavailable() (int, string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.most, strings.Join(a.worst, ", ")
}

func (a *poolAgents) release(key string) {
	a.mu.Lock()
	delete(a.held, key)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *poolAgents) hold(key string) {
	a.mu.Lock()
	a.held[key] = true
	a.mu.Unlock()
}

// run reports, whenever the watch brings something, what every node's
// agent did with what it is approved for.
func (a *poolAgents) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		a.mu.Lock()
		var todo []v1alpha1.NodeHooks
		for _, nh := range a.nhs {
			if !a.held[nh.Spec.HostHooks+"/"+nh.Spec.NodeName] && unavailable(&nh) {
				todo = append(todo, nh)
			}
		}
		a.mu.Unlock()
		for _, nh := range todo {
			now := metav1.Now()
			if nh.Spec.Remove {
				nh.Status = v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeRemoved, AppliedAt: &now}
			} else {
				nh.Status = succeeded(nh.Spec.HooksHash)
				nh.Status.AppliedAt = &now
			}
			err := a.cl.Status().Update(ctx, &nh)
			switch {
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				// The watch brings the newer version, or the
				// deletion, and with it another turn.
			case err != nil && ctx.Err() == nil:
				a.mu.Lock()
				a.errs = append(a.errs, fmt.Errorf("reporting %s: %w", nh.Name, err))
				a.mu.Unlock()
			}
		}
	}
}

// poolHostHooks is a HostHooks over the nodes labelled pool=w, with
// maxUnavailable 1.
func poolHostHooks(name, say string) *v1alpha1.HostHooks {
	return &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.HostHooksSpec{
			NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "w"}},
			Rollout:      v1alpha1.Rollout{MaxUnavailable: new(intstr.FromInt32(1))},
			Hooks:        []v1alpha1.Hook{{Name: "say", Exec: []string{"/bin/echo", say}}},
		},
	}
}

// approvedNodes waits until the nodes approved for the current hooks of
// the HostHooks name are want.
func approvedNodes(t *testing.T, cl client.Client, name string, want ...string) {
	t.Helper()
	eventually(t, "approvals of "+name, func() error {
		hh, err := getHostHooks(t.Context(), cl, name)
		if err != nil {
			return err
		}
		got, err := approved(t.Context(), cl, name, v1alpha1.HooksHash(hh.Spec.Hooks))
		if err == nil && !slices.Equal(got, want) {
			err = fmt.Errorf("approved on %v, want %v", got, want)
		}
		return err
	})
}

// TestControllerSharedBudget: two HostHooks with maxUnavailable 1 over the
// same three nodes never have more than one of them unavailable at once,
// though the second comes while the first is half-way: it takes the node
// the first has down, and then goes as the shared budget allows.
func TestControllerSharedBudget(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	startController(t, c.Config(), controller.Options{})
	for _, n := range []string{"n1", "n2", "n3"} {
		createNode(t, cl, n, map[string]string{"pool": "w"})
	}
	agents := startPoolAgents(t, c, cl, "a/n2")

	if err := cl.Create(ctx, poolHostHooks("a", "a")); err != nil {
		t.Fatal(err)
	}
	// a applied on n1, and has n2 down, held there.
	approvedNodes(t, cl, "a", "n1", "n2")
	if err := cl.Create(ctx, poolHostHooks("b", "b")); err != nil {
		t.Fatal(err)
	}
	approvedNodes(t, cl, "b", "n2")
	agents.release("a/n2")

	statusIs(t, cl, "a", 3, 3, 3, 0, v1alpha1.PhaseComplete)
	statusIs(t, cl, "b", 3, 3, 3, 0, v1alpha1.PhaseComplete)
	if most, why := agents.mostUnavailable(); most != 1 {
		t.Errorf("%d nodes unavailable at once under maxUnavailable 1: %s", most, why)
	}
}

// TestControllerRelabelOutBudget: a node relabelled out of two HostHooks'
// selector keeps their hooks while the budget is taken, and removes them
// within it once a slot is free.
func TestControllerRelabelOutBudget(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	startController(t, c.Config(), controller.Options{})
	for _, n := range []string{"n1", "n2", "n3"} {
		createNode(t, cl, n, map[string]string{"pool": "w"})
	}
	agents := startPoolAgents(t, c, cl)
	for _, name := range []string{"a", "b"} {
		if err := cl.Create(ctx, poolHostHooks(name, name)); err != nil {
			t.Fatal(err)
		}
	}
	statusIs(t, cl, "a", 3, 3, 3, 0, v1alpha1.PhaseComplete)
	statusIs(t, cl, "b", 3, 3, 3, 0, v1alpha1.PhaseComplete)

	// a changes its hooks: n1 is down for it, held there.
	agents.hold("a/n1")
	hh, err := getHostHooks(ctx, cl, "a")
	if err != nil {
		t.Fatal(err)
	}
	hh.Spec.Hooks = poolHostHooks("a", "a, again").Spec.Hooks
	if err := cl.Update(ctx, hh); err != nil {
		t.Fatal(err)
	}
	approvedNodes(t, cl, "a", "n1")

	// n3 leaves both: neither removal is approved while n1 is down.
	labelNode(t, cl, "n3", map[string]string{"pool": "other"})
	for _, name := range []string{"a", "b"} {
		eventually(t, name+" matching two nodes", func() error {
			hh, err := getHostHooks(ctx, cl, name)
			if err == nil && hh.Status.MatchedNodes != 2 {
				err = fmt.Errorf("%d matched", hh.Status.MatchedNodes)
			}
			return err
		})
	}
	never(t, "n3's removal waiting for the budget", func() error {
		for _, name := range []string{"a", "b"} {
			nhs, err := nodeHooks(ctx, cl, name)
			if err != nil {
				return err
			}
			if nh := nhs["n3"]; nh == nil || nh.Spec.Remove || nh.Status.Phase != v1alpha1.NodeSucceeded {
				return fmt.Errorf("%s's NodeHooks of n3 while n1 is down: %s", name, toJSON(nh))
			}
		}
		return nil
	})

	// n1 done: n3 removes both HostHooks' hooks, and both NodeHooks go;
	// then a goes on with n2.
	agents.release("a/n1")
	eventually(t, "n3's NodeHooks gone", func() error {
		for _, name := range []string{"a", "b"} {
			nhs, err := nodeHooks(ctx, cl, name)
			if err != nil {
				return err
			}
			if nh := nhs["n3"]; nh != nil {
				return fmt.Errorf("%s's NodeHooks of n3: %s", name, toJSON(nh))
			}
		}
		return nil
	})
	statusIs(t, cl, "a", 2, 2, 2, 0, v1alpha1.PhaseComplete)
	if most, why := agents.mostUnavailable(); most != 1 {
		t.Errorf("%d nodes unavailable at once under maxUnavailable 1: %s", most, why)
	}
}
