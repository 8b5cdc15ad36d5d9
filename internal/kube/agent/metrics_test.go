package agent

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
)

// scrape reads the metrics through their HTTP handler, as Prometheus
// does, and returns each sample by its series ("name" or
// `name{label="value"}`, one label at most here).
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the metrics are not in Prometheus' text format: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.Metric {
			key := name
			for _, l := range m.Label {
				key += `{` + l.GetName() + `="` + l.GetValue() + `"}`
			}
			switch {
			case m.Counter != nil:
				out[key] = m.Counter.GetValue()
			case m.Gauge != nil:
				out[key] = m.Gauge.GetValue()
			case m.Histogram != nil:
				out[key+"_count"] = float64(m.Histogram.GetSampleCount())
				out[key+"_sum"] = m.Histogram.GetSampleSum()
			}
		}
	}
	return out
}

// The metrics of applies that succeed and fail, as a scrape reads them:
// each apply counted by its result and timed, the time of the last one,
// and each hook that failed counted once, at the apply that started it,
// not again at the next apply that leaves it as it is. Go's own metrics
// are there too.
func TestMetricsAfterApplies(t *testing.T) {
	f := newFakeNode(t)
	m := NewMetrics()
	f.n.metrics = m
	want := func(step string, exp map[string]float64) map[string]float64 {
		t.Helper()
		got := scrape(t, m)
		for k, v := range exp {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", step, k, got[k], v)
			}
		}
		return got
	}
	got := want("before any apply", map[string]float64{
		`hostprov_agent_applies_total{result="succeeded"}`: 0,
		`hostprov_agent_applies_total{result="failed"}`:    0,
		"hostprov_agent_apply_duration_seconds_count":      0,
		"hostprov_agent_last_apply_timestamp_seconds":      0,
	})
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("no go_goroutines: Go's metrics are missing")
	}

	a := hostHooks("a", nil, service("a-svc"))
	nha := nodeHooks(a, true)
	before := time.Now()
	f.sync(f.view(labels.Set{}, []*v1alpha1.HostHooks{a}, []*v1alpha1.NodeHooks{nha}))
	after := time.Now()
	got = want("after a successful apply", map[string]float64{
		`hostprov_agent_applies_total{result="succeeded"}`: 1,
		`hostprov_agent_applies_total{result="failed"}`:    0,
		"hostprov_agent_apply_duration_seconds_count":      1,
	})
	if ts := got["hostprov_agent_last_apply_timestamp_seconds"]; ts < float64(before.Unix()) || ts > float64(after.Unix()+1) {
		t.Errorf("last apply at %v, want between %d and %d", ts, before.Unix(), after.Unix()+1)
	}
	if _, ok := got[`hostprov_agent_hook_failures_total{hosthooks="a"}`]; ok {
		t.Error("a hook failure counted for a, whose hook succeeded")
	}

	// b's hook fails to start: the apply failed, the hook counted.
	b := hostHooks("b", nil, service("b-svc"))
	nhb := nodeHooks(b, true)
	f.sd.FailOn("start", unitOf(t, b, 0), errStart)
	all := []*v1alpha1.HostHooks{a, b}
	st := f.sync(f.view(labels.Set{}, all, []*v1alpha1.NodeHooks{nha, nhb}))
	if st["b"].Phase != v1alpha1.NodeFailed {
		t.Fatalf("b: %+v, want Failed", st["b"])
	}
	want("after an apply whose hook failed", map[string]float64{
		`hostprov_agent_applies_total{result="succeeded"}`:  1,
		`hostprov_agent_applies_total{result="failed"}`:     1,
		`hostprov_agent_hook_failures_total{hosthooks="b"}`: 1,
		"hostprov_agent_apply_duration_seconds_count":       2,
	})

	// Another apply (a's set again, b's failed hook kept): no new
	// failure, so it succeeded, and b's failure is not counted again.
	f.sync(f.view(labels.Set{"x": "y"}, all, []*v1alpha1.NodeHooks{nha, nhb}))
	want("after an apply that leaves the failed hook", map[string]float64{
		`hostprov_agent_applies_total{result="succeeded"}`:  2,
		`hostprov_agent_applies_total{result="failed"}`:     1,
		`hostprov_agent_hook_failures_total{hosthooks="b"}`: 1,
		"hostprov_agent_apply_duration_seconds_count":       3,
	})

	// An apply that cannot be made (a conflict with a file hostprov did
	// not write) is a failed apply, with no hook failure.
	c := hostHooks("c", nil, service("c-svc"))
	if err := writeForeignUnit(f, unitOf(t, c, 0)); err != nil {
		t.Fatal(err)
	}
	st = f.sync(f.view(labels.Set{"x": "y"}, []*v1alpha1.HostHooks{a, b, c}, []*v1alpha1.NodeHooks{nha, nhb, nodeHooks(c, true)}))
	if st["c"].Phase != v1alpha1.NodeFailed || st["c"].Message == "" {
		t.Fatalf("c: %+v, want Failed with a message", st["c"])
	}
	want("after an apply with a conflict", map[string]float64{
		`hostprov_agent_applies_total{result="failed"}`:     2,
		`hostprov_agent_hook_failures_total{hosthooks="b"}`: 1,
		"hostprov_agent_apply_duration_seconds_count":       4,
	})
	if v := scrape(t, m)[`hostprov_agent_hook_failures_total{hosthooks="c"}`]; v != 0 {
		t.Errorf("c's conflict counted as %v hook failures; no hook of c ran", v)
	}
}

// A hook that fails after the apply, as a later report (systemd's signal)
// finds it, is counted once; a new agent over a node whose hook failed
// before it came does not count that failure again.
func TestMetricsFailureFoundLater(t *testing.T) {
	n := &node{metrics: NewMetrics()}
	ok := []apply.UnitReport{{Unit: "late.service", StatusOf: "late.service", Set: v1alpha1.SetName("web"), ActiveState: "active"}}
	bad := []apply.UnitReport{{Unit: "late.service", StatusOf: "late.service", Set: v1alpha1.SetName("web"), ActiveState: "failed"}}
	for i, step := range []struct {
		reports []apply.UnitReport
		want    int
	}{{ok, 0}, {bad, 1}, {bad, 0}, {ok, 0}, {bad, 1}} {
		if got := n.observe(step.reports, nil); got != step.want {
			t.Errorf("report %d: %d failures counted, want %d", i, got, step.want)
		}
	}
	if v := scrape(t, n.metrics)[`hostprov_agent_hook_failures_total{hosthooks="web"}`]; v != 2 {
		t.Errorf("hook failures of web: %v, want 2", v)
	}
	fresh := &node{metrics: NewMetrics()}
	if got := fresh.observe(bad, nil); got != 0 {
		t.Errorf("a new agent counted %d failures it found at its start, want 0", got)
	}
	if got := fresh.observe(bad, map[string]bool{"late.service": true}); got != 1 {
		t.Errorf("a failure of a unit the apply started again: %d counted, want 1", got)
	}
}

// writeForeignUnit writes unit into the unit directory as someone else
// than hostprov would: a file no state of hostprov's has.
func writeForeignUnit(f *fakeNode, unit string) error {
	return os.WriteFile(filepath.Join(f.n.opts.UnitDirPath(), unit), []byte("[Service]\nExecStart=/bin/true\n"), 0o644)
}

// metricNames are the names of the metrics the collectors describe.
func metricNames(cs ...prometheus.Collector) []string {
	ch := make(chan *prometheus.Desc, 16)
	go func() {
		for _, c := range cs {
			c.Describe(ch)
		}
		close(ch)
	}()
	var out []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// The section on metrics in docs/kubernetes.md names every metric of the
// agent's own.
func TestMetricsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics()
	names := metricNames(m.applies, m.hookFailures, m.duration, m.lastApply)
	if len(names) != 4 {
		t.Fatalf("metric names %q, want 4", names)
	}
	for _, n := range names {
		if !strings.Contains(string(readme), "`"+n) {
			t.Errorf("docs/kubernetes.md does not name the agent's metric %s", n)
		}
	}
}
