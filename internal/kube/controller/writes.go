package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// writes makes the NodeHooks writes of one decision: the creates, the
// approvals and the deletions, each kind in parallel. It gathers what
// failed, and the approvals that the cache does not show yet.
type writes struct {
	r   *Reconciler
	ctx context.Context

	mu sync.Mutex // guards errs, versions and pending while the writes run
	// errs are the writes that failed.
	errs []error
	// versions is the version each NodeHooks to approve is at, as far as
	// the controller knows, and whether the cache has it.
	versions map[string]known
	// nodeOf is the node of each NodeHooks the decision may write.
	nodeOf map[string]string
	// pending is the HostHooks' approvals the cache does not show yet,
	// those of this decision added.
	pending map[string]approval
}

// known is the version of a NodeHooks as far as the controller knows it,
// and whether the cache has it.
type known struct {
	rv      string
	inCache bool
}

func (r *Reconciler) newWrites(ctx context.Context, d *Decision, o *observed) *writes {
	w := &writes{
		r:        r,
		ctx:      ctx,
		versions: make(map[string]known, len(d.Approve)+len(d.Remove)),
		nodeOf:   make(map[string]string, len(d.Create)),
		pending:  o.pending,
	}
	for _, name := range append(slices.Clone(d.Approve), d.Remove...) {
		w.versions[name] = known{}
	}
	// Of the cache, not of the view: an approval laid over it is not a
	// version the server has.
	for i := range o.cached {
		nh := &o.cached[i]
		if _, ok := w.versions[nh.Name]; ok {
			w.versions[nh.Name] = known{nh.ResourceVersion, true}
			w.nodeOf[nh.Name] = nh.Spec.NodeName
		}
	}
	for _, nh := range d.Create {
		w.nodeOf[nh.Name] = nh.Spec.NodeName
	}
	for i := range o.own {
		if _, ok := w.nodeOf[o.own[i].Name]; !ok {
			w.nodeOf[o.own[i].Name] = o.own[i].Spec.NodeName
		}
	}
	if w.pending == nil {
		w.pending = make(map[string]approval)
	}
	return w
}

func (w *writes) fail(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
}

// create creates the NodeHooks nhs.
func (w *writes) create(nhs []*v1alpha1.NodeHooks) {
	each(len(nhs), func(i int) {
		nh := nhs[i]
		err := w.r.Client.Create(w.ctx, nh)
		if apierrors.IsAlreadyExists(err) {
			// Mostly the cache lagging behind an earlier create; but
			// a name is a hash apart from another node's or HostHooks'
			// only, and a NodeHooks of theirs must not pass for this.
			err = w.r.taken(w.ctx, nh)
		} else if err == nil {
			w.mu.Lock()
			w.versions[nh.Name] = known{rv: nh.ResourceVersion}
			w.mu.Unlock()
		}
		if err != nil {
			w.fail(fmt.Errorf("creating NodeHooks %s: %w", nh.Name, err))
		}
	})
}

// approve approves the removals and then the hooks of d, for the
// HostHooks named hh, at at.
func (w *writes) approve(d *Decision, hh string, at time.Time) error {
	stamp := metav1.NewTime(at)
	err := w.approveEach(d.Remove, map[string]any{"remove": true, "approvedAt": stamp},
		approval{remove: true, hostHooks: hh, at: stamp})
	if err == nil {
		err = w.approveEach(d.Approve, map[string]any{"hooksHash": d.Status.HooksHash, "approvedAt": stamp, "remove": nil},
			approval{hash: d.Status.HooksHash, hostHooks: hh, at: stamp})
	}
	return err
}

// approveEach patches the NodeHooks named in names with spec and records
// the approvals as pending: every node of one decision may apply at
// once, so their approvals go out at once too.
func (w *writes) approveEach(names []string, spec map[string]any, a approval) error {
	if len(names) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	each(len(names), func(i int) {
		name := names[i]
		w.mu.Lock()
		p, ok := w.pending[name]
		w.mu.Unlock()
		if ok && p.hash == a.hash && p.remove == a.remove {
			return
		}
		nh := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := w.r.Client.Patch(w.ctx, nh, client.RawPatch(types.MergePatchType, patch)); err != nil {
			w.fail(fmt.Errorf("approving NodeHooks %s: %w", name, err))
			return
		}
		w.mu.Lock()
		if k := w.versions[name]; k.rv != "" || !k.inCache {
			a := a
			a.rv, a.absent, a.node = k.rv, !k.inCache, w.nodeOf[name]
			w.pending[name] = a
		}
		w.mu.Unlock()
	})
	return nil
}

// delete deletes the NodeHooks nhs, each only as the object it was: one
// made again under its name stays.
func (w *writes) delete(nhs []*v1alpha1.NodeHooks) {
	each(len(nhs), func(i int) {
		nh := nhs[i]
		uid := nh.UID
		err := w.r.Client.Delete(w.ctx, &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: nh.Name}},
			client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			w.fail(fmt.Errorf("deleting NodeHooks %s: %w", nh.Name, err))
		}
	})
}

// taken is nil when the NodeHooks named as nh is nh's, for its HostHooks
// and node, or when the cache does not have it yet; otherwise an error that
// says whose it is.
func (r *Reconciler) taken(ctx context.Context, nh *v1alpha1.NodeHooks) error {
	var got v1alpha1.NodeHooks
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
		return client.IgnoreNotFound(err)
	}
	if got.Spec.HostHooks == nh.Spec.HostHooks && got.Spec.NodeName == nh.Spec.NodeName {
		return nil
	}
	return fmt.Errorf("the name is taken by the NodeHooks of HostHooks %q on node %q, named before names told such pairs apart: delete that NodeHooks, and the controller makes it again under a name of its own",
		got.Spec.HostHooks, got.Spec.NodeName)
}

// writers is how many writes of one kind a reconcile has in flight: the
// NodeHooks of 1,000 new nodes are made in a second or so, not one after
// another.
const writers = 16

// each calls f(0) to f(n-1), up to writers of them at a time, and returns
// when all returned.
func each(n int, f func(i int)) {
	if n == 1 {
		f(0)
		return
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, writers) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}
