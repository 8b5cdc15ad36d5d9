package agent

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

// TestKubeAgentKeepsNodeSetOfAgentName, against a real API server: a
// node's own spec set named like one of the agent's (hosthooks.base, which
// an earlier hostprov accepted in hooks.d) is not the agent's. With no
// HostHooks base in the cluster the agent neither prunes nor reports it,
// while it applies and later prunes a HostHooks of its own beside it.
func TestKubeAgentKeepsNodeSetOfAgentName(t *testing.T) {
	k := newWrittenCluster(t, "node-o")
	ctx := t.Context()

	// The node's own set, as an earlier hostprov apply -d hooks.d left it.
	own, diags := compile.Build("/etc/hostprov/hooks.d/hosthooks.base.yaml",
		[]byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n  - name: local\n    exec: [/bin/sleep, infinity]\n"))
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	state := func() *apply.State {
		st, err := apply.LoadState(apply.StatePath(k.opts.StateDirPath()))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	p, err := apply.NewPlanSets(ctx, []apply.SpecSet{{Name: "hosthooks.base", Units: own, HookNames: []string{"local"}}}, state(), k.opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := apply.Execute(ctx, p, k.sd, nil); err != nil {
		t.Fatal(err)
	}
	sets := func() []string {
		var out []string
		for _, u := range state().Units {
			if !slices.Contains(out, u.Set) {
				out = append(out, u.Set)
			}
		}
		slices.Sort(out)
		return out
	}

	k.run()
	hh := &v1alpha1.HostHooks{Spec: v1alpha1.HostHooksSpec{Hooks: []v1alpha1.Hook{service("other-svc")}}}
	hh.Name = "other"
	nh := k.create(hh)
	k.waitStatus(nh, "Succeeded", func(st v1alpha1.NodeHooksStatus) bool { return st.Phase == v1alpha1.NodeSucceeded })
	if want := []string{"hosthooks.base", "hosthooks.other"}; !slices.Equal(sets(), want) {
		t.Errorf("sets %q, want %q: the node's own set was pruned", sets(), want)
	}
	if owner, _ := state().SetOwner("hosthooks.other"); owner != kube.SetOwner {
		t.Errorf("hosthooks.other is recorded as %q's", owner)
	}

	// The HostHooks goes (no controller holds it): its set is pruned, the
	// node's own stays, running.
	if err := k.cl.Delete(ctx, hh); err != nil {
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
	if !k.sd.Active(own[0].Name) {
		t.Errorf("the node's own %s was stopped: %q", own[0].Name, k.sd.Log())
	}
}
