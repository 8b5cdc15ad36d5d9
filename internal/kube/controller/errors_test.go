package controller

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// stepHooks are a command hook "prep" with two steps and a service "svc".
var stepHooks = []v1alpha1.Hook{
	{Name: "prep", Steps: []v1alpha1.Step{{Name: "fetch", Run: []string{"/bin/true"}}, {Name: "install", Run: []string{"/bin/false"}}}},
	{Name: "svc", Exec: []string{"/bin/sleep", "infinity"}},
}

func i32(n int32) *int32 { return &n }

func at(min int) *metav1.Time {
	t := metav1.NewTime(t0.Add(time.Duration(min) * time.Minute))
	return &t
}

// failedNode is a NodeHooks of node that applied the current hooks and
// failed, with hooks as its results.
func failedNode(node string, applied int, message string, hooks ...v1alpha1.HookResult) v1alpha1.NodeHooks {
	h := v1alpha1.HooksHash(stepHooks)
	nh := nodeHooks(node, h, h, v1alpha1.NodeFailed)
	nh.Status.AppliedAt = at(applied)
	nh.Status.Message = message
	nh.Status.Hooks = hooks
	return nh
}

// installFailed is prep's result with its install step failed at min with
// code, after fetch succeeded, and the output the summary must not show.
func installFailed(min int, code int32) v1alpha1.HookResult {
	return v1alpha1.HookResult{
		Name: "prep", Unit: "prep.service", Phase: "failed", Message: fmt.Sprintf("install exited %d", code),
		Steps: []v1alpha1.StepResult{
			{Name: "fetch", State: "succeeded", ExitCode: i32(0), FinishedAt: at(min - 1)},
			{Name: "install", State: "failed", ExitCode: i32(code), Reason: "exit-code", FinishedAt: at(min)},
		},
		Output: []string{"SECRET OUTPUT"},
	}
}

var svcOK = v1alpha1.HookResult{Name: "svc", Unit: "svc.service", Phase: "active", Output: []string{"SECRET OUTPUT"}}

func TestErrorSummaries(t *testing.T) {
	hh := hostHooks(withHooks(stepHooks))
	svcFailed := v1alpha1.HookResult{Name: "svc", Unit: "svc.service", Phase: "failed", ExitCode: i32(9), Reason: "signal", Message: "killed"}

	ns := nodes(12, nil)
	var nhs []v1alpha1.NodeHooks
	// 12 nodes fail prep's install step, n12 last (with exit code 12),
	// although its name is not the last; n05's svc failed too; n03 has a
	// message of the whole apply as well.
	for i := 12; i >= 1; i-- {
		node := fmt.Sprintf("n%02d", i)
		results := []v1alpha1.HookResult{installFailed(100+i, int32(i)), svcOK}
		msg := ""
		switch i {
		case 5:
			results[1] = svcFailed
		case 3:
			msg = "conflict: /etc/systemd/system/x.service belongs to spec set other"
		}
		nhs = append(nhs, failedNode(node, i, msg, results...))
	}
	// A node of another hook: its failure is of an unknown hook, with no
	// step to blame, and last.
	ns = append(ns, Node{Name: "z"})
	nhs = append(nhs, failedNode("z", 1, "", v1alpha1.HookResult{Name: "gone", Unit: "gone.service", Phase: "failed", Reason: "exit-code", ExitCode: i32(1)}))
	// Nodes that failed nothing in particular count as the apply's.
	ns = append(ns, Node{Name: "y"})
	nhs = append(nhs, failedNode("y", 200, "", svcOK))
	// Succeeded nodes and nodes that failed earlier hooks are not
	// summed.
	ns = append(ns, Node{Name: "ok"}, Node{Name: "old"})
	okNode := nodeHooks("ok", v1alpha1.HooksHash(stepHooks), v1alpha1.HooksHash(stepHooks), v1alpha1.NodeSucceeded)
	okNode.Status.Hooks = []v1alpha1.HookResult{installFailed(1, 1)}
	oldNode := failedNode("old", 300, "old failure", installFailed(300, 99))
	oldNode.Status.AppliedHash = "sha256-old"
	nhs = append(nhs, okNode, oldNode)

	d := Decide(hh, ns, nhs, t0)
	if d.Status.FailedNodes != 14 {
		t.Errorf("failedNodes = %d, want 14", d.Status.FailedNodes)
	}
	first := []string{"n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10"}
	want := []v1alpha1.ErrorSummary{
		{Count: 2, Nodes: []string{"n03", "y"}, Message: ""},
		{Hook: "prep", Step: "install", Count: 12, Nodes: first, ExitCode: i32(12), Reason: "exit-code", Message: "install exited 12"},
		{Hook: "svc", Count: 1, Nodes: []string{"n05"}, ExitCode: i32(9), Reason: "signal", Message: "killed"},
		{Hook: "gone", Count: 1, Nodes: []string{"z"}, ExitCode: i32(1), Reason: "exit-code"},
	}
	if diff := cmp.Diff(want, d.Status.Errors); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	for _, e := range d.Status.Errors {
		if strings.Contains(fmt.Sprint(e), "SECRET") {
			t.Errorf("output in the summary: %+v", e)
		}
	}

	// The latest failure of the apply is y's (at 200), though n03 has a
	// message: the last one wins whatever it says.
	nhs[len(nhs)-3].Status.AppliedAt = at(0)
	d = Decide(hh, ns, nhs, t0)
	if got := d.Status.Errors[0]; got.Message != "conflict: /etc/systemd/system/x.service belongs to spec set other" {
		t.Errorf("the apply's summary with y failing first: %+v", got)
	}

	// The same failures in another order sum up the same.
	rev := make([]v1alpha1.NodeHooks, len(nhs))
	for i := range nhs {
		rev[len(nhs)-1-i] = nhs[i]
	}
	if diff := cmp.Diff(d.Status.Errors, Decide(hh, ns, rev, t0).Status.Errors); diff != "" {
		t.Errorf("errors depend on the order of the NodeHooks (-first +reversed):\n%s", diff)
	}
}

// TestErrorSummariesTie: failures at the same time are told apart by node
// name, so that the same NodeHooks always give the same status.
func TestErrorSummariesTie(t *testing.T) {
	hh := hostHooks(withHooks(stepHooks))
	a := failedNode("a", 1, "", installFailed(5, 1))
	b := failedNode("b", 1, "", installFailed(5, 2))
	for _, nhs := range [][]v1alpha1.NodeHooks{{a, b}, {b, a}} {
		d := Decide(hh, []Node{{Name: "a"}, {Name: "b"}}, nhs, t0)
		if len(d.Status.Errors) != 1 || *d.Status.Errors[0].ExitCode != 2 {
			t.Errorf("errors %+v: want b's exit code 2", d.Status.Errors)
		}
	}
}

// TestErrorSummariesStepOrder: steps in the order of the hook, and a hook
// failed as a whole before its steps.
func TestErrorSummariesStepOrder(t *testing.T) {
	hh := hostHooks(withHooks(stepHooks))
	r := installFailed(5, 1)
	r.Steps[0].State = "failed"
	a := failedNode("a", 1, "", r)
	b := failedNode("b", 1, "", v1alpha1.HookResult{Name: "prep", Phase: "failed", Reason: "timeout"})
	d := Decide(hh, []Node{{Name: "a"}, {Name: "b"}}, []v1alpha1.NodeHooks{a, b}, t0)
	var got []string
	for _, e := range d.Status.Errors {
		got = append(got, e.Hook+"/"+e.Step)
	}
	if diff := cmp.Diff([]string{"prep/", "prep/fetch", "prep/install"}, got); diff != "" {
		t.Errorf("summaries (-want +got):\n%s", diff)
	}
}

// TestErrorSummariesNone: no failed node, no summaries (not an empty
// list, which would be a change of the status from none).
func TestErrorSummariesNone(t *testing.T) {
	d := Decide(hostHooks(), nodes(1, nil), []v1alpha1.NodeHooks{nodeHooks("n01", hashA, hashA, v1alpha1.NodeSucceeded)}, t0)
	if d.Status.Errors != nil {
		t.Errorf("errors = %#v, want nil", d.Status.Errors)
	}
}

// TestDecideScale: a reconcile of 5,000 nodes is one pass, and sums up
// thousands of failures into one summary per step.
func TestDecideScale(t *testing.T) {
	hh := hostHooks(withHooks(stepHooks), withMaxUnavailable(intstrPercent(10)), withThreshold(10000))
	var ns []Node
	var nhs []v1alpha1.NodeHooks
	for i := range 5000 {
		node := fmt.Sprintf("node-%05d", i)
		ns = append(ns, Node{Name: node})
		if i%2 == 0 {
			nhs = append(nhs, failedNode(node, i, "", installFailed(i, 1), svcOK))
		}
	}
	d := Decide(hh, ns, nhs, t0)
	if len(d.Create) != 2500 || len(d.Status.Errors) != 1 || d.Status.Errors[0].Count != 2500 || len(d.Status.Errors[0].Nodes) != v1alpha1.MaxErrorNodes {
		t.Errorf("create %d, errors %+v", len(d.Create), d.Status.Errors)
	}
	// 10% of 5,000 is 500; the 2,500 failed nodes are done, within the
	// threshold, and take none of them.
	if len(d.Approve) != 500 || d.Approve[0] != v1alpha1.NodeHooksName("hh", "node-00001") {
		t.Errorf("approved %d (first %v) with 2,500 failed nodes done, want 500 from node-00001", len(d.Approve), d.Approve[:min(1, len(d.Approve))])
	}
}

func BenchmarkDecide(b *testing.B) {
	hh := hostHooks(withHooks(stepHooks), withMaxUnavailable(intstrPercent(10)))
	h := v1alpha1.HooksHash(stepHooks)
	var ns []Node
	var nhs []v1alpha1.NodeHooks
	for i := range 1000 {
		node := fmt.Sprintf("node-%05d", i)
		ns = append(ns, Node{Name: node, Labels: map[string]string{"role": "worker"}})
		nhs = append(nhs, nodeHooks(node, h, h, v1alpha1.NodeSucceeded))
	}
	b.ReportAllocs()
	for b.Loop() {
		Decide(hh, ns, nhs, t0)
	}
}

func intstrPercent(n int) intstr.IntOrString { return intstr.FromString(fmt.Sprintf("%d%%", n)) }
