package examples_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/compile"
)

// TestISCSIHostHooks checks the iSCSI example's HostHooks: it is a valid
// HostHooks (no field the type lacks), hostprov's own validation passes it
// without a warning, it selects worker nodes, and its nodes get exactly the
// units that the example's hook spec gives a node at boot.
func TestISCSIHostHooks(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("iscsi", "hosthooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var hh v1alpha1.HostHooks
	if err := yaml.UnmarshalStrict(data, &hh); err != nil {
		t.Fatalf("hosthooks.yaml: %v", err)
	}
	if hh.APIVersion != v1alpha1.GroupVersion.String() || hh.Kind != "HostHooks" || hh.Name == "" {
		t.Fatalf("hosthooks.yaml is %s %s %q, want a HostHooks of %s with a name", hh.APIVersion, hh.Kind, hh.Name, v1alpha1.GroupVersion)
	}
	sel := hh.Spec.NodeSelector
	if sel == nil || len(sel.MatchLabels) != 0 || len(sel.MatchExpressions) != 1 ||
		sel.MatchExpressions[0].Key != "node-role.kubernetes.io/worker" || sel.MatchExpressions[0].Operator != "Exists" {
		t.Errorf("nodeSelector %+v, want node-role.kubernetes.io/worker Exists", sel)
	}

	set, diags := kube.Build(&hh)
	if len(diags) != 0 {
		t.Fatalf("kube.Build: %v", diags)
	}
	spec, err := os.ReadFile(filepath.Join("iscsi", "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, diags := compile.Build("hostprov.yaml", spec, compile.Options{})
	want := r.Units
	if len(diags) != 0 {
		t.Fatalf("hostprov.yaml: %v", diags)
	}
	type unit struct{ Name, Contents string }
	var got, wantUnits []unit
	for _, u := range set.Units {
		got = append(got, unit{u.Name, string(u.Contents)})
	}
	for _, u := range want {
		wantUnits = append(wantUnits, unit{u.Name, string(u.Contents)})
	}
	if len(wantUnits) == 0 {
		t.Fatal("hostprov.yaml renders no unit")
	}
	if d := cmp.Diff(wantUnits, got); d != "" {
		t.Errorf("the HostHooks' units differ from hostprov.yaml's (-hostprov.yaml +hosthooks.yaml):\n%s", d)
	}
}

// TestDocHostHooks checks the HostHooks of docs/kubernetes.md as the API
// server and the agent would: no field the type lacks, and hostprov's
// validation passes its hooks.
func TestDocHostHooks(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "kubernetes.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## HostHooks\n")
	if !ok {
		t.Fatal("docs/kubernetes.md has no HostHooks section")
	}
	_, block, ok := strings.Cut(section, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatal("docs/kubernetes.md's HostHooks section has no YAML block")
	}
	var hh v1alpha1.HostHooks
	if err := yaml.UnmarshalStrict([]byte(block), &hh); err != nil {
		t.Fatalf("docs/kubernetes.md's HostHooks: %v\n%s", err, block)
	}
	if hh.Kind != "HostHooks" || hh.APIVersion != v1alpha1.GroupVersion.String() {
		t.Errorf("docs/kubernetes.md's HostHooks is %s %s", hh.APIVersion, hh.Kind)
	}
	if _, diags := kube.Build(&hh); len(diags) != 0 {
		t.Errorf("docs/kubernetes.md's HostHooks: %v", diags)
	}
}
