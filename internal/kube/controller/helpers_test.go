package controller

// The HostHooks, nodes and NodeHooks that the tests of Decide, of its
// status, of the pool of HostHooks over the same nodes and of the error
// summaries decide from.

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

var (
	t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	hooksA = []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}
	hooksB = []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/false"}}}
	hashA  = v1alpha1.HooksHash(hooksA)
	hashB  = v1alpha1.HooksHash(hooksB)
)

// hostHooks is a HostHooks "hh" with the finalizer and hooksA, changed
// by the options.
func hostHooks(opts ...func(*v1alpha1.HostHooks)) *v1alpha1.HostHooks {
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "hh", UID: "uid-hh", Generation: 3, Finalizers: []string{v1alpha1.Finalizer}},
		Spec:       v1alpha1.HostHooksSpec{Hooks: hooksA},
	}
	for _, o := range opts {
		o(hh)
	}
	return hh
}

func withSelector(ml map[string]string) func(*v1alpha1.HostHooks) {
	return func(hh *v1alpha1.HostHooks) { hh.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: ml} }
}

func withMaxUnavailable(v intstr.IntOrString) func(*v1alpha1.HostHooks) {
	return func(hh *v1alpha1.HostHooks) { hh.Spec.Rollout.MaxUnavailable = &v }
}

func withThreshold(n int32) func(*v1alpha1.HostHooks) {
	return func(hh *v1alpha1.HostHooks) { hh.Spec.Rollout.FailureThreshold = &n }
}

func withHooks(hs []v1alpha1.Hook) func(*v1alpha1.HostHooks) {
	return func(hh *v1alpha1.HostHooks) { hh.Spec.Hooks = hs }
}

func paused(hh *v1alpha1.HostHooks) { hh.Spec.Rollout.Pause = true }

func deleting(hh *v1alpha1.HostHooks) {
	ts := metav1.NewTime(t0)
	hh.DeletionTimestamp = &ts
}

func noFinalizer(hh *v1alpha1.HostHooks) { hh.Finalizers = nil }

// nodes are nodes named n1, n2, ... with the labels, in a scrambled
// order: Decide sorts them.
func nodes(n int, ls map[string]string) []Node {
	out := make([]Node, n)
	for i := range out {
		out[i] = Node{Name: fmt.Sprintf("n%02d", (i*7)%n+1), Labels: ls}
	}
	return out
}

// nodeHooks is hh's NodeHooks of node, approved for spec, having applied
// applied with phase.
func nodeHooks(node, spec, applied string, phase v1alpha1.NodePhase) v1alpha1.NodeHooks {
	nh := newNodeHooks(hostHooks(), node)
	nh.UID = types.UID("uid-" + node)
	nh.CreationTimestamp = metav1.NewTime(t0)
	nh.Spec.HooksHash = spec
	nh.Status.AppliedHash = applied
	nh.Status.Phase = phase
	return *nh
}

func names(nhs []*v1alpha1.NodeHooks) []string {
	var out []string
	for _, nh := range nhs {
		out = append(out, nh.Name)
	}
	return out
}

// nh is the NodeHooks name of node for "hh".
func nh(node string) string { return v1alpha1.NodeHooksName("hh", node) }

func nhNames(nodes ...string) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, nh(n))
	}
	return out
}

type counts struct {
	Matched, Updated, Succeeded, Failed int32
	Phase                               v1alpha1.Phase
}

func countsOf(st v1alpha1.HostHooksStatus) counts {
	return counts{st.MatchedNodes, st.UpdatedNodes, st.SucceededNodes, st.FailedNodes, st.Phase}
}

// ago is a time d before t0.
func ago(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(-d)) }
