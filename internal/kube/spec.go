// Package kube is hostprov on Kubernetes: the agent that applies HostHooks
// on its node, the controller that rolls them out and sums up the
// NodeHooks, and the admission check that runs hostprov's own validation
// on a HostHooks before it is stored.
package kube

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
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
// same pipeline as `hostprov apply` (hooks.Parse, then render: units, and
// the files, directories, links and accounts the hooks bring), from the
// hook spec document of hh (v1alpha1.HostHooksSpec.HookSpec). Each
// diagnostic's Path is the HostHooks' field ("spec.hooks[1].exec") and its
// position names the object, so that a message reads the same on a node,
// at admission and in `hostprov validate`. The set must not be applied
// when the diagnostics hold an error.
func Build(hh *v1alpha1.HostHooks) (apply.SpecSet, hooks.Diagnostics) {
	file := Place + hh.Name
	r, diags := compile.BuildAll(file, hh.Spec.HookSpec(hh.Name))
	for i := range diags {
		diags[i].Path = fieldPath(diags[i].Path)
		diags[i].Pos = hooks.Position{File: file}
	}
	set := apply.SpecSet{Name: v1alpha1.SetName(hh.Name), Owner: SetOwner}
	if r.Spec == nil {
		return set, diags
	}
	// The state records where each unit, path and account comes from; a
	// line of a document nobody wrote would say nothing, the field does.
	us := r.Units
	for i := range us {
		us[i].Pos = hooks.Position{File: fmt.Sprintf("%s spec.hooks[%d]", file, us[i].Hook)}
	}
	st := r.Storage
	at := entryFields(file, r.Spec)
	for i := range st.Files {
		st.Files[i].Pos = at(st.Files[i].Pos)
	}
	for i := range st.Directories {
		st.Directories[i].Pos = at(st.Directories[i].Pos)
	}
	for i := range st.Links {
		st.Links[i].Pos = at(st.Links[i].Pos)
	}
	for i := range st.Users {
		st.Users[i].Pos = at(st.Users[i].Pos)
	}
	for i := range st.Groups {
		st.Groups[i].Pos = at(st.Groups[i].Pos)
	}
	set.Units = us
	for _, h := range r.Spec.Hooks {
		set.HookNames = append(set.HookNames, h.Name)
	}
	set.Paths = apply.PathsOf(st, set.HookNames)
	set.Accounts = apply.AccountsOf(st, set.HookNames)
	return set, diags
}

// entryFields returns a function that turns the position of an entry of
// a hook's files, directories, links, users or groups in the hook spec
// document of a HostHooks into its field ("hosthooks/NAME
// spec.hooks[1].files[0]").
func entryFields(file string, spec *hooks.Spec) func(hooks.Position) hooks.Position {
	field := map[hooks.Position]string{}
	for i, h := range spec.Hooks {
		for _, list := range []struct {
			name string
			n    int
		}{{"files", len(h.Files)}, {"directories", len(h.Directories)}, {"links", len(h.Links)}, {"users", len(h.Users)}, {"groups", len(h.Groups)}} {
			for k := range list.n {
				p := fmt.Sprintf("hooks[%d].%s[%d]", i, list.name, k)
				field[spec.Where(p)] = "spec." + p
			}
		}
	}
	return func(pos hooks.Position) hooks.Position {
		if f, ok := field[pos]; ok {
			return hooks.Position{File: file + " " + f}
		}
		return hooks.Position{File: file}
	}
}

// fieldPath is the HostHooks field of a hook spec's path: "hooks[1].exec"
// is "spec.hooks[1].exec". The spec's own fields (apiVersion, kind,
// metadata) are made by HookSpec, so their problems are the object's.
func fieldPath(p string) string {
	if p == "hooks" || strings.HasPrefix(p, "hooks[") || strings.HasPrefix(p, "hooks.") {
		return "spec." + p
	}
	if p == "" || p == "metadata.name" || p == "metadata" {
		return "metadata.name"
	}
	return p
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
