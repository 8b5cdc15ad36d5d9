package deploytest_test

import (
	"context"
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// testAgent: what the agent of node-a may do with its node's token, and
// what RBAC and the policy keep it from.
func testAgent(ctx context.Context, t *testing.T, c *kubetest.Cluster, ns string, admin, agent client.Client, hh *v1alpha1.HostHooks, nodeHooks map[string]*v1alpha1.NodeHooks) {
	testAgentOwn(ctx, t, admin, agent, hh, nodeHooks)
	testAgentForbidden(ctx, t, admin, agent, ns, hh)
	testAgentPolicy(ctx, t, admin, agent, ns, nodeHooks["node-a"])
	testAgentUnbound(ctx, t, c, admin, ns, nodeHooks["node-a"])
}

// testAgentOwn: the agent of node-a reads what it watches and writes its
// own node's NodeHooks status; not another node's, and not a NodeHooks'
// spec.
func testAgentOwn(ctx context.Context, t *testing.T, admin, agent client.Client, hh *v1alpha1.HostHooks, nodeHooks map[string]*v1alpha1.NodeHooks) {
	t.Helper()
	// It reads what it watches.
	if err := agent.List(ctx, &v1alpha1.HostHooksList{}); err != nil {
		t.Errorf("agent listing HostHooks: %v", err)
	}
	if err := agent.Get(ctx, client.ObjectKeyFromObject(hh), &v1alpha1.HostHooks{}); err != nil {
		t.Errorf("agent getting a HostHooks: %v", err)
	}
	if err := agent.Get(ctx, client.ObjectKey{Name: "node-a"}, &corev1.Node{}); err != nil {
		t.Errorf("agent getting its Node: %v", err)
	}
	var nodes corev1.NodeList
	if err := agent.List(ctx, &nodes, client.MatchingFields{"metadata.name": "node-a"}); err != nil || len(nodes.Items) != 1 {
		t.Errorf("agent listing its Node by field selector: %d, %v", len(nodes.Items), err)
	}
	var mine v1alpha1.NodeHooksList
	if err := agent.List(ctx, &mine, client.MatchingLabels{v1alpha1.LabelNode: v1alpha1.LabelValue("node-a")}); err != nil || len(mine.Items) != 1 {
		t.Errorf("agent listing its NodeHooks by label: %d, %v", len(mine.Items), err)
	}

	// It writes its own node's NodeHooks status.
	own := get(ctx, t, agent, nodeHooks["node-a"])
	own.Status = v1alpha1.NodeHooksStatus{Phase: v1alpha1.NodeSucceeded, AppliedHash: own.Spec.HooksHash,
		Hooks: []v1alpha1.HookResult{{Name: "iscsi-setup", Unit: "iscsi-setup.service", Phase: "succeeded"}}}
	if err := agent.Status().Update(ctx, own); err != nil {
		t.Fatalf("agent updating its own NodeHooks status: %v", err)
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"status":{"message":"patched"}}`))
	if err := agent.Status().Patch(ctx, own, patch); err != nil {
		t.Errorf("agent patching its own NodeHooks status: %v", err)
	}
	if got := get(ctx, t, admin, own); got.Status.Phase != v1alpha1.NodeSucceeded || got.Status.Message != "patched" {
		t.Errorf("own NodeHooks status after the agent's writes: %+v", got.Status)
	}

	// Not another node's: RBAC allows it, the policy refuses it.
	other := get(ctx, t, agent, nodeHooks["node-b"])
	other.Status.Phase = v1alpha1.NodeFailed
	wantRefused(t, "agent of node-a updating node-b's NodeHooks status", agent.Status().Update(ctx, other),
		"may write only its own node's NodeHooks, not those of node-b")
	wantRefused(t, "agent of node-a patching node-b's NodeHooks status", agent.Status().Patch(ctx, other, patch),
		"may write only its own node's NodeHooks, not those of node-b")
	if got := get(ctx, t, admin, other); got.Status.Phase != "" {
		t.Errorf("node-b's NodeHooks status changed: %+v", got.Status)
	}

	// Not a NodeHooks itself (its spec is the rollout's): RBAC.
	own = get(ctx, t, agent, own)
	own.Spec.HooksHash = "sha256-mine"
	wantForbidden(t, "agent updating its NodeHooks' spec", agent.Update(ctx, own))
	wantForbidden(t, "agent deleting a NodeHooks", agent.Delete(ctx, get(ctx, t, agent, own)))
	wantForbidden(t, "agent creating a NodeHooks", agent.Create(ctx, &v1alpha1.NodeHooks{ObjectMeta: metav1.ObjectMeta{Name: "x.node-a"},
		Spec: v1alpha1.NodeHooksSpec{NodeName: "node-a", HostHooks: "x"}}))

}

// testAgentForbidden: RBAC lets the agent change no HostHooks, read no
// Secret and create no Event; it may drain its node (testAgentDrain).
func testAgentForbidden(ctx context.Context, t *testing.T, admin, agent client.Client, ns string, hh *v1alpha1.HostHooks) {
	t.Helper()
	// Nor a HostHooks, nor anything else.
	wantForbidden(t, "agent creating a HostHooks", agent.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "mine"},
		Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}}}))
	h := get(ctx, t, agent, hh)
	h.Spec.Hooks[0].Steps[0].Run = []string{"/bin/false"}
	wantForbidden(t, "agent updating a HostHooks", agent.Update(ctx, h))
	wantForbidden(t, "agent patching a HostHooks", agent.Patch(ctx, h, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))))
	wantForbidden(t, "agent updating a HostHooks' status", agent.Status().Update(ctx, h))
	wantForbidden(t, "agent deleting a HostHooks", agent.Delete(ctx, h))
	testAgentDrain(ctx, t, admin, agent, ns)
	wantForbidden(t, "agent listing Secrets", agent.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)))
	wantForbidden(t, "agent creating an Event", agent.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}))

}

// testAgentPolicy: the policy stands whatever RBAC grants: with a role
// that would let it, the agent of node-a still may not change the spec of
// its NodeHooks own, create or delete one.
func testAgentPolicy(ctx context.Context, t *testing.T, admin, agent client.Client, ns string, own *v1alpha1.NodeHooks) {
	t.Helper()
	grant := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-agent-too-much"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"nodehooks"}, Verbs: []string{"create", "update", "delete"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: grant.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: grant.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: agentSA, Namespace: ns}}}
	create(ctx, t, admin, grant)
	create(ctx, t, admin, binding)
	waitAllowed(ctx, t, admin, "system:serviceaccount:"+ns+":"+agentSA, "update", "nodehooks", "")
	own = get(ctx, t, agent, own)
	own.Spec.HooksHash = "sha256-mine"
	wantRefused(t, "agent changing its NodeHooks' spec with RBAC allowing it", agent.Update(ctx, own),
		"may not change a NodeHooks' spec, only its status")
	wantRefused(t, "agent creating a NodeHooks with RBAC allowing it", agent.Create(ctx, &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "x.node-a"}, Spec: v1alpha1.NodeHooksSpec{NodeName: "node-a", HostHooks: "x"}}),
		"may not create or delete NodeHooks")
	wantRefused(t, "agent deleting its NodeHooks with RBAC allowing it", agent.Delete(ctx, get(ctx, t, agent, own)),
		"may not create or delete NodeHooks")
	own = get(ctx, t, agent, own)
	own.Labels["extra"] = "x"
	if err := agent.Update(ctx, own); err != nil {
		t.Errorf("agent updating its NodeHooks' metadata with RBAC allowing it: %v (the policy guards spec and node only)", err)
	}
	for _, o := range []client.Object{binding, grant} {
		if err := admin.Delete(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

}

// testAgentUnbound: a token of the agent's service account that is not
// bound to a pod on a node carries no node name: every write is refused,
// here to own, node-a's NodeHooks.
func testAgentUnbound(ctx context.Context, t *testing.T, c *kubetest.Cluster, admin client.Client, ns string, own *v1alpha1.NodeHooks) {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	if err := admin.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: agentSA}}, req); err != nil {
		t.Fatal(err)
	}
	cfg := c.Config()
	cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = nil, nil
	cfg.BearerToken = req.Status.Token
	unbound := newClient(t, cfg)
	review := &authenticationv1.SelfSubjectReview{}
	if err := unbound.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "system:serviceaccount:"+ns+":"+agentSA || len(u.Extra["authentication.kubernetes.io/node-name"]) != 0 {
		t.Fatalf("unbound token's user: %+v", u)
	}
	own = get(ctx, t, unbound, own)
	own.Status.Message = "from nowhere"
	wantRefused(t, "agent without a node-name claim updating node-a's NodeHooks status", unbound.Status().Update(ctx, own),
		"only with a token bound to a pod on a node")
	pod := drainPod(ctx, t, admin, ns, "unbound-evicts", "node-a")
	wantRefused(t, "agent without a node-name claim evicting a pod", unbound.SubResource("eviction").Create(ctx, pod,
		&policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}), "only with a token bound to a pod on a node")
	if err := unbound.List(ctx, &v1alpha1.HostHooksList{}); err != nil {
		t.Errorf("agent without a node-name claim listing HostHooks: %v (reading needs no node)", err)
	}
}

// testAgentDrain: for a drain, the agent of node-a cordons and uncordons
// node-a (spec.unschedulable and its mark, nothing else of it), lists the
// pods of its node and evicts them; it may not cordon node-b, label or
// taint its own Node, or delete a pod. For a reboot it takes and releases
// reboot locks for node-a, and none of node-b's.
func testAgentDrain(ctx context.Context, t *testing.T, admin, agent client.Client, ns string) {
	cordon := func(name string, on bool) error {
		mark := `"true"`
		if !on {
			mark = "null"
		}
		return agent.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType,
			[]byte(fmt.Sprintf(`{"metadata":{"annotations":{"hostprov.dev/cordoned":%s}},"spec":{"unschedulable":%v}}`, mark, on))))
	}
	if err := cordon("node-a", true); err != nil {
		t.Errorf("agent cordoning its Node: %v", err)
	}
	if n := get(ctx, t, admin, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}); !n.Spec.Unschedulable {
		t.Errorf("node-a not cordoned: %+v", n.Spec)
	}
	if err := cordon("node-a", false); err != nil {
		t.Errorf("agent uncordoning its Node: %v", err)
	}
	wantRefused(t, "agent of node-a cordoning node-b", cordon("node-b", true), "may cordon only its own Node, not node-b")
	if n := get(ctx, t, admin, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}); n.Spec.Unschedulable {
		t.Errorf("node-b cordoned by node-a's agent")
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	only := "may change only its Node's spec.unschedulable and its annotation hostprov.dev/cordoned"
	wantRefused(t, "agent labelling its Node", agent.Patch(ctx, node, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))), only)
	wantRefused(t, "agent tainting its Node", agent.Patch(ctx, node, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`))), only)
	wantRefused(t, "agent annotating its Node", agent.Patch(ctx, node, client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"other":"x"}}}`))), only)
	wantForbidden(t, "agent deleting its Node", agent.Delete(ctx, node))

	pod := drainPod(ctx, t, admin, ns, "evicted", "node-a")
	var pods corev1.PodList
	if err := agent.List(ctx, &pods, client.MatchingFields{"spec.nodeName": "node-a"}); err != nil || len(pods.Items) == 0 {
		t.Errorf("agent listing its node's pods: %d, %v", len(pods.Items), err)
	}
	wantForbidden(t, "agent deleting a pod", agent.Delete(ctx, pod))
	if err := agent.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}}); err != nil {
		t.Errorf("agent evicting a pod of its node: %v", err)
	}

	// Reboot locks: Leases hostprov-reboot-* of its namespace, held by its
	// node, or taken over from no holder; not another node's.
	lease := func(name, holder string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if holder != "" {
			l.Spec.HolderIdentity = &holder
		}
		return l
	}
	mine := lease("hostprov-reboot-mine", "node-a")
	if err := agent.Create(ctx, mine); err != nil {
		t.Errorf("agent taking a reboot lock for its node: %v", err)
	} else if err := agent.Delete(ctx, mine); err != nil {
		t.Errorf("agent releasing its reboot lock: %v", err)
	}
	wantRefused(t, "agent taking a reboot lock for node-b", agent.Create(ctx, lease("hostprov-reboot-b", "node-b")),
		"may hold a reboot lock only for its own node")
	wantRefused(t, "agent writing a Lease that is no reboot lock", agent.Create(ctx, lease("hostprov-controller-x", "node-a")),
		"may write only reboot locks")
	theirs := lease("hostprov-reboot-theirs", "node-b")
	create(ctx, t, admin, theirs)
	taken := get(ctx, t, agent, theirs)
	taken.Spec.HolderIdentity = ptr.To("node-a")
	wantRefused(t, "agent taking node-b's reboot lock", agent.Update(ctx, taken), "may not take or release the reboot lock that node node-b holds")
	wantRefused(t, "agent releasing node-b's reboot lock", agent.Delete(ctx, get(ctx, t, agent, theirs)), "may not take or release the reboot lock that node node-b holds")
	free := lease("hostprov-reboot-free", "")
	create(ctx, t, admin, free)
	free = get(ctx, t, agent, free)
	free.Spec.HolderIdentity = ptr.To("node-a")
	if err := agent.Update(ctx, free); err != nil {
		t.Errorf("agent taking a reboot lock that no node holds: %v", err)
	}
	other := lease("hostprov-reboot-elsewhere", "node-a")
	other.Namespace = "default"
	wantForbidden(t, "agent taking a reboot lock outside its namespace", agent.Create(ctx, other))
}

// drainPod makes a pod bound to node, and its namespace's default service
// account, which no controller manager makes here.
func drainPod(ctx context.Context, t *testing.T, admin client.Client, ns, name, node string) *corev1.Pod {
	t.Helper()
	if err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}}}
	create(ctx, t, admin, p)
	return p
}
