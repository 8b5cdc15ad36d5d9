package apply_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/systemdtest"
)

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
	us, _ := rigRender(b, spec)
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
