package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// metricsSpec has a unit, storage of every kind and a disruption.
const metricsSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
metadata: {name: metrics}
hooks:
  - name: metrics
    exec: [/opt/metrics/bin/collect, -c, /etc/metrics/collect.conf]
    user: metrics
    disruption: Reboot
    files:
      - {path: /etc/metrics/collect.conf, contents: "listen = 9100\n", mode: 0640, group: metrics}
    directories:
      - {path: /var/lib/metrics, mode: 0750, user: metrics}
    links:
      - {path: /etc/metrics/current, target: collect.conf}
    users:
      - {name: metrics, uid: 990, system: true}
    groups:
      - {name: metrics, gid: 991, system: true}
`

// The agent's path (an object's hook spec) and the CLI's (a spec file) are
// one pipeline: the same hooks make the same spec set, units, storage and
// disruptions; only the places differ, a field of the object for a line of
// the file.
func TestObjectSameSetAsFile(t *testing.T) {
	file, err := Load(Files([]inputs.File{{Name: "metrics.yaml", Data: []byte(metricsSpec)}}), Options{})
	if err != nil || len(file.Diagnostics) != 0 {
		t.Fatalf("the spec file: %v %v", err, file.Diagnostics)
	}
	obj, err := Load([]Input{{File: inputs.File{Name: "hosthooks/metrics", Data: []byte(metricsSpec)},
		Object: &Object{Set: "hosthooks.metrics", Owner: "agent"}}}, Options{})
	if err != nil || len(obj.Diagnostics) != 0 {
		t.Fatalf("the object: %v %v", err, obj.Diagnostics)
	}
	if len(file.Sets) != 1 || len(obj.Sets) != 1 {
		t.Fatalf("%d and %d spec sets, want 1 each", len(file.Sets), len(obj.Sets))
	}
	fs, os := file.Sets[0], obj.Sets[0]
	if fs.Name != "metrics" || fs.Owner != "" || os.Name != "hosthooks.metrics" || os.Owner != "agent" {
		t.Errorf("sets %q (owner %q) and %q (owner %q)", fs.Name, fs.Owner, os.Name, os.Owner)
	}
	if len(fs.Units) == 0 || len(fs.Paths) != 3 || len(fs.Accounts) != 2 {
		t.Fatalf("the spec file's set has %d units, %d paths, %d accounts; want some, 3, 2", len(fs.Units), len(fs.Paths), len(fs.Accounts))
	}
	places := cmp.Options{cmpopts.IgnoreTypes(hooks.Position{}), cmpopts.IgnoreFields(apply.Path{}, "Where"),
		cmpopts.IgnoreFields(apply.Account{}, "Where"), cmpopts.IgnoreFields(apply.SpecSet{}, "Name", "Owner"),
		cmp.AllowUnexported(apply.Path{}, apply.Account{}), cmpopts.EquateEmpty()}
	if diff := cmp.Diff(fs, os, places); diff != "" {
		t.Errorf("spec sets differ (-file +object):\n%s", diff)
	}
	if diff := cmp.Diff(file.Storage, obj.Storage, places); diff != "" {
		t.Errorf("storage differs (-file +object):\n%s", diff)
	}
	if diff := cmp.Diff(file.Disruptions, obj.Disruptions); diff != "" || len(obj.Disruptions) == 0 {
		t.Errorf("disruptions %v, differ (-file +object):\n%s", obj.Disruptions, diff)
	}
	for _, u := range os.Units {
		if want := fmt.Sprintf("hosthooks/metrics spec.hooks[%d]", u.Hook); u.Pos.String() != want {
			t.Errorf("unit %s at %s, want %s", u.Name, u.Pos, want)
		}
	}
	var where []string
	for _, p := range os.Paths {
		where = append(where, p.Where)
	}
	for _, a := range os.Accounts {
		where = append(where, a.Where)
	}
	want := []string{"hosthooks/metrics spec.hooks[0].directories[0]", "hosthooks/metrics spec.hooks[0].files[0]",
		"hosthooks/metrics spec.hooks[0].links[0]", "hosthooks/metrics spec.hooks[0].groups[0]", "hosthooks/metrics spec.hooks[0].users[0]"}
	if !slices.Equal(where, want) {
		t.Errorf("the object's paths and accounts are at %q, want %q", where, want)
	}
}

// A problem is the same problem on both paths: the object's is at the
// object, with the object's field as its path.
func TestObjectProblemsAtFields(t *testing.T) {
	const bad = `apiVersion: hostprov/v1alpha1
kind: Hooks
metadata: {name: bad}
hooks:
  - name: a
    exec: [/bin/true]
  - name: b
    exec: [""]
`
	file, _ := Load(Files([]inputs.File{{Name: "bad.yaml", Data: []byte(bad)}}), Options{})
	obj, _ := Load([]Input{{File: inputs.File{Name: "hosthooks/bad", Data: []byte(bad)}, Object: &Object{Set: "hosthooks.bad"}}}, Options{})
	if !file.Diagnostics.HasErrors(false) || len(file.Diagnostics) != len(obj.Diagnostics) {
		t.Fatalf("the file has %v, the object %v", file.Diagnostics, obj.Diagnostics)
	}
	for i, d := range obj.Diagnostics {
		f := file.Diagnostics[i]
		if d.Message != f.Message || d.Path != "spec."+f.Path || d.Pos != (hooks.Position{File: "hosthooks/bad"}) {
			t.Errorf("the object's problem %v, the file's %v", d, f)
		}
	}
}

func TestFieldPath(t *testing.T) {
	for p, want := range map[string]string{
		"hooks[1].exec": "spec.hooks[1].exec", "hooks": "spec.hooks", "hooks.x": "spec.hooks.x",
		"": "metadata.name", "metadata": "metadata.name", "metadata.name": "metadata.name", "kind": "kind",
	} {
		if got := fieldPath(p); got != want {
			t.Errorf("fieldPath(%q) = %q, want %q", p, got, want)
		}
	}
}

// Two specs of one load are checked against each other: a unit, a set name
// and a path belong to one spec.
func TestSetsClaimOnce(t *testing.T) {
	spec := func(name, hook string) []byte {
		return []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nmetadata: {name: " + name + "}\nhooks:\n  - name: " + hook +
			"\n    exec: [/bin/true]\n    directories: [{path: /var/lib/x}]\n")
	}
	r, err := Load(Files([]inputs.File{{Name: "a.yaml", Data: spec("a", "h")}, {Name: "b.yaml", Data: spec("a", "h")},
		{Name: "c.yaml", Data: spec("c", "h")}}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]string, len(r.Diagnostics))
	for i, d := range r.Diagnostics {
		msgs[i] = d.Pos.File + ": " + d.Message
	}
	const want = `b.yaml: /var/lib/x is claimed already by another spec, at a.yaml:7:19
b.yaml: spec set a is named already at a.yaml:3:18: each spec of a node is its own set
c.yaml: /var/lib/x is claimed already by another spec, at a.yaml:7:19
c.yaml: h.service is made by spec set a already, at a.yaml:5:5: a unit belongs to one set`
	if got := strings.Join(msgs, "\n"); got != want {
		t.Errorf("diagnostics:\n%s\nwant:\n%s", got, want)
	}
	if len(r.Sets) != 2 || r.Label != "a.yaml, b.yaml, c.yaml" || len(r.Storage.Directories) != 1 {
		t.Errorf("%d sets, label %q, %d directories; want 2, the files, 1", len(r.Sets), r.Label, len(r.Storage.Directories))
	}
}

// Options for kops manifests are a mistake with a hostprov spec, and -d
// holds hostprov specs only.
func TestInputErrors(t *testing.T) {
	spec := inputs.File{Name: "a.yaml", Data: []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks: []\n")}
	manifest := inputs.File{Name: "cluster.yaml", Data: []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n")}
	for _, c := range []struct {
		in   inputs.File
		opts Options
		want string
	}{
		{spec, Options{Kops: KopsOptions{Role: "Node", Given: []string{"--role"}}}, "--role is for kops manifests, but a.yaml is a hostprov spec"},
		{manifest, Options{Dir: "hooks.d"}, "hooks.d: -d reads hostprov specs, each its own spec set; give kops manifests with -f"},
		{manifest, Options{Kops: KopsOptions{Role: "Nodes"}}, "--role: "},
	} {
		_, err := Load(Files([]inputs.File{c.in}), c.opts)
		var ie *InputError
		if !errors.As(err, &ie) || len(err.Error()) < len(c.want) || err.Error()[:len(c.want)] != c.want {
			t.Errorf("Load(%s, %+v) = %v, want an InputError %q", c.in.Name, c.opts, err, c.want)
		}
	}
}

// SpecsOnly reads a kops manifest as a hostprov spec, whose problems are
// diagnostics, not a mistake in the inputs.
func TestSpecsOnly(t *testing.T) {
	manifest := inputs.File{Name: "cluster.yaml", Data: []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n")}
	r, err := Load(Files([]inputs.File{manifest}), Options{Dir: "hooks.d", SpecsOnly: true})
	if err != nil || r.Kops || !r.Diagnostics.HasErrors(false) || r.Label != "hooks.d" {
		t.Errorf("Load of a kops manifest, SpecsOnly: %v, kops %v, label %q, diagnostics %v; want the spec's errors", err, r.Kops, r.Label, r.Diagnostics)
	}
}
