package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/hostprov/hostprov/internal/kube"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// view is what the agent knows of the cluster at one moment: its Node's
// labels (nil while the Node is unknown), every HostHooks by name, and the
// NodeHooks of the node.
type view struct {
	labels    labels.Set
	hostHooks map[string]*v1alpha1.HostHooks
	nodeHooks []*v1alpha1.NodeHooks
	// cordoned is set when the Node has the agent's mark of a cordon
	// (AnnotationCordoned): the agent cordoned it and is to uncordon it.
	cordoned bool
	// listing is set while a watch of a NodeHooks has not listed yet:
	// nodeHooks may lack one that exists.
	listing bool
}

// nodeHooksOf is the NodeHooks of the node for the HostHooks named hh, or
// nil.
func (v *view) nodeHooksOf(hh string) *v1alpha1.NodeHooks {
	for _, nh := range v.nodeHooks {
		if nh.Spec.HostHooks == hh {
			return nh
		}
	}
	return nil
}

// What a sync does with the spec set of one HostHooks.
type action int

const (
	// leave: not passed to the plan; the node keeps what it has (not
	// approved yet, or approved for other hooks than the current ones,
	// or no longer selected and the removal not approved yet).
	leave action = iota
	// applySet: passed with its units.
	applySet
	// prune: passed with no units: the HostHooks is gone, being deleted,
	// or no longer selects the node and its removal is approved.
	prune
	// invalid: approved, but its hooks fail hostprov's validation; left
	// as it is and reported Failed.
	invalid
	// failedKept: approved for hooks this node applied already and whose
	// start failed; left as it is, so that no event (another HostHooks,
	// a label, the agent's own restart) runs the failed hook again. New
	// hooks run it again, and so does a spec.retry other than the one
	// the NodeHooks' status records (see retryDue).
	failedKept
)

// outcome is what a sync decided and did for one HostHooks' set.
type outcome struct {
	action action
	// hash is the hooks hash of an applied, invalid or kept set.
	hash string
	// message says why the set failed as a whole: validation, a
	// conflict, an apply that could not be made.
	message string
	// waiting, with waitPhase, says what the set waits for: the reboot
	// lock another node holds, or the node's reboot (see disrupt.go).
	waiting   string
	waitPhase v1alpha1.NodePhase
	// changed is set when the sync changed the set's units.
	changed bool
	// retry is the HostHooks' spec.retry, for an applied, invalid or
	// kept set: the NodeHooks' status records it when the set's units
	// change or its hash does.
	retry int32
}

// built is a HostHooks' spec set as kube.Build made it, kept while its
// hooks stay the same.
type built struct {
	hash string
	set  apply.SpecSet
	errs []string
}

// node is the agent's side of the node: what it decides, applies and
// reports, without the API server.
type node struct {
	opts apply.Options
	// tools runs the node's own programs for the accounts of the hooks
	// (see tools.go); nil runs this machine's.
	tools  apply.Tools
	log    *slog.Logger
	builds map[string]built // by HostHooks name
	// applying, when set, is called with the HostHooks whose units a
	// plan changes, before it is carried out: starts may take minutes.
	applying func(hostHooks []string)
	// metrics, when set, count the applies and the hooks found failed.
	metrics *Metrics
	// failed are the agent's units that the last report found failed;
	// seen is set after the first report.
	failed map[string]bool
	seen   bool

	// drainer, when set, drains the node for hooks that declare a
	// disruption (see disrupt.go); without it they are applied as any
	// other. disruptions are what the hooks the agent applied declare,
	// by HostHooks and hook; drained is set when this sync drained.
	drainer     *drainer
	disruptions map[string]map[string]string
	drained     bool
	// rebooter, when set, takes the reboot locks and keeps the record
	// of a reboot; rebootFor is what this sync is to reboot for.
	rebooter  *rebooter
	rebootFor *disruptive
}

// selects reports whether hh selects a node with these labels. An unset
// selector selects every node, as the API says.
func selects(hh *v1alpha1.HostHooks, ls labels.Set) (bool, error) {
	if hh.Spec.NodeSelector == nil {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(hh.Spec.NodeSelector)
	if err != nil {
		return false, err
	}
	return sel.Matches(ls), nil
}

// build is kube.Build of hh, made once for each hash of its hooks.
func (n *node) build(hh *v1alpha1.HostHooks, hash string) built {
	if b, ok := n.builds[hh.Name]; ok && b.hash == hash {
		return b
	}
	set, diags := kube.Build(hh)
	b := built{hash: hash, set: set}
	for _, d := range diags {
		if d.Severity == hooks.Error {
			msg := d.Path + ": " + d.Message
			if d.Hint != "" {
				msg += " (hint: " + d.Hint + ")"
			}
			b.errs = append(b.errs, msg)
		}
	}
	n.builds[hh.Name] = b
	return b
}

// decide says, for every HostHooks and every spec set of the agent's in
// the state, what this sync does with it, and returns the sets to plan.
// Without the node's labels it decides nothing: a Node it cannot see is
// no reason to prune.
func (n *node) decide(v *view, st *apply.State) ([]apply.SpecSet, map[string]*outcome) {
	out := map[string]*outcome{}
	var sets []apply.SpecSet
	if v.labels == nil {
		return nil, out
	}
	keep := map[string]bool{} // selected, or not to be judged: never pruned
	for name, hh := range v.hostHooks {
		if hh.DeletionTimestamp != nil {
			continue
		}
		hash := v1alpha1.HooksHash(hh.Spec.Hooks)
		ok, err := selects(hh, v.labels)
		if err != nil {
			// Neither applied nor pruned: a selector that cannot be
			// read says nothing about this node.
			keep[name] = true
			out[name] = &outcome{action: invalid, hash: hash, message: "spec.nodeSelector: " + err.Error()}
			continue
		}
		nh := v.nodeHooksOf(name)
		if !ok {
			// No longer selected: the units stay until the
			// controller approves their removal within the
			// rollout's budget. Without a NodeHooks (deleted)
			// nothing waits for it.
			if nh != nil && !nh.Spec.Remove {
				keep[name] = true
				out[name] = &outcome{action: leave}
			}
			continue
		}
		keep[name] = true
		if nh == nil || nh.Spec.HooksHash != hash {
			out[name] = &outcome{action: leave}
			continue
		}
		b := n.build(hh, hash)
		switch {
		case len(b.errs) > 0:
			out[name] = &outcome{action: invalid, hash: hash, retry: hh.Spec.Retry,
				message: "the hooks are invalid, so they were not applied: " + strings.Join(b.errs, "; ")}
		case nh.Status.AppliedHash == hash && failedIn(st, b.set.Name) && !retryDue(nh, hh):
			out[name] = &outcome{action: failedKept, hash: hash, retry: hh.Spec.Retry}
		default:
			// A retry that is due is an apply of the same hooks:
			// the plan starts again only the units whose start
			// failed (the state marks them), and nothing else.
			out[name] = &outcome{action: applySet, hash: hash, retry: hh.Spec.Retry}
			sets = append(sets, b.set)
		}
	}
	// A set of the state is the agent's to prune when its HostHooks no
	// longer keeps it: by its units, and by its files, directories, links
	// and accounts' sysusers.d file, which a set may have without a unit.
	var owned []string
	for _, u := range st.Units {
		owned = append(owned, u.Set)
	}
	for _, p := range st.Paths {
		owned = append(owned, p.Set)
	}
	seen := map[string]bool{}
	for _, set := range owned {
		name := v1alpha1.HostHooksOfSet(set)
		if name == "" || keep[name] || seen[name] || !agentSet(st, set) {
			continue
		}
		seen[name] = true
		out[name] = &outcome{action: prune}
		sets = append(sets, apply.SpecSet{Name: set, Owner: kube.SetOwner})
	}
	for name := range v.hostHooks {
		if out[name] == nil {
			out[name] = &outcome{action: prune}
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	// Builds of HostHooks that are gone are dropped.
	for name := range n.builds {
		if v.hostHooks[name] == nil {
			delete(n.builds, name)
		}
	}
	return sets, out
}

// retryDue reports whether the node has yet to carry out the HostHooks'
// spec.retry: its NodeHooks' status (as the agent knows it, its own last
// write included: see Agent.known) records another. Any change counts, not
// only an increase, so that a spec.retry set back (a restore, an edit by
// hand) does not silence the increases after it. The status records
// spec.retry whenever the agent applies new hooks, so a retry asked for
// before the node had the current hooks runs nothing more.
func retryDue(nh *v1alpha1.NodeHooks, hh *v1alpha1.HostHooks) bool {
	return nh.Status.Retry != hh.Spec.Retry
}

// failedIn reports whether a unit of the set failed to start at the last
// apply that had it (the state marks it Failed).
func failedIn(st *apply.State, set string) bool {
	for _, u := range st.Units {
		if u.Set == set && u.Failed {
			return true
		}
	}
	return false
}

// result is what one sync found: the outcome of every HostHooks' set and
// the units of the agent's sets as systemd reports them after the apply.
// retry is set when a set was not applied for a reason that time may
// remove (a drain that did not finish), so that the agent tries again.
type result struct {
	outcomes map[string]*outcome
	reports  []apply.UnitReport
	retry    bool
	// reboot is set when the node is to reboot now: the record is
	// written.
	reboot bool
}

// sync makes the node match v: one plan of every set to apply and to
// prune, carried out at once (one daemon-reload), under the lock that
// hostprov apply takes, and then a report of the agent's units. An error
// is returned only when nothing could be done (the lock, the state); what
// went wrong with a set is in its outcome.
func (n *node) sync(ctx context.Context, sd apply.Systemd, v *view) (r *result, err error) {
	// An apply is a sync with sets to plan, or one that failed before it
	// knew (the lock, the state): failed unless the agent is stopping.
	start, planned := time.Now(), false
	var sets []apply.SpecSet
	var outcomes map[string]*outcome
	var changed map[string]bool
	defer func() {
		if !planned && (err == nil || ctx.Err() != nil) {
			return
		}
		failed := err != nil
		for _, s := range sets {
			if o := outcomes[v1alpha1.HostHooksOfSet(s.Name)]; o != nil && o.message != "" {
				failed = true
			}
		}
		if r != nil && n.observe(r.reports, changed) > 0 {
			failed = true
		}
		n.metrics.applied(start, time.Now(), failed)
	}()
	if err := apply.PrepareDirs(n.opts); err != nil {
		return nil, err
	}
	unlock, err := apply.Lock(ctx, n.opts.StateDirPath(), false, func(pid int) {
		n.log.Info("waiting for another hostprov apply to finish", "pid", pid)
	})
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		return nil, err
	}
	sets, outcomes = n.decide(v, st)
	n.drained, n.rebootFor = false, nil
	retry := false
	if len(sets) > 0 {
		planned = true
		changed, retry = n.applySets(ctx, sd, v, sets, st, outcomes)
		if st, err = apply.LoadState(apply.StatePath(n.opts.StateDirPath())); err != nil {
			return nil, err
		}
	}
	reboot, err := n.settle(ctx, v, outcomes)
	if err != nil {
		return nil, err
	}
	reports, err := n.reportUnits(ctx, sd, st)
	if err != nil {
		return nil, err
	}
	if !planned {
		n.observe(reports, nil)
	}
	return &result{outcomes: outcomes, reports: reports, retry: retry, reboot: reboot}, nil
}

// observe counts the hooks that reports show failed anew, in the metrics
// by HostHooks, and returns how many: a unit failed that the last report
// found not failed, or that this apply changed (started again). The first
// report counts only the units its apply changed: a restarted agent does
// not count again the failures its predecessor found.
func (n *node) observe(reports []apply.UnitReport, changed map[string]bool) int {
	failed := map[string]bool{}
	byHostHooks := map[string]int{}
	total := 0
	for _, r := range reports {
		key := r.StatusOf
		if key == "" {
			key = r.Unit
		}
		if !r.Failed() || failed[key] {
			continue
		}
		failed[key] = true
		anew := changed[r.Unit] || changed[unitOfInstance(r.Unit)] || changed[key] || n.seen && !n.failed[key]
		if anew {
			byHostHooks[v1alpha1.HostHooksOfSet(r.Set)]++
			total++
		}
	}
	n.failed, n.seen = failed, true
	for hh, c := range byHostHooks {
		n.metrics.hooksFailed(hh, c)
	}
	return total
}

// report reads the agent's units again, for a change systemd signalled
// after the apply. It takes no lock: the state is replaced by rename, so
// it is whole whenever it is read.
func (n *node) report(ctx context.Context, sd apply.Systemd) ([]apply.UnitReport, error) {
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		return nil, err
	}
	reports, err := n.reportUnits(ctx, sd, st)
	if err != nil {
		return nil, err
	}
	n.observe(reports, nil)
	return reports, nil
}

// reportUnits is apply.Report of the agent's units of st, with the journal
// of every failed unit: Report keeps it for command hooks only, and a
// NodeHooks shows the last lines of any hook that failed.
func (n *node) reportUnits(ctx context.Context, sd apply.Systemd, st *apply.State) ([]apply.UnitReport, error) {
	reports, err := apply.Report(ctx, sd, agentUnits(st), n.opts)
	if err != nil {
		return nil, err
	}
	for i := range reports {
		r := &reports[i]
		if r.Error != "" {
			// Not a hook's result but systemd's silence: nothing is
			// reported on it.
			return nil, &systemdError{fmt.Errorf("systemd could not tell the state of %s: %s", r.StatusOf, r.Error)}
		}
		if r.Phase != "" || len(r.Journal) > 0 || !r.Failed() {
			continue
		}
		if s, err := sd.Status(ctx, r.StatusOf); err == nil {
			r.Journal = s.Journal
		}
	}
	return reports, nil
}

// agentUnits is st with only the units of the agent's sets: the node's own
// specs are neither reported nor asked about.
func agentUnits(st *apply.State) *apply.State {
	out := *st
	out.Units, out.Paths = nil, nil
	for _, u := range st.Units {
		if agentSet(st, u.Set) {
			out.Units = append(out.Units, u)
		}
	}
	for _, p := range st.Paths {
		if agentSet(st, p.Set) {
			out.Paths = append(out.Paths, p)
		}
	}
	return &out
}

// agentSet reports whether set, a set of the state, is the agent's: the
// state records the agent as its owner. A set without a record was applied
// by an earlier hostprov, which recorded no owners, or is the node's own:
// it is the agent's when its name is one the agent gives
// (v1alpha1.SetPrefix) and its units came from a HostHooks (their place is
// kube.Place...), so that a node's own spec of such a name, which an
// earlier hostprov accepted, is neither pruned nor reported.
func agentSet(st *apply.State, set string) bool {
	if v1alpha1.HostHooksOfSet(set) == "" {
		return false
	}
	if owner, recorded := st.SetOwner(set); recorded {
		return owner == kube.SetOwner
	}
	for _, u := range st.Units {
		if u.Set == set {
			return strings.HasPrefix(u.Where, kube.Place)
		}
	}
	return true
}

// applySets plans sets and carries the plan out. A set whose units
// conflict (with another set's, or with a file hostprov did not write) is
// taken out of the plan and reported with the conflict, so that it keeps
// no other set from being applied. A set whose changes need the node
// drained is applied only once it is (drainFor). It returns the units the
// plan changed, and whether a set was left for a drain to be tried again.
func (n *node) applySets(ctx context.Context, sd apply.Systemd, v *view, sets []apply.SpecSet, st *apply.State, outcomes map[string]*outcome) (map[string]bool, bool) {
	fail := func(set, msg string) {
		if o := outcomes[v1alpha1.HostHooksOfSet(set)]; o != nil && o.message == "" {
			o.message = msg
		}
	}
	p, sets := n.planSets(ctx, sets, st, fail)
	if len(sets) == 0 {
		return nil, false
	}
	p, sets, retry := n.drainFor(ctx, v, p, sets, st, outcomes, fail)
	if p == nil {
		return nil, retry
	}
	defer n.remember(v, sets)
	owners := ownerOf(sets, st)
	changed := n.changedUnits(p, owners, outcomes)
	res, err := apply.Execute(ctx, p, sd, n.eventLogger())
	if err == nil {
		return changed, retry
	}
	blamed := false
	for _, ev := range res.Events {
		if ev.Action == apply.EvFailed {
			set := owners[ev.Unit]
			if set == "" {
				set = owners[unitOfInstance(ev.Unit)]
			}
			if set != "" {
				blamed = true
				if o := outcomes[v1alpha1.HostHooksOfSet(set)]; o != nil && o.action == prune {
					fail(set, "its units could not be removed: "+ev.Op+" "+ev.Unit+": "+ev.Error)
				}
			}
		}
	}
	// A unit that failed to start is its hook's result, which the
	// report shows; anything else stopped the apply as a whole.
	if !blamed || !onlyStartFailures(res.Events) {
		for _, s := range sets {
			fail(s.Name, "the apply failed: "+err.Error())
		}
	}
	return changed, retry
}

// planSets plans the apply of sets, leaving out each set that has a
// conflict, with fail telling why, and planning the rest again. It
// returns the plan and the sets it is of; no sets when nothing can be
// applied.
func (n *node) planSets(ctx context.Context, sets []apply.SpecSet, st *apply.State, fail func(set, msg string)) (*apply.Plan, []apply.SpecSet) {
	for len(sets) > 0 {
		p, err := apply.NewPlanSets(ctx, sets, st, n.planOptions())
		if err != nil {
			for _, s := range sets {
				fail(s.Name, "the apply could not be planned: "+err.Error())
			}
			return nil, nil
		}
		if len(p.Conflicts) == 0 {
			return p, sets
		}
		owners := ownerOf(sets, st)
		drop := map[string][]string{}
		for _, c := range p.Conflicts {
			owner := owners[c.Unit]
			if owner == "" {
				// A file, directory, link or sysusers.d file: its
				// Unit names the hook, its Path the set.
				owner = pathOwner(sets, c.Path)
			}
			// Worded without hostprov apply's flags, which a
			// HostHooks does not have: what the cluster's user can do.
			drop[owner] = append(drop[owner], c.Text(false))
		}
		if msgs, ok := drop[""]; ok {
			// A conflict of no set's: nothing can be applied.
			for _, s := range sets {
				fail(s.Name, "the apply has conflicts, so nothing was applied: "+strings.Join(msgs, "; "))
			}
			return nil, nil
		}
		var rest []apply.SpecSet
		for _, s := range sets {
			if msgs, ok := drop[s.Name]; ok {
				// Reported Failed at its hash: the node tried
				// these hooks.
				fail(s.Name, "not applied: "+strings.Join(msgs, "; "))
				continue
			}
			rest = append(rest, s)
		}
		sets = rest
	}
	return nil, nil
}

// changedUnits is the units p changes. It marks the outcome of each set
// they are of (by owners) changed, and tells n.applying the HostHooks
// whose hooks are about to be applied.
func (n *node) changedUnits(p *apply.Plan, owners map[string]string, outcomes map[string]*outcome) map[string]bool {
	changed := map[string]bool{}
	for _, u := range p.Units {
		if u.Change != "none" {
			changed[u.Unit] = true
			if o := outcomes[v1alpha1.HostHooksOfSet(owners[u.Unit])]; o != nil {
				o.changed = true
			}
		}
	}
	if n.applying != nil {
		var names []string
		for name, o := range outcomes {
			if o.action == applySet && o.changed {
				names = append(names, name)
			}
		}
		if len(names) > 0 {
			sort.Strings(names)
			n.applying(names)
		}
	}
	return changed
}

// eventLogger logs the apply's events but the units it left unchanged.
func (n *node) eventLogger() apply.Logger {
	return apply.LoggerFunc(func(ev apply.Event) {
		if ev.Action == apply.EvUnchanged {
			return
		}
		if ev.Error != "" {
			n.log.Warn(ev.Text(), "error", ev.Error)
			return
		}
		n.log.Info(ev.Text())
	})
}

// onlyStartFailures reports whether every failed action of the apply is a
// start or restart: the hooks ran and failed, and the apply itself
// finished.
func onlyStartFailures(evs []apply.Event) bool {
	for _, ev := range evs {
		if ev.Action != apply.EvFailed {
			continue
		}
		switch apply.ActionKind(ev.Op) {
		case apply.ActStart, apply.ActRestart, apply.ActTryRestart:
		default:
			return false
		}
	}
	return true
}

// ownerOf maps every unit of sets, and every unit of the state, to its
// spec set.
func ownerOf(sets []apply.SpecSet, st *apply.State) map[string]string {
	m := map[string]string{}
	for _, u := range st.Units {
		m[u.Name] = u.Set
	}
	for _, s := range sets {
		for _, u := range s.Units {
			m[u.Name] = s.Name
		}
	}
	return m
}

// pathOwner is the set among sets that places path (a file, directory or
// link of its hooks, or the sysusers.d file of its accounts), or "".
func pathOwner(sets []apply.SpecSet, path string) string {
	for _, s := range sets {
		if len(s.Accounts) > 0 && apply.SysusersConfig(s.Name) == path {
			return s.Name
		}
		for _, p := range s.Paths {
			if p.Path == path {
				return s.Name
			}
		}
	}
	return ""
}

// unitOfInstance is the template of an instance ("a@b.service" is of
// "a@.service"), or unit itself.
func unitOfInstance(unit string) string {
	at := strings.IndexByte(unit, '@')
	dot := strings.LastIndexByte(unit, '.')
	if at < 0 || dot < at {
		return unit
	}
	return unit[:at+1] + unit[dot:]
}

// systemdError is a sync that failed because systemd did not answer: the
// agent connects again before it tries again.
type systemdError struct{ err error }

func (e *systemdError) Error() string { return e.err.Error() }
func (e *systemdError) Unwrap() error { return e.err }
