// Package admission is the validating admission webhook of HostHooks: it
// refuses a HostHooks whose hooks hostprov would refuse (the checks of
// `hostprov validate`, by kube.Build) at the object's fields, before it is
// stored and reaches any node, and passes hostprov's warnings on to the
// client. It also keeps the webhook's serving certificate (see
// EnsureCertificate) and serves it (Serve).
//
// The controller serves it; the ValidatingWebhookConfiguration that points
// the API server at it names the resource hosthooks (not its status) for
// CREATE and UPDATE, with sideEffects None and failurePolicy Fail.
package admission

import (
	"context"
	"net/http"

	"github.com/go-logr/logr"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// Path is the path the webhook is served at: the path of the
// ValidatingWebhookConfiguration's clientConfig.
const Path = "/validate-hosthooks"

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
}

// NewHandler is the webhook: an http.Handler of admission.k8s.io/v1
// AdmissionReview requests for HostHooks, to be served at Path over TLS.
//
// A HostHooks is refused when kube.Build finds errors in its hooks, or its
// nodeSelector is not a valid label selector: the answer is allowed=false
// with a status of reason Invalid (HTTP 422 to the client) whose causes
// are every problem at its field (spec.hooks[1].exec) and whose message
// lists them all with their hints, as `hostprov validate` words them.
// hostprov's warnings become admission warnings, which kubectl prints.
//
// An update that changes neither hooks nor nodeSelector is allowed
// unchecked: the controller must be able to add and remove its finalizer,
// and a user to delete, a HostHooks stored before the webhook ran (whose
// nodes report the problems instead).
//
// log receives the webhook's own failures (requests it cannot decode).
func NewHandler(log logr.Logger) http.Handler {
	wh := admission.WithValidator[*v1alpha1.HostHooks](scheme, validator{})
	h, err := admission.StandaloneWebhook(wh, admission.StandaloneOptions{Logger: log.WithName("admission")})
	if err != nil {
		// Only a metrics path makes StandaloneWebhook fail, and none is
		// given.
		panic(err)
	}
	return h
}

type validator struct{}

func (validator) ValidateCreate(_ context.Context, hh *v1alpha1.HostHooks) (admission.Warnings, error) {
	return validate(hh)
}

func (validator) ValidateUpdate(_ context.Context, old, hh *v1alpha1.HostHooks) (admission.Warnings, error) {
	if apiequality.Semantic.DeepEqual(old.Spec.Hooks, hh.Spec.Hooks) &&
		apiequality.Semantic.DeepEqual(old.Spec.NodeSelector, hh.Spec.NodeSelector) {
		return nil, nil
	}
	return validate(hh)
}

func (validator) ValidateDelete(context.Context, *v1alpha1.HostHooks) (admission.Warnings, error) {
	return nil, nil
}

// validate is hostprov's verdict on hh: its warnings, and an Invalid error
// listing every error.
func validate(hh *v1alpha1.HostHooks) (admission.Warnings, error) {
	_, diags := kube.Build(hh)
	errs := kube.FieldErrors(diags, false)
	if sel := hh.Spec.NodeSelector; sel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "nodeSelector"))...)
	}
	warnings := admission.Warnings(kube.Warnings(diags))
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(v1alpha1.GroupVersion.WithKind("HostHooks").GroupKind(), hh.Name, errs)
	}
	return warnings, nil
}
