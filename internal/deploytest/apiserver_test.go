package deploytest_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/certs"
	"github.com/hostprov/hostprov/internal/deploytest"
	"github.com/hostprov/hostprov/internal/kube/admission"
	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

const (
	agentSA      = "hostprov-agent"
	controllerSA = "hostprov-controller"
	webhookName  = "hostprov-hosthooks"
	certSecret   = "hostprov-webhook-cert"
	flowSchema   = "hostprov-controller-leader-election"
)

// applier applies objects as `kubectl apply --server-side` does.
type applier struct {
	t      *testing.T
	dyn    *dynamic.DynamicClient
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func newApplier(t *testing.T, cfg *rest.Config) *applier {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{t: t, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (a *applier) apply(ctx context.Context, o deploytest.Object) {
	a.t.Helper()
	gvk := o.Obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		// A kind served since the last discovery (a CRD just made).
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		a.t.Fatalf("%s: %v", o, err)
	}
	var r dynamic.ResourceInterface = a.dyn.Resource(m.Resource)
	if m.Scope.Name() == "namespace" {
		r = a.dyn.Resource(m.Resource).Namespace(o.Obj.GetNamespace())
	}
	if _, err := r.Apply(ctx, o.Obj.GetName(), o.Obj, metav1.ApplyOptions{FieldManager: "kubectl", Force: true}); err != nil {
		a.t.Fatalf("applying %s: %v", o, err)
	}
}

// TestDeployOnAPIServer applies deploy/ to a real API server and checks
// what it grants and refuses: the agent, with the service-account token of
// its pod on node A, reads HostHooks and Nodes and writes the status of
// node A's NodeHooks, and nothing else; the controller writes the one
// Secret and webhook configuration it may; the author and viewer roles
// grant what they say; and the HostHooks webhook fails closed.
func TestDeployOnAPIServer(t *testing.T) {
	_, objs := load(t)
	testDeploy(t, objs, namespace)
}

// testDeploy applies objs, deploy/ as built for namespace ns, and checks
// what TestDeployOnAPIServer says.
func testDeploy(t *testing.T, objs []deploytest.Object, ns string) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	in := install(ctx, t, objs)
	c, admin, a, others, hh, nodeHooks := in.c, in.admin, in.a, in.others, in.hh, in.nodeHooks

	agentCfg := c.NodeIdentity(t, ns, agentSA, "node-a")
	agent := newClient(t, agentCfg)
	c.NodeIdentity(t, ns, agentSA, "node-b") // Node node-b

	// The API server takes up new policies and webhooks a moment after
	// they are stored: wait for each to refuse what it refuses (tried
	// with a dry run, which admission sees and nothing stores).
	waitPolicy(ctx, t, "hostprov-agent-own-node", func() error {
		other := get(ctx, t, agent, nodeHooks["node-b"])
		other.Status.Message = "probe"
		return agent.Status().Update(ctx, other, client.DryRunAll)
	})
	ctrlCfg := c.NodeIdentity(t, ns, controllerSA, "node-c")
	ctrl := newClient(t, ctrlCfg)
	waitPolicy(ctx, t, "hostprov-controller-limits", func() error {
		h := get(ctx, t, admin, hh)
		h.Spec.Hooks[0].Name = "probe"
		return ctrl.Update(ctx, h, client.DryRunAll)
	})

	waitPolicy(ctx, t, `failed calling webhook "hosthooks.hostprov.dev"`, func() error {
		return admin.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
			Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}}}, client.DryRunAll)
	})

	t.Run("agent", func(t *testing.T) { testAgent(ctx, t, c, ns, admin, agent, hh, nodeHooks) })
	t.Run("controller", func(t *testing.T) { testController(ctx, t, ns, admin, ctrl, a, others, hh) })
	t.Run("people", func(t *testing.T) { testPeople(ctx, t, c, admin, hh) })
	t.Run("webhook", func(t *testing.T) { testWebhook(ctx, t, admin, hh) })
	t.Run("priority", func(t *testing.T) {
		testPriority(ctx, t, admin, flowSchema, ns, ctrlCfg, agentCfg)
	})
}

// installed is a real API server with deploy/ (or an overlay's build of
// it) applied, and what the tests need of the controller's work made by
// the admin: a HostHooks and NodeHooks of nodes node-a and node-b.
type installed struct {
	c         *kubetest.Cluster
	admin     client.Client
	a         *applier
	others    []deploytest.Object // objs but the namespace and the CRDs
	hh        *v1alpha1.HostHooks
	nodeHooks map[string]*v1alpha1.NodeHooks
}

func install(ctx context.Context, t *testing.T, objs []deploytest.Object) *installed {
	t.Helper()
	c := kubetest.Start(t)
	admin := c.Client(t)
	a := newApplier(t, c.Config())

	// The namespace and the CRDs first, as kubectl orders them; then what
	// the test needs from the controller (a HostHooks and two NodeHooks),
	// made before the webhook that only a running controller answers.
	var others []deploytest.Object
	for _, o := range objs {
		if k := o.Obj.GetKind(); k == "Namespace" || k == "CustomResourceDefinition" {
			a.apply(ctx, o)
		} else {
			others = append(others, o)
		}
	}
	waitEstablished(ctx, t, admin)
	hh := &v1alpha1.HostHooks{
		ObjectMeta: metav1.ObjectMeta{Name: "iscsi"},
		Spec:       v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "iscsi-setup", Steps: []v1alpha1.Step{{Name: "install", Run: []string{"/bin/true"}}}}}},
	}
	create(ctx, t, admin, hh)
	nodeHooks := map[string]*v1alpha1.NodeHooks{}
	for _, node := range []string{"node-a", "node-b"} {
		nh := &v1alpha1.NodeHooks{
			ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, node), Labels: map[string]string{
				v1alpha1.LabelNode: v1alpha1.LabelValue(node), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
			Spec: v1alpha1.NodeHooksSpec{NodeName: node, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)},
		}
		create(ctx, t, admin, nh)
		nodeHooks[node] = nh
	}
	for _, o := range others {
		a.apply(ctx, o)
	}
	return &installed{c: c, admin: admin, a: a, others: others, hh: hh, nodeHooks: nodeHooks}
}

// access is a request of a service account, and whether RBAC allows it;
// an empty namespace is cluster-wide.
type access struct {
	verb, resource, sub, ns, name string
	allowed                       bool
}

// controllerAccess is what RBAC lets the controller's service account do,
// and not do, when deploy/ is in namespace ns.
func controllerAccess(ns string) []access {
	return []access{
		{"watch", "hosthooks", "", "", "", true},
		{"update", "hosthooks", "", "", "x", true},
		{"update", "hosthooks", "status", "", "x", true},
		{"update", "hosthooks", "finalizers", "", "x", true},
		{"create", "hosthooks", "", "", "", false},
		{"delete", "hosthooks", "", "", "x", false},
		{"create", "nodehooks", "", "", "", true},
		{"update", "nodehooks", "", "", "x", true},
		{"delete", "nodehooks", "", "", "x", true},
		{"watch", "nodes", "", "", "", true},
		{"update", "nodes", "", "", "x", false},
		{"create", "leases", "", ns, "", true},
		{"update", "leases", "", ns, "hostprov-controller", true},
		{"update", "leases", "", "kube-system", "x", false},
		{"create", "secrets", "", ns, "", false},
		{"get", "secrets", "", ns, "other", false},
		{"list", "secrets", "", ns, "", false},
		{"create", "pods", "", ns, "", false},
	}
}

func testController(ctx context.Context, t *testing.T, ns string, admin, ctrl client.Client, a *applier, objs []deploytest.Object, hh *v1alpha1.HostHooks) {
	user := "system:serviceaccount:" + ns + ":" + controllerSA
	for _, r := range controllerAccess(ns) {
		if got := allowed(ctx, t, admin, user, r.verb, r.resource, r.sub, r.ns, r.name); got != r.allowed {
			t.Errorf("controller %s %s/%s %s/%s: allowed %v, want %v", r.verb, r.resource, r.sub, r.ns, r.name, got, r.allowed)
		}
	}

	// With its pod's token (ctrl), it fills the webhook's Secret and CA, and no
	// other; applying deploy/ again keeps what it wrote.
	secret := &corev1.Secret{}
	if err := ctrl.Get(ctx, client.ObjectKey{Namespace: ns, Name: certSecret}, secret); err != nil {
		t.Fatalf("controller getting its Secret: %v", err)
	}
	secret.Data = map[string][]byte{"tls.crt": []byte("cert"), "tls.key": []byte("key")}
	if err := ctrl.Update(ctx, secret); err != nil {
		t.Errorf("controller filling its Secret: %v", err)
	}
	vwc := &admissionv1.ValidatingWebhookConfiguration{}
	if err := ctrl.Get(ctx, client.ObjectKey{Name: webhookName}, vwc); err != nil {
		t.Fatalf("controller getting its webhook configuration: %v", err)
	}
	ca := selfSignedPEM(t)
	caPatch := fmt.Sprintf(`[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":%q}]`, base64.StdEncoding.EncodeToString(ca))
	if err := ctrl.Patch(ctx, vwc, client.RawPatch(types.JSONPatchType, []byte(caPatch))); err != nil {
		t.Errorf("controller writing its webhook's CA: %v", err)
	}
	// The controller policy: nothing of the webhook but its CA, and no
	// HostHooks' spec, though RBAC would allow both.
	for _, p := range []string{
		`[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]`,
		`[{"op":"replace","path":"/webhooks/0/clientConfig/service/path","value":"/allow-all"}]`,
		`[{"op":"replace","path":"/webhooks/0/rules/0/operations","value":["DELETE"]}]`,
		`[{"op":"remove","path":"/webhooks/0/matchConditions"}]`,
		`[{"op":"add","path":"/webhooks/0/objectSelector","value":{"matchLabels":{"never":"x"}}}]`,
		`[{"op":"add","path":"/webhooks/-","value":{"name":"more.hostprov.dev","admissionReviewVersions":["v1"],"sideEffects":"None","clientConfig":{"url":"https://example.com/"}}}]`,
	} {
		err := ctrl.Patch(ctx, get(ctx, t, admin, vwc), client.RawPatch(types.JSONPatchType, []byte(p)))
		if err == nil || !strings.Contains(err.Error(), "hostprov-controller-limits") || !strings.Contains(err.Error(), "only the CA") {
			t.Errorf("controller patching its webhook configuration with %s: %v; want the controller policy to refuse it", p, err)
		}
	}
	h := get(ctx, t, ctrl, hh)
	h.Finalizers = append(h.Finalizers, v1alpha1.Finalizer)
	if err := ctrl.Update(ctx, h); err != nil {
		t.Errorf("controller adding its finalizer: %v", err)
	}
	h = get(ctx, t, ctrl, hh)
	h.Finalizers = nil
	if err := ctrl.Update(ctx, h); err != nil {
		t.Errorf("controller removing its finalizer: %v", err)
	}
	h = get(ctx, t, ctrl, hh)
	h.Spec.Hooks[0].Steps[0].Run = []string{"/bin/sh", "-c", "anything"}
	if err := ctrl.Update(ctx, h); err == nil || !strings.Contains(err.Error(), "may not change a HostHooks' spec") {
		t.Errorf("controller changing a HostHooks' spec: %v; want the controller policy to refuse it", err)
	}
	h = get(ctx, t, ctrl, hh)
	h.Status.MatchedNodes = 2
	if err := ctrl.Status().Update(ctx, h); err != nil {
		t.Errorf("controller writing a HostHooks' status: %v", err)
	}

	other := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}
	create(ctx, t, admin, other)
	wantForbidden(t, "controller patching another webhook configuration", ctrl.Patch(ctx, other,
		client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`))))
	wantForbidden(t, "controller creating a Secret", ctrl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}))
	if err := ctrl.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hostprov-controller"}}); err != nil {
		t.Errorf("controller creating its leader election lease: %v", err)
	}

	for _, o := range objs {
		a.apply(ctx, o)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(secret), secret); err != nil || string(secret.Data["tls.crt"]) != "cert" {
		t.Errorf("the Secret after applying deploy/ again: %v, %q", err, secret.Data)
	}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(vwc), vwc); err != nil || !bytes.Equal(vwc.Webhooks[0].ClientConfig.CABundle, ca) {
		t.Errorf("the webhook's CA after applying deploy/ again: %v, %q", err, vwc.Webhooks[0].ClientConfig.CABundle)
	}
}

func testPeople(ctx context.Context, t *testing.T, c *kubetest.Cluster, admin client.Client, hh *v1alpha1.HostHooks) {
	for _, b := range []struct{ user, role string }{{"alice", "hostprov-hosthooks-author"}, {"bob", "hostprov-hosthooks-viewer"}} {
		create(ctx, t, admin, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-" + b.user},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: b.user}}})
	}
	// RBAC's cache learns of new bindings a moment after they are stored:
	// asked at once, the API server can still say no.
	waitAllowed(ctx, t, admin, "alice", "create", "hosthooks", "")
	waitAllowed(ctx, t, admin, "bob", "get", "hosthooks", "")
	for _, r := range []struct {
		user, verb, resource, sub string
		allowed                   bool
	}{
		{"alice", "create", "hosthooks", "", true},
		{"alice", "update", "hosthooks", "", true},
		{"alice", "patch", "hosthooks", "", true},
		{"alice", "delete", "hosthooks", "", true},
		{"alice", "list", "hosthooks", "", true},
		{"alice", "list", "nodehooks", "", true},
		{"alice", "update", "hosthooks", "status", false},
		{"alice", "update", "nodehooks", "", false},
		{"alice", "update", "nodehooks", "status", false},
		{"alice", "create", "nodehooks", "", false},
		{"bob", "get", "hosthooks", "", true},
		{"bob", "list", "hosthooks", "", true},
		{"bob", "watch", "hosthooks", "", true},
		{"bob", "get", "nodehooks", "", true},
		{"bob", "list", "nodehooks", "", true},
		{"bob", "watch", "nodehooks", "", true},
		{"bob", "create", "hosthooks", "", false},
		{"bob", "update", "hosthooks", "", false},
		{"bob", "delete", "hosthooks", "", false},
		{"bob", "update", "nodehooks", "status", false},
	} {
		if got := allowed(ctx, t, admin, r.user, r.verb, r.resource, r.sub, "", ""); got != r.allowed {
			t.Errorf("%s %s %s/%s: allowed %v, want %v", r.user, r.verb, r.resource, r.sub, got, r.allowed)
		}
	}
	// Impersonated, for real: the viewer reads, and may not create; the
	// author's create passes RBAC and reaches the webhook (which no
	// controller answers here).
	as := func(user string) client.Client {
		cfg := c.Config()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return newClient(t, cfg)
	}
	bob, alice := as("bob"), as("alice")
	if err := bob.Get(ctx, client.ObjectKeyFromObject(hh), &v1alpha1.HostHooks{}); err != nil {
		t.Errorf("viewer getting a HostHooks: %v", err)
	}
	newHH := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "new"},
		Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}}}
	wantForbidden(t, "viewer creating a HostHooks", bob.Create(ctx, newHH.DeepCopy()))
	err := alice.Create(ctx, newHH.DeepCopy())
	if err == nil || apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "hosthooks.hostprov.dev") {
		t.Errorf("author creating a HostHooks: %v; want it past RBAC and refused by the unanswered webhook", err)
	}
}

func testWebhook(ctx context.Context, t *testing.T, admin client.Client, hh *v1alpha1.HostHooks) {
	// failurePolicy Fail: with no controller to answer, nothing unchecked
	// gets in, not even the admin's.
	err := admin.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "unchecked"},
		Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{{Name: "a", Exec: []string{"/bin/true"}}}}})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "hosthooks.hostprov.dev"`) {
		t.Errorf("creating a HostHooks with the webhook unanswered: %v; want it refused by the webhook's failure", err)
	}
	if !strings.Contains(fmt.Sprint(err), admission.Path) {
		t.Errorf("the webhook call went elsewhere: %v", err)
	}
	h := get(ctx, t, admin, hh)
	h.Spec.Hooks[0].Steps[0].Run = []string{"/bin/false"}
	if err := admin.Update(ctx, h); err == nil {
		t.Error("a change of spec got in unchecked")
	}
	// A change of metadata alone is not sent: the controller's finalizer
	// does not wait for its webhook.
	h = get(ctx, t, admin, hh)
	h.Finalizers = append(h.Finalizers, v1alpha1.Finalizer)
	h.Labels = map[string]string{"team": "storage"}
	if err := admin.Update(ctx, h); err != nil {
		t.Errorf("an update of metadata only: %v", err)
	}
	// Status is a subresource the webhook does not cover.
	h = get(ctx, t, admin, hh)
	h.Status.MatchedNodes = 2
	if err := admin.Status().Update(ctx, h); err != nil {
		t.Errorf("a status update: %v", err)
	}
	// Deleting is not checked either (the finalizer holds it here).
	if err := admin.Delete(ctx, get(ctx, t, admin, hh)); err != nil {
		t.Errorf("deleting a HostHooks: %v", err)
	}
	h = get(ctx, t, admin, hh)
	h.Finalizers = nil
	if err := admin.Update(ctx, h); err != nil {
		t.Errorf("removing the finalizer of a HostHooks being deleted: %v", err)
	}
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	cl, err := client.New(cfg, client.Options{Scheme: kubetest.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func create(ctx context.Context, t *testing.T, cl client.Client, obj client.Object) {
	t.Helper()
	if err := cl.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func get[T client.Object](ctx context.Context, t *testing.T, cl client.Client, obj T) T {
	t.Helper()
	fresh := obj.DeepCopyObject().(T)
	if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		t.Fatalf("getting %T %s: %v", obj, obj.GetName(), err)
	}
	return fresh
}

// wantForbidden checks that RBAC refused a request.
func wantForbidden(t *testing.T, what string, err error) {
	t.Helper()
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "cannot ") {
		t.Errorf("%s: %v; want RBAC to forbid it", what, err)
	}
}

// wantRefused checks that admission refused a request with message.
func wantRefused(t *testing.T, what string, err error, message string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), message) || !strings.Contains(err.Error(), "hostprov-agent-own-node") {
		t.Errorf("%s: %v; want the agent policy to refuse it: %s", what, err, message)
	}
}

func allowed(ctx context.Context, t *testing.T, admin client.Client, user, verb, resource, sub, ns, name string) bool {
	t.Helper()
	group := v1alpha1.GroupVersion.Group
	switch resource {
	case "nodes", "secrets", "pods":
		group = ""
	case "leases":
		group = coordinationv1.GroupName
	}
	var groups []string
	if sa, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		ns, _, _ := strings.Cut(sa, ":")
		groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Subresource: sub, Verb: verb, Namespace: ns, Name: name}}}
	if err := admin.Create(ctx, sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// waitAllowed waits until RBAC's cache has a new binding.
func waitAllowed(ctx context.Context, t *testing.T, admin client.Client, user, verb, resource, sub string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return allowed(ctx, t, admin, user, verb, resource, sub, "", ""), nil
	})
	if err != nil {
		t.Fatalf("%s %s %s never allowed: %v", user, verb, resource, err)
	}
}

func waitEstablished(ctx context.Context, t *testing.T, admin client.Client) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var list apiextv1.CustomResourceDefinitionList
		if err := admin.List(ctx, &list); err != nil {
			return false, err
		}
		n := 0
		for _, crd := range list.Items {
			if slices.ContainsFunc(crd.Status.Conditions, func(c apiextv1.CustomResourceDefinitionCondition) bool {
				return c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue
			}) {
				n++
			}
		}
		return n == 2, nil
	})
	if err != nil {
		t.Fatalf("CRDs not established: %v", err)
	}
}

// selfSignedPEM is a CA certificate, as the controller writes into its
// webhook's caBundle.
func selfSignedPEM(t *testing.T) []byte {
	t.Helper()
	ca, err := certs.NewCA("hostprov-webhook-ca", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca.PEM
}

// waitPolicy waits until admission refuses what try does, with an error
// that names policy (a ValidatingAdmissionPolicy, or the failing webhook).
func waitPolicy(ctx context.Context, t *testing.T, policy string, try func() error) {
	t.Helper()
	var err error
	werr := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		err = try()
		return err != nil && strings.Contains(err.Error(), policy), nil
	})
	if werr != nil {
		t.Fatalf("policy %s never took effect: the last try gave %v", policy, err)
	}
}

// testPriority: the API server puts the controller's requests of Leases
// (its leader election) under deploy/'s FlowSchema, named schema, and
// the agent's under another: the response's X-Kubernetes-PF-FlowSchema-UID
// names the schema that classified a request.
func testPriority(ctx context.Context, t *testing.T, admin client.Client, schema, ns string, ctrlCfg, agentCfg *rest.Config) {
	t.Helper()
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: schema}}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(fs), fs); err != nil {
		t.Fatalf("the controller's FlowSchema: %v", err)
	}
	classified := func(cfg *rest.Config) string {
		t.Helper()
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet,
			strings.TrimSuffix(cfg.Host, "/")+"/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/"+controller.LeaseName, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")
	}
	if got := classified(ctrlCfg); got != string(fs.UID) {
		t.Errorf("the controller's Lease request classified by FlowSchema %q, want %s's, %s", got, schema, fs.UID)
	}
	if got := classified(agentCfg); got == string(fs.UID) || got == "" {
		t.Errorf("the agent's Lease request classified by FlowSchema %q, want another than %s's", got, schema)
	}
}
