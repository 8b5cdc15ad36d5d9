//go:build kube

package cli

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/deploytest"
	"github.com/hostprov/hostprov/internal/kube/admission"
	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// TestControllerCommand runs hostprov controller against a real API
// server with a kubeconfig, as a user would outside the cluster: it takes
// the Lease in --namespace, creates the NodeHooks of a HostHooks, and ends
// cleanly on SIGTERM.
func TestControllerCommand(t *testing.T) {
	c, cl := startAPI(t)
	ctx := t.Context()
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

	// The webhook's configuration, as deploy/ has it but failing open:
	// no Service routes to this process, and the test sends its reviews
	// itself.
	vwc := webhookConfig(t, ns)
	if err := cl.Create(ctx, vwc); err != nil {
		t.Fatal(err)
	}
	webhookAddr, healthAddr := freeAddr(t), freeAddr(t)

	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run([]string{"controller", "--kubeconfig", c.Kubeconfig(t), "--namespace", ns,
			"--metrics-addr", "0", "--health-addr", healthAddr,
			"--webhook-addr", webhookAddr, "--webhook-config", vwc.Name}, strings.NewReader(""), &stdout, &stderr)
	}()
	waitApproved(t, cl, hooks, done, &stderr)
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

	checkProbes(t, healthAddr)

	checkWebhook(t, cl, ns, vwc.Name, webhookAddr)

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

// startAPI starts an API server with hostprov's CRDs, and returns it and a
// client once the CRDs are served.
func startAPI(t *testing.T) (*kubetest.Cluster, client.Client) {
	t.Helper()
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../deploy/crds")
	cl := c.Client(t)
	// An established CRD may be missing from discovery for a moment
	// still, on a loaded machine.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := cl.List(t.Context(), &v1alpha1.HostHooksList{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	return c, cl
}

// waitApproved waits until the controller, whose exit code done gives,
// approves n1 for the HostHooks hello of hooks.
func waitApproved(t *testing.T, cl client.Client, hooks []v1alpha1.Hook, done <-chan int, stderr *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var nh v1alpha1.NodeHooks
		err := cl.Get(t.Context(), client.ObjectKey{Name: v1alpha1.NodeHooksName("hello", "n1")}, &nh)
		if err == nil && nh.Spec.HooksHash == v1alpha1.HooksHash(hooks) {
			return
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
}

// checkProbes checks that the probes answer at addr (--health-addr). (Not
// found in the log: a test process's first controller-runtime logger is
// the only one it keeps, and the probe server logs through it.)
func checkProbes(t *testing.T, addr string) {
	t.Helper()
	for _, probe := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + addr + probe)
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

// webhookConfig is deploy/'s ValidatingWebhookConfiguration for a
// controller in ns, named for the test and failing open.
func webhookConfig(t *testing.T, ns string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	_, objs, err := deploytest.Load("../../deploy")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.Obj.GetKind() != "ValidatingWebhookConfiguration" {
			continue
		}
		var vwc admissionregistrationv1.ValidatingWebhookConfiguration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Obj.Object, &vwc); err != nil {
			t.Fatal(err)
		}
		vwc.Name = "hostprov-test-hosthooks"
		ignore := admissionregistrationv1.Ignore
		for i := range vwc.Webhooks {
			vwc.Webhooks[i].FailurePolicy = &ignore
			vwc.Webhooks[i].ClientConfig.Service.Namespace = ns
		}
		return &vwc
	}
	t.Fatal("deploy/ has no ValidatingWebhookConfiguration")
	return nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// checkWebhook checks what the controller made of its webhook: the Secret
// with the certificate, the configuration's CA bundle, and a review of an
// invalid HostHooks, sent as the API server would through the Service,
// refused with hostprov's message at the field.
func checkWebhook(t *testing.T, cl client.Client, ns, config, addr string) {
	t.Helper()
	ctx := t.Context()
	var secret corev1.Secret
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hostprov-webhook-cert"}, &secret); err != nil {
		t.Fatalf("the webhook's Secret: %v", err)
	}
	ca := secret.Data[admission.CAKey]
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := cl.Get(ctx, client.ObjectKey{Name: config}, &vwc); err != nil {
		t.Fatal(err)
	}
	for _, w := range vwc.Webhooks {
		if len(ca) == 0 || !bytes.Equal(w.ClientConfig.CABundle, ca) {
			t.Errorf("webhook %s: caBundle is not the Secret's CA", w.Name)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatalf("the Secret's %s holds no certificate", admission.CAKey)
	}
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, ServerName: "hostprov-controller." + ns + ".svc"}}}
	bad := v1alpha1.HostHooks{TypeMeta: metav1.TypeMeta{APIVersion: "hostprov.dev/v1alpha1", Kind: "HostHooks"},
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec:       v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "x", Exec: []string{"/bin/true"}, Steps: []v1alpha1.Step{{Name: "s", Run: []string{"/bin/true"}}}}}}}
	raw, err := json.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "review-1", Operation: admissionv1.Create, Name: "bad",
			Kind:     metav1.GroupVersionKind{Group: "hostprov.dev", Version: "v1alpha1", Kind: "HostHooks"},
			Resource: metav1.GroupVersionResource{Group: "hostprov.dev", Version: "v1alpha1", Resource: "hosthooks"},
			Object:   runtime.RawExtension{Raw: raw}}}
	body, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	var resp *http.Response
	deadline := time.Now().Add(30 * time.Second)
	for {
		// The webhook listens once the certificate is there; the two
		// are close, not one.
		resp, err = hc.Post("https://"+addr+admission.Path, "application/json", bytes.NewReader(body))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the webhook at %s: %v", addr, err)
	}
	defer resp.Body.Close()
	var got admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Response == nil || got.Response.Allowed || got.Response.UID != "review-1" || got.Response.Result == nil ||
		!strings.Contains(got.Response.Result.Message, "spec.hooks[0].exec") {
		t.Errorf("the review of an invalid HostHooks: %+v", got.Response)
	}
}
