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
}
