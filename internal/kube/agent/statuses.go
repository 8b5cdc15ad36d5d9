package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// ownOrOlder reports whether nh, as a watch event brings it, is the
// agent's last status write or a version of the object from before it:
// nothing someone else wrote after the agent.
func (a *Agent) ownOrOlder(nh *v1alpha1.NodeHooks) bool {
	a.mu.Lock()
	w, ok := a.written[nh.UID]
	a.mu.Unlock()
	switch {
	case !ok:
		return false
	case w.rv == "":
		// On its way: its event may come before its answer.
		return equality.Semantic.DeepEqual(w.status, nh.Status)
	}
	return !after(nh.ResourceVersion, w.rv)
}

// after reports whether the resourceVersion rv of an object is later than
// the resourceVersion of the same object "than": the API server's are
// comparable integers (etcd's revisions). One that is not an integer is
// taken as later only when it differs, as the agent did before it
// compared them.
func after(rv, than string) bool {
	c, err := resourceversion.CompareResourceVersion(rv, than)
	if err != nil {
		return rv != than
	}
	return c > 0
}

// known is nh as the agent knows it: with the status of the agent's own
// last write while the cache shows a version from before that write (it
// lags). Once the cache shows the write, or any later version (someone
// else wrote the status since, or changed anything else of the object),
// the cache is the truth again and the memory of the write is dropped.
//
// The agent decides and writes from this: from the lagging cache it would
// start again hooks whose failure it wrote already, and undo its own
// writes; from its memory alone it would never see a status someone else
// wrote over its own.
func (a *Agent) known(nh *v1alpha1.NodeHooks) *v1alpha1.NodeHooks {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.written[nh.UID]
	if !ok {
		return nh
	}
	if w.rv != "" && (w.rv == nh.ResourceVersion || after(nh.ResourceVersion, w.rv)) {
		delete(a.written, nh.UID)
		return nh
	}
	k := *nh
	k.Status = *w.status.DeepCopy()
	return &k
}

// writeStatuses writes the status of every NodeHooks of the node whose
// status r changes, and only those, and remembers the agent's units for
// follow.
func (a *Agent) writeStatuses(ctx context.Context, v *view, r *result) error {
	units := map[string]UnitState{}
	for _, rep := range r.reports {
		s := UnitState{Unit: rep.StatusOf, ActiveState: rep.ActiveState, SubState: rep.SubState}
		units[rep.Unit], units[rep.StatusOf] = s, s
	}
	a.mu.Lock()
	a.units = units
	a.mu.Unlock()
	now := time.Now()
	var errs []error
	live := map[types.UID]bool{}
	for _, nh := range v.nodeHooks {
		live[nh.UID] = true
		name := nh.Spec.HostHooks
		// From the status as the agent knows it now (see known), its
		// Applying during this sync included: from a cache that lags
		// behind the agent's last write, it would undo that write (its
		// appliedAt, its hash), and the two would take turns for as
		// long as the cache lags.
		nh = a.known(nh)
		st := status(nh, v.hostHooks[name], r.outcomes[name], r.reports, now)
		if equality.Semantic.DeepEqual(nh.Status, st) {
			continue
		}
		if err := a.writeStatus(ctx, nh, st); err != nil {
			errs = append(errs, err)
		}
	}
	a.mu.Lock()
	for uid := range a.written {
		if !live[uid] {
			delete(a.written, uid)
		}
	}
	a.mu.Unlock()
	return errors.Join(errs...)
}

// writeApplying says, in the NodeHooks of the HostHooks named, that the
// node is applying their hooks: the phase Applying, the rest as it was. A
// write that fails is left to the status after the apply.
func (a *Agent) writeApplying(ctx context.Context, v *view, names []string) {
	for _, name := range names {
		nh := v.nodeHooksOf(name)
		if nh == nil {
			continue
		}
		st := *nh.Status.DeepCopy() // as the agent knows it
		// The retry this apply carries out (see status) is recorded
		// before its starts: an agent that stops during them does
		// not run the failed hooks once more when it comes back.
		retry := st.Retry
		if hh := v.hostHooks[name]; hh != nil {
			retry = hh.Spec.Retry
		}
		if st.Phase == v1alpha1.NodeApplying && st.Retry == retry {
			continue
		}
		st.Phase, st.Message, st.Retry = v1alpha1.NodeApplying, "", retry
		if err := a.writeStatus(ctx, nh, st); err != nil {
			a.cfg.Log.Warn("could not say the node is applying", "nodehooks", nh.Name, "error", err)
		}
	}
}

// writeStatus replaces the status of nh with st through the status
// subresource. A JSON patch that adds /status replaces it whole and needs
// no resourceVersion: only the agent writes a NodeHooks' status, and a
// cache that lags behind its last write must not make it fail.
func (a *Agent) writeStatus(ctx context.Context, nh *v1alpha1.NodeHooks, st v1alpha1.NodeHooksStatus) error {
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": nh.UID},
		{"op": "add", "path": "/status", "value": st},
	})
	if err != nil {
		return err
	}
	// Recorded before it is sent, so that the watch event of the write,
	// which may come before the answer, is known for the agent's own.
	a.mu.Lock()
	prev, had := a.written[nh.UID]
	a.written[nh.UID] = writtenStatus{status: st}
	a.mu.Unlock()
	obj := &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: nh.Name}}
	err = a.client.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
	a.statusWrites.Add(1)
	if err != nil {
		a.mu.Lock()
		if had {
			a.written[nh.UID] = prev
		} else {
			delete(a.written, nh.UID)
		}
		a.mu.Unlock()
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("status of NodeHooks %s: %w", nh.Name, err)
	}
	a.mu.Lock()
	a.written[nh.UID] = writtenStatus{status: st, rv: obj.ResourceVersion}
	a.mu.Unlock()
	a.cfg.Log.Info("status", "nodehooks", nh.Name, "phase", st.Phase, "message", st.Message)
	return nil
}

// writtenStatus is a status the agent wrote, and the resourceVersion the
// write made ("" while it is on its way): until the cache shows that
// version or a later one, the agent's cache lags behind its own write.
type writtenStatus struct {
	status v1alpha1.NodeHooksStatus
	rv     string
}
