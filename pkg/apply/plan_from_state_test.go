package apply_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hostprov/hostprov/pkg/apply"
)

func withInputs(fp string) func(*apply.Options) {
	return func(o *apply.Options) { o.Inputs = fp }
}

// unchangedSpec has every kind of unit a state records: plain, with
// drop-ins, with [Install] changed, disabled, masked, a template started by
// its default instance, and drop-ins on a unit hostprov does not own.
const unchangedSpec = crashAfter + `- name: w@.service
  specifiers: true
  exec: [/bin/echo, "%i"]
  directives:
    Install: [DefaultInstance=one]
- name: docker
  dropins:
  - name: 10-proxy.conf
    contents: "[Service]\nEnvironment=HTTP_PROXY=http://a\n"
`

// fromState plans from the state alone with the node's options and inputs
// fp.
func (n *node) fromState(fp string) (*apply.Plan, bool) {
	n.t.Helper()
	opts := n.opts
	opts.Inputs = fp
	p, ok, err := apply.NewPlanFromState(context.Background(), n.state(), opts)
	if err != nil {
		n.t.Fatal(err)
	}
	return p, ok
}

// TestPlanFromStateIsNewPlan: for the inputs of the last apply, the plan
// made from the state is the plan NewPlan makes from the rendered units,
// in every form (data, JSON, text), and executing it does the same: it
// writes nothing, not even the state.
func TestPlanFromStateIsNewPlan(t *testing.T) {
	n := newNode(t)
	n.mustApply(unchangedSpec, withInputs("A"))
	if st := n.state(); st.Inputs != "A" {
		t.Fatalf("state records inputs %q, want A", st.Inputs)
	}
	full := n.plan(unchangedSpec, withInputs("A"))
	fast, ok := n.fromState("A")
	if !ok {
		t.Fatal("NewPlanFromState refused the inputs of the last apply")
	}
	if full.HasChanges() || len(full.Actions) > 0 {
		t.Fatalf("re-apply plans changes: %s %v", full.Summary(), full.Actions)
	}
	ignore := cmpopts.IgnoreUnexported(apply.FileChange{})
	if diff := cmp.Diff(full.Files, fast.Files, ignore); diff != "" {
		t.Errorf("files (-NewPlan +NewPlanFromState):\n%s", diff)
	}
	if diff := cmp.Diff(full.JSON(), fast.JSON(), ignore); diff != "" {
		t.Errorf("JSON (-NewPlan +NewPlanFromState):\n%s", diff)
	}
	if diff := cmp.Diff(full.Units, fast.Units); diff != "" {
		t.Errorf("units (-NewPlan +NewPlanFromState):\n%s", diff)
	}
	var ft, st bytes.Buffer
	full.WriteText(&ft)
	fast.WriteText(&st)
	if ft.String() != st.String() {
		t.Errorf("text:\nNewPlan:\n%s\nNewPlanFromState:\n%s", ft.String(), st.String())
	}
	before, err := os.ReadFile(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		t.Fatal(err)
	}
	n.sd.Reset()
	resFull, err := apply.Execute(context.Background(), full, n.sd, nil)
	if err != nil {
		t.Fatal(err)
	}
	resFast, err := apply.Execute(context.Background(), fast, n.sd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(resFull, resFast); diff != "" {
		t.Errorf("executed (-NewPlan +NewPlanFromState):\n%s", diff)
	}
	if c := resFast.Counts; c.Writes+c.Removes+c.StateSaves != 0 || c.Unchanged == 0 {
		t.Errorf("counts %+v; want only unchanged files", c)
	}
	if calls := n.sd.Log(); len(calls) > 0 {
		t.Errorf("systemd calls: %v", calls)
	}
	if after, _ := os.ReadFile(apply.StatePath(n.opts.StateDirPath())); !bytes.Equal(before, after) {
		t.Errorf("the state changed:\n%s\n->\n%s", before, after)
	}
}

// TestPlanFromStateRefuses: whenever the state or the disk may not be what
// the inputs make, NewPlanFromState says so, and NewPlan is left to find
// out what differs.
func TestPlanFromStateRefuses(t *testing.T) {
	applied := func(t *testing.T, mods ...func(*apply.Options)) *node {
		n := newNode(t)
		n.t = t
		n.mustApply(unchangedSpec, append([]func(*apply.Options){withInputs("A")}, mods...)...)
		return n
	}
	cases := []struct {
		name  string
		setup func(t *testing.T) *node
		fp    string
	}{
		{"no inputs given", func(t *testing.T) *node { return applied(t) }, ""},
		{"other inputs", func(t *testing.T) *node { return applied(t) }, "B"},
		{"last apply without inputs", func(t *testing.T) *node {
			n := newNode(t)
			n.mustApply(unchangedSpec)
			return n
		}, "A"},
		{"file edited", func(t *testing.T) *node {
			n := applied(t)
			os.WriteFile(n.unitPath("keep.service"), []byte("[Service]\nExecStart=/bin/edited\n"), 0o644)
			return n
		}, "A"},
		{"drop-in removed", func(t *testing.T) *node {
			n := applied(t)
			os.Remove(n.unitPath("change.service.d/20-b.conf"))
			return n
		}, "A"},
		{"file replaced by a link to the same bytes", func(t *testing.T) *node {
			n := applied(t)
			data, _ := os.ReadFile(n.unitPath("keep.service"))
			os.WriteFile(n.unitPath("../keep.copy"), data, 0o644)
			os.Remove(n.unitPath("keep.service"))
			os.Symlink("../keep.copy", n.unitPath("keep.service"))
			return n
		}, "A"},
		{"drop-in directory replaced by a link", func(t *testing.T) *node {
			n := applied(t)
			os.Rename(n.unitPath("docker.service.d"), n.unitPath("../docker.d"))
			os.Symlink("../docker.d", n.unitPath("docker.service.d"))
			return n
		}, "A"},
		{"a file in the place of a mask", func(t *testing.T) *node {
			n := applied(t)
			os.WriteFile(n.unitPath("masked.service"), []byte("[Service]\nExecStart=/bin/true\n"), 0o644)
			return n
		}, "A"},
		{"a start failed", func(t *testing.T) *node {
			n := newNode(t)
			n.sd.FailOn("start", "added.service", errors.New("job failed"))
			if _, _, err := n.apply(unchangedSpec, withInputs("A")); err == nil {
				t.Fatal("no error for a failed start")
			}
			return n
		}, "A"},
		{"an earlier spec's units kept (--no-prune)", func(t *testing.T) *node {
			n := newNode(t)
			n.mustApply(crashBefore)
			n.mustApply(unchangedSpec, withInputs("A"), noPrune)
			return n
		}, "A"},
		{"a unit removed since", func(t *testing.T) *node {
			n := applied(t)
			p, err := apply.NewRemovePlan(context.Background(), []string{"keep"}, n.state(), n.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
				t.Fatal(err)
			}
			return n
		}, "A"},
		{"an apply of other inputs interrupted", func(t *testing.T) *node {
			n := applied(t)
			// The first operation is the state's intent, the second a
			// unit file.
			p := n.plan(crashBefore, withInputs("C"))
			if _, err := apply.ExecuteWith(context.Background(), p, n.sd, nil, &crashFiles{n: 3}); err == nil {
				t.Fatal("no crash")
			}
			return n
		}, "A"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.setup(t)
			if _, ok := n.fromState(c.fp); ok {
				t.Errorf("NewPlanFromState stood in for NewPlan; the state: %+v", n.state())
			}
		})
	}
	// And the node of the first case is fine with its own inputs.
	if _, ok := applied(t).fromState("A"); !ok {
		t.Error("refused the inputs of the last apply")
	}
}

// TestRecordedInputs reads the inputs from the head of the state file, and
// "" for any state without them.
func TestRecordedInputs(t *testing.T) {
	n := newNode(t)
	path := apply.StatePath(n.opts.StateDirPath())
	if got := apply.RecordedInputs(path); got != "" {
		t.Errorf("no state file: %q", got)
	}
	n.mustApply(unchangedSpec)
	if got := apply.RecordedInputs(path); got != "" {
		t.Errorf("state without inputs: %q", got)
	}
	n.mustApply(unchangedSpec, withInputs("sha256:abc"))
	if got := apply.RecordedInputs(path); got != "sha256:abc" {
		t.Errorf("got %q, want sha256:abc", got)
	}
	for _, bad := range []string{"", "[]", `{"version":1,"inputs":7}`, `{"version":`} {
		os.WriteFile(path, []byte(bad), 0o600)
		if got := apply.RecordedInputs(path); got != "" {
			t.Errorf("state %q: %q", bad, got)
		}
	}
}
