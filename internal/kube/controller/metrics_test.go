package controller

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// rolloutMetrics is the text of the rollout metrics of the HostHooks
// named hh in controller-runtime's registry, as its /metrics serves them.
func rolloutMetrics(t *testing.T, hh string) string {
	t.Helper()
	fams, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "hostprov_hosthooks_") {
			continue
		}
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "hosthooks" && l.GetValue() == hh {
					out = append(out, f.GetName()+" "+strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64))
				}
			}
		}
	}
	return strings.Join(out, "\n")
}

// The rollout gauges of a HostHooks after a reconcile over its NodeHooks:
// its nodes by state, and whether it is paused, complete or degraded;
// after the HostHooks is gone, none.
func TestRolloutMetrics(t *testing.T) {
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	const name = "metrics-web"
	hh := hostHooks(withMaxUnavailable(intstr.FromInt32(1)))
	hh.Name, hh.UID = name, "uid-metrics-web"
	nhFor := func(node, applied string, phase v1alpha1.NodePhase) *v1alpha1.NodeHooks {
		nh := newNodeHooks(hh, node)
		nh.Spec.HooksHash = hashA
		nh.Status.AppliedHash, nh.Status.Phase = applied, phase
		return nh
	}
	objs := []client.Object{hh,
		nhFor("n1", hashA, v1alpha1.NodeSucceeded),
		nhFor("n2", hashA, v1alpha1.NodeSucceeded),
		nhFor("n3", hashA, v1alpha1.NodeFailed),
	}
	for _, n := range []string{"n1", "n2", "n3", "n4"} {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	cl := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.HostHooks{}, &v1alpha1.NodeHooks{}).Build()
	r := &Reconciler{Client: cl}
	ctx := context.Background()
	req := reconcile.Request{}
	req.Name = name
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.HostHooks
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	// Four nodes matched, three updated, two succeeded, one failed: the
	// failure threshold (0) is exceeded, so degraded, neither paused nor
	// complete.
	want := strings.Join([]string{
		"hostprov_hosthooks_failed_nodes 1",
		"hostprov_hosthooks_matched_nodes 4",
		"hostprov_hosthooks_rollout_complete 0",
		"hostprov_hosthooks_rollout_degraded 1",
		"hostprov_hosthooks_rollout_paused 0",
		"hostprov_hosthooks_rollout_stalled 1",
		"hostprov_hosthooks_succeeded_nodes 2",
		"hostprov_hosthooks_updated_nodes 3",
	}, "\n")
	if m := rolloutMetrics(t, name); m != want {
		t.Errorf("metrics after a reconcile:\n%s\nwant:\n%s\n(status %+v)", m, want, countsOf(got.Status))
	}
	if c := countsOf(got.Status); c.Matched != 4 || c.Updated != 3 || c.Succeeded != 2 || c.Failed != 1 {
		t.Errorf("status %+v: the metrics must say what the status says", c)
	}

	setPhase := func(node string, phase v1alpha1.NodePhase) {
		t.Helper()
		var nh v1alpha1.NodeHooks
		if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.NodeHooksName(name, node)}, &nh); err != nil {
			t.Fatal(err)
		}
		nh.Status.AppliedHash, nh.Status.Phase = nh.Spec.HooksHash, phase
		if err := cl.Status().Update(ctx, &nh); err != nil {
			t.Fatal(err)
		}
	}
	setPause := func(on bool) {
		t.Helper()
		if err := cl.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Rollout.Pause = on
		if err := cl.Update(ctx, &got); err != nil {
			t.Fatal(err)
		}
	}
	wantLines := func(step string, lines ...string) {
		t.Helper()
		if _, err := r.Reconcile(ctx, req); err != nil {
			t.Fatal(err)
		}
		m := "\n" + rolloutMetrics(t, name) + "\n"
		for _, l := range lines {
			if !strings.Contains(m, "\n"+l+"\n") {
				t.Errorf("%s: no %q in\n%s", step, l, m)
			}
		}
	}
	// Paused, n3 fixed: paused, nothing failed, not degraded; n4 waits
	// for its turn, so not complete.
	setPause(true)
	setPhase("n3", v1alpha1.NodeSucceeded)
	wantLines("paused, n3 fixed", "hostprov_hosthooks_rollout_paused 1", "hostprov_hosthooks_failed_nodes 0",
		"hostprov_hosthooks_rollout_degraded 0", "hostprov_hosthooks_rollout_complete 0",
		"hostprov_hosthooks_succeeded_nodes 3", "hostprov_hosthooks_updated_nodes 3")
	// Resumed: n4 approved, not applied yet; once it applied, complete.
	setPause(false)
	wantLines("resumed", "hostprov_hosthooks_rollout_paused 0", "hostprov_hosthooks_updated_nodes 3",
		"hostprov_hosthooks_rollout_complete 0")
	setPhase("n4", v1alpha1.NodeSucceeded)
	wantLines("n4 done", "hostprov_hosthooks_updated_nodes 4", "hostprov_hosthooks_succeeded_nodes 4",
		"hostprov_hosthooks_rollout_complete 1")

	// Gone: its series are removed.
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, &got); err != nil {
		t.Fatal(err)
	}
	got.Finalizers = nil
	if err := cl.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	if m := rolloutMetrics(t, name); m != "" {
		t.Errorf("metrics of a deleted HostHooks:\n%s", m)
	}
}

// The section on metrics in docs/kubernetes.md names every rollout metric.
func TestRolloutMetricsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 16)
	go func() {
		for _, g := range rolloutNodes {
			g.Describe(ch)
		}
		for _, g := range rolloutState {
			g.Describe(ch)
		}
		close(ch)
	}()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	n := 0
	for d := range ch {
		m := fqName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		n++
		if !strings.Contains(string(readme), "`"+m[1]+"`") {
			t.Errorf("docs/kubernetes.md does not name the rollout metric %s", m[1])
		}
	}
	if n != 8 {
		t.Errorf("%d rollout metrics, want 8", n)
	}
}
