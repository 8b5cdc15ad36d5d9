package rendertest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/internal/systemdtest"
)

// Ignition's own apply tool is the consumer of the Ignition output: it is
// the files stage of Ignition, the code that writes units on a machine's
// first boot, run on a directory. `make tools` builds it into bin/tools.

// ignitionApplyTool returns the path of Ignition's apply tool: bin/tools of
// this repository, where `make tools` puts it, or ignition-apply on PATH.
func ignitionApplyTool(t testing.TB) string {
	t.Helper()
	p := Path("bin", "tools", "ignition-apply")
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return p
	}
	if p, err := exec.LookPath("ignition-apply"); err == nil {
		return p
	}
	hosttools.Unavailable(t, "ignition-apply not built: run make tools")
	return ""
}

// IgnitionMachine is a machine to run Ignition's apply tool on: a real
// systemd (a rig), with the tool copied into its root. Ignition runs where
// systemd runs, as on a first boot: it asks systemd's version over D-Bus
// (/run/systemd/private) whenever a preset names a template or an instance,
// and fails without it.
type IgnitionMachine struct {
	Rig  *systemdtest.Rig
	tool string // the tool's path inside the rig
	seq  atomic.Int64
}

// NewIgnitionMachine boots a rig and puts Ignition's apply tool in it.
func NewIgnitionMachine(t testing.TB) *IgnitionMachine {
	t.Helper()
	tool := ignitionApplyTool(t)
	r := systemdtest.Start(t)
	m := &IgnitionMachine{Rig: r, tool: "/var/lib/hostprov-tools/ignition-apply"}
	if err := r.Install(tool, m.tool); err != nil {
		t.Fatal(err)
	}
	if out, err := r.Run(context.Background(), m.tool, "--version"); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("%s", strings.TrimSpace(out))
	}
	return m
}

// WriteFile writes a file, making its directory.
func WriteFile(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, mode)
}

// NewRoot makes an empty directory in the machine and returns its path
// inside the machine and on the host.
func (m *IgnitionMachine) NewRoot() (inside, host string, err error) {
	inside = fmt.Sprintf("/var/tmp/ignition-root-%d", m.seq.Add(1))
	host = filepath.Join(m.Rig.Root, inside)
	return inside, host, os.Mkdir(host, 0o755)
}

// Apply applies an Ignition config to root (a path inside the machine)
// with Ignition's apply tool, offline, and returns what it logged. The tool
// refuses to run unless it believes it is in a container, which the
// environment variable container tells it.
func (m *IgnitionMachine) Apply(ctx context.Context, root string, config []byte) (string, error) {
	cfg := fmt.Sprintf("/var/tmp/config-%d.ign", m.seq.Add(1))
	if err := os.WriteFile(filepath.Join(m.Rig.Root, cfg), config, 0o600); err != nil {
		return "", err
	}
	out, err := m.Rig.Run(ctx, "env", "container=hostprov-test", m.tool, "--root", root, "--offline", cfg)
	if err != nil {
		return out, fmt.Errorf("ignition-apply --root %s --offline: %w\n%s", root, err, out)
	}
	return out, nil
}

// VendorPreset is the preset policy of the images Ignition is made for:
// Fedora CoreOS and RHCOS ship "disable *" (Fedora's
// 99-default-disable.preset), so that a unit is enabled on the first boot
// only when a preset says so, as Ignition's 20-ignition.preset does for
// enabled: true. The tests give it to the roots they apply presets in.
//
// Without it, systemd enables every unit no preset names. That makes the
// checks toothless (a unit would be enabled even if the config did not say
// enabled: true), and it is why enabled: false cannot hold on such an
// image: Ignition writes "disable NAME" only for a unit that is enabled
// already when it runs, and a unit it has just written is not, so the first
// boot's preset enables it.
const VendorPreset = "disable *\n"

// VendorPresetFile is where a root's image would have VendorPreset,
// relative to the root's /usr/lib (the image) or /etc.
const VendorPresetFile = "systemd/system-preset/99-default-disable.preset"
