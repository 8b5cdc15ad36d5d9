package cli

import (
	"bytes"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// syncBuffer is a buffer that the command writes to while the test reads.
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

// TestControllerCommand runs hostprov controller against a real API
// server with a kubeconfig, as a user would outside the cluster: it takes
// the Lease in --namespace, creates the NodeHooks of a HostHooks, and ends
// cleanly on SIGTERM.
func TestControllerCommand(t *testing.T) {
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../deploy/crds")
	cl := c.Client(t)
	ctx := t.Context()
	// An established CRD may be missing from discovery for a moment
	// still, on a loaded machine.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := cl.List(ctx, &v1alpha1.HostHooksList{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	const ns = "hostprov-test"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}); err != nil {
		t.Fatal(err)
	}
	hooks := []v1alpha1.Hook{{Name: "hello", Exec: []string{"/bin/echo", "hello"}}}
	if err := cl.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: v1alpha1.HostHooksSpec{Hooks: hooks}}); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run([]string{"controller", "--kubeconfig", c.Kubeconfig(t), "--namespace", ns,
			"--metrics-addr", "0", "--health-addr", "127.0.0.1:0"}, strings.NewReader(""), &stdout, &stderr)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var nh v1alpha1.NodeHooks
		err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.NodeHooksName("hello", "n1")}, &nh)
		if err == nil && nh.Spec.HooksHash == v1alpha1.HooksHash(hooks) {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("hostprov controller exited %d before it acted:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no approved NodeHooks for n1 (%v); the controller's log:\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lease coordinationv1.Lease
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.LeaseName}, &lease); err != nil {
		t.Errorf("the Lease in %s: %v", ns, err)
	}
	var nh v1alpha1.NodeHooks
	if err := cl.Get(ctx, client.ObjectKey{Name: v1alpha1.NodeHooksName("hello", "n1")}, &nh); err != nil {
		t.Fatal(err)
	}
	for _, mf := range nh.ManagedFields {
		if mf.Manager != controller.Name {
			t.Errorf("NodeHooks written by %q, want %q", mf.Manager, controller.Name)
		}
	}

	// The probes answer where the log says they are.
	m := regexp.MustCompile(`name="health probe" addr=(127\.0\.0\.1:[0-9]+)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Errorf("the log does not say where the probes are:\n%s", stderr.String())
	} else {
		for _, probe := range []string{"/healthz", "/readyz"} {
			resp, err := http.Get("http://" + m[1] + probe)
			if err != nil {
				t.Errorf("%s: %v", probe, err)
				continue
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %s", probe, resp.Status)
			}
		}
	}

	// The command has its signal handler by now: it acted.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit code %d after SIGTERM, want %d; stderr:\n%s", code, ExitOK, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("hostprov controller did not end after SIGTERM; stderr:\n%s", stderr.String())
	}
	if stdout.String() != "" {
		t.Errorf("stdout: %q", stdout.String())
	}
	if !regexp.MustCompile(`msg="Successfully acquired lease" .*lock=` + ns + "/" + controller.LeaseName).MatchString(stderr.String()) {
		t.Errorf("the log does not say the lease was acquired:\n%s", stderr.String())
	}
}
