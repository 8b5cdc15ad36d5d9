package agent

// Disruption: hooks that declare disruption: Drain (or Reboot) are changed
// only on a drained node. Before a plan that adds, changes or removes such
// a hook is carried out, the agent cordons its own Node and evicts the
// node's pods through the Eviction API, so that PodDisruptionBudgets hold;
// after the apply it uncordons the Node, but only when it was the agent
// that cordoned it: a node an administrator cordoned stays cordoned.
//
// An eviction that a PodDisruptionBudget refuses (429) is tried again,
// with backoff, until the drain timeout. A drain that does not finish in
// time applies nothing of the hooks that needed it: the node is
// uncordoned again (as kured releases a node whose drain failed, so that
// a budget that never allows the eviction does not keep the node empty),
// the NodeHooks reports Failed with the pods that stayed, and the agent
// tries again later.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// AnnotationCordoned is on a Node while the agent keeps it cordoned for
// a disruptive hook: the agent uncordons only a Node that has it, so that
// it never uncordons one that an administrator cordoned.
const AnnotationCordoned = "hostprov.dev/cordoned"

// DefaultDrainTimeout is how long a drain may take before the agent gives
// up on it for this time.
const DefaultDrainTimeout = 10 * time.Minute

// mirrorAnnotation marks a static pod's mirror in the API server: the
// kubelet runs it from a file, and evicting the mirror would stop nothing.
const mirrorAnnotation = "kubernetes.io/config.mirror"

// disruptive is what one sync needs of the node for the hooks it changes:
// the hooks that need a drain (or a reboot), as "HOSTHOOKS/HOOK", and the
// spec sets they are in; of them, the hooks that need a reboot, and the
// HostHooks whose reboot lock the node is to hold for them.
type disruptive struct {
	hooks []string
	sets  map[string]bool
	// reboot are the hooks that need a reboot, rebootSets their spec
	// sets and locks the HostHooks of these, sorted.
	reboot     []string
	rebootSets map[string]bool
	locks      []string
}

// disruptiveChanges finds, in plan p of sets, the hooks that declare a
// disruption and that p adds, changes or removes. disruptionOf says what
// a hook of a HostHooks declares.
func disruptiveChanges(p *apply.Plan, sets []apply.SpecSet, st *apply.State, disruptionOf func(hostHooks, hook string) string) disruptive {
	d := disruptive{sets: map[string]bool{}, rebootSets: map[string]bool{}}
	owners := ownerOf(sets, st)
	hookOf := map[string]string{} // unit -> hook name
	for _, u := range st.Units {
		hookOf[u.Name] = u.Hook
	}
	for _, s := range sets {
		for _, u := range s.Units {
			hookOf[u.Name] = u.HookName
		}
	}
	seen := map[string]bool{}
	add := func(set, hook string) {
		hh := v1alpha1.HostHooksOfSet(set)
		if hh == "" || hook == "" {
			return
		}
		dis := disruptionOf(hh, hook)
		switch dis {
		case hooks.DisruptionDrain, hooks.DisruptionReboot:
		default:
			return
		}
		d.sets[set] = true
		k := hh + "/" + hook
		if seen[k] {
			return
		}
		seen[k] = true
		d.hooks = append(d.hooks, k)
		if dis == hooks.DisruptionReboot {
			d.reboot = append(d.reboot, k)
			if !d.rebootSets[set] {
				d.locks = append(d.locks, hh)
			}
			d.rebootSets[set] = true
		}
	}
	for _, u := range p.Units {
		if u.Change == "none" {
			continue
		}
		hook := u.Hook
		if hook == "" {
			hook = hookOf[u.Unit]
		}
		add(owners[u.Unit], hook)
	}
	// A hook's files, directories and links: their Unit names the hook.
	for _, f := range p.Files {
		if f.Op == apply.OpUnchanged || f.Op == apply.OpKeep {
			continue
		}
		if set := pathOwner(sets, f.Path); set != "" {
			add(set, f.Unit)
		} else if set := owners[f.Unit]; set != "" {
			add(set, hookOf[f.Unit])
		}
	}
	sort.Strings(d.hooks)
	sort.Strings(d.reboot)
	sort.Strings(d.locks)
	return d
}

// disruptionOf says what hook of the HostHooks named declares: from the
// HostHooks as the view has it (a deleted one stays until the agents
// pruned it), or else from what the agent last applied of it, for a hook
// that was taken out of its HostHooks.
func (n *node) disruptionOf(v *view) func(hostHooks, hook string) string {
	return func(hostHooks, hook string) string {
		if hh := v.hostHooks[hostHooks]; hh != nil {
			for _, h := range hh.Spec.Hooks {
				if h.Name == hook {
					return h.Disruption
				}
			}
		}
		return n.disruptions[hostHooks][hook]
	}
}

// remember keeps what the hooks of the sets applied declare, so that
// their removal is known to need a drain after they left their HostHooks.
func (n *node) remember(v *view, sets []apply.SpecSet) {
	if n.disruptions == nil {
		n.disruptions = map[string]map[string]string{}
	}
	for _, s := range sets {
		name := v1alpha1.HostHooksOfSet(s.Name)
		hh := v.hostHooks[name]
		if hh == nil || hh.DeletionTimestamp != nil || len(s.Units)+len(s.Paths)+len(s.Accounts) == 0 {
			continue // pruned: what it declared is still needed for units not yet gone
		}
		m := map[string]string{}
		for _, h := range hh.Spec.Hooks {
			if h.Disruption != "" && h.Disruption != hooks.DisruptionNone {
				m[h.Name] = h.Disruption
			}
		}
		// What the agent applied before and the HostHooks no longer
		// has stays known until its units are gone.
		for h, d := range n.disruptions[name] {
			if _, still := m[h]; !still && hookInSet(s, h) {
				m[h] = d
			}
		}
		n.disruptions[name] = m
	}
}

// hookInSet reports whether set s still has units of hook.
func hookInSet(s apply.SpecSet, hook string) bool {
	for _, u := range s.Units {
		if u.HookName == hook {
			return true
		}
	}
	return false
}

// drainFor drains the node when plan p of sets changes a hook that needs
// it, and returns the plan to carry out and its sets. For a hook that needs
// a reboot it takes the reboot locks first; a lock another node holds
// leaves those sets to wait. When the drain fails, the sets with such
// hooks are reported failed (fail) and left out. The other sets are
// planned again without the ones left out, and retry is set; a nil plan
// means nothing is left to apply.
func (n *node) drainFor(ctx context.Context, v *view, p *apply.Plan, sets []apply.SpecSet, st *apply.State,
	outcomes map[string]*outcome, fail func(set, msg string)) (_ *apply.Plan, _ []apply.SpecSet, retry bool) {
	if n.drainer == nil {
		return p, sets, false
	}
	dis := disruptiveChanges(p, sets, st, n.disruptionOf(v))
	if len(dis.hooks) == 0 {
		return p, sets, false
	}
	var err error
	holder := ""
	if len(dis.locks) > 0 && n.rebooter != nil {
		holder, err = n.rebooter.lock(ctx, dis.locks)
	}
	if err == nil && holder == "" {
		if err = n.drainer.disrupt(ctx, dis); err != nil && len(dis.locks) > 0 && n.rebooter != nil {
			if uerr := n.rebooter.unlock(context.WithoutCancel(ctx), dis.locks); uerr != nil {
				err = errors.Join(err, uerr)
			}
		}
	}
	if err == nil && holder == "" {
		n.drained = true
		if len(dis.reboot) > 0 && n.rebooter != nil {
			n.rebootFor = &dis
		}
		return p, sets, false
	}
	var leave func(set string)
	if holder != "" {
		msg := fmt.Sprintf("waiting to apply %s, which need a reboot: one node reboots at a time, and it is %s",
			strings.Join(dis.hooks, ", "), holder)
		n.log.Info("waiting for the reboot lock", "hooks", strings.Join(dis.hooks, ","), "holder", holder)
		leave = func(set string) {
			if o := outcomes[v1alpha1.HostHooksOfSet(set)]; o != nil {
				o.waiting, o.waitPhase = msg, v1alpha1.NodePending
			}
		}
	} else {
		n.log.Warn("the node was not drained; the hooks that need it are not applied", "hooks", strings.Join(dis.hooks, ","), "error", err)
		msg := fmt.Sprintf("not applied: %s need the node drained, and %v; the agent uncordoned the node and tries again later",
			strings.Join(dis.hooks, ", "), err)
		leave = func(set string) { fail(set, msg) }
	}
	var rest []apply.SpecSet
	for _, s := range sets {
		if dis.sets[s.Name] {
			leave(s.Name)
			continue
		}
		rest = append(rest, s)
	}
	if len(rest) == 0 {
		return nil, nil, true
	}
	// The other sets were planned together with these, and planned
	// without conflicts: apart they have none either.
	p, perr := apply.NewPlanSets(ctx, rest, st, n.opts)
	if perr != nil || len(p.Conflicts) > 0 {
		for _, s := range rest {
			fail(s.Name, fmt.Sprintf("the apply could not be planned without %s: %v", strings.Join(dis.hooks, ", "), perr))
		}
		return nil, nil, true
	}
	return p, rest, true
}

// settle ends the disruption of a sync. After hooks that need a reboot
// were applied (and their apply did not fail as a whole), it records the reboot to ask for, says so in their sets'
// outcomes and returns true: the node stays cordoned and the locks held
// until it is back. Otherwise the node is uncordoned when the agent
// cordoned it, whether in this sync or in an earlier one that did not get
// to it (an agent that stopped during a drain).
func (n *node) settle(ctx context.Context, v *view, outcomes map[string]*outcome) (reboot bool, err error) {
	if n.drainer == nil {
		return false, nil
	}
	if dis := n.rebootFor; dis != nil && !failedSets(dis.rebootSets, outcomes) {
		n.rebootFor = nil
		boot, err := n.rebooter.bootID()
		if err != nil {
			return false, err
		}
		if err := n.rebooter.write(rebootRecord{Boot: boot, Locks: dis.locks, Hooks: dis.reboot}); err != nil {
			return false, fmt.Errorf("record the reboot: %w", err)
		}
		for set := range dis.rebootSets {
			if o := outcomes[v1alpha1.HostHooksOfSet(set)]; o != nil && o.message == "" {
				o.waiting, o.waitPhase = "rebooting the node to finish applying "+strings.Join(dis.reboot, ", "), v1alpha1.NodeApplying
			}
		}
		n.drained = false
		return true, nil
	}
	if dis := n.rebootFor; dis != nil {
		// The apply of the hooks failed as a whole: a reboot would
		// not finish them. The lock goes to the next node.
		n.rebootFor = nil
		if err := n.rebooter.unlock(ctx, dis.locks); err != nil {
			return false, err
		}
	}
	if !n.drained && !v.cordoned {
		return false, nil
	}
	n.drained = false
	return false, n.drainer.uncordon(ctx)
}

// failedSets reports whether the apply of one of sets failed as a whole.
func failedSets(sets map[string]bool, outcomes map[string]*outcome) bool {
	for set := range sets {
		if o := outcomes[v1alpha1.HostHooksOfSet(set)]; o != nil && o.message != "" {
			return true
		}
	}
	return false
}

// drainer cordons, drains and uncordons the agent's own Node.
type drainer struct {
	c       client.Client
	node    string
	timeout time.Duration
	// retry is the first wait before evictions are tried again; it
	// doubles up to maxRetry.
	retry, maxRetry time.Duration
	logf            func(msg string, args ...any)
}

// drainError is a drain that did not finish: the pods still on the node
// and why each stayed.
type drainError struct {
	timeout time.Duration
	pods    []string
}

func (e *drainError) Error() string {
	return fmt.Sprintf("the node could not be drained within %s: %s", e.timeout, strings.Join(e.pods, "; "))
}

// cordon marks the Node unschedulable, and records that the agent did,
// unless it is unschedulable already: then someone else cordoned it, and
// it is theirs to uncordon.
func (d *drainer) cordon(ctx context.Context) error {
	var n corev1.Node
	if err := d.c.Get(ctx, client.ObjectKey{Name: d.node}, &n); err != nil {
		return fmt.Errorf("cordon: %w", err)
	}
	if n.Spec.Unschedulable {
		return nil
	}
	d.logf("cordoning the node")
	return d.patchNode(ctx, &n, true)
}

// uncordon makes the Node schedulable again when the agent cordoned it.
func (d *drainer) uncordon(ctx context.Context) error {
	var n corev1.Node
	if err := d.c.Get(ctx, client.ObjectKey{Name: d.node}, &n); err != nil {
		return fmt.Errorf("uncordon: %w", err)
	}
	if _, ours := n.Annotations[AnnotationCordoned]; !ours {
		return nil
	}
	d.logf("uncordoning the node")
	return d.patchNode(ctx, &n, false)
}

// patchNode sets the Node's spec.unschedulable and the agent's mark with
// it, at the resourceVersion read, so that a cordon or uncordon of
// someone else in between is not overwritten but read again.
func (d *drainer) patchNode(ctx context.Context, n *corev1.Node, cordon bool) error {
	var mark any // null: removed
	if cordon {
		mark = "true"
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": n.ResourceVersion,
			"annotations": map[string]any{AnnotationCordoned: mark}},
		"spec": map[string]any{"unschedulable": cordon},
	})
	if err != nil {
		return err
	}
	obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
	if err := d.c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		what := "uncordon"
		if cordon {
			what = "cordon"
		}
		return fmt.Errorf("%s node %s: %w", what, d.node, err)
	}
	return nil
}

// drain evicts the node's pods, but those of DaemonSets and static pods'
// mirrors, and waits until they are gone, trying again the evictions
// that a PodDisruptionBudget refused, until the drain timeout.
func (d *drainer) drain(ctx context.Context) error {
	deadline := time.Now().Add(d.timeout)
	wait := d.retry
	for {
		var pods corev1.PodList
		if err := d.c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": d.node}); err != nil {
			return fmt.Errorf("drain: list the node's pods: %w", err)
		}
		var left []string
		for i := range pods.Items {
			p := &pods.Items[i]
			if !evictable(p) {
				continue
			}
			name := p.Namespace + "/" + p.Name
			if p.DeletionTimestamp != nil {
				left = append(left, name+": terminating")
				continue
			}
			err := d.c.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}})
			switch {
			case err == nil:
				d.logf("evicted", "pod", name)
				left = append(left, name+": evicted, terminating")
			case apierrors.IsNotFound(err):
			case apierrors.IsTooManyRequests(err):
				left = append(left, name+": eviction refused: "+err.Error())
			default:
				return fmt.Errorf("drain: evict %s: %w", name, err)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return &drainError{timeout: d.timeout, pods: left}
		}
		sleep(ctx, min(wait, time.Until(deadline)))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait = min(2*wait, d.maxRetry)
	}
}

// evictable reports whether a drain evicts p: not a DaemonSet's pod (its
// controller would put it back at once, and it tolerates the cordon), not
// a static pod's mirror, and not a pod that has finished.
func evictable(p *corev1.Pod) bool {
	if _, mirror := p.Annotations[mirrorAnnotation]; mirror {
		return false
	}
	if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" {
		return false
	}
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// disrupt cordons and drains the node for the hooks of dis; on a drain
// that fails it uncordons the node again (when the agent cordoned it).
func (d *drainer) disrupt(ctx context.Context, dis disruptive) error {
	d.logf("draining the node", "hooks", strings.Join(dis.hooks, ","))
	if err := d.cordon(ctx); err != nil {
		return err
	}
	err := d.drain(ctx)
	if err == nil {
		return nil
	}
	if uerr := d.uncordon(context.WithoutCancel(ctx)); uerr != nil {
		err = errors.Join(err, uerr)
	}
	return err
}
