package kops_test

import (
	"testing"

	"github.com/hostprov/hostprov/pkg/kops"
)

// TestCompatTasksNameTheirHook checks that each task of RenderCompat, the
// disabled hook's included, carries its hook's name as written, which apply
// records in the state and status shows.
func TestCompatTasksNameTheirHook(t *testing.T) {
	src := `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
spec:
  hooks:
  - name: fetch-tools
    manifest: |
      Type=oneshot
      ExecStart=/bin/true
  - name: old.service
    disabled: true
`
	tasks := renderCompat(t, "cluster.yaml", []byte(src), "", "", kops.Containerd)
	want := map[string]string{"fetch-tools.service": "fetch-tools", "old.service": "old.service"}
	if len(tasks) != len(want) {
		t.Fatalf("%d tasks, want %d", len(tasks), len(want))
	}
	for _, tk := range tasks {
		if tk.HookName != want[tk.Name] {
			t.Errorf("%s: hook name %q, want %q", tk.Name, tk.HookName, want[tk.Name])
		}
	}
}
