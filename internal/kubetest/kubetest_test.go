package kubetest

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// The cluster serves hostprov's CRDs with their status subresource, and a
// node's identity is what the API server says a DaemonSet's Pod on that
// node is, node name included.
func TestCluster(t *testing.T) {
	start := time.Now()
	c := Start(t)
	t.Logf("Start took %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	c.InstallCRDs(t, "../../deploy/crds")
	t.Logf("InstallCRDs took %v", time.Since(start).Round(time.Millisecond))

	cl := c.Client(t)
	ctx := t.Context()
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "iscsi"},
		Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{
			Name:  "install-iscsi",
			Steps: []v1alpha1.Step{{Name: "install", Run: []string{"/usr/bin/apt-get", "install", "-y", "open-iscsi"}}},
		}}},
	}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	// The status is a subresource: an update of the object leaves it
	// alone, an update of the status changes only it.
	hh.Status.MatchedNodes = 3
	hh.Status.Phase = v1alpha1.PhaseProgressing
	if err := cl.Update(ctx, hh); err != nil {
		t.Fatal(err)
	}
	if hh.Status.MatchedNodes != 0 || hh.Status.Phase != "" {
		t.Errorf("update of the object wrote its status: %+v", hh.Status)
	}
	hh.Status.MatchedNodes = 3
	hh.Status.Phase = v1alpha1.PhaseProgressing
	hh.Spec.Hooks[0].Name = "changed-with-status"
	if err := cl.Status().Update(ctx, hh); err != nil {
		t.Fatal(err)
	}
	var got v1alpha1.HostHooks
	if err := cl.Get(ctx, client.ObjectKeyFromObject(hh), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.MatchedNodes != 3 || got.Status.Phase != v1alpha1.PhaseProgressing {
		t.Errorf("status after the status update: %+v", got.Status)
	}
	if got.Spec.Hooks[0].Name != "install-iscsi" {
		t.Errorf("status update changed the spec: hook %q", got.Spec.Hooks[0].Name)
	}

	agent := newClient(t, c.NodeIdentity(t, "hostprov-system", "hostprov-agent", "node-1"))
	review := &authenticationv1.SelfSubjectReview{}
	if err := agent.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	user := review.Status.UserInfo
	if user.Username != "system:serviceaccount:hostprov-system:hostprov-agent" {
		t.Errorf("user %q", user.Username)
	}
	if got := user.Extra["authentication.kubernetes.io/node-name"]; !slices.Equal(got, authenticationv1.ExtraValue{"node-1"}) {
		t.Errorf("node-name %q, want [node-1]; extra %v", got, user.Extra)
	}
	if !slices.Contains(user.Groups, "system:serviceaccounts:hostprov-system") {
		t.Errorf("groups %q", user.Groups)
	}
	// RBAC holds: a service account is allowed nothing it was not
	// granted.
	err := agent.List(ctx, &v1alpha1.HostHooksList{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("agent listing HostHooks without a role: %v, want forbidden", err)
	}
	// A second identity for the same service account on another node
	// reuses what exists.
	review = &authenticationv1.SelfSubjectReview{}
	if err := newClient(t, c.NodeIdentity(t, "hostprov-system", "hostprov-agent", "node-2")).Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	if got := review.Status.UserInfo.Extra["authentication.kubernetes.io/node-name"]; !slices.Equal(got, authenticationv1.ExtraValue{"node-2"}) {
		t.Errorf("second node: node-name %q", got)
	}
	var nodes corev1.NodeList
	if err := cl.List(ctx, &nodes); err != nil || len(nodes.Items) != 2 {
		t.Errorf("nodes: %d, %v", len(nodes.Items), err)
	}

	// The kubeconfig file is the admin's.
	file := c.Kubeconfig(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", file)
	if err != nil {
		t.Fatal(err)
	}
	review = &authenticationv1.SelfSubjectReview{}
	if err := newClient(t, cfg).Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "kubetest-admin" || !slices.Contains(u.Groups, "system:masters") {
		t.Errorf("kubeconfig user %q groups %q", u.Username, u.Groups)
	}
	if data, err := os.ReadFile(file); err != nil || !strings.Contains(string(data), c.host) {
		t.Errorf("kubeconfig %s: %v\n%s", file, err, data)
	}
}
