package agent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	cur, st := a.next(nh, hh, &outcome{action: applySet, hash: hash}, reports, later)
	if diff := cmp.Diff(cur, st); diff != "" {
		t.Errorf("an unchanged sync over a stale cache wants a write (-known +new):\n%s", diff)
	}
	// Once the cache has the write, it is the truth again.
	nh.ResourceVersion, nh.Status = "12", own
	if cur, st = a.next(nh, hh, &outcome{action: applySet, hash: hash}, reports, later); cmp.Diff(cur, st) != "" {
		t.Errorf("an unchanged sync wants a write:\n%s", cmp.Diff(cur, st))
	}
	if _, ok := a.written[nh.UID]; ok {
		t.Error("the write is still remembered after the cache caught up with it")
	}
}
