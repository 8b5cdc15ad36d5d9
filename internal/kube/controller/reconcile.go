package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// Reconciler reconciles one HostHooks at a time: it reads the HostHooks,
// the nodes and the HostHooks' NodeHooks from the cache, has Decide
// decide, and makes the writes of the decision, each a single request.
type Reconciler struct {
	// Client reads from the manager's cache (it must have the NodeHooks
	// index of SetupWithManager) and writes to the API server.
	Client client.Client
	// Now is the clock of the conditions; nil is time.Now.
	Now func() time.Time

	mu sync.Mutex
	// approved are, for each HostHooks, the approvals the cache may not
	// show yet: so that a reconcile from a cache that lags does not send
	// the same patch again.
	approved map[string]map[string]approval
}

// approval is an approval for hash of a NodeHooks that the cache had at
// resourceVersion rv when it was approved, or that the cache did not have
// (absent) and the controller had created at rv, or found made already.
// While the cache has that version still, or has none, it lags behind the
// approval; any other version is the approval's or a later one.
type approval struct {
	hash, rv string
	absent   bool
}

// pending is the approvals of the HostHooks named hh that nhs, from the
// cache, do not show yet; the others are forgotten.
func (r *Reconciler) pending(hh string, nhs []v1alpha1.NodeHooks) map[string]approval {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.approved[hh]
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
	r.setApproved(hh, still)
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

// SetupWithManager registers the NodeHooks index and the controller with
// mgr. The controller reconciles a HostHooks when it changes, when one of
// its NodeHooks changes, and, for every HostHooks, when a node comes, goes
// or changes its labels. That includes the controller's own status
// writes: the reconcile after one compares the status with what the
// write left, and writes again only if the cache had lagged behind an
// earlier write when it decided. Nodes are cached as metadata only:
// their labels are all that matters, and a node's status is large.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.NodeHooks{}, indexHostHooks,
		func(o client.Object) []string { return []string{o.(*v1alpha1.NodeHooks).Spec.HostHooks} })
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(Name).
		For(&v1alpha1.HostHooks{}).
		Watches(&v1alpha1.NodeHooks{}, handler.EnqueueRequestsFromMapFunc(nodeHooksOwner)).
		WatchesMetadata(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.allHostHooks),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		Complete(r)
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
// Every write is one request and none waits for the cache: approvals and
// deletions are merge patches and deletes that need no resourceVersion,
// and a create that finds its NodeHooks made already (the cache lags
// behind the controller's own writes) is no error. Those writes are the
// same when Decide decides again from a cache that lags. The finalizer is
// changed under the HostHooks' resourceVersion, since others may change
// the same list.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var hh v1alpha1.HostHooks
	if err := r.Client.Get(ctx, req.NamespacedName, &hh); err != nil {
		if apierrors.IsNotFound(err) {
			r.mu.Lock()
			r.setApproved(req.Name, nil)
			r.mu.Unlock()
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var nl metav1.PartialObjectMetadataList
	nl.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := r.Client.List(ctx, &nl, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	nodes := make([]Node, len(nl.Items))
	for i := range nl.Items {
		nodes[i] = Node{Name: nl.Items[i].Name, Labels: nl.Items[i].Labels}
	}
	var nhl v1alpha1.NodeHooksList
	// Decide only reads what it is given, so the cache's own objects do.
	if err := r.Client.List(ctx, &nhl, client.MatchingFields{indexHostHooks: hh.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodeHooks: %w", err)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	d := Decide(&hh, nodes, nhl.Items, now())

	if d.AddFinalizer {
		orig := hh.DeepCopy()
		hh.Finalizers = append(hh.Finalizers, v1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, &hh, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				// The cache lags: its update, on the way, brings the
				// HostHooks back.
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
	}

	var errs []error
	// The version each NodeHooks to approve is at, as far as the
	// controller knows, and whether the cache has it.
	type known struct {
		rv      string
		inCache bool
	}
	at := make(map[string]known, len(d.Approve))
	for _, name := range d.Approve {
		at[name] = known{}
	}
	for i := range nhl.Items {
		if _, ok := at[nhl.Items[i].Name]; ok {
			at[nhl.Items[i].Name] = known{nhl.Items[i].ResourceVersion, true}
		}
	}
	for _, nh := range d.Create {
		err := r.Client.Create(ctx, nh)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("creating NodeHooks %s: %w", nh.Name, err))
		}
		if err == nil {
			at[nh.Name] = known{rv: nh.ResourceVersion}
		}
	}
	pending := r.pending(hh.Name, nhl.Items)
	if len(d.Approve) > 0 {
		h := d.Status.HooksHash
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"hooksHash": h}})
		if err != nil {
			return reconcile.Result{}, err
		}
		for _, name := range d.Approve {
			if a, ok := pending[name]; ok && a.hash == h {
				continue
			}
			nh := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := r.Client.Patch(ctx, nh, client.RawPatch(types.MergePatchType, patch)); err != nil {
				// The rest wait: approving out of order would break
				// the rollout's order.
				errs = append(errs, fmt.Errorf("approving NodeHooks %s: %w", name, err))
				break
			}
			if k := at[name]; k.rv != "" || !k.inCache {
				if pending == nil {
					pending = make(map[string]approval)
				}
				pending[name] = approval{hash: h, rv: k.rv, absent: !k.inCache}
			}
		}
		r.mu.Lock()
		r.setApproved(hh.Name, pending)
		r.mu.Unlock()
	}
	for _, nh := range d.Delete {
		uid := nh.UID
		err := r.Client.Delete(ctx, &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: nh.Name}},
			client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting NodeHooks %s: %w", nh.Name, err))
		}
	}
	if d.StatusChanged {
		patch, err := statusPatch(hh.Status, d.Status)
		if err == nil {
			err = r.Client.Status().Patch(ctx, &hh, client.RawPatch(types.MergePatchType, patch))
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("writing the status: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	if d.RemoveFinalizer {
		orig := hh.DeepCopy()
		controllerutil.RemoveFinalizer(&hh, v1alpha1.Finalizer)
		if err := r.Client.Patch(ctx, &hh, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, fmt.Errorf("removing the finalizer: %w", err)
		}
	}
	return reconcile.Result{}, nil
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
