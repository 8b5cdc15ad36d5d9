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
	type key struct{ hook, step string }
	type acc struct {
		sum   v1alpha1.ErrorSummary
		nodes []string
		at    time.Time
		last  string // the node at at
	}
	byKey := make(map[key]*acc)
	add := func(k key, node string, at time.Time, exit *int32, reason, message string) {
		a := byKey[k]
		if a == nil {
			a = &acc{sum: v1alpha1.ErrorSummary{Hook: k.hook, Step: k.step}}
			byKey[k] = a
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
	for _, nh := range failed {
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
				add(key{hr.Name, sr.Name}, node, at, sr.ExitCode, sr.Reason, hr.Message)
				stepFailed = true
			}
			if hr.Phase == "failed" && !stepFailed {
				add(key{hr.Name, ""}, node, applied, hr.ExitCode, hr.Reason, hr.Message)
				stepFailed = true
			}
			blamed = blamed || stepFailed
		}
		if nh.Status.Message != "" || !blamed {
			add(key{}, node, applied, nil, "", nh.Status.Message)
		}
	}

	// Where each hook and step is in hh, to order the summaries.
	hookAt := make(map[string]int, len(hh.Spec.Hooks))
	stepAt := make(map[key]int)
	for i, hk := range hh.Spec.Hooks {
		hookAt[hk.Name] = i
		for j, s := range hk.Steps {
			stepAt[key{hk.Name, s.Name}] = j
		}
	}
	rank := func(m map[string]int, k string, empty bool) int {
		if empty {
			return -1
		}
		if i, ok := m[k]; ok {
			return i
		}
		return len(m) + 1 // after every known one; then by name
	}
	stepRank := func(k key) int {
		if k.step == "" {
			return -1
		}
		if j, ok := stepAt[k]; ok {
			return j
		}
		return 1 << 30
	}
	keys := make([]key, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(
			cmp.Compare(rank(hookAt, a.hook, a.hook == ""), rank(hookAt, b.hook, b.hook == "")),
			strings.Compare(a.hook, b.hook),
			cmp.Compare(stepRank(a), stepRank(b)),
			strings.Compare(a.step, b.step),
		)
	})
	out := make([]v1alpha1.ErrorSummary, 0, len(keys))
	for _, k := range keys {
		a := byKey[k]
		slices.Sort(a.nodes)
		a.sum.Nodes = slices.Clone(a.nodes[:min(len(a.nodes), v1alpha1.MaxErrorNodes)])
		out = append(out, a.sum)
	}
	return out
}
