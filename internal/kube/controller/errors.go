package controller

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// summarize sums up the failures of the nodes in failed (NodeHooks that
// applied the current hooks of hh and failed) by hook and step: one
// summary for each step that failed, for each hook that failed with no
// step to blame, and for the apply as a whole (Hook and Step empty) where
// a node has a message, or nothing else to show for its failure. Each
// counts its nodes, lists the first v1alpha1.MaxErrorNodes of them by
// name, and carries the exit code, reason and message of the node that
// failed there last. A hook's output is never read: the summary stays the
// same size at any number of nodes.
//
// The summaries are in the order of the hooks and their steps in hh; the
// apply's come first; hooks and steps that hh does not have (a node's
// results are of the hooks it applied) come after, by name.
func summarize(hh *v1alpha1.HostHooks, failed []*v1alpha1.NodeHooks) []v1alpha1.ErrorSummary {
	if len(failed) == 0 {
		return nil
	}
	sums := make(summaries)
	for _, nh := range failed {
		sums.addNode(nh)
	}
	keys := make([]summaryKey, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, hookOrder(hh))
	out := make([]v1alpha1.ErrorSummary, 0, len(keys))
	for _, k := range keys {
		a := sums[k]
		slices.Sort(a.nodes)
		a.sum.Nodes = slices.Clone(a.nodes[:min(len(a.nodes), v1alpha1.MaxErrorNodes)])
		out = append(out, a.sum)
	}
	return out
}

// summaryKey is where failures are summed up: a hook and one of its
// steps, a hook with no step to blame (step empty), or the apply as a
// whole (both empty).
type summaryKey struct{ hook, step string }

// summaries are the failures summed up so far, by where.
type summaries map[summaryKey]*summary

// summary is the failures of one summaryKey so far.
type summary struct {
	sum   v1alpha1.ErrorSummary
	nodes []string
	at    time.Time
	last  string // the node at at
}

// addNode adds the failures of the NodeHooks nh: of each step that
// failed, of each hook that failed with no step to blame, and of the
// apply where nh has a message, or nothing else to show for its failure.
func (sums summaries) addNode(nh *v1alpha1.NodeHooks) {
	node := nh.Spec.NodeName
	var applied time.Time
	if nh.Status.AppliedAt != nil {
		applied = nh.Status.AppliedAt.Time
	}
	blamed := false
	for _, hr := range nh.Status.Hooks {
		stepFailed := false
		for _, sr := range hr.Steps {
			if sr.State != "failed" {
				continue
			}
			at := applied
			if sr.FinishedAt != nil {
				at = sr.FinishedAt.Time
			}
			sums.add(summaryKey{hr.Name, sr.Name}, node, at, sr.ExitCode, sr.Reason, hr.Message)
			stepFailed = true
		}
		if hr.Phase == "failed" && !stepFailed {
			sums.add(summaryKey{hr.Name, ""}, node, applied, hr.ExitCode, hr.Reason, hr.Message)
			stepFailed = true
		}
		blamed = blamed || stepFailed
	}
	if nh.Status.Message != "" || !blamed {
		sums.add(summaryKey{}, node, applied, nil, "", nh.Status.Message)
	}
}

// add counts a failure at k of node at at, with its exit code, reason
// and message.
func (sums summaries) add(k summaryKey, node string, at time.Time, exit *int32, reason, message string) {
	a := sums[k]
	if a == nil {
		a = &summary{sum: v1alpha1.ErrorSummary{Hook: k.hook, Step: k.step}}
		sums[k] = a
	}
	a.sum.Count++
	a.nodes = append(a.nodes, node)
	// The latest failure wins; at one time, the last node by name,
	// so that the same NodeHooks give the same summary.
	if a.last == "" || at.After(a.at) || (at.Equal(a.at) && node > a.last) {
		a.at, a.last = at, node
		a.sum.ExitCode, a.sum.Reason, a.sum.Message = nil, reason, message
		if exit != nil {
			e := *exit
			a.sum.ExitCode = &e
		}
	}
}

// hookOrder compares summary keys in the order of the hooks and their
// steps in hh, the apply's first, and the hooks and steps that hh does
// not have after, by name.
func hookOrder(hh *v1alpha1.HostHooks) func(a, b summaryKey) int {
	hookAt := make(map[string]int, len(hh.Spec.Hooks))
	stepAt := make(map[summaryKey]int)
	for i, hk := range hh.Spec.Hooks {
		hookAt[hk.Name] = i
		for j, s := range hk.Steps {
			stepAt[summaryKey{hk.Name, s.Name}] = j
		}
	}
	hookRank := func(k summaryKey) int {
		if k.hook == "" {
			return -1
		}
		if i, ok := hookAt[k.hook]; ok {
			return i
		}
		return len(hookAt) + 1 // after every known one; then by name
	}
	stepRank := func(k summaryKey) int {
		if k.step == "" {
			return -1
		}
		if j, ok := stepAt[k]; ok {
			return j
		}
		return 1 << 30
	}
	return func(a, b summaryKey) int {
		return cmp.Or(
			cmp.Compare(hookRank(a), hookRank(b)),
			strings.Compare(a.hook, b.hook),
			cmp.Compare(stepRank(a), stepRank(b)),
			strings.Compare(a.step, b.step),
		)
	}
}
