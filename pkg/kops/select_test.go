package kops_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/kops"
)

// hookView is what a kops nodeup config keeps of a hook.
type hookView struct {
	Name          string   `yaml:"name"`
	Before        []string `yaml:"before"`
	Manifest      string   `yaml:"manifest"`
	ExecContainer *struct {
		Image   string   `yaml:"image"`
		Command []string `yaml:"command"`
	} `yaml:"execContainer"`
}

// TestRoleFilteringGoldens replays kops's TestBootstrapUserData
// (pkg/model/bootstrapscript_test.go): a cluster hook and an instance group
// hook with the same roles, on a ControlPlane or a Node. kops's goldens,
// nodeupconfig_N, hold the hooks nodeup gets: [instance group's, cluster's].
func TestRoleFilteringGoldens(t *testing.T) {
	needCorpus(t)
	cases := []struct {
		role  string
		file  int
		roles string
	}{
		{"ControlPlane", 0, `[""]`},
		{"ControlPlane", 0, `[Node]`},
		{"ControlPlane", 1, `[ControlPlane]`},
		{"ControlPlane", 2, `[ControlPlane, Node]`},
		{"Node", 3, `[""]`},
		{"Node", 4, `[Node]`},
		{"Node", 3, `[ControlPlane]`},
		{"Node", 5, `[ControlPlane, Node]`},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d-%s-%s", i, c.role, c.roles), func(t *testing.T) {
			src := fmt.Sprintf(`apiVersion: kops.k8s.io/v1alpha3
kind: Cluster
metadata:
  name: c
spec:
  hooks:
  - execContainer:
      command: [sh, -c, apt-get update]
      image: busybox
    roles: %[1]s
---
apiVersion: kops.k8s.io/v1alpha3
kind: InstanceGroup
metadata:
  name: testIG
spec:
  role: %[2]s
  hooks:
  - name: disable-update-engine.service
    before: [update-engine.service, kubelet.service]
    manifest: "Type=oneshot\nExecStart=/usr/bin/systemctl stop update-engine.service"
    roles: %[1]s
  - name: apply-to-all.service
    manifest: "Type=oneshot\nExecStart=/usr/bin/systemctl start apply-to-all.service"
`, c.roles, c.role)
			ms, diags := kops.Read("cluster.yaml", []byte(src))
			for _, d := range diags {
				// kops takes an empty role and matches no machine
				// with it; hostprov says so.
				if !strings.Contains(d.Message, `"" is not a kops instance group role`) {
					t.Errorf("unexpected: %s", d)
				}
			}
			hs, diags := ms.Hooks("", "testIG")
			if len(diags) > 0 {
				t.Fatal(diags)
			}
			got := make([][]hookView, 2)
			for _, h := range hs {
				v := hookView{Name: h.Hook.Name, Before: h.Before, Manifest: h.Manifest}
				if ec := h.ExecContainer; ec != nil {
					v.ExecContainer = &struct {
						Image   string   `yaml:"image"`
						Command []string `yaml:"command"`
					}{ec.Image, ec.Command}
				}
				list := 1
				if h.InstanceGroup {
					list = 0
				}
				got[list] = append(got[list], v)
			}
			var golden struct {
				Hooks [][]hookView `yaml:"Hooks"`
			}
			file := filepath.Join("golden", "bootstrapscript-role-filtering", fmt.Sprintf("nodeupconfig_%d.yaml", c.file))
			if err := yaml.Unmarshal(readCorpus(t, file), &golden); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(golden.Hooks, got); diff != "" {
				t.Errorf("hooks differ from kops's %s (-kops +hostprov):\n%s", file, diff)
			}
		})
	}
}

// TestHooksRules checks kops's naming, filtering and override rules.
func TestHooksRules(t *testing.T) {
	src := `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
metadata:
  name: c
spec:
  hooks:
  - execContainer: {image: busybox}
  - name: shared
    manifest: "ExecStart=/bin/true\n"
  - name: masters-only.service
    roles: [Master]
    manifest: "ExecStart=/bin/true\n"
  - execContainer: {image: busybox}
    roles: [Node]
  - name: data.mount
    useRawManifest: true
    manifest: "[Mount]\nWhat=/dev/xvdb\nWhere=/data\n"
---
apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: nodes
spec:
  role: Node
  hooks:
  - name: shared
    manifest: "ExecStart=/bin/false\n"
  - execContainer: {image: alpine}
`
	ms, diags := kops.Read("c.yaml", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	names := func(role kops.Role, ig string) string {
		hs, diags := ms.Hooks(role, ig)
		if len(diags) > 0 {
			return diags.Error()
		}
		var out []string
		for _, h := range hs {
			s := h.UnitName()
			if h.InstanceGroup {
				s += "(ig)"
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	// One InstanceGroup: it is the machine's.
	if got, want := names("", ""), "shared.service(ig) kops-hook-1-ig.service(ig) kops-hook-0.service kops-hook-3.service data.mount"; got != want {
		t.Errorf("nodes:\n got %s\nwant %s", got, want)
	}
	if got := names(kops.ControlPlane, ""); !strings.Contains(got, "has role Node, not ControlPlane") {
		t.Errorf("a role that is not the instance group's: %s", got)
	}
	if got := names("", "masters"); !strings.Contains(got, `there is no InstanceGroup named "masters"`) {
		t.Errorf("an unknown instance group: %s", got)
	}
	// Without an instance group: cluster hooks, filtered by the role.
	ms.InstanceGroups = nil
	if got, want := names(kops.ControlPlane, ""), "kops-hook-0.service shared.service masters-only.service data.mount"; got != want {
		t.Errorf("control plane:\n got %s\nwant %s", got, want)
	}
	if got, want := names("", ""), "kops-hook-0.service shared.service masters-only.service kops-hook-3.service data.mount"; got != want {
		t.Errorf("any role:\n got %s\nwant %s", got, want)
	}
}

// TestRoleChoosesTheInstanceGroup: with several InstanceGroups, --role
// says which machine when the groups of that role leave no doubt.
func TestRoleChoosesTheInstanceGroup(t *testing.T) {
	src := `apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
metadata:
  name: c
spec:
  hooks:
  - name: everywhere.service
    manifest: ExecStart=/bin/true
  - name: masters-only.service
    roles: [Master]
    manifest: ExecStart=/bin/true
---
apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: masters
spec:
  role: Master
  hooks:
  - name: ig-master.service
    manifest: ExecStart=/bin/true
---
apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: nodes-a
spec:
  role: Node
  hooks:
  - name: ig-node.service
    manifest: ExecStart=/bin/true
---
apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: nodes-b
spec:
  role: Node
---
apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: bastions-a
spec:
  role: Bastion
---
apiVersion: kops.k8s.io/v1alpha2
kind: InstanceGroup
metadata:
  name: bastions-b
spec:
  role: Bastion
`
	m, diags := kops.Read("c.yaml", []byte(src))
	if diags.HasErrors(false) {
		t.Fatalf("Read: %s", diagLines(diags))
	}
	for _, c := range []struct {
		role kops.Role
		want string // unit names, or the error
	}{
		// The only ControlPlane group (Master in v1alpha2): its hooks first.
		{kops.ControlPlane, "ig-master.service everywhere.service masters-only.service"},
		// Two Bastion groups, neither with hooks: the same hooks for both.
		{kops.Bastion, "everywhere.service"},
		// No group of the role: the cluster's hooks for that role.
		{kops.APIServer, "everywhere.service"},
		// Two Node groups, one with hooks: which machine is meant?
		{kops.Node, "the manifests hold 2 InstanceGroups of role Node with hooks of their own; say which machine's hooks to render " +
			"(give --instance-group: the instance groups of role Node are nodes-a, nodes-b)"},
		// No role: ambiguous as before.
		{"", "the manifests hold 5 InstanceGroups; say which machine's hooks to render " +
			"(the instance groups are bastions-a, bastions-b, masters, nodes-a, nodes-b; give --instance-group, or --role when the groups of that role have no hooks of their own)"},
	} {
		t.Run(string(c.role), func(t *testing.T) {
			hs, diags := m.Hooks(c.role, "")
			var got []string
			for _, d := range diags {
				got = append(got, d.Message+" ("+d.Hint+")")
			}
			for _, h := range hs {
				got = append(got, h.UnitName())
			}
			if diff := cmp.Diff(c.want, strings.Join(got, " ")); diff != "" {
				t.Errorf("Hooks(%q) (-want +got):\n%s", c.role, diff)
			}
		})
	}
}
