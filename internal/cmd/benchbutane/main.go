// Command benchbutane (make bench-butane) compares, process for process,
// what `hostprov render` (to Ignition, cloud-init and Butane) and
// `hostprov validate` cost with what Butane's library costs to translate
// the same units into an Ignition config. For each hook count it writes
// a spec of that many hooks and the equivalent Butane config
// (butane.Render of the built units: systemd.units with the same
// contents), then runs itself once per tool and run, the tools taking
// turns, so that each measurement is one whole process: CPU time
// (user+system) from the child's rusage, and its peak RSS (VmHWM, so
// Linux only) and the bytes and objects the Go runtime allocated, which
// the child reports. It prints the median and the range of each, and the
// ratios of the medians beside the goals they are held to.
//
// It asserts nothing: the figures are for people to read, and on a
// shared machine they are noisy, hence several runs and the spread.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/internal/cli"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/butane"
)

// tools are what a child process can run on the file it is given.
var tools = map[string]func(file string) error{
	"render": func(file string) error {
		return hostprov("render", "-f", file, "--format", "ignition")
	},
	"render-butane": func(file string) error {
		return hostprov("render", "-f", file, "--format", "butane")
	},
	"render-cloudinit": func(file string) error {
		return hostprov("render", "-f", file, "--format", "cloud-init")
	},
	"validate": func(file string) error {
		return hostprov("validate", "-f", file)
	},
	"butane": func(file string) error {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		_, rpt, err := butaneconfig.TranslateBytes(data, common.TranslateBytesOptions{})
		if err != nil {
			return err
		}
		if len(rpt.Entries) > 0 {
			return fmt.Errorf("butane: %s", rpt)
		}
		return nil
	},
}

func hostprov(args ...string) error {
	var stderr strings.Builder
	if code := cli.Run(args, strings.NewReader(""), io.Discard, &stderr); code != cli.ExitOK {
		return fmt.Errorf("hostprov %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return nil
}

// allocs is what a child reports on its standard output.
type allocs struct {
	Bytes   uint64 `json:"bytes"`
	Objects uint64 `json:"objects"`
	// PeakRSS is the process's VmHWM, in bytes. The rusage of the
	// child is no good for it: Linux carries the peak RSS of the process
	// across exec, so it would include the parent's, which built the
	// inputs.
	PeakRSS int64 `json:"peakRSS"`
}

// sample is one child's measurement.
type sample struct {
	cpu    time.Duration
	rss    int64 // bytes
	allocs allocs
}

func main() {
	child := flag.String("child", "", "run one tool (render, render-cloudinit, render-butane, validate, butane) on -in and report allocations (internal)")
	in := flag.String("in", "", "the input file of -child")
	counts := flag.String("n", "1000,10000", "hook counts, comma-separated")
	runs := flag.Int("runs", 5, "processes per tool and hook count")
	keep := flag.String("keep", "", "write the inputs to this directory and keep them (default: a temporary one)")
	cpuprofile := flag.String("cpuprofile", "", "with -child: write a CPU profile of the tool to this file")
	flag.Parse()
	if *child != "" {
		if err := runChild(*child, *in, *cpuprofile); err != nil {
			fmt.Fprintln(os.Stderr, "benchbutane:", err)
			os.Exit(1)
		}
		return
	}
	if err := compare(*counts, *runs, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "benchbutane:", err)
		os.Exit(1)
	}
}

func runChild(tool, file, cpuprofile string) error {
	run, ok := tools[tool]
	if !ok {
		return fmt.Errorf("unknown tool %q", tool)
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(file); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := peakRSS()
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(allocs{Bytes: ms.TotalAlloc, Objects: ms.Mallocs, PeakRSS: rss})
}

// peakRSS reads the process's peak resident set size from
// /proc/self/status.
func peakRSS() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

func compare(counts string, runs int, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "benchbutane"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	meds := map[int]map[string]sample{}
	fmt.Printf("%-8s %-16s %22s %22s %22s %22s\n", "hooks", "tool", "cpu ms (median, range)", "peak RSS MB", "alloc MB", "allocs (k)")
	// A spec of one hook first: what a process of either tool costs
	// before there is any work to speak of (starting, package
	// initialisation, the binary's pages). Every figure below includes it,
	// so it is printed, and each goal's ratio is followed by the ratio of
	// what lies above it.
	floor, err := measureAll(self, dir, 1, runs)
	if err != nil {
		return err
	}
	for _, f := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-n: %q is not a hook count", f)
		}
		med, err := measureAll(self, dir, n, runs)
		if err != nil {
			return err
		}
		meds[n] = med
		b := med["butane"]
		for _, tool := range []string{"render", "validate"} {
			h := med[tool]
			fmt.Printf("%-8d %-16s cpu %.2f× Butane (goal ≤ %.2f), peak RSS %.2f× (goal ≤ %.2f), allocated %.2f×; above the one-hook floor: cpu %.2f×, peak RSS %.2f×\n", n, tool,
				ratio(h.cpu, b.cpu), goalCPU, ratio(h.rss, b.rss), goalRSS, ratio(h.allocs.Bytes, b.allocs.Bytes),
				ratio(h.cpu-floor[tool].cpu, b.cpu-floor["butane"].cpu), ratio(h.rss-floor[tool].rss, b.rss-floor["butane"].rss))
		}
		for _, tool := range []string{"render-cloudinit", "render-butane"} {
			fmt.Printf("%-8d %-16s cpu %.2f× render to Ignition (goal ≤ %.2f)\n", n, tool, ratio(med[tool].cpu, med["render"].cpu), goalOutput)
		}
	}
	// Memory should grow with the spec, not faster: the peak RSS of the
	// largest count over that of the smallest, against their ratio.
	var ns []int
	for n := range meds {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	if len(ns) > 1 {
		lo, hi := ns[0], ns[len(ns)-1]
		for _, tool := range []string{"render", "validate"} {
			fmt.Printf("%s peak RSS at %d hooks / at %d: %.2f× (goal ≤ %d×)\n", tool, hi, lo,
				ratio(meds[hi][tool].rss, meds[lo][tool].rss), hi/lo)
		}
	}
	return nil
}

// measureAll writes the inputs of n hooks to dir and runs every tool on
// them runs times, printing the figures of each; it returns the medians.
func measureAll(self, dir string, n, runs int) (map[string]sample, error) {
	spec := filepath.Join(dir, fmt.Sprintf("hooks-%d.yaml", n))
	bu := filepath.Join(dir, fmt.Sprintf("hooks-%d.bu", n))
	if err := writeInputs(n, spec, bu); err != nil {
		return nil, err
	}
	// The tools take turns, run by run, so that a slow spell of the
	// machine falls on all of them rather than on one.
	all := map[string][]sample{}
	for range runs {
		for _, tool := range toolOrder {
			file := spec
			if tool == "butane" {
				file = bu
			}
			s, err := measure(self, tool, file)
			if err != nil {
				return nil, err
			}
			all[tool] = append(all[tool], s)
		}
	}
	med := map[string]sample{}
	for _, tool := range toolOrder {
		med[tool] = report(n, tool, all[tool])
	}
	return med, nil
}

// writeInputs writes a spec of n hooks to spec and the Butane config of
// its units to bu.
func writeInputs(n int, spec, bu string) error {
	data := benchspec.Spec(n)
	r, diags := compile.Build(spec, data, compile.Options{})
	us := r.Units
	if diags.HasErrors(false) || len(us) != n {
		return fmt.Errorf("the spec of %d hooks gives %d units: %v", n, len(us), diags)
	}
	b, err := butane.Render(us, butane.Options{})
	if err != nil {
		return err
	}
	if err := os.WriteFile(spec, data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(bu, b, 0o644)
}

// toolOrder is the order in which the tools run, and are reported.
var toolOrder = []string{"render", "render-cloudinit", "render-butane", "validate", "butane"}

// The goals of issue 17: hostprov's CPU time and peak RSS as multiples
// of Butane's, and the other outputs' CPU time as multiples of the
// Ignition output's.
const (
	goalCPU    = 0.25
	goalRSS    = 0.6
	goalOutput = 1.3
)

func ratio[T int64 | uint64 | time.Duration](a, b T) float64 {
	return float64(a) / float64(b)
}

func measure(self, tool, file string) (sample, error) {
	cmd := exec.Command(self, "-child", tool, "-in", file)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("%s %s: %v", tool, file, err)
	}
	var s sample
	if err := json.Unmarshal(out, &s.allocs); err != nil {
		return sample{}, fmt.Errorf("%s: reading its report %q: %v", tool, out, err)
	}
	s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	s.rss = s.allocs.PeakRSS
	return s, nil
}

// report prints the median and range of each figure of ss and returns
// the medians.
func report(n int, tool string, ss []sample) sample {
	cpu := stat(ss, func(s sample) float64 { return float64(s.cpu) / 1e6 })
	rss := stat(ss, func(s sample) float64 { return float64(s.rss) / 1e6 })
	ab := stat(ss, func(s sample) float64 { return float64(s.allocs.Bytes) / 1e6 })
	ao := stat(ss, func(s sample) float64 { return float64(s.allocs.Objects) / 1e3 })
	fmt.Printf("%-8d %-16s %22s %22s %22s %22s\n", n, tool, cpu, rss, ab, ao)
	return ss[medianIndex(ss, func(s sample) float64 { return float64(s.cpu) })].withMedians(ss)
}

func (s sample) withMedians(ss []sample) sample {
	med := func(f func(sample) float64) float64 { return f(ss[medianIndex(ss, f)]) }
	return sample{
		cpu:    time.Duration(med(func(s sample) float64 { return float64(s.cpu) })),
		rss:    int64(med(func(s sample) float64 { return float64(s.rss) })),
		allocs: allocs{Bytes: uint64(med(func(s sample) float64 { return float64(s.allocs.Bytes) }))},
	}
}

// medianIndex is the index of the median of f over ss (the lower one of
// an even count).
func medianIndex(ss []sample, f func(sample) float64) int {
	idx := make([]int, len(ss))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch x, y := f(ss[a]), f(ss[b]); {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return idx[(len(idx)-1)/2]
}

func stat(ss []sample, f func(sample) float64) string {
	lo, hi := f(ss[0]), f(ss[0])
	for _, s := range ss {
		lo, hi = min(lo, f(s)), max(hi, f(s))
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", f(ss[medianIndex(ss, f)]), lo, hi)
}
