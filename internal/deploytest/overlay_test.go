package deploytest_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/deploytest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// overlayNamespace is the namespace the overlays below move deploy/ to,
// as a cluster's conventions might.
const overlayNamespace = "platform-hostprov"

// buildOverlay writes a kustomization with deploy/ as its base and fields
// (namespace:, namePrefix:, ...) into a directory of its own, as a user
// would, and builds it with kustomize.
func buildOverlay(t *testing.T, fields string) []deploytest.Object {
	t.Helper()
	d := t.TempDir()
	base, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	// kustomize takes a base by a relative path only.
	if base, err = filepath.Rel(d, base); err != nil {
		t.Fatal(err)
	}
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + base + "\n" + fields
	if err := os.WriteFile(filepath.Join(d, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := deploytest.Build(d)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// Under an overlay that sets namespace:, kustomize moves the namespaced
// objects and rewrites the references it knows (binding subjects, the
// webhook's Service); nothing of deploy/ may name hostprov's own
// namespace where kustomize does not look (a policy's CEL, an argument),
// or it would name a namespace that is no longer hostprov's.
func TestNamespaceOverlay(t *testing.T) {
	objs := buildOverlay(t, "namespace: "+overlayNamespace+"\n")
	if len(objs) < 20 {
		t.Fatalf("only %d objects", len(objs))
	}
	for _, o := range objs {
		for _, line := range strings.Split(string(o.Raw), "\n") {
			if strings.Contains(line, namespace) {
				t.Errorf("%s still names %s under an overlay's namespace %s, where kustomize does not rewrite it: %s",
					o, namespace, overlayNamespace, strings.TrimSpace(line))
			}
		}
	}
}

// deploy/ under an overlay's namespace holds as in its own: the same
// checks as TestDeployOnAPIServer, the agents' and the controller's
// limits among them.
func TestDeployUnderNamespaceOverlay(t *testing.T) {
	testDeploy(t, buildOverlay(t, "namespace: "+overlayNamespace+"\n"), overlayNamespace)
}

// Under an overlay's namePrefix and nameSuffix too, the policies hold: they
// match the service accounts' names with whatever kustomize writes around
// them. What kustomize does not rename fails closed: the controller's
// right to its webhook configuration is by name (resourceNames), which
// kustomize leaves, so it can change nothing of the renamed one, not even
// its CA, and with no CA the webhook, failurePolicy Fail, refuses every
// HostHooks. docs/kubernetes.md says what to patch.
func TestDeployUnderPrefixOverlay(t *testing.T) {
	const prefix, suffix = "team-", "-v2"
	objs := buildOverlay(t, "namespace: "+overlayNamespace+"\nnamePrefix: "+prefix+"\nnameSuffix: "+suffix+"\n")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	in := install(ctx, t, objs)
	admin, hh, nodeHooks := in.admin, in.hh, in.nodeHooks
	agentName, controllerName := prefix+agentSA+suffix, prefix+controllerSA+suffix
	decode[admissionv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy", prefix+"hostprov-agent-own-node"+suffix)
	decode[admissionv1.ValidatingAdmissionPolicy](t, objs, "ValidatingAdmissionPolicy", prefix+"hostprov-controller-limits"+suffix)

	agentCfg := in.c.NodeIdentity(t, overlayNamespace, agentName, "node-a")
	agent := newClient(t, agentCfg)
	in.c.NodeIdentity(t, overlayNamespace, agentName, "node-b")
	ctrlCfg := in.c.NodeIdentity(t, overlayNamespace, controllerName, "node-c")
	ctrl := newClient(t, ctrlCfg)
	// The FlowSchema of the controller's leader election names its
	// renamed service account (kustomizeconfig.yaml).
	testPriority(ctx, t, admin, prefix+flowSchema+suffix, overlayNamespace, ctrlCfg, agentCfg)
	waitPolicy(ctx, t, prefix+"hostprov-agent-own-node"+suffix, func() error {
		other := get(ctx, t, agent, nodeHooks["node-b"])
		other.Status.Message = "probe"
		return agent.Status().Update(ctx, other, client.DryRunAll)
	})
	waitPolicy(ctx, t, prefix+"hostprov-controller-limits"+suffix, func() error {
		h := get(ctx, t, admin, hh)
		h.Spec.Hooks[0].Name = "probe"
		return ctrl.Update(ctx, h, client.DryRunAll)
	})

	own := get(ctx, t, agent, nodeHooks["node-a"])
	own.Status.Message = "mine"
	if err := agent.Status().Update(ctx, own); err != nil {
		t.Errorf("agent of node-a updating its own NodeHooks status: %v", err)
	}
	other := get(ctx, t, agent, nodeHooks["node-b"])
	other.Status.Phase = v1alpha1.NodeFailed
	wantRefused(t, "agent of node-a updating node-b's NodeHooks status", agent.Status().Update(ctx, other),
		"may write only its own node's NodeHooks, not those of node-b")
	if got := get(ctx, t, admin, other); got.Status.Phase != "" {
		t.Errorf("node-b's NodeHooks status changed: %+v", got.Status)
	}

	h := get(ctx, t, ctrl, hh)
	h.Spec.Hooks[0].Steps[0].Run = []string{"/bin/sh", "-c", "anything"}
	if err := ctrl.Update(ctx, h); err == nil || !strings.Contains(err.Error(), "may not change a HostHooks' spec") {
		t.Errorf("controller changing a HostHooks' spec: %v; want the controller policy to refuse it", err)
	}

	vwc := &admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: prefix + webhookName + suffix}}
	for _, p := range []string{
		`[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]`,
		`[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"Y2E="}]`,
	} {
		wantForbidden(t, "controller patching its renamed webhook configuration with "+p,
			ctrl.Patch(ctx, vwc, client.RawPatch(types.JSONPatchType, []byte(p))))
	}
	if got := get(ctx, t, admin, vwc); *got.Webhooks[0].FailurePolicy != admissionv1.Fail || len(got.Webhooks[0].ClientConfig.CABundle) != 0 {
		t.Errorf("the webhook after the controller's patches: failurePolicy %s, caBundle %q", *got.Webhooks[0].FailurePolicy, got.Webhooks[0].ClientConfig.CABundle)
	}
}

// The FlowSchema of the controller's leader election names the
// controller's service account as an overlay moves and renames it
// (kustomizeconfig.yaml). Kustomize, whose schemas predate FlowSchema v1,
// also gives it the overlay's namespace, which the API server drops from
// a cluster-scoped object: TestDeployUnderNamespaceOverlay applies it.
func TestFlowSchemaUnderOverlay(t *testing.T) {
	const prefix, suffix = "team-", "-v2"
	for _, tt := range []struct{ fields, ns, sa, schema string }{
		{"", namespace, controllerSA, flowSchema},
		{"namespace: " + overlayNamespace + "\n", overlayNamespace, controllerSA, flowSchema},
		{"namespace: " + overlayNamespace + "\nnamePrefix: " + prefix + "\nnameSuffix: " + suffix + "\n",
			overlayNamespace, prefix + controllerSA + suffix, prefix + flowSchema + suffix},
	} {
		objs := buildOverlay(t, tt.fields)
		fs := decode[flowcontrolv1.FlowSchema](t, objs, "FlowSchema", tt.schema)
		decode[corev1.ServiceAccount](t, objs, "ServiceAccount", tt.sa)
		var subjects []string
		for _, r := range fs.Spec.Rules {
			for _, s := range r.Subjects {
				if s.ServiceAccount != nil {
					subjects = append(subjects, s.ServiceAccount.Namespace+"/"+s.ServiceAccount.Name)
				}
			}
		}
		if want := []string{tt.ns + "/" + tt.sa}; !slices.Equal(subjects, want) {
			t.Errorf("overlay %q: the FlowSchema's subjects %q, want %q", tt.fields, subjects, want)
		}
	}
}
