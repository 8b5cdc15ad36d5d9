package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// Scheme knows Kubernetes' built-in types, the CRD type and hostprov's
// API: what the clients of the tests read and write.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(Scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(Scheme))
	utilruntime.Must(v1alpha1.AddToScheme(Scheme))
}

// Client is a client of the cluster's admin (see Config) for Scheme's
// types. Every call returns the same one; it is safe for concurrent use.
func (c *Cluster) Client(t testing.TB) client.Client {
	t.Helper()
	c.adminOnce.Do(func() {
		c.admin, c.adminErr = client.New(c.Config(), client.Options{Scheme: Scheme})
	})
	if c.adminErr != nil {
		t.Fatalf("kubetest: client: %v", c.adminErr)
	}
	return c.admin
}

func newClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	cl, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		t.Fatalf("kubetest: client: %v", err)
	}
	return cl
}

// How long InstallCRDs waits for a CRD to be served.
const establishTimeout = 30 * time.Second

// InstallCRDs creates (or updates) the CustomResourceDefinitions of every
// YAML file in dir (deploy/crds, say) and waits until the API server
// serves each of them (condition Established).
//
// The API server delays a create of a custom resource by 2 s while its
// CRD was established less than 2 s ago (so that other servers of a
// cluster see it too): a test's first create right after InstallCRDs
// takes that long.
func (c *Cluster) InstallCRDs(t testing.TB, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("kubetest: no CRDs (*.yaml) in %s", dir)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, file := range files {
		got, err := readCRDs(file)
		if err != nil {
			t.Fatalf("kubetest: %v", err)
		}
		crds = append(crds, got...)
	}
	cl := c.Client(t)
	ctx := t.Context()
	for _, crd := range crds {
		err := cl.Create(ctx, crd)
		if apierrors.IsAlreadyExists(err) {
			var old apiextensionsv1.CustomResourceDefinition
			if err = cl.Get(ctx, client.ObjectKeyFromObject(crd), &old); err == nil {
				crd.ResourceVersion = old.ResourceVersion
				err = cl.Update(ctx, crd)
			}
		}
		if err != nil {
			t.Fatalf("kubetest: installing CRD %s: %v", crd.Name, err)
		}
	}
	for _, crd := range crds {
		var got apiextensionsv1.CustomResourceDefinition
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, establishTimeout, true, func(ctx2 context.Context) (bool, error) {
			if err := cl.Get(ctx2, client.ObjectKeyFromObject(crd), &got); err != nil {
				return false, err
			}
			return established(&got), nil
		})
		if err != nil {
			t.Fatalf("kubetest: CRD %s not established: %v (conditions %+v)", crd.Name, err, got.Status.Conditions)
		}
	}
	// Established is not yet served by discovery, which clients map
	// kinds to resources with: a client asking in between gets "no
	// matches for kind".
	dc, err := discovery.NewDiscoveryClientForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			gv := crd.Spec.Group + "/" + v.Name
			err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, establishTimeout, true, func(context.Context) (bool, error) {
				rl, err := dc.ServerResourcesForGroupVersion(gv)
				if err != nil {
					return false, nil
				}
				return slices.ContainsFunc(rl.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }), nil
			})
			if err != nil {
				t.Fatalf("kubetest: CRD %s established but not in discovery of %s: %v", crd.Name, gv, err)
			}
		}
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
		return c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue
	})
}

// readCRDs decodes the CRDs of a YAML file of one or more documents.
func readCRDs(file string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		err := dec.Decode(&crd)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if crd.Name == "" {
			continue // an empty document
		}
		if crd.Kind != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: %s %q is not a CustomResourceDefinition", file, crd.Kind, crd.Name)
		}
		crds = append(crds, &crd)
	}
	return crds, nil
}

// Kubeconfig writes a kubeconfig file of the cluster's admin into the
// test's temporary directory and returns its path, for what takes a file
// (a command's --kubeconfig, KUBECONFIG).
func (c *Cluster) Kubeconfig(t testing.TB) string {
	t.Helper()
	return c.kubeconfig(t, &clientcmdapi.AuthInfo{ClientCertificateData: c.certData, ClientKeyData: c.keyData})
}

// TokenKubeconfig is a kubeconfig file for the cluster that authenticates
// with token (a service account's, for a command run as its pod runs).
func (c *Cluster) TokenKubeconfig(t testing.TB, token string) string {
	t.Helper()
	return c.kubeconfig(t, &clientcmdapi.AuthInfo{Token: token})
}

func (c *Cluster) kubeconfig(t testing.TB, user *clientcmdapi.AuthInfo) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubetest"] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.caData}
	cfg.AuthInfos["user"] = user
	cfg.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "user"}
	cfg.CurrentContext = "kubetest"
	file := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, file); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return file
}

// NodeIdentity is a client configuration that authenticates the way an
// agent of a DaemonSet on node does: with a service-account token bound
// to a Pod of serviceAccount in namespace ns that runs on node. It creates
// what is missing of the Node, the namespace, the service account and the
// Pod (no kubelet runs it: it stays Pending), then requests the token
// (TokenRequest), valid for an hour. The configuration has client-go's
// default rate limits, as an agent's would.
//
// The API server puts the node's name into such a token, and so into the
// user's extra authentication.kubernetes.io/node-name; the user is
// system:serviceaccount:NS:SERVICEACCOUNT, allowed only what RBAC grants
// it.
func (c *Cluster) NodeIdentity(t testing.TB, ns, serviceAccount, node string) *rest.Config {
	t.Helper()
	cl := c.Client(t)
	ctx := t.Context()
	for _, obj := range []client.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{corev1.LabelHostname: node}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: serviceAccount}},
	} {
		if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("kubetest: creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: serviceAccount + "-" + node},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			ServiceAccountName:           serviceAccount,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "agent", Image: "hostprov.invalid/agent"}},
		},
	}
	if err := cl.Create(ctx, pod); apierrors.IsAlreadyExists(err) {
		err = cl.Get(ctx, client.ObjectKeyFromObject(pod), pod)
		if err == nil && (pod.Spec.NodeName != node || pod.Spec.ServiceAccountName != serviceAccount) {
			err = fmt.Errorf("pod %s/%s exists on node %q with service account %q", ns, pod.Name, pod.Spec.NodeName, pod.Spec.ServiceAccountName)
		}
		if err != nil {
			t.Fatalf("kubetest: %v", err)
		}
	} else if err != nil {
		t.Fatalf("kubetest: creating pod %s/%s: %v", ns, pod.Name, err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To[int64](3600),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: serviceAccount}}
	if err := cl.SubResource("token").Create(ctx, sa, req); err != nil {
		t.Fatalf("kubetest: TokenRequest for %s/%s: %v", ns, serviceAccount, err)
	}
	cfg := c.anonymous()
	cfg.BearerToken = req.Status.Token
	return cfg
}
