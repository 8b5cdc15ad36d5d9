//go:build kube

package cli

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// The clients of kubetest log through controller-runtime, which complains
// of a logger never set.

// syncBuffer is a bytes.Buffer for a process's stderr that the test reads
// while the process writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRigAgentCommand runs hostprov agent (the built binary) as a node's
// agent: against a real API server, with a rig's systemd as the node's
// (--root and --systemd-socket, the rig's). It applies an approved
// HostHooks and reports it, and SIGTERM ends it at once with exit code 0.
func TestRigAgentCommand(t *testing.T) {
	r := systemdtest.Start(t)
	c := kubetest.Start(t)
	bin := testbin.Hostprov(t, "kube")
	c.InstallCRDs(t, "../../deploy/crds")
	cl := c.Client(t)
	ctx := t.Context()
	const node = "node-c"
	if err := cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "marker"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{{Name: "marker", Steps: []v1alpha1.Step{{Name: "mark", Sh: "echo run >> /var/lib/marker-runs"}}}}}}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	nh := &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, node), Labels: map[string]string{
			v1alpha1.LabelNode: v1alpha1.LabelValue(node), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: node, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
	if err := cl.Create(ctx, nh); err != nil {
		t.Fatal(err)
	}

	metrics, health := freeAddr(t), freeAddr(t)
	cmd := exec.Command(bin, "agent", "--kubeconfig", c.Kubeconfig(t), "--root", r.Root, "--systemd-socket", r.Socket,
		"--metrics-addr", metrics, "--health-addr", health)
	cmd.Env = append(os.Environ(), "NODE_NAME="+node)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-exited
		}
		t.Logf("hostprov agent's stderr:\n%s", stderr.String())
	})

	var got v1alpha1.NodeHooks
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
			return false, err
		}
		return got.Status.Phase == v1alpha1.NodeSucceeded, nil
	})
	if err != nil {
		t.Fatalf("NodeHooks not Succeeded: %v; status %+v", err, got.Status)
	}
	if data, err := os.ReadFile(filepath.Join(r.Root, "var/lib/marker-runs")); err != nil || string(data) != "run\n" {
		t.Errorf("the hook's runs: %q, %v; want one", data, err)
	}
	// Synced and connected to systemd: ready, and its apply counted.
	waitGet(t, "http://"+health+"/readyz", http.StatusOK, "ok")
	waitGet(t, "http://"+metrics+"/metrics", http.StatusOK, `hostprov_agent_applies_total{result="failed"} 0`)
	if _, body, err := httpGet("http://" + metrics + "/metrics"); err != nil || strings.Contains(body, `hostprov_agent_applies_total{result="succeeded"} 0`) {
		t.Errorf("no successful apply in the metrics (%v):\n%s", err, body)
	}

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			t.Errorf("after SIGTERM: %v; want exit code 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hostprov agent still runs 10s after SIGTERM")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("hostprov agent took %v to end after SIGTERM", d)
	}
	if !strings.Contains(stderr.String(), "msg=stopped signal=terminated") {
		t.Errorf("stderr does not say it stopped for SIGTERM")
	}
}
