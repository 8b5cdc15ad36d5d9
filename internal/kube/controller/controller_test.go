package controller_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// TestControllerLeaderElection runs two controllers: only the one holding
// the Lease acts, and the other takes over when it stops.
func TestControllerLeaderElection(t *testing.T) {
	c, cl := startCluster(t)
	ctx := t.Context()
	const ns = "hostprov-system"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The lease lasts as long as by default, so that a loaded machine
	// does not make the leader miss a renewal; a stopped leader gives it
	// up, and the other, trying often, takes over at once.
	opts := controller.Options{
		Namespace: ns, LeaderElection: true,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 250 * time.Millisecond,
	}
	// Each controller's writes carry its name as their field manager.
	cfgA, cfgB := c.Config(), c.Config()
	cfgA.UserAgent, cfgB.UserAgent = "controller-a", "controller-b"
	a, stopA := startController(t, cfgA, opts)
	select {
	case <-a.Elected():
	case <-time.After(waitFor):
		t.Fatal("controller a was not elected")
	}
	b, _ := startController(t, cfgB, opts)

	createNode(t, cl, "n1", nil)
	hooks := []v1alpha1.Hook{{Name: "hello", Exec: []string{"/bin/echo", "hello"}}}
	if err := cl.Create(ctx, &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "hello"}, Spec: v1alpha1.HostHooksSpec{Hooks: hooks}}); err != nil {
		t.Fatal(err)
	}
	h := v1alpha1.HooksHash(hooks)
	eventually(t, "approval of n1", approvedAre(ctx, cl, "hello", h, "n1"))
	report(t, cl, "hello", "n1", succeeded(h))
	statusIs(t, cl, "hello", 1, 1, 1, 0, v1alpha1.PhaseComplete)
	select {
	case <-b.Elected():
		t.Fatal("controller b was elected while a holds the lease")
	default:
	}
	hh, err := getHostHooks(ctx, cl, "hello")
	if err != nil {
		t.Fatal(err)
	}
	nhs, err := nodeHooks(ctx, cl, "hello")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{hh, nhs["n1"]} {
		if got := controllerManagers(obj); !slices.Equal(got, []string{"controller-a"}) {
			t.Errorf("%s was written by %v, want only controller-a", obj.GetName(), got)
		}
	}
	var lease coordinationv1.Lease
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.LeaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	holderA := *lease.Spec.HolderIdentity

	// a stops and gives the lease up; b takes over and acts.
	stopA()
	select {
	case <-b.Elected():
	case <-time.After(waitFor):
		t.Fatal("controller b was not elected after a stopped")
	}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.LeaseName}, &lease); err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity == holderA {
		t.Errorf("the lease is still held by %s", holderA)
	}
	createNode(t, cl, "n2", nil)
	eventually(t, "approval of n2 by b", approvedAre(ctx, cl, "hello", h, "n1", "n2"))
	nhs, err = nodeHooks(ctx, cl, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if got := controllerManagers(nhs["n2"]); !slices.Equal(got, []string{"controller-b"}) {
		t.Errorf("n2's NodeHooks was written by %v, want only controller-b", got)
	}
}

// controllerManagers are the field managers of obj that are controllers,
// by the user agents TestControllerLeaderElection gives them.
func controllerManagers(obj client.Object) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if strings.HasPrefix(mf.Manager, "controller-") && !slices.Contains(out, mf.Manager) {
			out = append(out, mf.Manager)
		}
	}
	slices.Sort(out)
	return out
}
