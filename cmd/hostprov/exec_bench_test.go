package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/testbin"
)

// These benchmarks run the built binary, as a node runs it, against a
// command that does the least the same job could: each pair is run
// alternately, so that both see the same load, and each reports the
// median run of both, their ratio (x), and the spread of hostprov's runs
// (p10-ms, p90-ms). ns/op is a pair.

// race runs hostprov and other alternately b.N times each and reports
// their medians as <name>-ms and other-ms.
func race(b *testing.B, name string, hostprov, other []string) {
	run := func(cmd []string) time.Duration {
		start := time.Now()
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", cmd[0], err, out)
		}
		return time.Since(start)
	}
	var hp, ot []time.Duration
	for b.Loop() {
		hp = append(hp, run(hostprov))
		ot = append(ot, run(other))
	}
	slices.Sort(hp)
	slices.Sort(ot)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	at := func(ds []time.Duration, q float64) time.Duration { return ds[int(q*float64(len(ds)-1))] }
	b.ReportMetric(ms(at(hp, 0.5)), "hostprov-ms")
	b.ReportMetric(ms(at(ot, 0.5)), name+"-ms")
	b.ReportMetric(float64(at(hp, 0.5))/float64(at(ot, 0.5)), "x")
	b.ReportMetric(ms(at(hp, 0.1)), "p10-ms")
	b.ReportMetric(ms(at(hp, 0.9)), "p90-ms")
}

// BenchmarkColdStart: hostprov render of a small spec (one hook) against
// systemd-escape foo, the smallest run of a systemd tool.
func BenchmarkColdStart(b *testing.B) {
	escape, err := exec.LookPath("systemd-escape")
	if err != nil {
		b.Skip("no systemd-escape to compare with")
	}
	bin := testbin.Hostprov(b)
	spec := filepath.Join(b.TempDir(), "hostprov.yaml")
	os.WriteFile(spec, []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: hello\n  exec: [/bin/echo, hello]\n"), 0o644)
	race(b, "escape", []string{bin, "render", "-f", spec}, []string{escape, "foo"})
}

// BenchmarkPlanExec: hostprov plan of the spec the last apply applied, on
// 1,000 units (offline, --root), which plans from the state without
// rendering, against cat reading the same unit files.
func BenchmarkPlanExec(b *testing.B) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		b.Skip("no cat to compare with")
	}
	bin := testbin.Hostprov(b)
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, "units"), 0o755)
	os.MkdirAll(filepath.Join(root, "state"), 0o755)
	var s strings.Builder
	s.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n")
	for i := range 1000 {
		fmt.Fprintf(&s, "- name: hook-%04d\n  exec: [/bin/echo, hook, %d]\n", i, i)
	}
	spec := filepath.Join(b.TempDir(), "hostprov.yaml")
	os.WriteFile(spec, []byte(s.String()), 0o644)
	args := []string{"--root", root, "--unit-dir", "/units", "--state-dir", "/state", "-f", spec}
	if out, err := exec.Command(bin, append([]string{"apply", "--no-start"}, args...)...).CombinedOutput(); err != nil {
		b.Fatalf("apply: %v\n%s", err, out)
	}
	units, err := filepath.Glob(filepath.Join(root, "units", "*.service"))
	if err != nil || len(units) != 1000 {
		b.Fatalf("%d units written: %v", len(units), err)
	}
	race(b, "cat", append([]string{bin, "plan", "--detailed-exitcode"}, args...), append([]string{cat}, units...))
}
