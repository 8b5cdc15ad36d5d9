package agent

import (
	"context"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// nodeHooksWatches watches the node's NodeHooks one by one, by name: one
// watch for each HostHooks, of the NodeHooks that the controller makes for
// the pair (v1alpha1.NodeHooksName).
//
// Why not one watch of the node's NodeHooks by label: the API server's
// watch cache indexes watches by name (and namespace), not by label. A
// label-selected watch is woken for every NodeHooks event in the cluster
// and filters it; with a watch per agent, a rollout of n nodes made n
// events reach n watchers, n² in all, and at 10,000 nodes the API server
// fell minutes behind. A watch by name is woken only for its object.
type nodeHooksWatches struct {
	node string
	// lw lists and watches the NodeHooks that the field selector sel
	// selects.
	lw func(sel fields.Selector) toolscache.ListerWatcher
	// handler receives every watch's events; synced is called once a
	// watch has listed, so that a sync waits for no event that may never
	// come (an empty list brings none).
	handler toolscache.ResourceEventHandler
	synced  func()

	// spread is the least window over which the watches of a new
	// HostHooks start (see startDelay); zero starts them at once.
	spread time.Duration
	// delay picks a start delay in [0, window); default a uniform one.
	delay func(window time.Duration) time.Duration

	mu      sync.Mutex
	watches map[string]*nodeHooksWatch // by HostHooks name
	// started: the agent's first view started its watches; a HostHooks
	// seen later is new to the cluster, not to the agent.
	started bool
}

// WatchSpreadPerNode widens the window over which the agents start their
// watches of a new HostHooks' NodeHooks: by 1 ms for each node that the
// largest HostHooks the agent sees matches, as the controller spaces its
// status writes (controller.StatusIntervalPerNode).
const WatchSpreadPerNode = time.Millisecond

// DefaultWatchSpread is the agent command's least window for those starts.
//
// Why spread them: a new HostHooks reaches every agent at the same moment,
// and each then lists and watches its NodeHooks: two requests per node in
// a second or two, 20,000 at 10,000 nodes, which starved the API server of
// the time to renew the controller's Lease. Nothing is lost by waiting:
// the controller creates the NodeHooks 16 at a time, seconds of work at
// that size, and a node only acts once the controller approves. Only the
// first rollout of a new HostHooks waits; its changes reach open watches.
const DefaultWatchSpread = 10 * time.Second

// listByName is a ListWatch that starts with a list, not with a watch
// that streams the initial state (client-go's WatchListClient). Such a
// stream asks etcd for its current revision before it starts; a list at
// resourceVersion 0 of one name is an index lookup in the API server's
// watch cache. When a HostHooks is made, every agent starts a watch at
// once: at 10,000 nodes the streams' reads of etcd took the API server
// minutes, and the controller lost its lease.
type listByName struct{ *toolscache.ListWatch }

// IsWatchListSemanticsUnSupported tells client-go's reflector to list.
func (listByName) IsWatchListSemanticsUnSupported() bool { return true }

type nodeHooksWatch struct {
	name string // of the NodeHooks
	inf  toolscache.SharedIndexInformer
	stop context.CancelFunc
}

// newNodeHooksWatches watches the NodeHooks of node through c.
// spread is the least window for the starts of a new HostHooks' watch.
func newNodeHooksWatches(node string, c client.WithWatch, handler toolscache.ResourceEventHandler, synced func(), spread time.Duration) *nodeHooksWatches {
	lw := func(sel fields.Selector) toolscache.ListerWatcher {
		return listByName{&toolscache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = sel.String()
				l := &v1alpha1.NodeHooksList{}
				return l, c.List(ctx, l, &client.ListOptions{Raw: &o})
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = sel.String()
				return c.Watch(ctx, &v1alpha1.NodeHooksList{}, &client.ListOptions{Raw: &o})
			},
		}}
	}
	return &nodeHooksWatches{node: node, lw: lw, handler: handler, synced: synced, spread: spread,
		delay: func(window time.Duration) time.Duration { return rand.N(window) }, watches: map[string]*nodeHooksWatch{}}
}

// startDelay is how long the watch of a HostHooks waits before it starts:
// none for those of the agent's first view (the agents of a fleet start
// over minutes, as a DaemonSet's pods come up), and for a HostHooks made
// later a random part of a window: the agent's spread, or
// WatchSpreadPerNode for each node that the largest HostHooks matches, if
// that is longer. A HostHooks' status gives its matched nodes; a new one
// has no status yet, and another's tells the size of the fleet.
func (w *nodeHooksWatches) startDelay(matched int32) time.Duration {
	if !w.started || w.spread <= 0 {
		return 0
	}
	window := max(w.spread, time.Duration(matched)*WatchSpreadPerNode)
	return w.delay(window)
}

// ensure makes the watches those of the HostHooks named, until ctx ends:
// it starts the missing ones (after startDelay; matched is the most nodes
// a HostHooks' status says it matches) and stops those of HostHooks gone. The watch
// of a HostHooks gone lingers while its NodeHooks is there and does not
// say Removed yet: the agent prunes the set whatever the NodeHooks says,
// and then says so in it (without the controller's finalizer, the
// HostHooks goes before the node has pruned).
func (w *nodeHooksWatches) ensure(ctx context.Context, hostHooks []string, matched int32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	defer func() { w.started = true }()
	want := make(map[string]bool, len(hostHooks))
	for _, hh := range hostHooks {
		want[hh] = true
		if w.watches[hh] != nil {
			continue
		}
		name := v1alpha1.NodeHooksName(hh, w.node)
		inf := toolscache.NewSharedIndexInformerWithOptions(w.lw(fields.OneTermEqualSelector("metadata.name", name)),
			&v1alpha1.NodeHooks{}, toolscache.SharedIndexInformerOptions{})
		// What the agent never reads costs memory in every agent.
		if err := inf.SetTransform(func(obj any) (any, error) {
			if o, ok := obj.(metav1.Object); ok {
				o.SetManagedFields(nil)
			}
			return obj, nil
		}); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(w.handler); err != nil {
			return err
		}
		wctx, stop := context.WithCancel(ctx)
		w.watches[hh] = &nodeHooksWatch{name: name, inf: inf, stop: stop}
		// Until it has started and listed, the watch has not synced, and
		// the agent's view says it is listing: no sync decides, and
		// nothing is pruned, for a NodeHooks not seen yet.
		d := w.startDelay(matched)
		go func() {
			if d > 0 {
				sleep(wctx, d)
			}
			inf.RunWithContext(wctx)
		}()
		go func() {
			if toolscache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
				w.synced()
			}
		}()
	}
	for hh, nw := range w.watches {
		if !want[hh] && !nw.lingers() {
			nw.stop()
			delete(w.watches, hh)
		}
	}
	return nil
}

// list returns the NodeHooks the watches have, sorted by name, and
// whether every watch has listed: until then, a NodeHooks missing from
// the list may be one not seen yet.
func (w *nodeHooksWatches) list() ([]*v1alpha1.NodeHooks, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []*v1alpha1.NodeHooks
	synced := true
	for _, nw := range w.watches {
		if !nw.inf.HasSynced() {
			synced = false
			continue
		}
		if obj, ok, _ := nw.inf.GetStore().GetByKey(nw.name); ok {
			out = append(out, obj.(*v1alpha1.NodeHooks))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, synced
}

// lingers reports whether the watch's NodeHooks is there and does not say
// Removed.
func (nw *nodeHooksWatch) lingers() bool {
	obj, ok, _ := nw.inf.GetStore().GetByKey(nw.name)
	return ok && obj.(*v1alpha1.NodeHooks).Status.Phase != v1alpha1.NodeRemoved
}
