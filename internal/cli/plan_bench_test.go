package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/inputs"
)

// planBenchUnits is how many units BenchmarkPlanUnchanged plans.
const planBenchUnits = 1000

// BenchmarkPlanUnchanged measures hostprov plan of the spec the last apply
// applied, on 1,000 units, in process (the command tree, reading and
// fingerprinting the spec, the state, the plan from the state and the unit
// files, printing): plan. read-files is reading the same unit files, for
// comparison; rendered is the plan that renders the spec (no fingerprint),
// as every plan did before it used the state.
func BenchmarkPlanUnchanged(b *testing.B) {
	spec := filepath.Join(b.TempDir(), "hostprov.yaml")
	var s strings.Builder
	s.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n")
	for i := range planBenchUnits {
		fmt.Fprintf(&s, "- name: hook-%04d\n  exec: [/bin/echo, hook, %d]\n", i, i)
	}
	os.WriteFile(spec, []byte(s.String()), 0o644)
	// --root: offline, so that no systemd is needed.
	root := b.TempDir()
	unitDir := filepath.Join(root, "units")
	os.MkdirAll(unitDir, 0o755)
	os.MkdirAll(filepath.Join(root, "state"), 0o755)
	args := []string{"--root", root, "--unit-dir", "/units", "--state-dir", "/state", "-f", spec}
	run := func(cmd ...string) {
		if code := Run(append(cmd, args...), strings.NewReader(""), io.Discard, io.Discard); code != 0 {
			b.Fatalf("%v: exit %d", cmd, code)
		}
	}
	run("apply", "--no-start")
	units, err := filepath.Glob(filepath.Join(unitDir, "*.service"))
	if err != nil || len(units) != planBenchUnits {
		b.Fatalf("%d units written: %v", len(units), err)
	}
	b.Run("plan", func(b *testing.B) {
		before := renders.Load()
		for b.Loop() {
			run("plan", "--detailed-exitcode")
		}
		if renders.Load() != before {
			b.Fatal("plan rendered the spec")
		}
	})
	b.Run("read-files", func(b *testing.B) {
		for b.Loop() {
			for _, u := range units {
				if _, err := os.ReadFile(u); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("rendered", func(b *testing.B) {
		old := inputs.BuildID
		inputs.BuildID = func() string { return "" }
		defer func() { inputs.BuildID = old }()
		for b.Loop() {
			run("plan", "--detailed-exitcode")
		}
	})
}
