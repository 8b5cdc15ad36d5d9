package kube

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
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
	r, d := compile.Build("hooks.yaml", []byte(file), compile.Options{})
	want := r.Units
	if len(d) != 0 {
		t.Fatal(d)
	}
	if len(set.Units) != 1 || set.Units[0].Name != want[0].Name || string(set.Units[0].Contents) != string(want[0].Contents) {
		t.Fatalf("units differ:\n%s\nwant:\n%s", set.Units[0].Contents, want[0].Contents)
	}
	if set.Name != "hosthooks.iscsi" || set.Units[0].HookName != "install-iscsi" {
		t.Errorf("set %q, hook name %q", set.Name, set.Units[0].HookName)
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
// the same name, and no other: the CRD is the hook spec. So is every field
// of each other kind of entry of the spec (a step, a drop-in and an entry
// of files, directories, links, users and groups), but a file's local: (a
// file beside the spec: a HostHooks has none, so its files are inline or
// fetched). A kind of entry the spec gains needs its API type here.
func TestHookFieldsAreTheSpecs(t *testing.T) {
	api := map[string]any{
		"hook": v1alpha1.Hook{}, "step": v1alpha1.Step{}, "drop-in": v1alpha1.Dropin{}, "file": v1alpha1.File{},
		"verification": v1alpha1.Verification{}, "directory": v1alpha1.Directory{}, "link": v1alpha1.Link{},
		"user": v1alpha1.User{}, "group": v1alpha1.Group{},
	}
	for entry, fields := range hooks.Fields() {
		typ, ok := api[entry]
		if !ok {
			t.Errorf("the hook spec's %s entries have no API type in this test", entry)
			continue
		}
		if entry == "file" {
			fields = slices.DeleteFunc(fields, func(f string) bool { return f == "local" })
		}
		if got, want := strings.Join(jsonFields(typ), ","), strings.Join(fields, ","); got != want {
			t.Errorf("API %T fields:\n %s\nhook spec %s fields:\n %s", typ, got, entry, want)
		}
	}
	if len(api) != len(hooks.Fields()) {
		t.Errorf("the test has API types for %d kinds of entry, the hook spec %d", len(api), len(hooks.Fields()))
	}
}

// The files, directories, links, users and groups of a HostHooks reach its
// spec set as those of the same hooks in a spec file reach `hostprov
// apply`'s, each recorded at its field of the HostHooks.
func TestBuildStorageSameAsSpecFile(t *testing.T) {
	contents := "listen = 9100\n"
	empty := ""
	uid, gid := int64(990), int64(991)
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "metrics"}, Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{
		Name: "metrics",
		Exec: []string{"/opt/metrics/bin/collect", "-c", "/etc/metrics/collect.conf"},
		User: "metrics",
		Files: []v1alpha1.File{
			{Path: "/etc/metrics/collect.conf", Contents: &contents, Mode: "0640", Group: "metrics"},
			{Path: "/etc/metrics/empty", Contents: &empty},
			{Path: "/opt/metrics/bin/collect", Source: "https://example.com/collect",
				Verification: &v1alpha1.Verification{Hash: "sha256-" + strings.Repeat("ab", 32)}, Mode: "0o755", Overwrite: true},
		},
		Directories: []v1alpha1.Directory{{Path: "/var/lib/metrics", Mode: "0750", User: "metrics", Group: "990"}},
		Links:       []v1alpha1.Link{{Path: "/etc/metrics/current", Target: "collect.conf"}, {Path: "/etc/metrics/hard", Target: "/etc/metrics/collect.conf", Hard: true}},
		Users:       []v1alpha1.User{{Name: "metrics", UID: &uid, System: true, Home: "/var/lib/metrics", Shell: "/usr/sbin/nologin", Groups: []string{"adm"}}},
		Groups:      []v1alpha1.Group{{Name: "metrics", GID: &gid, System: true}},
	}}}}
	set, diags := Build(hh)
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	const file = `apiVersion: hostprov/v1alpha1
kind: Hooks
metadata: {name: hosthooks.metrics}
hooks:
  - name: metrics
    exec: [/opt/metrics/bin/collect, -c, /etc/metrics/collect.conf]
    user: metrics
    files:
      - {path: /etc/metrics/collect.conf, contents: "listen = 9100\n", mode: 0640, group: metrics}
      - {path: /etc/metrics/empty, contents: ""}
      - path: /opt/metrics/bin/collect
        source: https://example.com/collect
        verification: {hash: sha256-abababababababababababababababababababababababababababababababab}
        mode: 0o755
        overwrite: true
    directories:
      - {path: /var/lib/metrics, mode: 0750, user: metrics, group: 990}
    links:
      - {path: /etc/metrics/current, target: collect.conf}
      - {path: /etc/metrics/hard, target: /etc/metrics/collect.conf, hard: true}
    users:
      - {name: metrics, uid: 990, system: true, home: /var/lib/metrics, shell: /usr/sbin/nologin, groups: [adm]}
    groups:
      - {name: metrics, gid: 991, system: true}
`
	r, d := compile.Build("hooks.yaml", []byte(file), compile.Options{})
	if len(d) != 0 {
		t.Fatal(d)
	}
	wantPaths, wantAccounts := apply.PathsOf(r.Storage, r.Spec), apply.AccountsOf(r.Storage, r.Spec)
	if len(wantPaths) != 6 || len(wantAccounts) != 2 {
		t.Fatalf("the spec file gives %d paths and %d accounts, want 6 and 2", len(wantPaths), len(wantAccounts))
	}
	// Where says where each comes from: a line of the file, a field of
	// the HostHooks.
	wantWhere := []string{
		"spec.hooks[0].directories[0]",
		"spec.hooks[0].files[0]", "spec.hooks[0].files[1]", "spec.hooks[0].files[2]",
		"spec.hooks[0].links[0]", "spec.hooks[0].links[1]",
	}
	for i := range wantPaths {
		wantPaths[i].Where = "hosthooks/metrics " + wantWhere[i]
	}
	wantAccounts[0].Where = "hosthooks/metrics spec.hooks[0].groups[0]"
	wantAccounts[1].Where = "hosthooks/metrics spec.hooks[0].users[0]"
	if diff := cmp.Diff(wantPaths, set.Paths, cmp.AllowUnexported(apply.Path{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("paths differ (-spec file +HostHooks):\n%s", diff)
	}
	if diff := cmp.Diff(wantAccounts, set.Accounts, cmp.AllowUnexported(apply.Account{}), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("accounts differ (-spec file +HostHooks):\n%s", diff)
	}
	if len(set.Units) != 1 || string(set.Units[0].Contents) != string(r.Units[0].Contents) {
		t.Errorf("units differ:\n%v\nwant:\n%s", set.Units, r.Units[0].Contents)
	}
}

// Files, directories, links, users and groups are checked at admission by
// hostprov's own validation, each problem at its field of the HostHooks.
func TestBuildStorageProblemsAtFields(t *testing.T) {
	contents := "x"
	uid := int64(65535)
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{
		Name: "a",
		Exec: []string{"/bin/true"},
		Files: []v1alpha1.File{
			{Path: "/etc/a", Contents: &contents, Mode: "644"},
			{Path: "/etc/b", Source: "https://example.com/b"},
			{Path: "etc/c", Contents: &contents},
			{Path: "/etc/d"},
		},
		Directories: []v1alpha1.Directory{{Path: "/var/lib/../a"}},
		Links:       []v1alpha1.Link{{Path: "/etc/l", Target: "rel", Hard: true}},
		Users:       []v1alpha1.User{{Name: "1bad", UID: &uid}},
		Groups:      []v1alpha1.Group{{Name: "a.b"}},
	}}}}
	_, diags := Build(hh)
	var got []string
	for _, e := range FieldErrors(diags, false) {
		got = append(got, e.Field)
	}
	for _, want := range []string{
		"spec.hooks[0].files[0].mode",
		"spec.hooks[0].files[1].source",
		"spec.hooks[0].files[2].path",
		"spec.hooks[0].files[3]",
		"spec.hooks[0].directories[0].path",
		"spec.hooks[0].links[0].target",
		"spec.hooks[0].users[0].name",
		"spec.hooks[0].users[0].uid",
		"spec.hooks[0].groups[0].name",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no error at %s; errors at %q", want, got)
		}
	}
	t.Log(FieldErrors(diags, false).ToAggregate())
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

// TestAgentSetPrefix: the prefix of the agent's spec sets is the one a
// node's own specs are refused (hooks.AgentSetPrefix), or the agent could
// prune a node's own set.
func TestAgentSetPrefix(t *testing.T) {
	if v1alpha1.SetPrefix != hooks.AgentSetPrefix {
		t.Errorf("the agent's sets start with %q, but a node's own specs are refused %q", v1alpha1.SetPrefix, hooks.AgentSetPrefix)
	}
	if got := v1alpha1.SetName("base"); !strings.HasPrefix(got, hooks.AgentSetPrefix) {
		t.Errorf("SetName(base) = %q, not under %q", got, hooks.AgentSetPrefix)
	}
}
