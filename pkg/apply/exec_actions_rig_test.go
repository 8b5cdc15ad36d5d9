package apply_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

// resumeSpec is a oneshot hook that appends its version to a run log and
// then works for a few seconds, as an apt-get or a dpkg does.
func resumeSpec(version string) string {
	return `apiVersion: hostprov/v1alpha1
kind: Hooks
metadata:
  name: resume
hooks:
- name: resume-install
  description: installs something, version ` + version + `
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, "echo ` + version + ` >> /var/lib/resume-runs; sleep 4"]
`
}

// resumeRuns counts the runs of version in the hook's run log.
func (n *rigNode) resumeRuns(version string) int {
	n.t.Helper()
	data, err := os.ReadFile(filepath.Join(n.r.Root, "var/lib/resume-runs"))
	if err != nil && !os.IsNotExist(err) {
		n.t.Fatal(err)
	}
	runs := 0
	for line := range strings.Lines(string(data)) {
		if strings.TrimSpace(line) == version {
			runs++
		}
	}
	return runs
}

// killWhen runs /opt/hostprov apply on side's spec in the rig and kills it
// with SIGKILL as soon as when holds; it fails the test if the apply ends
// before.
func (n *rigNode) killWhen(ctx context.Context, side string, when func() bool) {
	n.t.Helper()
	pidFile := filepath.Join(n.r.Root, "run/resume-apply.pid")
	os.Remove(pidFile)
	done := make(chan error, 1)
	go func() {
		_, err := n.r.Run(ctx, "sh", "-c", `echo $$ > /run/resume-apply.pid.tmp && mv /run/resume-apply.pid.tmp /run/resume-apply.pid && exec /opt/hostprov apply -f "$1"`,
			"sh", "/root/"+side+".yaml")
		done <- err
	}()
	for {
		pid, err := os.ReadFile(pidFile)
		if err == nil && when() {
			n.r.Run(ctx, "kill", "-KILL", strings.TrimSpace(string(pid)))
			break
		}
		select {
		case err := <-done:
			n.t.Fatalf("apply %s ended before it was killed: %v", side, err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "signal: killed") {
		n.t.Fatalf("apply %s: %v; want it killed", side, err)
	}
}

// TestRigKilledApplyWaitsForRunningStart kills hostprov apply while the
// ExecStart of a oneshot hook it started runs: the next apply, which
// finds the unit left incomplete, waits for that run instead of restarting
// it (which would stop it half-way, SIGTERM to an apt-get or a dpkg, and
// run it again). The hook runs once, the unit ends active with result
// success, and the next apply succeeds. Both for a hook's first apply and
// for a changed hook, whose apply restarts it.
func TestRigKilledApplyWaitsForRunningStart(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNodeWithHostprov(ctx, t)
	for _, v := range []string{"v1", "v2"} {
		if err := os.WriteFile(filepath.Join(n.r.Root, "root", v+".yaml"), []byte(resumeSpec(v)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"v1", "v2"} {
		n.killWhen(ctx, v, func() bool { return n.resumeRuns(v) > 0 })
		if st := rigStatus(ctx, t, n.m, "resume-install.service"); st.ActiveState != "activating" {
			t.Fatalf("%s: the hook is %s/%s after the kill; want it still activating (the test's sleep too short?)", v, st.ActiveState, st.SubState)
		}
		out, err := n.r.Run(ctx, "/opt/hostprov", "apply", "-f", "/root/"+v+".yaml")
		if err != nil {
			t.Fatalf("%s: the apply after the kill: %v\n%s", v, err, out)
		}
		if runs := n.resumeRuns(v); runs != 1 {
			t.Errorf("%s: the hook ran %d times, want once; the apply after the kill said:\n%s", v, runs, out)
		}
		st := rigStatus(ctx, t, n.m, "resume-install.service")
		if st.ActiveState != "active" || st.Result != "success" {
			t.Errorf("%s: the hook is %s/%s, result %q; want active, success", v, st.ActiveState, st.SubState, st.Result)
		}
		if out, err := n.r.Run(ctx, "/opt/hostprov", "plan", "-f", "/root/"+v+".yaml", "--detailed-exitcode"); err != nil || !strings.HasSuffix(strings.TrimSpace(out), "No changes.") {
			t.Errorf("%s: plan after the apply: %v\n%s", v, err, out)
		}
	}
}

// TestRigStartsInParallelInOrder: the starts of one apply run as at boot.
// Two independent oneshots overlap (each has started before either ends),
// and one ordered After= another, earlier in the spec, starts only once that
// one has ended. Each unit appends its start and end to one file; the test
// checks their order, not how long anything took.
func TestRigStartsInParallelInOrder(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	hook := func(name, after string) string {
		h := fmt.Sprintf(`- name: %[1]s
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, "echo %[1]s-start >> /var/lib/order; sleep 1; echo %[1]s-end >> /var/lib/order"]
`, name)
		if after != "" {
			h += "  after: [" + after + "]\n"
		}
		return h
	}
	spec := "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n" +
		hook("first", "") + hook("par-a", "") + hook("par-b", "") + hook("second", "first.service")
	_, res := n.mustApply(ctx, spec)
	if res.Counts.Starts != 4 {
		t.Fatalf("counts %+v; want 4 starts", res.Counts)
	}
	data, err := os.ReadFile(filepath.Join(n.r.Root, "var/lib/order"))
	if err != nil {
		t.Fatal(err)
	}
	at := map[string]int{}
	for i, l := range strings.Fields(string(data)) {
		at[l] = i
	}
	if len(at) != 8 {
		t.Fatalf("order file:\n%s", data)
	}
	if at["par-a-start"] > at["par-b-end"] || at["par-b-start"] > at["par-a-end"] {
		t.Errorf("par-a and par-b ran one after the other, not in parallel:\n%s", data)
	}
	if at["second-start"] < at["first-end"] {
		t.Errorf("second (After=first.service) started before first ended:\n%s", data)
	}
	// Logged in the spec's order all the same.
	var started []string
	for _, ev := range res.Events {
		if ev.Action == apply.EvStarted {
			started = append(started, ev.Unit)
		}
	}
	if got := strings.Join(started, " "); got != "first.service par-a.service par-b.service second.service" {
		t.Errorf("started events: %s", got)
	}
}
