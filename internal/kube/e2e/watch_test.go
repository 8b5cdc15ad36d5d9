package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/deploytest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// rolloutWatch records every version of the NodeHooks that the API server
// sends, to check the rollout's order and its bound on unavailable nodes
// over the whole test, not only at the moments the test looks.
type rolloutWatch struct {
	mu     sync.Mutex
	nodes  map[string]v1alpha1.NodeHooks // by node, as last seen
	events []string
	// approved[hash] lists the nodes in the order they were approved for
	// the hooks of hash.
	approved map[string][]string
	// maxUnav is the most nodes unavailable for one hash at once.
	maxUnav int
}

func (f *fleet) watchRollout() *rolloutWatch {
	f.t.Helper()
	c, err := cache.New(f.c.Config(), cache.Options{Scheme: f.cl.Scheme()})
	if err != nil {
		f.t.Fatal(err)
	}
	inf, err := c.GetInformer(f.t.Context(), &v1alpha1.NodeHooks{})
	if err != nil {
		f.t.Fatal(err)
	}
	w := &rolloutWatch{nodes: map[string]v1alpha1.NodeHooks{}, approved: map[string][]string{}}
	nodeHooks := func(obj any) *v1alpha1.NodeHooks {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		nh, _ := obj.(*v1alpha1.NodeHooks)
		return nh
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.record(watch.Added, nodeHooks(obj)) },
		UpdateFunc: func(_, obj any) { w.record(watch.Modified, nodeHooks(obj)) },
		DeleteFunc: func(obj any) { w.record(watch.Deleted, nodeHooks(obj)) },
	}); err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Start(ctx) }()
	f.t.Cleanup(func() { cancel(); <-done })
	if !c.WaitForCacheSync(f.t.Context()) {
		f.t.Fatal("the NodeHooks watch did not sync")
	}
	return w
}

func (w *rolloutWatch) record(typ watch.EventType, nh *v1alpha1.NodeHooks) {
	if nh == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	node := nh.Spec.NodeName
	prev, had := w.nodes[node]
	if typ == watch.Deleted {
		delete(w.nodes, node)
	} else {
		w.nodes[node] = *nh
	}
	if h := nh.Spec.HooksHash; h != "" && typ != watch.Deleted && (!had || prev.Spec.HooksHash != h) {
		w.approved[h] = append(w.approved[h], node)
	}
	w.events = append(w.events, fmt.Sprintf("%s %s %s spec=%.15s applied=%.15s %s", time.Now().Format("15:04:05.000"), typ, node,
		nh.Spec.HooksHash, nh.Status.AppliedHash, nh.Status.Phase))
	// A node is unavailable for the hooks it is approved for until it
	// applied them and they succeeded.
	unav := map[string]int{}
	for _, n := range w.nodes {
		if h := n.Spec.HooksHash; h != "" && !(n.Status.AppliedHash == h && n.Status.Phase == v1alpha1.NodeSucceeded) {
			unav[h]++
		}
	}
	for _, n := range unav {
		w.maxUnav = max(w.maxUnav, n)
	}
}

func (w *rolloutWatch) approvals(hash string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.approved[hash])
}

func (w *rolloutWatch) maxUnavailable() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxUnav
}

func (w *rolloutWatch) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.events, "\n")
}

// agentRights are the files of deploy/ that make the agents' and the
// controller's identities and rights, applied as they are; the workloads
// themselves are what the test runs in-process.
var agentRights = []string{"namespace.yaml", "serviceaccounts.yaml", "rbac-agent.yaml", "rbac-controller.yaml", "agent-policy.yaml", "controller-policy.yaml"}

// applyManifests applies the objects of the kustomization in dir whose
// files are among files.
func applyManifests(t *testing.T, cl client.Client, dir string, files []string) {
	t.Helper()
	_, objs, err := deploytest.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, o := range objs {
		if !slices.Contains(files, o.File) {
			continue
		}
		o.Obj.SetManagedFields(nil)
		if err := cl.Patch(t.Context(), o.Obj, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
			t.Fatalf("applying %s: %v", o, err)
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no objects of %v in %s", files, dir)
	}
}
