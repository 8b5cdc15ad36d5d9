package apply_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/hosttools"
)

// TestNoOutputFormats checks that apply, and the D-Bus side of it that
// the node agent links, depend on no Butane and no Ignition package: they
// work from the rendered model of package compile, and an output format's
// library has no business on a node that only applies units (it once
// pulled in 72 packages of Butane's and Ignition's configs through
// package render). It reads the build's own answer, go list -deps.
func TestNoOutputFormats(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		hosttools.Unavailable(t, "no go tool on PATH to list apply's dependencies: %v", err)
	}
	for _, pkg := range []string{"github.com/hostprov/hostprov/pkg/apply", "github.com/hostprov/hostprov/internal/sdbus"} {
		out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list -deps %s: %v\n%s", pkg, err, ee.Stderr)
			}
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s lists %d packages, which cannot be all of them:\n%s", pkg, len(deps), out)
		}
		for _, d := range deps {
			if strings.HasPrefix(d, "github.com/coreos/butane") || strings.HasPrefix(d, "github.com/coreos/ignition") {
				t.Errorf("%s depends on %s: it must import package compile for the rendered model, never package render or an output format", pkg, d)
			}
		}
	}
}
