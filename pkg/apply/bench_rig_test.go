package apply_test

// Benchmarks of apply against a real systemd (make bench), beside the way
// kops hooks and cloud-init runcmd install units: one file, one
// daemon-reload and one systemctl enable --now per unit.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

// benchUnits is how many units the benchmarks install.
const benchUnits = 1000

// sameRuns is how many times the unchanged re-apply and the read of the
// files it is compared with run, alternately; their medians are compared,
// as single runs on a shared machine are not.
const sameRuns = 15

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
//   - shell-loop-1000: the kops/cloud-init way for 1,000 units, each
//     written, then daemon-reload, then systemctl enable --now (which
//     reloads again), from an empty unit directory. It takes many minutes:
//     every reload re-reads all units loaded so far;
//   - cli-new-1000: hostprov apply (the binary, run in the rig as the loop
//     is) installing the same 1,000 units: render, plan, write, one
//     reload, enable, start; and its speed-up over the loop;
//   - cli-unchanged-1000: hostprov apply of the same spec again, against
//     cat reading the 1,000 unit files, the median of sameRuns runs of
//     each, run alternately;
//   - vs-systemctl-1000: the same 1,000 units installed by hand in one
//     batch (files, one daemon-reload, one systemctl enable, one
//     systemctl start), against hostprov apply, each in a rig of its own,
//     alternately; see benchVsSystemctl;
//   - new-1000, unchanged-1000, change-one-of-1000: apply in this process,
//     as hostprov apply does without process start and dial, to show where
//     the time goes; through the rig's relay socket, one more hop per
//     D-Bus call than on a node. unchanged-1000 compares the re-apply with
//     reading the files in this process; change-one-of-1000 changes one
//     unit: one write, one reload, one restart.
//
// While the loop and the binary run, no D-Bus connection of this process
// is open.
func BenchmarkApplyRig(b *testing.B) {
	// Ended by a cleanup, not a defer: the cleanups below need it, and
	// run after this function returns. Registered first, it ends last.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
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
	br := &benchRig{ctx: ctx, n: n, full: benchSpec(benchUnits, -1, "")}
	br.units, _ = rigRender(b, br.full)
	// The rig powers off within seconds only when 1,000 units need not be
	// stopped: remove them first, whichever benchmarks ran.
	b.Cleanup(func() {
		br.applySpec(benchSpec(0, -1, ""))
		br.removeShellUnits(b, "shell")
		n.m.Close() // a Manager of shellLoop's, or the first one again
	})
	b.Run("shell-loop-1000", br.benchShellLoop)
	b.Run("cli-new-1000", br.benchCLINew)
	b.Run("cli-unchanged-1000", br.benchCLIUnchanged)
	b.Run("vs-systemctl-1000", func(b *testing.B) {
		benchVsSystemctl(ctx, b, testbin.Hostprov(b))
	})
	b.Run("new-1000", br.benchNew)
	b.Run("unchanged-1000", br.benchUnchanged)
	b.Run("change-one-of-1000", br.benchChangeOne)
}

// benchRig is the rig BenchmarkApplyRig's benchmarks share.
type benchRig struct {
	ctx   context.Context
	n     *rigNode
	full  string         // the spec of benchUnits units
	units []compile.Unit // and its units
	// shellDur is the time of shell-loop-1000, once it ran.
	shellDur time.Duration
	cliReady bool // hostprov is installed in the rig
}

// writeShellUnits installs the very units hostprov renders, under other
// names, as copies in the rig's /tmp for the shell loop.
func (br *benchRig) writeShellUnits(b testing.TB, prefix string, count int) {
	b.Helper()
	dir := filepath.Join(br.n.r.Root, "tmp/shell")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range count {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%04d.service", prefix, i)), br.units[i].Contents, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// timedInRig runs a command in the rig and times it, with the Manager of
// this process closed meanwhile (see BenchmarkApplyRig).
func (br *benchRig) timedInRig(b testing.TB, what string, argv ...string) (string, time.Duration) {
	b.Helper()
	n := br.n
	n.m.Close()
	defer func() {
		var err error
		if n.m, err = rigManager(br.ctx, n.r); err != nil {
			b.Fatal(err)
		}
	}()
	t0 := time.Now()
	out, err := n.r.Run(br.ctx, argv...)
	d := time.Since(t0)
	if err != nil {
		b.Fatalf("%s: %v\n%s", what, err, out)
	}
	return out, d
}

func (br *benchRig) shellLoop(b testing.TB, prefix string, count int) time.Duration {
	b.Helper()
	script := fmt.Sprintf(`for i in $(seq -f %%04g 0 %d); do
	u=%s-$i.service
	cp /tmp/shell/$u /etc/systemd/system/$u
	systemctl daemon-reload
	systemctl enable --now $u
done`, count-1, prefix)
	_, d := br.timedInRig(b, "shell loop", "sh", "-ec", script)
	return d
}

func (br *benchRig) removeShellUnits(b testing.TB, prefix string) {
	b.Helper()
	script := fmt.Sprintf(`systemctl disable --now %[1]s-*.service >/dev/null 2>&1 || true
rm -f /etc/systemd/system/%[1]s-*.service
systemctl daemon-reload`, prefix)
	if out, err := br.n.r.Run(br.ctx, "sh", "-ec", script); err != nil {
		b.Fatalf("removing the loop's units: %v\n%s", err, out)
	}
}

// cli runs hostprov itself, as on a node: the binary inside the rig, on
// systemd's private socket there.
func (br *benchRig) cli(b testing.TB, spec string) (apply.Counts, time.Duration) {
	b.Helper()
	if !br.cliReady {
		if err := br.n.r.Install(testbin.Hostprov(b), "/opt/hostprov"); err != nil {
			b.Fatal(err)
		}
		br.cliReady = true
	}
	if err := os.WriteFile(filepath.Join(br.n.r.Root, "root/bench.yaml"), []byte(spec), 0o644); err != nil {
		b.Fatal(err)
	}
	out, d := br.timedInRig(b, "hostprov apply", "/opt/hostprov", "apply", "-f", "/root/bench.yaml", "-o", "json")
	var res struct{ Counts apply.Counts }
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		b.Fatalf("hostprov apply -o json: %v\n%s", err, out)
	}
	return res.Counts, d
}

func (br *benchRig) applySpec(spec string) time.Duration {
	t0 := time.Now()
	br.n.mustApply(br.ctx, spec)
	return time.Since(t0)
}

func (br *benchRig) benchShellLoop(b *testing.B) {
	br.writeShellUnits(b, "shell", benchUnits)
	var total time.Duration
	for range b.N {
		total += br.shellLoop(b, "shell", benchUnits)
		b.StopTimer()
		br.removeShellUnits(b, "shell")
		b.StartTimer()
	}
	br.shellDur = total / time.Duration(b.N)
}

func (br *benchRig) benchCLINew(b *testing.B) {
	var total time.Duration
	for range b.N {
		b.StopTimer()
		br.cli(b, benchSpec(0, -1, "")) // prune what an earlier round made
		b.StartTimer()
		c, d := br.cli(b, br.full)
		if c.Writes != benchUnits || c.Reloads != 1 || c.Starts != benchUnits {
			b.Fatalf("counts %+v; want %d writes and starts, 1 reload", c, benchUnits)
		}
		total += d
	}
	if br.shellDur > 0 {
		b.ReportMetric(br.shellDur.Seconds(), "s-shell-loop")
		b.ReportMetric(float64(br.shellDur)/float64(total/time.Duration(b.N)), "x-faster-than-loop")
	}
}

func (br *benchRig) benchCLIUnchanged(b *testing.B) {
	var applies, reads []time.Duration
	for range b.N {
		for range sameRuns {
			c, d := br.cli(b, br.full)
			if c.Writes+c.Reloads+c.Starts+c.Restarts+c.StateSaves != 0 || c.Unchanged != benchUnits {
				b.Fatalf("re-apply: counts %+v; want nothing done", c)
			}
			applies = append(applies, d)
			t0 := time.Now()
			if out, err := br.n.r.Run(br.ctx, "sh", "-c", "cat /etc/systemd/system/bench-*.service >/dev/null"); err != nil {
				b.Fatalf("cat: %v\n%s", err, out)
			}
			reads = append(reads, time.Since(t0))
		}
	}
	apply, read := median(applies), median(reads)
	b.ReportMetric(ms(apply), "ms-median-apply")
	b.ReportMetric(ms(read), "ms-median-cat")
	b.ReportMetric(float64(apply)/float64(read), "apply/cat")
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func (br *benchRig) benchNew(b *testing.B) {
	var total time.Duration
	byEvent := map[string]time.Duration{}
	for range b.N {
		b.StopTimer()
		br.applySpec(benchSpec(0, -1, "")) // prune what an earlier round made
		b.StartTimer()
		ph := br.n.timedApply(br.ctx, br.full)
		total += ph.total()
		for _, ev := range []string{apply.EvWrote, apply.EvEnabled, apply.EvReloaded, apply.EvStarted} {
			byEvent[ev] += ph.byEvent[ev]
		}
		if c := ph.res.Counts; c.Writes != benchUnits || c.Reloads != 1 || c.Starts != benchUnits {
			b.Fatalf("counts %+v; want %d writes and starts, 1 reload", c, benchUnits)
		}
	}
	newDur := total / time.Duration(b.N)
	// Where the time goes: writing (atomically, synced together),
	// enabling, the one reload, starting (queued together, each waited
	// for).
	for _, ev := range []string{apply.EvWrote, apply.EvEnabled, apply.EvReloaded, apply.EvStarted} {
		b.ReportMetric(byEvent[ev].Seconds()/float64(b.N), "s-"+ev)
	}
	if br.shellDur > 0 {
		b.ReportMetric(br.shellDur.Seconds(), "s-shell-loop")
		b.ReportMetric(float64(br.shellDur)/float64(newDur), "x-faster-than-loop")
	}
}

func (br *benchRig) benchUnchanged(b *testing.B) {
	var applies, plans, reads []time.Duration
	for range b.N {
		for range sameRuns {
			ph := br.n.timedApply(br.ctx, br.full)
			if c := ph.res.Counts; ph.plan0.HasChanges() || ph.rendered || c.Writes+c.Reloads+c.Starts+c.Restarts+c.StateSaves != 0 {
				b.Fatalf("re-apply: %s, rendered %v, counts %+v; want nothing done", ph.plan0.Summary(), ph.rendered, c)
			}
			applies = append(applies, ph.total())
			plans = append(plans, ph.plan+ph.execute)
			t0 := time.Now()
			for _, u := range br.units {
				if _, err := os.ReadFile(filepath.Join(br.n.r.UnitDir, u.Name)); err != nil {
					b.Fatal(err)
				}
			}
			reads = append(reads, time.Since(t0))
		}
	}
	apply, read := median(applies), median(reads)
	b.ReportMetric(ms(apply), "ms-median-apply")
	b.ReportMetric(ms(median(plans)), "ms-median-plan+execute")
	b.ReportMetric(ms(read), "ms-median-read")
	b.ReportMetric(float64(apply)/float64(read), "apply/read")
}

func (br *benchRig) benchChangeOne(b *testing.B) {
	var render, plan time.Duration
	byEvent := map[string]time.Duration{}
	for i := range b.N {
		ph := br.n.timedApply(br.ctx, benchSpec(benchUnits, benchUnits/2, fmt.Sprint("v", i)))
		if c := ph.res.Counts; c.Writes != 1 || c.Reloads != 1 || c.Restarts != 1 {
			b.Fatalf("counts %+v; want 1 write, 1 reload, 1 restart", c)
		}
		render, plan = render+ph.render, plan+ph.plan
		for ev, d := range ph.byEvent {
			byEvent[ev] += d
		}
	}
	b.StopTimer()
	br.applySpec(br.full)
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(perOp(render), "ms-render")
	b.ReportMetric(perOp(plan), "ms-plan")
	b.ReportMetric(perOp(byEvent[apply.EvUnchanged]+byEvent[apply.EvWrote]), "ms-files")
	b.ReportMetric(perOp(byEvent[apply.EvReloaded]), "ms-reload")
	b.ReportMetric(perOp(byEvent[apply.EvRestarted]), "ms-restart")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// applyPhases is how long each step of one apply took.
type applyPhases struct {
	render, plan, execute time.Duration
	// rendered is false when the plan was made from the state.
	rendered bool
	plan0    *apply.Plan
	res      *apply.Result
	// byEvent is the time spent before each kind of event of the action
	// log (wrote, enabled, reloaded, started, ...), summed.
	byEvent map[string]time.Duration
}

func (p applyPhases) total() time.Duration { return p.render + p.plan + p.execute }

// timedApply applies a spec as hostprov apply does, timing rendering (the
// inputs' fingerprint, and unless the state records it, parse and build the
// units), planning (state, unit directory, diff) and executing.
func (n *rigNode) timedApply(ctx context.Context, specYAML string) applyPhases {
	n.t.Helper()
	var ph applyPhases
	t0 := time.Now()
	opts := n.opts
	opts.Inputs = inputs.Fingerprint(nil, inputs.File{Name: "hostprov.yaml", Data: []byte(specYAML)})
	statePath := apply.StatePath(n.opts.StateDirPath())
	var us []compile.Unit
	if apply.RecordedInputs(statePath) != opts.Inputs {
		us, opts.HookNames = rigRender(n.t, specYAML)
		ph.rendered = true
	}
	t1 := time.Now()
	st, err := apply.LoadState(statePath)
	if err != nil {
		n.t.Fatal(err)
	}
	ok := false
	if !ph.rendered {
		if ph.plan0, ok, err = apply.NewPlanFromState(ctx, st, opts); err != nil {
			n.t.Fatal(err)
		}
	}
	if !ok {
		if !ph.rendered {
			n.t.Fatal("the state records the inputs, but the plan cannot be made from it")
		}
		if ph.plan0, err = apply.NewPlan(ctx, us, st, opts); err != nil {
			n.t.Fatal(err)
		}
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
