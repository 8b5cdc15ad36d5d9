package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/hostprov/hostprov/internal/kubetest"
)

const (
	testNS      = "hostprov-system"
	testSecret  = "hostprov-webhook-cert"
	testService = "hostprov-webhook"
	testConfig  = "hostprov"
)

// Replicas starting at once agree on one certificate, in one Secret, and
// the webhook configuration trusts it; a replica that finds the Secret
// unusable replaces it and keeps trusting the old CA.
func TestEnsureCertificate(t *testing.T) {
	t.Parallel() // each has a cluster of its own
	c := kubetest.Start(t)
	cl := c.Client(t)
	ctx := t.Context()
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}); err != nil {
		t.Fatal(err)
	}
	_, err := EnsureCertificate(ctx, cl, testNS, testSecret, testService, testConfig)
	if !apierrors.IsNotFound(err) {
		t.Errorf("without the webhook configuration: %v, want not found", err)
	}
	createWebhookConfig(t, cl)

	cert := ensureByReplicas(t, c, 4)
	secret := getSecret(t, cl)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("secret type %q", secret.Type)
	}
	ca := secret.Data[CAKey]
	checkCABundle(t, cl, ca)
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(leaf.DNSNames, ","), "hostprov-webhook.hostprov-system.svc,hostprov-webhook.hostprov-system.svc.cluster.local"; got != want {
		t.Errorf("DNS names %s, want %s", got, want)
	}
	if time.Until(leaf.NotAfter) < 9*365*24*time.Hour {
		t.Errorf("the certificate expires at %v", leaf.NotAfter)
	}
	// The API server calls the webhook by the Service's name and checks
	// the certificate against the caBundle: so does this client, through
	// Serve.
	serveAndCall(t, cert, ca)

	// Another start finds the Secret and changes nothing.
	again, err := EnsureCertificate(ctx, cl, testNS, testSecret, testService, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Certificate[0], cert.Certificate[0]) {
		t.Error("a restart made a new certificate")
	}
	if s := getSecret(t, cl); s.ResourceVersion != secret.ResourceVersion {
		t.Error("a restart wrote the secret")
	}
	checkReplaced(t, cl, cert, ca)
}

// createWebhookConfig creates the webhook configuration testConfig, of two
// webhooks served by testService.
func createWebhookConfig(t *testing.T, cl client.Client) {
	t.Helper()
	webhook := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: testNS, Name: testService, Path: ptr.To(Path),
			}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testConfig},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{webhook("a.hostprov.dev"), webhook("b.hostprov.dev")},
	}
	if err := cl.Create(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
}

// ensureByReplicas has that many replicas, each with a client of its own,
// call EnsureCertificate at once; they must agree on one certificate,
// which it returns.
func ensureByReplicas(t *testing.T, c *kubetest.Cluster, replicas int) tls.Certificate {
	t.Helper()
	certs := make([]tls.Certificate, replicas)
	errs := make([]error, replicas)
	clients := make([]client.Client, replicas)
	for i := range clients {
		clients[i] = c.Client(t)
	}
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			certs[i], errs[i] = EnsureCertificate(t.Context(), clients[i], testNS, testSecret, testService, testConfig)
		})
	}
	wg.Wait()
	for i := range replicas {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		if !bytes.Equal(certs[i].Certificate[0], certs[0].Certificate[0]) {
			t.Errorf("replica %d has a certificate of its own", i)
		}
	}
	return certs[0]
}

// checkReplaced: a certificate for another Service is replaced; the old
// CA, ca, stays trusted for the replicas that still serve the old
// certificate, cert. A broken Secret is replaced too.
func checkReplaced(t *testing.T, cl client.Client, cert tls.Certificate, ca []byte) {
	t.Helper()
	ctx := t.Context()
	renewed, err := EnsureCertificate(ctx, cl, testNS, testSecret, "other", testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(renewed.Certificate[0], cert.Certificate[0]) {
		t.Fatal("a certificate for another service kept")
	}
	bundle := getSecret(t, cl).Data[CAKey]
	if !bytes.HasSuffix(bundle, ca) || bytes.Equal(bundle, ca) || bytes.Count(bundle, []byte("BEGIN CERTIFICATE")) != 2 {
		t.Errorf("ca.crt after renewal:\n%s\nwant a new CA, then the old:\n%s", bundle, ca)
	}
	checkCABundle(t, cl, bundle)
	serveAndCall(t, cert, bundle)

	secret := getSecret(t, cl)
	secret.Data[corev1.TLSCertKey] = []byte("not a certificate")
	if err := cl.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	fixed, err := EnsureCertificate(ctx, cl, testNS, testSecret, testService, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	serveAndCall(t, fixed, getSecret(t, cl).Data[CAKey])
}

func getSecret(t *testing.T, cl client.Client) *corev1.Secret {
	t.Helper()
	var s corev1.Secret
	if err := cl.Get(t.Context(), client.ObjectKey{Namespace: testNS, Name: testSecret}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// checkCABundle checks that every webhook of the configuration trusts
// exactly ca.
func checkCABundle(t *testing.T, cl client.Client, ca []byte) {
	t.Helper()
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := cl.Get(t.Context(), client.ObjectKey{Name: testConfig}, &cfg); err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Webhooks {
		if !bytes.Equal(w.ClientConfig.CABundle, ca) {
			t.Errorf("webhook %s: caBundle\n%s\nwant\n%s", w.Name, w.ClientConfig.CABundle, ca)
		}
	}
	if block, _ := pem.Decode(ca); block == nil {
		t.Errorf("caBundle is no PEM: %q", ca)
	}
}

// serveAndCall serves the webhook with cert and sends it a review over
// TLS as the API server would: to the Service's DNS name, trusting ca.
func serveAndCall(t *testing.T, cert tls.Certificate, ca []byte) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, addr, cert, NewHandler(logr.Discard())) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("no CA")
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs:    roots,
		ServerName: testService + "." + testNS + ".svc",
	}}}
	defer hc.CloseIdleConnections()
	body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE",` +
		`"object":{"apiVersion":"hostprov.dev/v1alpha1","kind":"HostHooks","metadata":{"name":"x"},"spec":{"hooks":[{"name":"a","exec":["/bin/true"]}]}}}}`
	var resp *http.Response
	var err error
	for range 50 { // until Serve listens
		resp, err = hc.Post("https://"+addr+Path, "application/json", strings.NewReader(body))
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("calling the webhook: %v", err)
	}
	defer resp.Body.Close()
	var review struct {
		Response struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
		} `json:"response"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil || !review.Response.Allowed || review.Response.UID != "u" {
		t.Errorf("webhook answered %s: %+v, %v", resp.Status, review, err)
	}
}

// A replica that loses the race to create (or to replace) the Secret
// serves the winner's certificate, not the one it made.
func TestEnsureCertificateLosesRace(t *testing.T) {
	t.Parallel() // each has a cluster of its own
	c := kubetest.Start(t)
	cl := c.Client(t)
	ctx := t.Context()
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}},
		&admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: testConfig},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name:                    "a.hostprov.dev",
				ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:1" + Path)},
				SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
				AdmissionReviewVersions: []string{"v1"},
			}},
		},
	} {
		if err := cl.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	ww, err := client.NewWithWatch(c.Config(), client.Options{Scheme: kubetest.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// The winner writes its Secret just before this replica's write.
	var winner []byte
	win := func(ctx context.Context, cl client.WithWatch, service string) {
		data, err := newCertificate([]string{service + "." + testNS + ".svc", service + "." + testNS + ".svc.cluster.local"}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		winner = data[corev1.TLSCertKey]
		var s corev1.Secret
		err = cl.Get(ctx, client.ObjectKey{Namespace: testNS, Name: testSecret}, &s)
		if apierrors.IsNotFound(err) {
			s = corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testSecret}, Type: corev1.SecretTypeTLS, Data: data}
			err = cl.Create(ctx, &s)
		} else if err == nil {
			s.Data = data
			err = cl.Update(ctx, &s)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var creates, updates int
	loser := interceptor.NewClient(ww, interceptor.Funcs{
		Create: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				creates++
				win(ctx, cl, testService)
			}
			return cl.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if _, ok := obj.(*corev1.Secret); ok {
				updates++
				win(ctx, cl, "other")
			}
			return cl.Update(ctx, obj, opts...)
		},
	})
	leafPEM := func(cert tls.Certificate) []byte {
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
	}

	cert, err := EnsureCertificate(ctx, loser, testNS, testSecret, testService, testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if creates != 1 || updates != 0 || !bytes.Equal(leafPEM(cert), winner) {
		t.Errorf("after losing the create (%d creates, %d updates): not the winner's certificate", creates, updates)
	}
	checkCABundle(t, cl, getSecret(t, cl).Data[CAKey])

	// Now the loser wants a certificate for "other", and loses the
	// replacement to a winner who makes one for "other" too.
	cert, err = EnsureCertificate(ctx, loser, testNS, testSecret, "other", testConfig)
	if err != nil {
		t.Fatal(err)
	}
	if updates != 1 || !bytes.Equal(leafPEM(cert), winner) {
		t.Errorf("after losing the replacement (%d updates): not the winner's certificate", updates)
	}
	checkCABundle(t, cl, getSecret(t, cl).Data[CAKey])
}
