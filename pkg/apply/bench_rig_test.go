package apply_test

// Benchmarks of apply against a real systemd (make bench), beside the way
// kops hooks and cloud-init runcmd install units: one file, one
// daemon-reload and one systemctl enable --now per unit.

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

// benchUnits is how many units the benchmarks install.
const benchUnits = 1000

// shellSample is how many units the shell loop installs from an empty unit
// directory. A loop over all 1,000 (two daemon-reloads a unit, as systemctl
// enable reloads too, each slower than the last as units accumulate) takes
// many minutes; 100 from empty, scaled by 10, is a lower bound of its time,
// and the rate on top of 1,000 an upper one.
const shellSample = 100

// lateSample is how many the loop installs on top of the 1,000: at about
// two seconds a unit there, enough to know the rate.
const lateSample = 25

// benchSpec is a spec of n oneshot hooks bench-0000, ...; the hook numbered
// changed (if any) runs another command, version.
func benchSpec(n, changed int, version string) string {
	var b strings.Builder
	b.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n")
	if n == 0 {
		b.WriteString("  []\n")
	}
	for i := range n {
		cmd := "/bin/true"
		if i == changed {
			cmd = "/bin/echo " + version
		}
		fmt.Fprintf(&b, "- name: bench-%04d\n  description: benchmark unit %d\n  type: oneshot\n  remainAfterExit: true\n  exec: [%s]\n", i, i, strings.ReplaceAll(cmd, " ", ", "))
	}
	return b.String()
}

// BenchmarkApplyRig measures, in a rig:
//
//   - shell-loop-100: the kops/cloud-init way for 100 units, each written,
//     then daemon-reload, then systemctl enable --now, from an empty unit
//     directory; reported also as an estimate for 1,000 (×10, a lower
//     bound: every reload is slower than the one before);
//   - new-1000: hostprov applying 1,000 new units (render, plan, write,
//     one reload, enable, start each), and its speed-up over the loop;
//   - unchanged-1000: the same spec again: no writes, no reload;
//   - change-one-of-1000: one unit changed: one write, one reload, one
//     restart;
//   - read-1000-files: reading the 1,000 unit files, the floor an
//     unchanged re-apply is compared with;
//   - shell-loop-25-over-1000: the loop for 25 more units with the 1,000
//     in place, the upper end of the loop's cost per unit, and from both
//     ends an estimate of the whole loop and of hostprov's speed-up.
//
// apply runs in this process, as hostprov apply would without process
// start and dial, through the rig's relay socket (one more hop per D-Bus
// call than on a node); the loop runs inside the rig, with no connection
// of this process open.
func BenchmarkApplyRig(b *testing.B) {
	// Ended by a cleanup, not a defer: the cleanups below need it, and
	// run after this function returns. Registered first, it ends last.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	b.Cleanup(cancel)
	n := newRigNode(ctx, b)
	// No D-Bus connection of this process may be open while the loop runs,
	// nor while hostprov does beyond its own: systemd sends every signal
	// (a unit's properties changed, ...) to every connection on its
	// private socket, and with 1,000 units each reload makes thousands. In
	// the rig two idle connections made the loop over 1,000 units 2.5
	// times slower. The rig's own goes now; the rig closes it again, in
	// vain, at the end.
	n.r.Conn.Close()
	full := benchSpec(benchUnits, -1, "")
	units, _ := rigRender(b, full)

	// The loop installs the very units hostprov renders, under other
	// names, from copies in the rig's /tmp.
	writeShellUnits := func(prefix string, count int) {
		b.Helper()
		dir := filepath.Join(n.r.Root, "tmp/shell")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range count {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%04d.service", prefix, i)), units[i].Contents, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	shellLoop := func(prefix string, count int) time.Duration {
		b.Helper()
		script := fmt.Sprintf(`for i in $(seq -f %%04g 0 %d); do
	u=%s-$i.service
	cp /tmp/shell/$u /etc/systemd/system/$u
	systemctl daemon-reload
	systemctl enable --now $u
done`, count-1, prefix)
		n.m.Close()
		defer func() {
			var err error
			if n.m, err = rigManager(ctx, n.r); err != nil {
				b.Fatal(err)
			}
		}()
		t0 := time.Now()
		if out, err := n.r.Run(ctx, "sh", "-ec", script); err != nil {
			b.Fatalf("shell loop: %v\n%s", err, out)
		}
		return time.Since(t0)
	}
	removeShellUnits := func(prefix string) {
		b.Helper()
		script := fmt.Sprintf(`systemctl disable --now %[1]s-*.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/%[1]s-*.service
systemctl daemon-reload`, prefix)
		if out, err := n.r.Run(ctx, "sh", "-ec", script); err != nil {
			b.Fatalf("removing the loop's units: %v\n%s", err, out)
		}
	}
	applySpec := func(spec string) time.Duration {
		b.Helper()
		t0 := time.Now()
		n.mustApply(ctx, spec)
		return time.Since(t0)
	}
	// The rig powers off within seconds only when 1,000 units need not be
	// stopped: remove them first, whichever benchmarks ran.
	b.Cleanup(func() {
		applySpec(benchSpec(0, -1, ""))
		removeShellUnits("shell")
		removeShellUnits("late")
		n.m.Close() // a Manager of shellLoop's, or the first one again
	})

	var shellPerUnit time.Duration
	b.Run("shell-loop-100", func(b *testing.B) {
		writeShellUnits("shell", shellSample)
		var total time.Duration
		for range b.N {
			total += shellLoop("shell", shellSample)
			b.StopTimer()
			removeShellUnits("shell")
			b.StartTimer()
		}
		shellPerUnit = total / time.Duration(b.N*shellSample)
		b.ReportMetric((shellPerUnit * benchUnits).Seconds(), "s/1000-est")
	})

	var newDur time.Duration
	b.Run("new-1000", func(b *testing.B) {
		var total time.Duration
		byEvent := map[string]time.Duration{}
		for range b.N {
			b.StopTimer()
			applySpec(benchSpec(0, -1, "")) // prune what an earlier round made
			b.StartTimer()
			ph := n.timedApply(ctx, full)
			total += ph.total()
			for _, ev := range []string{apply.EvWrote, apply.EvEnabled, apply.EvReloaded, apply.EvStarted} {
				byEvent[ev] += ph.byEvent[ev]
			}
			if c := ph.res.Counts; c.Writes != benchUnits || c.Reloads != 1 || c.Starts != benchUnits {
				b.Fatalf("counts %+v; want %d writes and starts, 1 reload", c, benchUnits)
			}
		}
		newDur = total / time.Duration(b.N)
		// Where the time goes: writing (atomically, each file synced),
		// enabling, the one reload, starting (a job each, waited for).
		for _, ev := range []string{apply.EvWrote, apply.EvEnabled, apply.EvReloaded, apply.EvStarted} {
			b.ReportMetric(byEvent[ev].Seconds()/float64(b.N), "s-"+ev)
		}
		if shellPerUnit > 0 {
			b.ReportMetric(float64(shellPerUnit*benchUnits)/float64(newDur), "x-faster-than-loop")
		}
	})

	var unchanged, unchangedPlanExec time.Duration
	b.Run("unchanged-1000", func(b *testing.B) {
		var total, render, planExec time.Duration
		for range b.N {
			ph := n.timedApply(ctx, full)
			total += ph.total()
			render += ph.render
			planExec += ph.plan + ph.execute
			if c := ph.res.Counts; ph.plan0.HasChanges() || c.Writes+c.Reloads+c.Starts+c.Restarts+c.StateSaves != 0 {
				b.Fatalf("re-apply: %s, counts %+v; want nothing done", ph.plan0.Summary(), c)
			}
		}
		unchanged, unchangedPlanExec = total/time.Duration(b.N), planExec/time.Duration(b.N)
		b.ReportMetric(float64(render.Milliseconds())/float64(b.N), "ms-render")
		b.ReportMetric(float64(unchangedPlanExec.Microseconds())/1000, "ms-plan+execute")
	})

	b.Run("change-one-of-1000", func(b *testing.B) {
		var render, plan time.Duration
		byEvent := map[string]time.Duration{}
		for i := range b.N {
			ph := n.timedApply(ctx, benchSpec(benchUnits, benchUnits/2, fmt.Sprint("v", i)))
			if c := ph.res.Counts; c.Writes != 1 || c.Reloads != 1 || c.Restarts != 1 {
				b.Fatalf("counts %+v; want 1 write, 1 reload, 1 restart", c)
			}
			render, plan = render+ph.render, plan+ph.plan
			for ev, d := range ph.byEvent {
				byEvent[ev] += d
			}
		}
		b.StopTimer()
		applySpec(full)
		perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
		b.ReportMetric(perOp(render), "ms-render")
		b.ReportMetric(perOp(plan), "ms-plan")
		b.ReportMetric(perOp(byEvent[apply.EvUnchanged]+byEvent[apply.EvWrote]), "ms-files")
		b.ReportMetric(perOp(byEvent[apply.EvReloaded]), "ms-reload")
		b.ReportMetric(perOp(byEvent[apply.EvRestarted]), "ms-restart")
	})

	b.Run("read-1000-files", func(b *testing.B) {
		var total time.Duration
		for range b.N {
			t0 := time.Now()
			for _, u := range units {
				if _, err := os.ReadFile(filepath.Join(n.r.UnitDir, u.Name)); err != nil {
					b.Fatal(err)
				}
			}
			total += time.Since(t0)
		}
		read := total / time.Duration(b.N)
		if unchanged > 0 {
			b.ReportMetric(float64(unchanged)/float64(read), "unchanged-apply/read")
			b.ReportMetric(float64(unchangedPlanExec)/float64(read), "unchanged-plan+execute/read")
		}
	})

	b.Run("shell-loop-25-over-1000", func(b *testing.B) {
		writeShellUnits("late", lateSample)
		var total time.Duration
		for range b.N {
			total += shellLoop("late", lateSample)
			b.StopTimer()
			removeShellUnits("late")
			b.StartTimer()
		}
		per := total / time.Duration(b.N*lateSample)
		b.ReportMetric((per * benchUnits).Seconds(), "s/1000-at-this-rate")
		if newDur > 0 && shellPerUnit > 0 {
			// Reload cost grows about linearly with the units loaded, so
			// a loop over 1,000 costs about the mean of both ends.
			est := (shellPerUnit + per) / 2 * benchUnits
			b.ReportMetric(est.Seconds(), "s/1000-loop-est")
			b.ReportMetric(float64(est)/float64(newDur), "x-faster-than-loop-est")
		}
	})
}

// applyPhases is how long each step of one apply took.
type applyPhases struct {
	render, plan, execute time.Duration
	plan0                 *apply.Plan
	res                   *apply.Result
	// byEvent is the time spent before each kind of event of the action
	// log (wrote, enabled, reloaded, started, ...), summed.
	byEvent map[string]time.Duration
}

func (p applyPhases) total() time.Duration { return p.render + p.plan + p.execute }

// timedApply applies a spec as apply does, timing rendering (parse and
// build the units), planning (state, unit directory, diff) and executing.
func (n *rigNode) timedApply(ctx context.Context, specYAML string) applyPhases {
	n.t.Helper()
	var ph applyPhases
	t0 := time.Now()
	us, names := rigRender(n.t, specYAML)
	t1 := time.Now()
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		n.t.Fatal(err)
	}
	opts := n.opts
	opts.HookNames = names
	if ph.plan0, err = apply.NewPlan(ctx, us, st, opts); err != nil {
		n.t.Fatal(err)
	}
	t2 := time.Now()
	ph.byEvent = map[string]time.Duration{}
	last := t2
	log := apply.LoggerFunc(func(e apply.Event) {
		now := time.Now()
		ph.byEvent[e.Action] += now.Sub(last)
		last = now
	})
	if ph.res, err = apply.Execute(ctx, ph.plan0, n.m, log); err != nil {
		n.t.Fatalf("apply: %v\nevents:\n%s", err, eventsText(ph.res))
	}
	ph.render, ph.plan, ph.execute = t1.Sub(t0), t2.Sub(t1), time.Since(t2)
	return ph
}
