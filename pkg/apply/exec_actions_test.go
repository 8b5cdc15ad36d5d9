package apply_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

// TestMaskUnitNotRunning masks a unit of the image that is not running (or
// not there): no stop, which systemd would refuse for an unknown unit.
func TestMaskUnitNotRunning(t *testing.T) {
	n := newNode(t)
	res, calls := n.mustApply("- name: update-engine.service\n  mask: true\n")
	checkCalls(t, calls, "mask update-engine.service", "reload")
	if res.Counts.Skipped != 1 || res.Counts.Stops != 0 {
		t.Errorf("counts %+v", res.Counts)
	}
	_, calls = n.mustApply("")
	checkCalls(t, calls, "unmask update-engine.service", "reload")
}

// queueRecorder wraps the fake to record when a job is queued and when
// Execute waits for it.
type queueRecorder struct {
	*applytest.Fake
	mu     sync.Mutex
	events []string
}

func (q *queueRecorder) Queue(ctx context.Context, kind apply.ActionKind, name string) (func() error, error) {
	wait, err := q.Fake.Queue(ctx, kind, name)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.events = append(q.events, "queue "+name)
	return func() error {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.events = append(q.events, "wait "+name)
		return wait()
	}, err
}

// sequential hides the fake's Queue: a Systemd that can only wait.
type sequential struct{ apply.Systemd }

// TestStartsQueuedTogether: the starts of an apply are queued in plan order
// before the first is waited for (so that systemd runs them in parallel,
// in the order of their units' After=), at most 64 at a time, and logged in
// plan order; a Systemd that cannot queue starts one at a time.
func TestStartsQueuedTogether(t *testing.T) {
	var b strings.Builder
	const hooks = 70
	for i := range hooks {
		fmt.Fprintf(&b, "- name: h%02d\n  type: oneshot\n  exec: [/bin/true]\n", i)
	}
	n := newNode(t)
	q := &queueRecorder{Fake: n.sd}
	res, err := apply.Execute(context.Background(), n.plan(b.String()), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 64 {
		want = append(want, fmt.Sprintf("queue h%02d.service", i))
	}
	for i := 64; i < hooks; i++ {
		want = append(want, fmt.Sprintf("wait h%02d.service", i-64), fmt.Sprintf("queue h%02d.service", i))
	}
	for i := hooks - 64; i < hooks; i++ {
		want = append(want, fmt.Sprintf("wait h%02d.service", i))
	}
	if diff := cmp.Diff(want, q.events); diff != "" {
		t.Errorf("queued and waited (-want +got):\n%s", diff)
	}
	var started []string
	for _, ev := range res.Events {
		if ev.Action == apply.EvStarted {
			started = append(started, ev.Unit)
		}
	}
	if len(started) != hooks || !sort.StringsAreSorted(started) {
		t.Errorf("started events not in plan order: %v", started)
	}

	// Without Queue: one at a time, the same outcome.
	n2 := newNode(t)
	res2, err := apply.Execute(context.Background(), n2.plan(b.String()), sequential{n2.sd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.Events, res2.Events); diff != "" {
		t.Errorf("events without Queue differ (-queued +sequential):\n%s", diff)
	}
}

// TestQueuedStartFails: a queued start that fails is logged with the
// unit's result, the others are started, and the unit is marked failed.
func TestQueuedStartFails(t *testing.T) {
	n := newNode(t)
	n.sd.FailOn("start", "prep.service", errors.New("job failed"))
	res, _, err := n.apply(twoHooks + "- name: third\n  type: oneshot\n  exec: [/bin/true]\n")
	if err == nil || !strings.Contains(err.Error(), "prep.service: job failed (failed/failed, result exit-code, exit status 1)") {
		t.Fatalf("error: %v", err)
	}
	if c := res.Counts; c.Starts != 2 || c.Failed != 1 {
		t.Errorf("counts %+v; want 2 starts, 1 failed", c)
	}
	for _, u := range n.state().Units {
		if u.Failed != (u.Name == "prep.service") || u.Incomplete {
			t.Errorf("%s: failed %v, incomplete %v", u.Name, u.Failed, u.Incomplete)
		}
	}
}
