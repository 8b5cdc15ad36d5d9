package admission

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

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
