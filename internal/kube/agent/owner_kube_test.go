package agent

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
	"github.com/hostprov/hostprov/pkg/render"
)

// TestKubeAgentKeepsNodeSetOfAgentName, against a real API server: a
// node's own spec set named like one of the agent's (hosthooks.base, which
// an earlier hostprov accepted in hooks.d) is not the agent's. With no
// HostHooks base in the cluster the agent neither prunes nor reports it,
// while it applies and later prunes a HostHooks of its own beside it.
func TestKubeAgentKeepsNodeSetOfAgentName(t *testing.T) {
	c := kubetest.Start(t)
	c.InstallCRDs(t, "../../../deploy/crds")
	cl := c.Client(t)
	ctx := t.Context()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-o"}}
	if err := cl.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	opts := apply.Options{Root: t.TempDir()}
	if err := apply.PrepareDirs(opts); err != nil {
		t.Fatal(err)
	}
	sd := applytest.New()
	sd.UnitDir = opts.UnitDirPath()

	// The node's own set, as an earlier hostprov apply -d hooks.d left it.
	own, diags := render.Build("/etc/hostprov/hooks.d/hosthooks.base.yaml",
		[]byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n  - name: local\n    exec: [/bin/sleep, infinity]\n"))
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := apply.NewPlanSets(ctx, []apply.SpecSet{{Name: "hosthooks.base", Units: own, HookNames: []string{"local"}}}, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Execute(ctx, p, sd, nil); err != nil {
		t.Fatal(err)
	}
	sets := func() []string {
		st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, u := range st.Units {
			if !slices.Contains(out, u.Set) {
				out = append(out, u.Set)
			}
		}
		slices.Sort(out)
		return out
	}

	a, err := New(Config{NodeName: node.Name, REST: c.Config(), Options: opts,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Connect: func(context.Context) (*Systemd, error) { return &Systemd{Systemd: sd}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})

	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "other"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{service("other-svc")}}}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	nh := &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, node.Name), Labels: map[string]string{
			v1alpha1.LabelNode: v1alpha1.LabelValue(node.Name), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: node.Name, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
	if err := cl.Create(ctx, nh); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var got v1alpha1.NodeHooks
		if err := cl.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
			return false, err
		}
		return got.Status.Phase == v1alpha1.NodeSucceeded, nil
	})
	if err != nil {
		t.Fatalf("NodeHooks of other not Succeeded: %v", err)
	}
	if want := []string{"hosthooks.base", "hosthooks.other"}; !slices.Equal(sets(), want) {
		t.Errorf("sets %q, want %q: the node's own set was pruned", sets(), want)
	}
	if st, _ := apply.LoadState(apply.StatePath(opts.StateDirPath())); st != nil {
		if owner, _ := st.SetOwner("hosthooks.other"); owner != kube.SetOwner {
			t.Errorf("hosthooks.other is recorded as %q's", owner)
		}
	}

	// The HostHooks goes (no controller holds it): its set is pruned, the
	// node's own stays, running.
	if err := cl.Delete(ctx, hh); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !slices.Contains(sets(), "hosthooks.other"), nil
	})
	if err != nil {
		t.Fatalf("hosthooks.other not pruned: sets %q", sets())
	}
	if want := []string{"hosthooks.base"}; !slices.Equal(sets(), want) {
		t.Errorf("sets %q after other is gone, want %q", sets(), want)
	}
	if !sd.Active(own[0].Name) {
		t.Errorf("the node's own %s was stopped: %q", own[0].Name, sd.Log())
	}
}
