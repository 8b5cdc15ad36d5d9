// Package kube is hostprov on Kubernetes: the agent that applies HostHooks
// on its node, the controller that rolls them out and sums up the
// NodeHooks, and the admission check that runs hostprov's own validation
// on a HostHooks before it is stored.
package kube

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// SetOwner is the owner (apply.SpecSet.Owner) of the spec sets the agent
// applies: the state of a node records it, so that the agent prunes only
// its own sets, whatever a node's own spec is named.
const SetOwner = "agent"

// Place starts the place ("hosthooks/NAME spec.hooks[0]") of every unit
// Build makes, which the state records as the unit's Where.
const Place = "hosthooks/"

// Build renders the hooks of hh as the spec set its nodes apply, with the
// pipeline of `hostprov apply` (pipeline.Load), from the hook spec document
// of hh (v1alpha1.HostHooksSpec.HookSpec) as an object's input: each
// diagnostic's Path is the HostHooks' field ("spec.hooks[1].exec") and its
// position names the object, so that a message reads the same on a node,
// at admission and in `hostprov validate`. The set must not be applied
// when the diagnostics hold an error.
func Build(hh *v1alpha1.HostHooks) (apply.SpecSet, hooks.Diagnostics) {
	set := apply.SpecSet{Name: v1alpha1.SetName(hh.Name), Owner: SetOwner}
	in := pipeline.Input{File: inputs.File{Name: Place + hh.Name, Data: hh.Spec.HookSpec(hh.Name)},
		Object: &pipeline.Object{Set: set.Name, Owner: set.Owner}}
	// Neither the node nor an option is given: nothing can fail but
	// the spec, and its problems are diagnostics.
	r, _ := pipeline.Load([]pipeline.Input{in}, pipeline.Options{})
	if len(r.Sets) == 1 {
		set = r.Sets[0]
	}
	return set, r.Diagnostics
}

// FieldErrors turns the errors among diags into Kubernetes field errors,
// for admission: the message and hint as `hostprov validate` prints them,
// at the field. With strict, warnings are errors too.
func FieldErrors(diags hooks.Diagnostics, strict bool) field.ErrorList {
	var errs field.ErrorList
	for _, d := range diags {
		if d.Severity != hooks.Error && !strict {
			continue
		}
		errs = append(errs, &field.Error{Type: field.ErrorTypeInvalid, Field: d.Path, BadValue: field.OmitValueType{}, Detail: detail(d)})
	}
	return errs
}

// Warnings are the warnings among diags, as admission warnings: shown by
// kubectl, not refused.
func Warnings(diags hooks.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		if d.Severity == hooks.Warning {
			out = append(out, d.Path+": "+detail(d))
		}
	}
	return out
}

func detail(d hooks.Diagnostic) string {
	if d.Hint == "" {
		return d.Message
	}
	return d.Message + " (hint: " + d.Hint + ")"
}
