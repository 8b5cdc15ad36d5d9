package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// Reconciler reconciles one HostHooks at a time: it reads the HostHooks,
// the nodes and the NodeHooks from the cache, has Decide decide, and
// makes the writes of the decision, each a single request. It reads every
// HostHooks and NodeHooks, not only the one's: a node's budget is shared
// by every HostHooks that selects it (see BusyNodes).
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API
	// server.
	Client client.Client
	// Now is the clock of the conditions and the deadlines; nil is
	// time.Now.
	Now func() time.Time
	// Recorder records the transitions of a HostHooks' conditions as
	// Events; nil records none.
	Recorder recorder.EventRecorder
	// StatusInterval is the least time between two status writes of a
	// HostHooks; zero is DefaultStatusInterval. It is at least
	// StatusIntervalPerNode for each node of the cluster. A change within it is
	// written when it ends: a rollout over 1,000 nodes, each reporting,
	// writes the status about once a StatusInterval, not once a node.
	StatusInterval time.Duration

	// pool makes the reconciles one at a time, however many workers the
	// controller is given: HostHooks over the same nodes share one budget
	// (see Decide), and two deciding at once would each count without
	// the approvals of the other.
	pool sync.Mutex

	mu sync.Mutex
	// wrote is when the status of each HostHooks was last written.
	wrote map[string]time.Time
	// approved are, for each HostHooks, the approvals the cache may not
	// show yet, by NodeHooks name: every reconcile decides from the cache
	// with them laid over it (see view), so that a cache that lags
	// neither has the same patch sent again nor lets another HostHooks
	// take the slot of a node approved already.
	approved map[string]map[string]approval
}

// DefaultStatusInterval is the least time between two status writes of
// a HostHooks, unless Reconciler.StatusInterval says otherwise.
const DefaultStatusInterval = time.Second

// StatusIntervalPerNode lengthens the interval in large clusters: the
// least time between two status writes of a HostHooks is at least this
// much per node of the cluster (10 s at 10,000 nodes). Every agent watches
// every HostHooks, so that the API server sends each status write to as
// many watchers as there are nodes; the interval bounds those sends to
// about a thousand a second for each HostHooks, whatever the cluster's
// size.
const StatusIntervalPerNode = time.Millisecond

// statusWait is how long the status of the HostHooks named hh must wait
// before it is written at now, in a cluster of the number of nodes given;
// zero when it may be written, which is then taken to be done.
func (r *Reconciler) statusWait(hh string, now time.Time, nodes int) time.Duration {
	interval := r.StatusInterval
	if interval <= 0 {
		interval = DefaultStatusInterval
	}
	interval = max(interval, time.Duration(nodes)*StatusIntervalPerNode)
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.wrote[hh]; ok && now.Sub(last) < interval && now.Sub(last) >= 0 {
		return interval - now.Sub(last)
	}
	if r.wrote == nil {
		r.wrote = make(map[string]time.Time)
	}
	r.wrote[hh] = now
	return 0
}

// approval is an approval for hash of a NodeHooks that the cache had at
// resourceVersion rv when it was approved, or that the cache did not have
// (absent) and the controller had created at rv, or found made already.
// While the cache has that version still, or has none, it lags behind the
// approval; any other version is the approval's or a later one.
type approval struct {
	hash, rv string
	absent   bool
	// remove: the approval set spec.remove, not the hash.
	remove bool
	// node and hostHooks are the NodeHooks' spec, and at its approvedAt.
	node, hostHooks string
	at              metav1.Time
}

// view is nhs, every NodeHooks of the cache, with the approvals that they
// do not show yet laid over them (as copies); the approvals they show are
// forgotten, and so are those of nodes gone, whose NodeHooks the cache may
// never show. It returns the approvals of the HostHooks named hh still
// pending.
func (r *Reconciler) view(hh string, nhs []v1alpha1.NodeHooks, nodes []Node) ([]v1alpha1.NodeHooks, map[string]approval) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := make(map[string]int, len(nhs))
	for i := range nhs {
		at[nhs[i].Name] = i
	}
	var out []v1alpha1.NodeHooks
	exists := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		exists[n.Name] = true
	}
	for name := range r.approved {
		still := pendingOf(r.approved[name], nhs)
		maps.DeleteFunc(still, func(_ string, a approval) bool { return !exists[a.node] })
		r.setApproved(name, still)
		for nhName, a := range still {
			if out == nil {
				out = slices.Clone(nhs)
			}
			var nh *v1alpha1.NodeHooks
			if i, ok := at[nhName]; ok {
				nh = out[i].DeepCopy()
				out[i] = *nh
				nh = &out[i]
			} else {
				// Made by the controller, and not in the cache yet.
				out = append(out, v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: nhName},
					Spec: v1alpha1.NodeHooksSpec{NodeName: a.node, HostHooks: a.hostHooks}})
				at[nhName] = len(out) - 1
				nh = &out[len(out)-1]
			}
			if a.remove {
				nh.Spec.Remove = true
			} else {
				nh.Spec.HooksHash, nh.Spec.Remove = a.hash, false
			}
			nh.Spec.ApprovedAt = &a.at
		}
	}
	if out == nil {
		out = nhs
	}
	return out, r.approved[hh]
}

// pendingOf is the approvals of old that nhs, from the cache, do not
// show yet.
func pendingOf(old map[string]approval, nhs []v1alpha1.NodeHooks) map[string]approval {
	if len(old) == 0 {
		return nil
	}
	still := make(map[string]approval)
	for name, a := range old {
		if a.absent {
			still[name] = a
		}
	}
	for i := range nhs {
		name := nhs[i].Name
		if a, ok := old[name]; ok {
			if a.rv != "" && a.rv == nhs[i].ResourceVersion {
				still[name] = a
			} else {
				delete(still, name)
			}
		}
	}
	return still
}

func (r *Reconciler) setApproved(hh string, m map[string]approval) {
	if len(m) == 0 {
		delete(r.approved, hh)
		return
	}
	if r.approved == nil {
		r.approved = make(map[string]map[string]approval)
	}
	r.approved[hh] = m
}

// SetupWithManager registers the controller with mgr. The controller
// reconciles a HostHooks when it changes, when one of its NodeHooks
// changes, for every HostHooks when any NodeHooks changes whether its
// node is busy (see nodeHooksHandler), and, for every HostHooks, when a
// node comes, goes, changes its labels or becomes Ready or not. That
// includes the controller's own status writes: the reconcile after one
// compares the status with what the write left, and writes again only if
// the cache had lagged behind an earlier write when it decided. Of a
// node, only its labels and its Ready condition matter, and a node's
// status is large and often written: NewManager's cache keeps those only
// (see nodeReadiness), and a heartbeat of the kubelet wakes no reconcile.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.HostHooks{}).
		Watches(&v1alpha1.NodeHooks{}, r.nodeHooksHandler()).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allHostHooks),
			builder.WithPredicates(predicate.Or[client.Object](predicate.LabelChangedPredicate{}, readinessChanged))).
		Complete(r)
}

// readyCondition is the Ready condition of n, or nil.
func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// readinessChanged passes an update of a node whose Ready condition
// changed its status; its heartbeats pass no update.
var readinessChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Node)
		n, ok2 := e.ObjectNew.(*corev1.Node)
		if !ok1 || !ok2 {
			return true
		}
		status := func(n *corev1.Node) corev1.ConditionStatus {
			if c := readyCondition(n); c != nil {
				return c.Status
			}
			return ""
		}
		return status(o) != status(n)
	},
}

// nodeReadiness is what the controller's cache keeps of a Node: its name,
// labels and Ready condition, without the heartbeat that changes with
// every status the kubelet writes. The rest of a node's status (images,
// addresses, capacity) is most of it.
func nodeReadiness(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID,
		ResourceVersion: n.ResourceVersion, Labels: n.Labels, DeletionTimestamp: n.DeletionTimestamp}}
	if c := readyCondition(n); c != nil {
		out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status, Reason: c.Reason,
			LastTransitionTime: c.LastTransitionTime}}
	}
	return out, nil
}

// nodeHooksHandler enqueues the HostHooks a NodeHooks is for, and every
// HostHooks when the NodeHooks may have changed whether its node is busy
// (see BusyNodes): the HostHooks that share the node's budget may have a
// slot now, or none.
func (r *Reconciler) nodeHooksHandler() handler.EventHandler {
	enqueue := func(ctx context.Context, o client.Object, all bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		reqs := nodeHooksOwner(ctx, o)
		if all {
			reqs = r.allHostHooks(ctx, o)
		}
		for _, req := range reqs {
			q.Add(req)
		}
	}
	busyState := func(o client.Object) any {
		nh, ok := o.(*v1alpha1.NodeHooks)
		if !ok {
			return nil
		}
		return [4]string{nh.Spec.HooksHash, fmt.Sprint(nh.Spec.Remove), nh.Status.AppliedHash, string(nh.Status.Phase)}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, false, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.ObjectNew, busyState(e.ObjectOld) != busyState(e.ObjectNew), q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, true, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(ctx, e.Object, false, q)
		},
	}
}

// nodeHooksOwner is the HostHooks a NodeHooks is for. Its name is in the
// spec in full (the label may be shortened), and it is there even when
// an owner reference is not.
func nodeHooksOwner(_ context.Context, o client.Object) []reconcile.Request {
	nh, ok := o.(*v1alpha1.NodeHooks)
	if !ok || nh.Spec.HostHooks == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nh.Spec.HostHooks}}}
}

// allHostHooks is every HostHooks: whether one selects a node is up to the
// node's labels.
func (r *Reconciler) allHostHooks(ctx context.Context, _ client.Object) []reconcile.Request {
	// The typed list, from the informer the controller has anyway (a
	// list of metadata would start a second one), not copied.
	var l v1alpha1.HostHooksList
	if err := r.Client.List(ctx, &l, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing the HostHooks for a node")
		return nil
	}
	reqs := make([]reconcile.Request, len(l.Items))
	for i := range l.Items {
		reqs[i].Name = l.Items[i].Name
	}
	return reqs
}

// Reconcile carries out Decide's decision for the HostHooks req names.
// Every write is one request, the writes of one kind go out in parallel,
// and none waits for the cache: approvals and
// deletions are merge patches and deletes that need no resourceVersion,
// and a create that finds its NodeHooks made already (the cache lags
// behind the controller's own writes) is no error. Those writes are the
// same when Decide decides again from a cache that lags. The finalizer is
// changed under the HostHooks' resourceVersion, since others may change
// the same list.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.pool.Lock()
	defer r.pool.Unlock()
	var hh v1alpha1.HostHooks
	if err := r.Client.Get(ctx, req.NamespacedName, &hh); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	o, err := r.observe(ctx, hh.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	at := r.now()
	d := Decide(&hh, o.nodes, o.own, at)
	// The rollout as decided, whether or not its status is written yet:
	// a status held back by StatusInterval is no reason for stale metrics.
	recordRollout(hh.Name, &d.Status)

	if d.AddFinalizer {
		err := r.patchFinalizers(ctx, &hh, func(hh *v1alpha1.HostHooks) {
			hh.Finalizers = append(hh.Finalizers, v1alpha1.Finalizer)
		})
		if apierrors.IsConflict(err) {
			// The cache lags: its update, on the way, brings the
			// HostHooks back.
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}

	w := r.newWrites(ctx, &d, o)
	w.create(d.Create)
	if err := w.approve(&d, hh.Name, at); err != nil {
		return reconcile.Result{}, err
	}
	r.mu.Lock()
	r.setApproved(hh.Name, w.pending)
	r.mu.Unlock()
	w.delete(d.Delete)
	result, err := r.writeStatus(ctx, &hh, &d, len(o.nodes))
	if err != nil {
		w.errs = append(w.errs, err)
	}
	if d.RequeueAfter > 0 && (result.RequeueAfter == 0 || d.RequeueAfter < result.RequeueAfter) {
		// A deadline ahead changes the decision with no event to say
		// so: the reconcile comes back for it.
		result.RequeueAfter = d.RequeueAfter
	}
	if err := errors.Join(w.errs...); err != nil {
		return reconcile.Result{}, err
	}
	if d.RemoveFinalizer {
		err := r.patchFinalizers(ctx, &hh, func(hh *v1alpha1.HostHooks) {
			controllerutil.RemoveFinalizer(hh, v1alpha1.Finalizer)
		})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("removing the finalizer: %w", err)
		}
	}
	return result, nil
}

// forget drops what the controller keeps of the HostHooks named hh, which
// is gone: its pending approvals, when its status was written, and its
// rollout's metrics.
func (r *Reconciler) forget(hh string) {
	r.mu.Lock()
	r.setApproved(hh, nil)
	delete(r.wrote, hh)
	r.mu.Unlock()
	forgetRollout(hh)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// observed is what a reconcile of one HostHooks decides from.
type observed struct {
	// nodes is every node, each with the HostHooks it is busy with.
	nodes []Node
	// cached is every NodeHooks as the cache has it: the versions the
	// server has, without the approvals the controller laid over them.
	cached []v1alpha1.NodeHooks
	// own is the HostHooks' NodeHooks, with its pending approvals laid
	// over them.
	own []v1alpha1.NodeHooks
	// pending is the HostHooks' approvals the cache does not show yet, a
	// copy that the reconcile may write without r.mu.
	pending map[string]approval
}

// observe reads what a reconcile of the HostHooks named hh decides from.
// It reads every HostHooks and NodeHooks, for the budget that HostHooks
// over the same nodes share. Decide and BusyNodes only read what they are
// given, so the cache's own objects do.
func (r *Reconciler) observe(ctx context.Context, hh string) (*observed, error) {
	nodes, err := r.listNodes(ctx)
	if err != nil {
		return nil, err
	}
	var hhl v1alpha1.HostHooksList
	if err := r.Client.List(ctx, &hhl, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing HostHooks: %w", err)
	}
	var all v1alpha1.NodeHooksList
	if err := r.Client.List(ctx, &all, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing NodeHooks: %w", err)
	}
	viewed, pending := r.view(hh, all.Items, nodes)
	o := &observed{nodes: nodes, cached: all.Items, pending: maps.Clone(pending)}
	busy := BusyNodes(hhl.Items, nodes, viewed)
	for i := range nodes {
		nodes[i].Busy = busy[nodes[i].Name]
	}
	for i := range viewed {
		if viewed[i].Spec.HostHooks == hh {
			o.own = append(o.own, viewed[i])
		}
	}
	return o, nil
}

// listNodes is every node of the cache, with why it is not ready, if so.
func (r *Reconciler) listNodes(ctx context.Context) ([]Node, error) {
	var nl corev1.NodeList
	if err := r.Client.List(ctx, &nl, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	nodes := make([]Node, len(nl.Items))
	for i := range nl.Items {
		n := &nl.Items[i]
		nodes[i] = Node{Name: n.Name, Labels: n.Labels}
		if c := readyCondition(n); c != nil && c.Status != corev1.ConditionTrue {
			nodes[i].NotReady = fmt.Sprintf("Ready is %s", c.Status)
			if c.Reason != "" {
				nodes[i].NotReady += ", " + c.Reason
			}
			nodes[i].NotReadySince = c.LastTransitionTime.Time
		}
	}
	return nodes, nil
}

// patchFinalizers patches the finalizers of hh as change changes them,
// under hh's resourceVersion: others may change the same list.
func (r *Reconciler) patchFinalizers(ctx context.Context, hh *v1alpha1.HostHooks, change func(*v1alpha1.HostHooks)) error {
	orig := hh.DeepCopy()
	change(hh)
	return r.Client.Patch(ctx, hh, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// writeStatus writes the status d decided for hh, with its Events, unless
// StatusInterval holds it back: then the result asks to come back when it
// may be written. nodes is the cluster's number of nodes.
func (r *Reconciler) writeStatus(ctx context.Context, hh *v1alpha1.HostHooks, d *Decision, nodes int) (reconcile.Result, error) {
	var result reconcile.Result
	// The status of a HostHooks that is going away is of no more use,
	// but for the nodes it leaves orphaned: it says so as it goes.
	write := d.StatusChanged && (!d.RemoveFinalizer || d.Orphaned != nil)
	if write && d.Orphaned == nil {
		result.RequeueAfter = r.statusWait(hh.Name, time.Now(), nodes)
	}
	if !write || result.RequeueAfter != 0 {
		return result, nil
	}
	patch, err := statusPatch(hh.Status, d.Status)
	if err == nil {
		err = r.Client.Status().Patch(ctx, hh, client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		return result, fmt.Errorf("writing the status: %w", err)
	}
	if r.Recorder != nil {
		// With the status that makes them, so that a status held
		// back by StatusInterval holds its Events back too.
		for _, e := range d.Events {
			r.Recorder.Eventf(hh, nil, e.Type, e.Reason, "Reconcile", "%s", e.Message)
		}
	}
	return result, nil
}

// statusPatch is a merge patch that makes a HostHooks status, whatever it
// was, to: every field of to, and null for each other field. A patch of the difference alone would leave out the counts
// that did not change, and those are required; a whole status without
// the nulls would leave the fields that are gone (errors, say) as they
// were. And unlike an update, it does not fail when the cache lags behind
// the controller's last write.
func statusPatch(old, to v1alpha1.HostHooksStatus) ([]byte, error) {
	fields := func(st v1alpha1.HostHooksStatus) (map[string]any, error) {
		b, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		var m map[string]any
		return m, json.Unmarshal(b, &m)
	}
	was, err := fields(old)
	if err != nil {
		return nil, err
	}
	// And every field a status may have: the server's may have one that
	// old, from a cache that lags, has not.
	every, err := fields(v1alpha1.HostHooksStatus{ObservedGeneration: 1, HooksHash: "h", Phase: "p",
		Errors: []v1alpha1.ErrorSummary{{}}, Conditions: []metav1.Condition{{}}})
	if err != nil {
		return nil, err
	}
	maps.Copy(was, every)
	m, err := fields(to)
	if err != nil {
		return nil, err
	}
	for k := range was {
		if _, ok := m[k]; !ok {
			m[k] = nil
		}
	}
	return json.Marshal(map[string]any{"status": m})
}
