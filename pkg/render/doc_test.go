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
// room only. That holds for Butane too, though Butane is translated to
// Ignition: what the two share (the Ignition config both are made from,
// and the checks of a user's config against it) is internal/ignconfig, not
// the Ignition output. What several outputs share is in this package or
// an internal one below it. It reads the build's own answer, go list.
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
		deps[pkg] = f[1:]
		if pkg == renderPkg || strings.Contains(pkg, "/internal/") {
			continue
		}
		outputs = append(outputs, pkg)
	}
	for _, name := range allOutputs {
		if !slices.Contains(outputs, renderPkg+"/"+name) {
			t.Errorf("go list does not list the output %s/%s among %v", renderPkg, name, outputs)
		}
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

const renderPkg = "github.com/hostprov/hostprov/pkg/render"

// allOutputs are the outputs, each a package below this one.
var allOutputs = []string{"butane", "cloudinit", "ignition", "kopshooks", "listing", "unitdir"}

// lightPackages are this package and the outputs that write no Ignition
// or Butane config and merge none, and so link neither project's config
// packages: what cloud-init shares with Butane is internal/usermerge, and
// what the others share is internal/unitfiles, neither of which links them.
var lightPackages = []string{"", "/cloudinit", "/kopshooks", "/listing", "/unitdir"}

// checkNoConfigLibraries fails for each light package whose dependencies
// (deps, by package) hold a Butane or Ignition package.
func checkNoConfigLibraries(t *testing.T, deps map[string][]string) {
	t.Helper()
	for _, name := range lightPackages {
		pkg := renderPkg + name
		ds, ok := deps[pkg]
		if !ok {
			t.Errorf("go list does not list %s; lightPackages names packages that are gone", pkg)
		}
		for _, d := range ds {
			if strings.HasPrefix(d, "github.com/coreos/butane/") || strings.HasPrefix(d, "github.com/coreos/ignition/") {
				t.Errorf("%s links %s: a package that writes no Ignition or Butane config should not carry their libraries", pkg, d)
			}
		}
	}
}
