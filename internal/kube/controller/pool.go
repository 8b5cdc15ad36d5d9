package controller

import (
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// BusyNodes is, by node name, the names of the HostHooks each node is
// unavailable for, sorted, from every HostHooks and every NodeHooks there are:
// the budget of Decide is shared by every HostHooks that selects a node.
// A node is busy for a HostHooks when its NodeHooks is approved for the
// HostHooks' current hooks, the HostHooks selects the node, and it is not
// done with them; when the HostHooks no longer selects it, its removal is
// approved (spec.remove), and the agent did not remove the units yet; and
// when the HostHooks is being deleted or gone (or the NodeHooks is an
// earlier one's of its name) and the agent did not remove them yet, since
// agents prune those at once. A node that is not Ready is no HostHooks'
// business here: Decide counts it of itself.
func BusyNodes(hhs []v1alpha1.HostHooks, nodes []Node, nhs []v1alpha1.NodeHooks) map[string][]string {
	type hostHooks struct {
		hh   *v1alpha1.HostHooks
		hash string
		sel  labels.Selector // nil when it cannot be read: it selects nothing
	}
	byName := make(map[string]hostHooks, len(hhs))
	for i := range hhs {
		hh := &hhs[i]
		sel, err := selector(hh.Spec.NodeSelector)
		if err != nil {
			sel = nil
		}
		byName[hh.Name] = hostHooks{hh, v1alpha1.HooksHash(hh.Spec.Hooks), sel}
	}
	nodeLabels := make(map[string]labels.Set, len(nodes))
	for _, n := range nodes {
		nodeLabels[n.Name] = labels.Set(n.Labels)
	}
	busy := make(map[string][]string)
	for i := range nhs {
		nh := &nhs[i]
		ls, ok := nodeLabels[nh.Spec.NodeName]
		if !ok || slices.Contains(busy[nh.Spec.NodeName], nh.Spec.HostHooks) {
			continue
		}
		b, ok := byName[nh.Spec.HostHooks]
		var is bool
		switch {
		case !ok || !owned(b.hh, nh) || b.hh.DeletionTimestamp != nil:
			is = !removed(nh)
		case b.sel == nil:
			// The agents neither apply nor prune what an unreadable
			// selector names.
		case !b.sel.Matches(ls):
			is = nh.Spec.Remove && !removed(nh)
		default:
			is = nh.Spec.HooksHash == b.hash && !nh.Spec.Remove && !doneAt(nh, b.hash)
		}
		if !is {
			continue
		}
		busy[nh.Spec.NodeName] = append(busy[nh.Spec.NodeName], nh.Spec.HostHooks)
	}
	for _, names := range busy {
		slices.Sort(names)
	}
	return busy
}
