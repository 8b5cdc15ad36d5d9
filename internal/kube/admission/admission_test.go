package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

const webhookName = "hosthooks.hostprov.dev"

// startWebhook serves the webhook on a free port of 127.0.0.1 until t
// ends, with a certificate for that address, and registers it with the
// cluster; it returns once the API server calls it.
func startWebhook(t *testing.T, c *kubetest.Cluster) {
	t.Helper()
	data, err := newCertificate(nil, []net.IP{net.IPv4(127, 0, 0, 1)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(data["tls.crt"], data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	mux := http.NewServeMux()
	mux.Handle(Path, NewHandler(logr.Discard()))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, addr, cert, mux) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})

	cl := c.Client(t)
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hostprov"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: webhookName,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      ptr.To("https://" + addr + Path),
				CABundle: data[CAKey],
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups:   []string{v1alpha1.GroupVersion.Group},
					APIVersions: []string{v1alpha1.GroupVersion.Version},
					Resources:   []string{"hosthooks"},
					Scope:       ptr.To(admissionregistrationv1.ClusterScope),
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	if err := cl.Create(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	// The API server picks the configuration up from its informer: probe
	// with a dry run until the webhook answers.
	probe := hostHooks("probe", v1alpha1.Hook{Name: "probe", Exec: []string{"/bin/true"}, Steps: []v1alpha1.Step{{Name: "s", Run: []string{"/bin/true"}}}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cl.Create(t.Context(), probe.DeepCopy(), client.DryRunAll)
		if err != nil && strings.Contains(err.Error(), `admission webhook "`+webhookName+`" denied the request`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the API server does not call the webhook: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func hostHooks(name string, hooks ...v1alpha1.Hook) *v1alpha1.HostHooks {
	return &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.HostHooksSpec{Hooks: hooks}}
}

// warnings records the warnings the API server sends a client.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, code int, _, text string) {
	if code == 299 {
		w.mu.Lock()
		w.list = append(w.list, text)
		w.mu.Unlock()
	}
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// Through the real API server: a HostHooks hostprov accepts is stored,
// with hostprov's warnings shown to the client; one it refuses is refused
// with every problem at its field; and the CRD's schema refuses what is
// not even of the right type before the webhook is asked.
func TestWebhook(t *testing.T) {
	t.Parallel() // each has a cluster of its own
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	startWebhook(t, c)

	var warned warnings
	cfg := c.Config()
	cfg.WarningHandlerWithContext = &warned
	cl, err := client.New(cfg, client.Options{Scheme: kubetest.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	ok := hostHooks("iscsi",
		v1alpha1.Hook{Name: "install-iscsi", Steps: []v1alpha1.Step{{Name: "install", Run: []string{"/usr/bin/apt-get", "install", "-y", "open-iscsi"}}}},
		v1alpha1.Hook{Name: "tuned", Exec: []string{"/usr/sbin/tuned"}, Directives: map[string][]string{"Service": {"NoSuchKey=1"}}},
		v1alpha1.Hook{Name: "mnt-lun.mount", DeviceTimeout: "10min", Manifest: "What=/dev/disk/by-label/lun\nWhere=/mnt/lun\n"},
	)
	if err := cl.Create(ctx, ok); err != nil {
		t.Fatalf("a valid HostHooks refused: %v", err)
	}
	var stored v1alpha1.HostHooks
	if err := cl.Get(ctx, client.ObjectKeyFromObject(ok), &stored); err != nil {
		t.Fatal(err)
	}
	if got := stored.Spec.Hooks[2].DeviceTimeout; got != "10min" {
		t.Errorf("stored deviceTimeout %q, want 10min: the CRD lacks the field", got)
	}
	const warning = "spec.hooks[1].directives.Service[0]: systemd does not know NoSuchKey= in [Service] and ignores it"
	if got := warned.take(); !slices.Contains(got, warning) {
		t.Errorf("warnings %q, want %q", got, warning)
	}

	bad := hostHooks("bad",
		v1alpha1.Hook{Name: "fine", Exec: []string{"/bin/true"}},
		v1alpha1.Hook{Name: "both", Exec: []string{"/bin/true"}, Steps: []v1alpha1.Step{{Name: "s", Run: []string{"/bin/true"}}}},
		v1alpha1.Hook{Name: "empty-step", Steps: []v1alpha1.Step{{Name: "nothing"}}},
		v1alpha1.Hook{Name: "a/b", Exec: []string{"/bin/true"}},
		v1alpha1.Hook{Name: "swapfile.swap", DeviceTimeout: "1min", Manifest: "What=/swapfile\n"},
	)
	err = cl.Create(ctx, bad)
	want := map[string]string{
		"spec.hooks[4].deviceTimeout": "What=/swapfile is not a device under /dev",
		"spec.hooks[1].exec":          "exec is not used with steps (hint: steps are the hook's commands",
		"spec.hooks[2].steps[0]":      "the step has neither run nor sh (hint: add run:",
		"spec.hooks[3].name":          `hook name "a/b" looks like a path (hint: a hook name is a unit name`,
	}
	checkInvalid(t, err, want)

	// An update is checked as a create is ...
	ok.Spec.Hooks[0].Steps[0].Run = nil
	err = cl.Update(ctx, ok)
	checkInvalid(t, err, map[string]string{"spec.hooks[0].steps[0]": "the step has neither run nor sh"})

	// ... and so is a node selector.
	ok.Spec.Hooks[0].Steps[0].Run = []string{"/bin/true"}
	ok.Spec.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "role", Operator: "Near"}}}
	err = cl.Update(ctx, ok)
	checkInvalid(t, err, map[string]string{"spec.nodeSelector.matchExpressions[0].operator": `"Near"`})

	// The CRD's schema refuses a value of no allowed kind before the
	// webhook is asked.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "HostHooks",
		"metadata":   map[string]any{"name": "sometimes"},
		"spec": map[string]any{"hooks": []any{map[string]any{
			"name": "maybe", "when": "Sometimes", "steps": []any{map[string]any{"name": "s", "run": []any{"/bin/true"}}},
		}}},
	}}
	err = cl.Create(ctx, u)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.hooks[0].when: Unsupported value: "Sometimes"`) || strings.Contains(err.Error(), "admission webhook") {
		t.Errorf("when: Sometimes: %v, want refused by the schema", err)
	}
}

// checkInvalid checks that err is the webhook's refusal with exactly the
// causes of want: field → the start of its message.
func checkInvalid(t *testing.T, err error, want map[string]string) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("error %v, want Invalid", err)
	}
	s := status.Status()
	if !strings.HasPrefix(s.Message, `admission webhook "`+webhookName+`" denied the request: `) {
		t.Errorf("message %q, not the webhook's", s.Message)
	}
	if s.Details == nil {
		t.Fatalf("no details: %+v", s)
	}
	got := map[string]string{}
	for _, c := range s.Details.Causes {
		got[c.Field] = c.Message
		if !strings.Contains(s.Message, c.Message) {
			t.Errorf("message %q does not list %s: %q", s.Message, c.Field, c.Message)
		}
	}
	for field, msg := range want {
		if !strings.Contains(got[field], msg) {
			t.Errorf("cause at %s: %q, want %q in it", field, got[field], msg)
		}
	}
	if len(got) != len(want) {
		t.Errorf("causes %q, want %d", got, len(want))
	}
	t.Logf("refused: %s", s.Message)
}

// review sends the handler an AdmissionReview of op on obj (and old) and
// returns its HTTP status and response.
func review(t *testing.T, op admissionv1.Operation, obj, old *v1alpha1.HostHooks) (int, *admissionv1.AdmissionResponse) {
	t.Helper()
	raw := func(o *v1alpha1.HostHooks) runtime.RawExtension {
		if o == nil {
			return runtime.RawExtension{}
		}
		o = o.DeepCopy()
		o.APIVersion, o.Kind = v1alpha1.GroupVersion.String(), "HostHooks"
		data, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: data}
	}
	req := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("uid-1"),
			Kind:      metav1.GroupVersionKind{Group: "hostprov.dev", Version: "v1alpha1", Kind: "HostHooks"},
			Resource:  metav1.GroupVersionResource{Group: "hostprov.dev", Version: "v1alpha1", Resource: "hosthooks"},
			Name:      obj.Name,
			Operation: op,
			Object:    raw(obj),
			OldObject: raw(old),
		},
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	NewHandler(logr.Discard()).ServeHTTP(w, r)
	var resp admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
		t.Fatalf("response %q: %v", w.Body.String(), err)
	}
	if resp.Response == nil || resp.Response.UID != "uid-1" {
		t.Fatalf("response %s: not for the request", w.Body.String())
	}
	if resp.APIVersion != "admission.k8s.io/v1" || resp.Kind != "AdmissionReview" {
		t.Errorf("response is a %s %s", resp.APIVersion, resp.Kind)
	}
	return w.Code, resp.Response
}

// A refusal is an answer, not a failed call: HTTP 200, allowed false and
// a status of reason Invalid with a cause per problem.
func TestHandlerRefuses(t *testing.T) {
	bad := hostHooks("bad", v1alpha1.Hook{Name: "both", Exec: []string{"/bin/true"}, Steps: []v1alpha1.Step{{Name: "s", Run: []string{"/bin/true"}}}})
	code, resp := review(t, admissionv1.Create, bad, nil)
	if code != http.StatusOK || resp.Allowed {
		t.Fatalf("HTTP %d, allowed %v", code, resp.Allowed)
	}
	s := resp.Result
	if s == nil || s.Reason != metav1.StatusReasonInvalid || s.Code != http.StatusUnprocessableEntity {
		t.Fatalf("status %+v, want reason Invalid, code 422", s)
	}
	if s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Field != "spec.hooks[0].exec" ||
		s.Details.Causes[0].Type != metav1.CauseTypeFieldValueInvalid || s.Details.Name != "bad" || s.Details.Kind != "HostHooks" {
		t.Errorf("details %+v", s.Details)
	}
}

func TestHandlerAllows(t *testing.T) {
	ok := hostHooks("ok", v1alpha1.Hook{Name: "b.service", UseRawManifest: true, Manifest: "[Service]\nExecStart=/bin/true\n"})
	code, resp := review(t, admissionv1.Create, ok, nil)
	if code != http.StatusOK || !resp.Allowed {
		t.Fatalf("HTTP %d, allowed %v: %+v", code, resp.Allowed, resp.Result)
	}
	if len(resp.Warnings) != 1 || resp.Warnings[0] != "spec.hooks[0].manifest: b.service is enabled but has no [Install] section with WantedBy= or RequiredBy=, so enabling it does nothing and it will not start at boot (hint: add an [Install] section (for example WantedBy=multi-user.target), or set enabled: false)" {
		t.Errorf("warnings %q", resp.Warnings)
	}
}

// An update that leaves hooks and node selector as they are is allowed
// even when they are invalid: the controller's finalizer must come off a
// HostHooks stored before the webhook ran, or it could not be deleted.
func TestHandlerUpdateUnchangedHooks(t *testing.T) {
	old := hostHooks("old", v1alpha1.Hook{Name: "both", Exec: []string{"/bin/true"}, Steps: []v1alpha1.Step{{Name: "s", Run: []string{"/bin/true"}}}})
	old.Finalizers = []string{v1alpha1.Finalizer}
	obj := old.DeepCopy()
	obj.Finalizers = nil
	obj.Spec.Rollout.Pause = true
	if _, resp := review(t, admissionv1.Update, obj, old); !resp.Allowed {
		t.Errorf("finalizer removal refused: %+v", resp.Result)
	}
	obj.Spec.Hooks[0].Description = "changed"
	if _, resp := review(t, admissionv1.Update, obj, old); resp.Allowed {
		t.Error("a change of invalid hooks allowed")
	}
	if _, resp := review(t, admissionv1.Delete, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "old"}}, old); !resp.Allowed {
		t.Errorf("delete refused: %+v", resp.Result)
	}
}

// The files, directories, links, users and groups of a HostHooks are
// checked as a hook spec's: a valid one is allowed, and a problem is
// refused at its field.
func TestHandlerStorage(t *testing.T) {
	conf := "listen = 9100\n"
	good := hostHooks("metrics", v1alpha1.Hook{Name: "metrics", Exec: []string{"/bin/true"},
		Files:       []v1alpha1.File{{Path: "/etc/metrics.conf", Contents: &conf, Mode: "0640", Group: "metrics"}},
		Directories: []v1alpha1.Directory{{Path: "/var/lib/metrics"}},
		Links:       []v1alpha1.Link{{Path: "/etc/metrics.link", Target: "metrics.conf"}},
		Users:       []v1alpha1.User{{Name: "metrics", System: true}},
		Groups:      []v1alpha1.Group{{Name: "metrics", System: true}}})
	if code, resp := review(t, admissionv1.Create, good, nil); code != http.StatusOK || !resp.Allowed {
		t.Errorf("a valid HostHooks with files and accounts: HTTP %d, %+v", code, resp.Result)
	}
	bad := good.DeepCopy()
	bad.Spec.Hooks[0].Files[0].Mode = "640"
	code, resp := review(t, admissionv1.Create, bad, nil)
	if code != http.StatusOK || resp.Allowed {
		t.Fatalf("mode 640: HTTP %d, allowed %v", code, resp.Allowed)
	}
	if s := resp.Result; s == nil || s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0].Field != "spec.hooks[0].files[0].mode" {
		t.Errorf("mode 640: %+v; want one cause at spec.hooks[0].files[0].mode", s)
	}
}
