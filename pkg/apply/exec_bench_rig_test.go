package apply_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/inputs"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

// Benchmarks of apply against a real systemd (make bench), beside the way
// kops hooks and cloud-init runcmd install units: one file, one
// daemon-reload and one systemctl enable --now per unit.

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
	br.units = rigRender(b, br.full)
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
		us = rigRender(n.t, specYAML)
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

// batchRounds is how many times vs-systemctl-1000 does the job each way.
const batchRounds = 5

// byHand is one install of the benchmark's units by hand, as one batch:
// the step times, measured inside the rig.
type byHand struct {
	write, reload, enable, start, total time.Duration
}

// pidCPU is the CPU time (user and system) that process pid of the host
// has used so far, from /proc/PID/stat in clock ticks of 10 ms (USER_HZ
// is 100 on every Linux that runs systemd).
func pidCPU(b *testing.B, pid int) time.Duration {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// After "pid (comm) ": state is field 3, utime and stime 14 and 15.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		b.Fatalf("%s: too few fields: %s", fmt.Sprintf("/proc/%d/stat", pid), s)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// handScript installs the units copied to /tmp/hand as a person would in
// one batch: copy the files, one daemon-reload, one systemctl enable of
// all (--no-reload: the one reload is done; without it systemctl enable
// reloads again), one systemctl start of all. It prints the clock
// (CLOCK_REALTIME, ns) before and after each step.
const handScript = `cd /tmp/hand
units=$(echo *.service)
date +%s%N
cp $units /etc/systemd/system/
date +%s%N
systemctl daemon-reload
date +%s%N
systemctl enable --no-reload $units >/dev/null 2>&1
date +%s%N
systemctl start $units
date +%s%N
`

// runByHand copies the units into the rig's /tmp/hand (not timed) and
// runs handScript.
func runByHand(ctx context.Context, b *testing.B, r *systemdtest.Rig, units map[string][]byte) byHand {
	b.Helper()
	dir := filepath.Join(r.Root, "tmp/hand")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	for name, data := range units {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	out, err := r.Run(ctx, "sh", "-ec", handScript)
	if err != nil {
		b.Fatalf("by hand: %v\n%s", err, out)
	}
	var ts []time.Time
	for _, f := range strings.Fields(out) {
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("by hand: %q is no time stamp:\n%s", f, out)
		}
		ts = append(ts, time.Unix(0, ns))
	}
	if len(ts) != 5 {
		b.Fatalf("by hand: %d time stamps, want 5:\n%s", len(ts), out)
	}
	return byHand{write: ts[1].Sub(ts[0]), reload: ts[2].Sub(ts[1]), enable: ts[3].Sub(ts[2]),
		start: ts[4].Sub(ts[3]), total: ts[4].Sub(ts[0])}
}

// cliRun is one hostprov apply in a rig, timed from its own action log
// (stderr), each line when it arrives: the phases end at the last line of
// their kind.
type cliRun struct {
	// total is the whole process, nsenter's start included, as the
	// hand script's is not: it is the slower side by at most that.
	total time.Duration
	// toWrote is from the start until the last file was written (render,
	// plan, state, write); then come enable (until the last enabled
	// line), reload, and start, from the reload until the last start
	// finished: apply enables before it reloads.
	toWrote, enable, reload, start time.Duration
	counts                         map[string]int
	// cpu is the CPU time of the process (nsenter's and hostprov's).
	cpu time.Duration
}

// runCLI runs hostprov apply of spec in the rig (its binary at
// /opt/hostprov) and times its phases through its log lines.
func runCLI(ctx context.Context, b *testing.B, r *systemdtest.Rig, spec string) cliRun {
	b.Helper()
	if err := os.WriteFile(filepath.Join(r.Root, "root/bench.yaml"), []byte(spec), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := r.Command(ctx, "/opt/hostprov", "apply", "-f", "/root/bench.yaml")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	last := map[string]time.Time{}
	counts := map[string]int{}
	var lines []string
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		now := time.Now()
		line := sc.Text()
		lines = append(lines, line)
		action, _, _ := strings.Cut(strings.TrimPrefix(line, "hostprov: "), " ")
		last[action] = now
		counts[action]++
	}
	err = cmd.Wait()
	total := time.Since(t0)
	if err != nil {
		b.Fatalf("hostprov apply: %v\n%s", err, strings.Join(lines[max(0, len(lines)-20):], "\n"))
	}
	for _, a := range []string{"wrote", "reloaded", "enabled", "started"} {
		if last[a].IsZero() {
			b.Fatalf("hostprov apply logged no %q line:\n%s", a, strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
	}
	if !(last["wrote"].Before(last["enabled"]) && last["enabled"].Before(last["reloaded"]) && last["reloaded"].Before(last["started"])) {
		b.Fatalf("hostprov apply: the phases are not in the order wrote, enabled, reloaded, started:\n%s", strings.Join(lines, "\n"))
	}
	return cliRun{total: total, toWrote: last["wrote"].Sub(t0), enable: last["enabled"].Sub(last["wrote"]),
		reload: last["reloaded"].Sub(last["enabled"]), start: last["started"].Sub(last["reloaded"]), counts: counts,
		cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}

// benchVsSystemctl is BenchmarkApplyRig's vs-systemctl-1000: the job done
// by hand (handScript) and by hostprov apply, batchRounds times each,
// alternately (which goes first alternates too), each time in a rig booted
// for it, so that neither finds the other's units loaded. It reports the
// medians and ranges of each side's steps, and two ratios of the medians:
// hostprov's start phase to systemctl start's, and hostprov's whole apply
// to the whole batch by hand.
func benchVsSystemctl(ctx context.Context, b *testing.B, bin string) {
	spec := benchSpec(benchUnits, -1, "")
	us := rigRender(b, spec)
	units := map[string][]byte{}
	for _, u := range us {
		units[u.Name] = u.Contents
	}
	var hands []byHand
	var clis []cliRun
	// The CPU time of each rig's systemd while the job was done: the
	// start phase waits for systemd's one thread.
	var sdHand, sdCLI []time.Duration
	for range b.N {
		for round := range batchRounds {
			for side := range 2 {
				r := systemdtest.Start(b)
				// No connection of this process stays open: systemd
				// sends every signal to every connection on its
				// private socket (see BenchmarkApplyRig).
				r.Conn.Close()
				cpu0 := pidCPU(b, r.PID)
				if (round+side)%2 == 0 {
					hands = append(hands, runByHand(ctx, b, r, units))
					sdHand = append(sdHand, pidCPU(b, r.PID)-cpu0)
				} else {
					if err := r.Install(bin, "/opt/hostprov"); err != nil {
						b.Fatal(err)
					}
					c := runCLI(ctx, b, r, spec)
					if c.counts["wrote"] != benchUnits || c.counts["reloaded"] != 1 || c.counts["started"] != benchUnits {
						b.Fatalf("hostprov apply: %v; want %d writes and starts, 1 reload", c.counts, benchUnits)
					}
					clis = append(clis, c)
					sdCLI = append(sdCLI, pidCPU(b, r.PID)-cpu0)
				}
				// A rig powers off within its cleanup's deadline
				// only when 1,000 units need not be stopped.
				b.StopTimer()
				if out, err := r.Run(ctx, "systemctl", "stop", "bench-*.service"); err != nil {
					b.Fatalf("stopping the units: %v\n%s", err, out)
				}
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	pick := func(n int, f func(int) time.Duration) []time.Duration {
		ds := make([]time.Duration, n)
		for i := range ds {
			ds[i] = f(i)
		}
		return ds
	}
	report := func(name string, ds []time.Duration) time.Duration {
		m := median(ds)
		b.ReportMetric(m.Seconds(), "s-"+name)
		b.ReportMetric(slices.Min(ds).Seconds(), "s-"+name+"-min")
		b.ReportMetric(slices.Max(ds).Seconds(), "s-"+name+"-max")
		return m
	}
	hand := report("hand", pick(len(hands), func(i int) time.Duration { return hands[i].total }))
	sysStart := report("systemctl-start", pick(len(hands), func(i int) time.Duration { return hands[i].start }))
	cli := report("apply", pick(len(clis), func(i int) time.Duration { return clis[i].total }))
	cliStart := report("apply-start", pick(len(clis), func(i int) time.Duration { return clis[i].start }))
	report("apply-cpu", pick(len(clis), func(i int) time.Duration { return clis[i].cpu }))
	report("systemd-cpu-hand", sdHand)
	report("systemd-cpu-apply", sdCLI)
	b.ReportMetric(float64(cliStart)/float64(sysStart), "start/systemctl-start")
	b.ReportMetric(float64(cli)/float64(hand), "apply/hand")
	var log strings.Builder
	ms := func(d time.Duration) string { return fmt.Sprintf("%6d", d.Milliseconds()) }
	log.WriteString("ms by hand:    write reload enable  start  total        systemd-cpu\n")
	for i, h := range hands {
		fmt.Fprintf(&log, "              %s %s %s %s %s        %s\n", ms(h.write), ms(h.reload), ms(h.enable), ms(h.start), ms(h.total), ms(sdHand[i]))
	}
	log.WriteString("ms hostprov: to-wrote enable reload  start  total    cpu systemd-cpu\n")
	for i, c := range clis {
		fmt.Fprintf(&log, "              %s %s %s %s %s %s %s\n", ms(c.toWrote), ms(c.enable), ms(c.reload), ms(c.start), ms(c.total), ms(c.cpu), ms(sdCLI[i]))
	}
	b.Log("\n" + log.String())
}
