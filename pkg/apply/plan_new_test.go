package apply_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

func TestNoPrune(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	only := "- name: hello\n  exec: [/bin/echo, hello]\n"
	p := n.plan(only, noPrune)
	if p.HasChanges() {
		t.Errorf("--no-prune plan: %s", p.Summary())
	}
	_, calls := n.mustApply(only, noPrune)
	checkCalls(t, calls)
	if !n.exists("prep.service") || n.state().Unit("prep.service") == nil {
		t.Error("--no-prune removed prep.service")
	}
}

func TestRemovePlan(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	p, err := apply.NewRemovePlan(context.Background(), []string{"prep"}, n.state(), n.opts)
	if err != nil {
		t.Fatal(err)
	}
	n.sd.Reset()
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
		t.Fatal(err)
	}
	checkCalls(t, n.sd.Log(), "stop prep.service", "disable prep.service", "reload")
	if n.exists("prep.service") || !n.exists("hello.service") {
		t.Error("remove prep removed the wrong files")
	}
	if _, err := apply.NewRemovePlan(context.Background(), []string{"nope"}, n.state(), n.opts); err == nil || !strings.Contains(err.Error(), "hello.service") {
		t.Errorf("removing an unknown hook: %v", err)
	}
}

func TestStateForAnotherUnitDir(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	us := spec(t, twoHooks)
	opts := n.opts
	opts.UnitDir = "/run/systemd/system"
	if _, err := apply.NewPlan(context.Background(), us, n.state(), opts); err == nil || !strings.Contains(err.Error(), "--unit-dir /etc/systemd/system") {
		t.Errorf("plan with another unit dir: %v", err)
	}
}

// TestNamesThatLeaveTheUnitDir checks the plan's own refusal of names that
// render refuses already: defence in depth.
func TestNamesThatLeaveTheUnitDir(t *testing.T) {
	n := newNode(t)
	for _, u := range []compile.Unit{
		{Name: "../x.service", Contents: []byte("[Service]\n")},
		{Name: "a/b.service", Contents: []byte("[Service]\n")},
		{Name: "/etc/passwd", Contents: []byte("[Service]\n")},
		{Name: "a\x00.service", Contents: []byte("[Service]\n")},
		{Name: "a.service", Dropins: []compile.Dropin{{Name: "/etc/x.conf", Contents: []byte("[Service]\n")}}},
		{Name: "a.service", Dropins: []compile.Dropin{{Name: "../../x.conf", Contents: []byte("[Service]\n")}}},
		{Name: "a.service", Dropins: []compile.Dropin{{Name: "..", Contents: []byte("[Service]\n")}}},
	} {
		if _, err := apply.NewPlan(context.Background(), []compile.Unit{u}, n.state(), n.opts); err == nil {
			t.Errorf("NewPlan accepted %q with drop-ins %v", u.Name, u.Dropins)
		}
	}
}
