package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
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
	"k8s.io/client-go/rest"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
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

// fakeAPIServer answers the agent's lists, once release is closed, with
// empty lists, and its watches with nothing until they end; a watch that
// asks for the initial events (a watch list) is refused, so that the
// client lists instead.
func fakeAPIServer(t *testing.T, release <-chan struct{}) *httptest.Server {
	t.Helper()
	kinds := map[string]string{
		"/api/v1/nodes":                         "NodeList",
		"/apis/hostprov.dev/v1alpha1/hosthooks": "HostHooksList",
		"/apis/hostprov.dev/v1alpha1/nodehooks": "NodeHooksList",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, ok := kinds[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
				"reason": "BadRequest", "code": 400, "message": "no watch list here"})
		case q.Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			apiVersion := "hostprov.dev/v1alpha1"
			if kind == "NodeList" {
				apiVersion = "v1"
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": kind, "apiVersion": apiVersion,
				"metadata": map[string]any{"resourceVersion": "1"}, "items": []any{}})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func probe(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// waitProbe waits until path answers code, and returns its body.
func waitProbe(t *testing.T, h http.Handler, path string, code int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, body := probe(t, h, path)
		if c == code {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d %q, want %d", path, c, body, code)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The agent is not ready while its caches have not synced, nor after,
// until it has reached systemd; then it is. It is alive throughout.
func TestReadiness(t *testing.T) {
	release := make(chan struct{})
	srv := fakeAPIServer(t, release)
	connect := make(chan struct{})
	a, err := New(Config{NodeName: testNode, REST: &rest.Config{Host: srv.URL}, Options: apply.Options{Root: t.TempDir()},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(ctx context.Context) (*Systemd, error) {
			select {
			case <-connect:
				return &Systemd{Systemd: applytest.New()}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Health()
	if c, body := probe(t, h, "/readyz"); c != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("readyz before the agent runs: %d %q, want 503, not synced", c, body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	// The lists are held: the caches cannot sync.
	time.Sleep(200 * time.Millisecond)
	if c, body := probe(t, h, "/readyz"); c != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("readyz while the lists are held: %d %q, want 503, not synced", c, body)
	}
	if c, _ := probe(t, h, "/healthz"); c != http.StatusOK {
		t.Errorf("healthz while the caches sync: %d, want 200", c)
	}
	close(release)
	// Synced, systemd not reached yet.
	deadline := time.Now().Add(30 * time.Second)
	for !a.health.synced.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the caches did not sync")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c, body := probe(t, h, "/readyz"); c != http.StatusServiceUnavailable || !strings.Contains(body, "systemd") {
		t.Errorf("readyz before systemd is reached: %d %q, want 503, systemd", c, body)
	}
	close(connect)
	if body := waitProbe(t, h, "/readyz", http.StatusOK); body != "ok" {
		t.Errorf("readyz: %q, want ok", body)
	}
	if c, _ := probe(t, h, "/healthz"); c != http.StatusOK {
		t.Errorf("healthz: %d, want 200", c)
	}
}

// Watches that end while the agent runs make it neither alive nor ready.
func TestLivenessWatchesEnded(t *testing.T) {
	a := &Agent{}
	a.health.synced.Store(true)
	a.health.reached.Store(true)
	h := a.Health()
	if c, _ := probe(t, h, "/healthz"); c != http.StatusOK {
		t.Fatalf("healthz: %d, want 200", c)
	}
	a.health.watchesEnded.Store(true)
	for _, p := range []string{"/healthz", "/readyz"} {
		if c, body := probe(t, h, p); c != http.StatusServiceUnavailable || !strings.Contains(body, "watches") {
			t.Errorf("%s after the watches ended: %d %q, want 503", p, c, body)
		}
	}
}

// freeAddr is a local address no one listens on (as far as anyone can
// tell a moment later).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// Serve serves the metrics and the probes each on its address, or both on
// one, answers nothing else, and ends with its context.
func TestServe(t *testing.T) {
	a, err := New(Config{NodeName: testNode, REST: &rest.Config{Host: "http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	metrics, health := freeAddr(t), freeAddr(t)
	for _, c := range []struct{ metrics, health string }{{metrics, health}, {metrics, metrics}} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- a.Serve(ctx, c.metrics, c.health) }()
		want := func(url string, code int, has string) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for {
				got, body, err := get(url)
				if err == nil && got == code && strings.Contains(body, has) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("GET %s: %d %v; want %d with %q", url, got, err, code, has)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		want("http://"+c.metrics+"/metrics", http.StatusOK, "hostprov_agent_applies_total")
		want("http://"+c.health+"/healthz", http.StatusOK, "ok")
		want("http://"+c.health+"/readyz", http.StatusServiceUnavailable, "not synced")
		if c.metrics != c.health {
			want("http://"+c.health+"/metrics", http.StatusNotFound, "")
			want("http://"+c.metrics+"/healthz", http.StatusNotFound, "")
		}
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Serve did not end with its context")
		}
		if _, _, err := get("http://" + c.metrics + "/metrics"); err == nil {
			t.Error("the metrics are still served after the context ended")
		}
	}
	// "0" for both: nothing to serve, and nothing to wait for.
	if err := a.Serve(context.Background(), "0", ""); err != nil {
		t.Errorf("Serve with no addresses: %v", err)
	}
	// An address that cannot be listened on is an error.
	if err := a.Serve(context.Background(), metrics, "256.0.0.1:1"); err == nil {
		t.Error("Serve on an address that cannot be listened on did not fail")
	}
}
