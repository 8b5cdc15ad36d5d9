package agent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
)

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
