package render_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/hosttools"
)

// TestOutputsAreRooms holds the layout doc.go describes: every package
// below this one (but internal ones) is one output, and no output depends
// on another, directly or not, so that a change to one format touches its
// room only. What several outputs share is in this package or an internal
// one below it. It reads the build's own answer, go list.
func TestOutputsAreRooms(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		hosttools.Unavailable(t, "no go tool on PATH to list the outputs' dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", "./...").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	var outputs []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := f[0]
		if pkg == "github.com/hostprov/hostprov/pkg/render" || strings.Contains(pkg, "/internal/") {
			continue
		}
		outputs = append(outputs, pkg)
		deps[pkg] = f[1:]
	}
	if len(outputs) < 3 {
		t.Fatalf("go list finds %d outputs below pkg/render, which cannot be all of them:\n%s", len(outputs), out)
	}
	for _, o := range outputs {
		for _, d := range deps[o] {
			if slices.Contains(outputs, d) {
				t.Errorf("%s depends on %s: an output never imports another; what both need belongs in package render or an internal package below it", o, d)
			}
		}
	}
	checkNoConfigLibraries(t, deps)
}

// lightOutputs are the outputs that write no Ignition or Butane config and
// merge none, and so link neither project's config packages: what they
// share with the others is in internal/unitfiles, not package render.
var lightOutputs = []string{"kopshooks", "listing", "unitdir"}

// checkNoConfigLibraries fails for each light output whose dependencies
// (deps, by output) hold a Butane or Ignition package.
func checkNoConfigLibraries(t *testing.T, deps map[string][]string) {
	t.Helper()
	for _, name := range lightOutputs {
		pkg := "github.com/hostprov/hostprov/pkg/render/" + name
		ds, ok := deps[pkg]
		if !ok {
			t.Errorf("go list does not list %s; lightOutputs names outputs that are gone", pkg)
		}
		for _, d := range ds {
			if strings.HasPrefix(d, "github.com/coreos/butane/") || strings.HasPrefix(d, "github.com/coreos/ignition/") {
				t.Errorf("%s links %s: an output that writes no Ignition or Butane config should not carry their libraries", pkg, d)
			}
		}
	}
}
