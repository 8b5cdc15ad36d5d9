package sdbus_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/systemdtest"
)

// The node's programs, run by the rig's systemd as an agent in a container
// runs its node's: on the rig's file system, with standard input given
// (and gone afterwards), their output returned, and a failing one's exit
// status in the error; no unit or file is left behind.
func TestHostTools(t *testing.T) {
	ctx := testContext(t)
	r, m, local := dialWithStateDir(ctx, t)
	tools := m.HostTools("/var/lib/hostprov", local)
	// What a run killed midway left, a hash among it, goes with the next.
	stale := filepath.Join(local, ".hostprov-tool-0123456789abcdef.in")
	if err := os.WriteFile(stale, []byte("app:$6$x$y\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := tools.Run(ctx, []string{"/bin/sh", "-c", "cat > /var/lib/got; echo said on stdout; echo said on stderr >&2"}, []byte("app:$6$x$y\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(r.Root, "var/lib/got")); err != nil || string(got) != "app:$6$x$y\n" {
		t.Errorf("the program's standard input, as it wrote it in the rig: %q, %v", got, err)
	}
	if !strings.Contains(string(out), "said on stdout") || !strings.Contains(string(out), "said on stderr") {
		t.Errorf("output %q", out)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("a killed run's standard input is still there (%v)", err)
	}

	out, err = tools.Run(ctx, []string{"/bin/sh", "-c", "echo no such user >&2; exit 3"}, nil)
	if err == nil || !strings.Contains(err.Error(), "/bin/sh on the node") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("a failing program: %v", err)
	}
	if !strings.Contains(string(out), "no such user") {
		t.Errorf("a failing program's output: %q", out)
	}
	// systemd's own status for a program it could not execute.
	if _, err := tools.Run(ctx, []string{"/no/such/program"}, nil); err == nil || !strings.Contains(err.Error(), "/no/such/program on the node") || !strings.Contains(err.Error(), "systemd could not execute it") {
		t.Errorf("a program the node does not have: %v", err)
	}

	if left, _ := filepath.Glob(filepath.Join(local, ".hostprov-tool-*")); len(left) > 0 {
		t.Errorf("files left behind: %v", left)
	}
	units, err := r.Conn.ListUnitsByPatternsContext(ctx, nil, []string{"hostprov-tool-*"})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range units {
		t.Errorf("unit left behind: %s, %s", u.Name, u.ActiveState)
	}
}

// dialWithStateDir starts a rig and dials its systemd, as an agent in a
// container does its node's; local is the rig's /var/lib/hostprov, made,
// as an agent's pod mounts its node's.
func dialWithStateDir(ctx context.Context, t *testing.T) (r *systemdtest.Rig, m *sdbus.Manager, local string) {
	t.Helper()
	r = systemdtest.Start(t)
	m, err := sdbus.Dial(ctx, r.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	local = filepath.Join(r.Root, "var/lib/hostprov")
	if err := os.MkdirAll(local, 0o700); err != nil {
		t.Fatal(err)
	}
	return r, m, local
}
