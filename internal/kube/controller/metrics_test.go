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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	m := newMetricsRollout(t)
	got := m.reconcile()
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
	if text := rolloutMetrics(t, m.name); text != want {
		t.Errorf("metrics after a reconcile:\n%s\nwant:\n%s\n(status %+v)", text, want, countsOf(got.Status))
	}
	if c := countsOf(got.Status); c.Matched != 4 || c.Updated != 3 || c.Succeeded != 2 || c.Failed != 1 {
		t.Errorf("status %+v: the metrics must say what the status says", c)
	}

	// Paused, n3 fixed: paused, nothing failed, not degraded; n4 waits
	// for its turn, so not complete.
	m.setPause(true)
	m.setPhase("n3", v1alpha1.NodeSucceeded)
	m.wantLines("paused, n3 fixed", "hostprov_hosthooks_rollout_paused 1", "hostprov_hosthooks_failed_nodes 0",
		"hostprov_hosthooks_rollout_degraded 0", "hostprov_hosthooks_rollout_complete 0",
		"hostprov_hosthooks_succeeded_nodes 3", "hostprov_hosthooks_updated_nodes 3")
	// Resumed: n4 approved, not applied yet; once it applied, complete.
	m.setPause(false)
	m.wantLines("resumed", "hostprov_hosthooks_rollout_paused 0", "hostprov_hosthooks_updated_nodes 3",
		"hostprov_hosthooks_rollout_complete 0")
	m.setPhase("n4", v1alpha1.NodeSucceeded)
	m.wantLines("n4 done", "hostprov_hosthooks_updated_nodes 4", "hostprov_hosthooks_succeeded_nodes 4",
		"hostprov_hosthooks_rollout_complete 1")

	// Gone: its series are removed.
	got = m.get()
	got.Finalizers = nil
	if err := m.cl.Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	if err := m.cl.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	m.reconcile()
	if text := rolloutMetrics(t, m.name); text != "" {
		t.Errorf("metrics of a deleted HostHooks:\n%s", text)
	}
}

// metricsRollout is TestRolloutMetrics' HostHooks, with maxUnavailable 1,
// over four nodes, reconciled by a Reconciler over a fake client: n1 and
// n2 succeeded, n3 failed, n4 has no NodeHooks yet.
type metricsRollout struct {
	t    *testing.T
	cl   client.Client
	r    *Reconciler
	name string
}

func newMetricsRollout(t *testing.T) *metricsRollout {
	t.Helper()
	s, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	m := &metricsRollout{t: t, name: "metrics-web"}
	hh := hostHooks(withMaxUnavailable(intstr.FromInt32(1)))
	hh.Name, hh.UID = m.name, "uid-metrics-web"
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
	m.cl = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.HostHooks{}, &v1alpha1.NodeHooks{}).Build()
	m.r = &Reconciler{Client: m.cl}
	return m
}

// reconcile reconciles the HostHooks, and returns it as it is after.
func (m *metricsRollout) reconcile() *v1alpha1.HostHooks {
	m.t.Helper()
	req := reconcile.Request{}
	req.Name = m.name
	if _, err := m.r.Reconcile(context.Background(), req); err != nil {
		m.t.Fatal(err)
	}
	return m.get()
}

// get is the HostHooks as the client has it; nil once it is gone.
func (m *metricsRollout) get() *v1alpha1.HostHooks {
	m.t.Helper()
	var got v1alpha1.HostHooks
	err := m.cl.Get(context.Background(), client.ObjectKey{Name: m.name}, &got)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		m.t.Fatal(err)
	}
	return &got
}

func (m *metricsRollout) setPhase(node string, phase v1alpha1.NodePhase) {
	m.t.Helper()
	ctx := context.Background()
	var nh v1alpha1.NodeHooks
	if err := m.cl.Get(ctx, client.ObjectKey{Name: v1alpha1.NodeHooksName(m.name, node)}, &nh); err != nil {
		m.t.Fatal(err)
	}
	nh.Status.AppliedHash, nh.Status.Phase = nh.Spec.HooksHash, phase
	if err := m.cl.Status().Update(ctx, &nh); err != nil {
		m.t.Fatal(err)
	}
}

func (m *metricsRollout) setPause(on bool) {
	m.t.Helper()
	got := m.get()
	got.Spec.Rollout.Pause = on
	if err := m.cl.Update(context.Background(), got); err != nil {
		m.t.Fatal(err)
	}
}

// wantLines reconciles, and checks that the metrics have the lines.
func (m *metricsRollout) wantLines(step string, lines ...string) {
	m.t.Helper()
	m.reconcile()
	text := "\n" + rolloutMetrics(m.t, m.name) + "\n"
	for _, l := range lines {
		if !strings.Contains(text, "\n"+l+"\n") {
			m.t.Errorf("%s: no %q in\n%s", step, l, text)
		}
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
