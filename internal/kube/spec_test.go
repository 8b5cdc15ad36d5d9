package kube

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
)

// A HostHooks renders to the units that the same hooks in a spec file
// render to, and its problems are hostprov's own, at the object's fields.
func TestBuildSameAsSpecFile(t *testing.T) {
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "iscsi"}, Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{
		Name: "install-iscsi",
		Steps: []v1alpha1.Step{
			{Name: "install", Run: []string{"/usr/bin/apt-get", "install", "-y", "open-iscsi"}},
			{Name: "enable", Sh: "systemctl enable --now iscsid\n"},
		},
	}}}}
	set, diags := Build(hh)
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	const file = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
  - name: install-iscsi
    steps:
      - name: install
        run: [/usr/bin/apt-get, install, -y, open-iscsi]
      - name: enable
        sh: |
          systemctl enable --now iscsid
`
	want, d := render.Build("hooks.yaml", []byte(file))
	if len(d) != 0 {
		t.Fatal(d)
	}
	if len(set.Units) != 1 || set.Units[0].Name != want[0].Name || string(set.Units[0].Contents) != string(want[0].Contents) {
		t.Fatalf("units differ:\n%s\nwant:\n%s", set.Units[0].Contents, want[0].Contents)
	}
	if set.Name != "hosthooks.iscsi" || len(set.HookNames) != 1 || set.HookNames[0] != "install-iscsi" {
		t.Errorf("set %q, hook names %q", set.Name, set.HookNames)
	}
}

func TestBuildProblemsAtFields(t *testing.T) {
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{
		{Name: "a", Exec: []string{"/bin/true"}},
		{Name: "b", Exec: []string{""}, Steps: []v1alpha1.Step{{Run: []string{"/bin/true"}}}},
	}}}
	_, diags := Build(hh)
	if !diags.HasErrors(false) {
		t.Fatalf("no errors: %v", diags)
	}
	errs := FieldErrors(diags, false)
	if len(errs) == 0 {
		t.Fatal("no field errors")
	}
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "spec.hooks[1]") {
			t.Errorf("error at %s, want under spec.hooks[1]: %s", e.Field, e.Detail)
		}
	}
	t.Log(errs.ToAggregate())
}

// Every field of a hook in the hook spec is a field of the API's Hook, by
// the same name, and no other: the CRD is the hook spec. Files,
// directories and links are not in the API yet: the agent does not apply
// them, and a HostHooks object has no directory for local: files.
func TestHookFieldsAreTheSpecs(t *testing.T) {
	api := jsonFields(v1alpha1.Hook{})
	var spec []string
	for _, f := range hooks.HookFields() {
		if !slices.Contains(hooks.StorageFields(), f) {
			spec = append(spec, f)
		}
	}
	if strings.Join(api, ",") != strings.Join(spec, ",") {
		t.Errorf("API Hook fields:\n %v\nhook spec fields:\n %v", api, spec)
	}
	if got, want := strings.Join(jsonFields(v1alpha1.Step{}), ","), strings.Join(hooks.StepFields(), ","); got != want {
		t.Errorf("API Step fields %s, hook spec %s", got, want)
	}
	if got, want := strings.Join(jsonFields(v1alpha1.Dropin{}), ","), strings.Join(hooks.DropinFields(), ","); got != want {
		t.Errorf("API Dropin fields %s, hook spec %s", got, want)
	}
}

// jsonFields are the JSON names of v's struct fields, in order.
func jsonFields(v any) []string {
	var out []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}
