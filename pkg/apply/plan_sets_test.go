package apply_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

// set renders hook YAML as the spec set name read from file.
func set(t *testing.T, name, file, hooksYAML string) apply.SpecSet {
	t.Helper()
	data := []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" + hooksYAML)
	r, diags := compile.Build(file, data, compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatalf("bad spec: %v", diags)
	}
	return apply.SpecSet{Name: name, Units: us}
}

// applySets plans and applies spec sets on the node.
func (n *node) applySets(t *testing.T, sets []apply.SpecSet, mods ...func(*apply.Options)) (*apply.Plan, []string) {
	t.Helper()
	opts := n.opts
	for _, m := range mods {
		m(&opts)
	}
	p, err := apply.NewPlanSets(context.Background(), sets, n.state(), opts)
	if err != nil {
		t.Fatal(err)
	}
	n.sd.Reset()
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
		t.Fatalf("apply: %v", err)
	}
	return p, n.sd.Log()
}

// TestSpecSetsIndependent: applying set b never prunes, restarts or
// reports on set a's units, even a drifted one; each set prunes its own.
func TestSpecSetsIndependent(t *testing.T) {
	n := newNode(t)
	a := set(t, "a", "a.yaml", "- name: a1\n  exec: [/bin/true]\n- name: a2\n  exec: [/bin/true]\n")
	n.applySets(t, []apply.SpecSet{a})
	// An admin edits a2: drift in set a.
	if err := os.WriteFile(n.unitPath("a2.service"), []byte("[Service]\nExecStart=/bin/edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := set(t, "b", "b.yaml", "- name: b1\n  exec: [/bin/true]\n")
	p, calls := n.applySets(t, []apply.SpecSet{b})
	for _, c := range calls {
		if strings.Contains(c, "a1") || strings.Contains(c, "a2") {
			t.Errorf("applying set b asked systemd to %s", c)
		}
	}
	for _, w := range p.Warnings {
		if w.Unit == "a2.service" {
			t.Errorf("applying set b reports set a's drift: %v", w)
		}
	}
	if !n.exists("a1.service") || !n.exists("b1.service") {
		t.Errorf("a1 %v, b1 %v: want both", n.exists("a1.service"), n.exists("b1.service"))
	}
	sets := map[string]string{}
	for _, u := range n.state().Units {
		sets[u.Name] = u.Set
	}
	if sets["a1.service"] != "a" || sets["a2.service"] != "a" || sets["b1.service"] != "b" {
		t.Errorf("sets in the state: %v", sets)
	}
	// Set a drops a1: only a1 goes.
	a = set(t, "a", "a.yaml", "- name: a2\n  exec: [/bin/true]\n")
	n.applySets(t, []apply.SpecSet{a}, force)
	if n.exists("a1.service") || !n.exists("b1.service") {
		t.Errorf("after set a dropped a1: a1 %v, b1 %v", n.exists("a1.service"), n.exists("b1.service"))
	}
}

// TestSpecSetsConflict: a unit that another set owns is a conflict that
// names both hooks' places, and nothing is written.
func TestSpecSetsConflict(t *testing.T) {
	n := newNode(t)
	n.applySets(t, []apply.SpecSet{set(t, "a", "a.yaml", "- name: x\n  exec: [/bin/true]\n")})
	before := n.read("x.service")
	b := set(t, "b", "b.yaml", "- name: y\n  exec: [/bin/true]\n- name: x\n  exec: [/bin/false]\n")
	p, err := apply.NewPlanSets(context.Background(), []apply.SpecSet{b}, n.state(), n.opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "b.yaml:6:3") || !strings.Contains(p.Conflicts[0].Message, "a.yaml:4:3") {
		t.Fatalf("conflicts: %v; want one naming b.yaml:6:3 and a.yaml:4:3", p.Conflicts)
	}
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err == nil {
		t.Fatal("a plan with a conflict was applied")
	}
	if n.read("x.service") != before || n.exists("y.service") {
		t.Error("something was written")
	}
	// Two sets of one apply with the same unit: an error.
	a := set(t, "a", "a.yaml", "- name: x\n  exec: [/bin/true]\n")
	if _, err := apply.NewPlanSets(context.Background(), []apply.SpecSet{a, b}, n.state(), n.opts); err == nil || !strings.Contains(err.Error(), "a.yaml:4:3") || !strings.Contains(err.Error(), "b.yaml:6:3") {
		t.Errorf("two sets with one unit: %v", err)
	}
}

// TestSpecSetsLegacyState: a state written before spec sets (no set on its
// units: the node had one spec) keeps working: the first apply of sets
// takes over the units a set has and prunes the others, as an apply of the
// one spec did.
func TestSpecSetsLegacyState(t *testing.T) {
	n := newNode(t)
	// The state as the code before spec sets wrote it: NewPlan records
	// no set.
	n.mustApply("- name: old1\n  exec: [/bin/true]\n- name: old2\n  exec: [/bin/true]\n")
	data, err := os.ReadFile(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), `"set"`) {
		t.Fatalf("NewPlan recorded a set: %s", data)
	}
	p, _ := n.applySets(t, []apply.SpecSet{set(t, "main", "main.yaml", "- name: old1\n  exec: [/bin/true]\n- name: new\n  exec: [/bin/true]\n")})
	if _, _, remove := p.Counts(); remove != 1 {
		t.Errorf("plan: %s; want old2 removed", p.Summary())
	}
	if !n.exists("old1.service") || n.exists("old2.service") || !n.exists("new.service") {
		t.Errorf("old1 %v old2 %v new %v", n.exists("old1.service"), n.exists("old2.service"), n.exists("new.service"))
	}
	for _, u := range n.state().Units {
		if u.Set != "main" {
			t.Errorf("%s is in set %q, want main", u.Name, u.Set)
		}
	}
	// old1 was taken over, not rewritten or restarted.
	for _, f := range p.Files {
		if f.Unit == "old1.service" && f.Op != apply.OpUnchanged {
			t.Errorf("old1.service: %s", f.Op)
		}
	}
}

// TestSpecSetsDirPrune: with SpecDir, a set last applied from a file of
// that directory that is not among the sets (its file was removed) is
// pruned; a set applied from elsewhere is not.
func TestSpecSetsDirPrune(t *testing.T) {
	n := newNode(t)
	dir := "/etc/hostprov/hooks.d"
	a := set(t, "a", dir+"/a.yaml", "- name: a\n  exec: [/bin/true]\n")
	b := set(t, "b", dir+"/b.yaml", "- name: b\n  exec: [/bin/true]\n")
	other := set(t, "other", "/root/other.yaml", "- name: o\n  exec: [/bin/true]\n")
	inDir := func(o *apply.Options) { o.SpecDir = dir }
	n.applySets(t, []apply.SpecSet{a, b}, inDir)
	n.applySets(t, []apply.SpecSet{other})
	_, calls := n.applySets(t, []apply.SpecSet{a}, inDir)
	if n.exists("b.service") || !n.exists("a.service") || !n.exists("o.service") {
		t.Errorf("after b.yaml went: a %v b %v o %v", n.exists("a.service"), n.exists("b.service"), n.exists("o.service"))
	}
	if got := strings.Count(strings.Join(calls, "\n"), "reload"); got != 1 {
		t.Errorf("%d reloads, want 1: %v", got, calls)
	}
}

// TestSpecSetsOneReload: an apply of several sets that all change reloads
// systemd once.
func TestSpecSetsOneReload(t *testing.T) {
	n := newNode(t)
	sets := []apply.SpecSet{
		set(t, "a", "a.yaml", "- name: a\n  exec: [/bin/true]\n"),
		set(t, "b", "b.yaml", "- name: b\n  exec: [/bin/true]\n"),
		set(t, "c", "c.yaml", "- name: c\n  exec: [/bin/true]\n"),
	}
	_, calls := n.applySets(t, sets)
	if got := strings.Count(strings.Join(calls, "\n"), "reload"); got != 1 {
		t.Errorf("%d reloads for three sets, want 1: %v", got, calls)
	}
}

// TestSpecSetOwners: the state records who owns a set that another applier
// (the agent) applies, and a set of that name from another owner (a node's
// own spec) neither takes it over nor prunes it; the owner's own prune
// works, and the record goes with the set's last unit.
func TestSpecSetOwners(t *testing.T) {
	n := newNode(t)
	agent := set(t, "hosthooks.base", "hosthooks/base", "- name: agent1\n  exec: [/bin/true]\n")
	agent.Owner = "agent"
	n.applySets(t, []apply.SpecSet{agent, set(t, "local", "local.yaml", "- name: local1\n  exec: [/bin/true]\n")})
	st := n.state()
	if st.Version != apply.StateVersion {
		t.Errorf("state version %d, want %d with an owned set", st.Version, apply.StateVersion)
	}
	if owner, recorded := st.SetOwner("hosthooks.base"); owner != "agent" || !recorded {
		t.Errorf("owner of hosthooks.base: %q, %v; want agent, recorded", owner, recorded)
	}
	if owner, recorded := st.SetOwner("local"); owner != "" || recorded {
		t.Errorf("owner of the node's own set: %q, %v; want none", owner, recorded)
	}

	// The node's own spec of the same name, which would take agent1 over
	// and prune it: a conflict at agent1 naming both owners, and nothing
	// is done.
	mine := set(t, "hosthooks.base", "hooks.d/base.yaml", "- name: other\n  exec: [/bin/true]\n")
	p, err := apply.NewPlanSets(context.Background(), []apply.SpecSet{mine}, st, n.opts)
	if err != nil {
		t.Fatal(err)
	}
	var at []string
	for _, c := range p.Conflicts {
		at = append(at, c.Unit)
		if !strings.Contains(c.Message, "belongs to the agent") || !strings.Contains(c.Message, "the node's own specs may not") ||
			c.Fix == nil || !strings.Contains(c.Fix.Spec, "another metadata.name") {
			t.Errorf("conflict: %s (fix %+v)", c.Message, c.Fix)
		}
		if c.Unit == "other.service" && !strings.Contains(c.Message, "hooks.d/base.yaml:4:3") {
			t.Errorf("the conflict at the spec's unit does not say where its hook is: %s", c.Message)
		}
	}
	if !slices.Equal(at, []string{"agent1.service", "other.service"}) {
		t.Errorf("conflicts at %q, want agent1.service and other.service: %v", at, p.Conflicts)
	}
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err == nil {
		t.Fatal("a plan with a conflict was applied")
	}
	if !n.exists("agent1.service") || n.exists("other.service") {
		t.Errorf("agent1 %v, other %v: want agent1 kept, other not written", n.exists("agent1.service"), n.exists("other.service"))
	}

	// A local apply of its own sets keeps the record; the agent's prune
	// (its set with no units) removes agent1 and the record with it.
	n.applySets(t, []apply.SpecSet{set(t, "local", "local.yaml", "- name: local1\n  exec: [/bin/true]\n")})
	if owner, _ := n.state().SetOwner("hosthooks.base"); owner != "agent" {
		t.Errorf("after a local apply, the owner of hosthooks.base is %q", owner)
	}
	n.applySets(t, []apply.SpecSet{{Name: "hosthooks.base", Owner: "agent"}})
	st = n.state()
	if n.exists("agent1.service") || len(st.Sets) != 0 || st.Version == apply.StateVersion {
		t.Errorf("after the agent's prune: agent1 %v, sets %v, version %d", n.exists("agent1.service"), st.Sets, st.Version)
	}
}

// TestSpecSetOwnersLegacy: a state of an earlier hostprov records no
// owners; the first apply of an owner's set takes its units over by name,
// as before, and records the owner.
func TestSpecSetOwnersLegacy(t *testing.T) {
	n := newNode(t)
	n.applySets(t, []apply.SpecSet{set(t, "hosthooks.base", "hosthooks/base", "- name: agent1\n  exec: [/bin/true]\n")})
	if st := n.state(); len(st.Sets) != 0 || st.Version == apply.StateVersion {
		t.Fatalf("a set with no owner was recorded: %v, version %d", st.Sets, st.Version)
	}
	agent := set(t, "hosthooks.base", "hosthooks/base", "- name: agent1\n  exec: [/bin/true]\n")
	agent.Owner = "agent"
	p, _ := n.applySets(t, []apply.SpecSet{agent})
	if len(p.Conflicts) != 0 || p.HasChanges() {
		t.Errorf("taking the set over: conflicts %v, changes %s", p.Conflicts, p.Summary())
	}
	if owner, recorded := n.state().SetOwner("hosthooks.base"); owner != "agent" || !recorded {
		t.Errorf("owner %q, recorded %v", owner, recorded)
	}
}

// A path that another spec set owns is a conflict of the set that places
// it too, and pruning one set leaves the other's paths alone.
func TestPathsSets(t *testing.T) {
	needRoot(t)
	n := newNode(t)
	set := func(name, hooksYAML string) apply.SpecSet {
		data := []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" + hooksYAML)
		r, diags := compile.Build(name+".yaml", data, compile.Options{})
		if diags.HasErrors(false) {
			t.Fatal(diags)
		}
		return apply.SpecSet{Name: name, Units: r.Units, Paths: apply.PathsOf(r.Storage, r.Spec)}
	}
	applySets := func(sets ...apply.SpecSet) *apply.Plan {
		t.Helper()
		p, err := apply.NewPlanSets(context.Background(), sets, n.state(), n.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Conflicts) == 0 {
			if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	applySets(set("a", "- name: a\n  files: [{path: /etc/shared, contents: a}]\n"))
	applySets(set("b", "- name: b\n  files: [{path: /etc/b, contents: b}]\n"))
	p := applySets(set("b", "- name: b\n  files: [{path: /etc/shared, contents: b}]\n"))
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "spec set a owns it") {
		t.Errorf("conflicts = %v", p.Conflicts)
	}
	if n.readNode("/etc/shared") != "a" || n.readNode("/etc/b") != "b" {
		t.Error("a conflicting plan changed files")
	}
	applySets(set("b", " []\n"))
	if !n.gone("/etc/b") || n.gone("/etc/shared") {
		t.Errorf("pruning set b: /etc/b gone %v, /etc/shared gone %v", n.gone("/etc/b"), n.gone("/etc/shared"))
	}
}
