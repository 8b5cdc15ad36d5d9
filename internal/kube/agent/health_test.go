package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

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
