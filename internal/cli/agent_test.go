//go:build kube

package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// httpGet is the status and body of a GET of url.
func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// waitGet waits until a GET of url answers code with a body that has has.
func waitGet(t *testing.T, url string, code int, has string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body, err := httpGet(url)
		if err == nil && got == code && strings.Contains(body, has) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %q %v; want %d with %q", url, got, body, err, code, has)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hangingKubeconfig is a kubeconfig of an API server that answers no
// request until the test ends: an agent of it never syncs.
func hangingKubeconfig(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: %q}\n"+
		"contexts:\n- name: c\n  context: {cluster: c, user: u}\nusers:\n- name: u\n  user: {}\ncurrent-context: c\n", srv.URL)
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// hostprov agent serves its metrics on --metrics-addr and its probes on
// --health-addr from its start: alive, not ready while its caches have
// not synced. An address it cannot listen on ends it with an error.
func TestAgentCommandServes(t *testing.T) {
	kubeconfig := hangingKubeconfig(t)
	metrics, health := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	c := newAgent()
	var stderr bytes.Buffer
	c.SetErr(&stderr)
	c.SetOut(io.Discard)
	c.SetArgs([]string{"--node-name", "n1", "--kubeconfig", kubeconfig, "--root", t.TempDir(),
		"--metrics-addr", metrics, "--health-addr", health})
	done := make(chan error, 1)
	go func() { done <- c.ExecuteContext(ctx) }()
	waitGet(t, "http://"+metrics+"/metrics", http.StatusOK, "hostprov_agent_applies_total")
	waitGet(t, "http://"+health+"/healthz", http.StatusOK, "ok")
	waitGet(t, "http://"+health+"/readyz", http.StatusServiceUnavailable, "not synced")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("hostprov agent: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hostprov agent did not end with its context")
	}

	// The metrics address taken by someone else.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c = newAgent()
	c.SetErr(io.Discard)
	c.SetOut(io.Discard)
	c.SetArgs([]string{"--node-name", "n1", "--kubeconfig", kubeconfig, "--root", t.TempDir(),
		"--metrics-addr", l.Addr().String(), "--health-addr", "0"})
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("hostprov agent on a taken address: %v; want address already in use", err)
	}
}

// The table of metrics and probes in docs/kubernetes.md gives each
// command's default addresses.
func TestMetricsAddressesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*cobra.Command{"agent": newAgent(), "controller": newController()} {
		row := ""
		for _, l := range strings.Split(string(readme), "\n") {
			if strings.HasPrefix(l, "| `hostprov "+name+"` |") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("docs/kubernetes.md's table of metrics and probes has no row for hostprov %s", name)
			continue
		}
		for _, flag := range []string{"metrics-addr", "health-addr"} {
			if def := c.Flags().Lookup(flag).DefValue; !strings.Contains(row, "`"+def+"`") {
				t.Errorf("docs/kubernetes.md's row for hostprov %s lacks --%s's default %s: %s", name, flag, def, row)
			}
		}
	}
}

// TestAgentCommandRefusesBadDurations: a negative --watch-spread or a
// --drain-timeout that is not positive is refused, as invalid input, before
// the agent reaches for the API server.
func TestAgentCommandRefusesBadDurations(t *testing.T) {
	for _, tt := range []struct{ flag, want string }{
		{"--watch-spread=-1s", "--watch-spread -1s: give a duration of 0 or more"},
		{"--drain-timeout=0s", "--drain-timeout 0s: give a positive duration"},
	} {
		var out, errOut bytes.Buffer
		// A kubeconfig that names no server: were it read first, the
		// error would be about it.
		code := Run([]string{"agent", "--node-name=n", "--kubeconfig=" + filepath.Join(t.TempDir(), "none"), tt.flag}, nil, &out, &errOut)
		if code != ExitInvalid || !strings.Contains(errOut.String(), tt.want) {
			t.Errorf("agent %s: exit %d, %q; want exit %d and %q", tt.flag, code, errOut.String(), ExitInvalid, tt.want)
		}
	}
}
