package sdbus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// hostRuns numbers the transient units of HostJournalctl, so that two
// reads at once have their own.
var hostRuns atomic.Int64

// HostJournalctl returns a RunJournalctl that runs journalctl on the
// machine of the connected systemd, not in this process's, as a transient
// oneshot service of that systemd. An agent in a container reads its
// node's journal so: its image has no journalctl, and a journalctl there
// would read the container's journal, not the node's.
//
// The service writes its output to files in nodeDir, a directory of the
// node's that this process sees at localDir (the state directory, which
// an agent's pod mounts from the node), read and removed once its job
// ends. Files, not pipes passed over the connection as systemd-run --pipe
// does: descriptors do not cross a relay of the socket, and systemd holds
// its copies of a pipe's for a while after the process exits.
func (m *Manager) HostJournalctl(nodeDir, localDir string) func(ctx context.Context, args ...string) ([]byte, error) {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		return m.runOnHost(ctx, append([]string{"journalctl"}, args...), nodeDir, localDir)
	}
}

func (m *Manager) runOnHost(ctx context.Context, argv []string, nodeDir, localDir string) ([]byte, error) {
	n := hostRuns.Add(1)
	base := fmt.Sprintf(".hostprov-%s-%d-%d", argv[0], os.Getpid(), n)
	out, errOut := base+".out", base+".err"
	defer os.Remove(filepath.Join(localDir, out))
	defer os.Remove(filepath.Join(localDir, errOut))
	props := []sddbus.Property{
		sddbus.PropDescription("hostprov: " + strings.Join(argv, " ")),
		// A name, not a path: systemd finds it in its own search path,
		// which is the node's, whatever this process's file system is.
		sddbus.PropExecStart(argv, false),
		// A oneshot's start job ends when its process has exited.
		sddbus.PropType("oneshot"),
		{Name: "StandardInput", Value: godbus.MakeVariant("null")},
		{Name: "StandardOutputFile", Value: godbus.MakeVariant(path.Join(nodeDir, out))},
		{Name: "StandardErrorFile", Value: godbus.MakeVariant(path.Join(nodeDir, errOut))},
		// The journal is not for everyone's eyes.
		{Name: "UMask", Value: godbus.MakeVariant(uint32(0o077))},
		// Gone once it ends, failed or not: nothing to clean up.
		{Name: "CollectMode", Value: godbus.MakeVariant("inactive-or-failed")},
	}
	done := make(chan string, 1)
	name := strings.TrimPrefix(base, ".") + ".service"
	if _, err := m.conn.StartTransientUnitContext(ctx, name, "fail", props, done); err != nil {
		return nil, fmt.Errorf("run %s on the node through systemd: %w", argv[0], err)
	}
	var result string
	select {
	case result = <-done:
	case <-ctx.Done():
		// Not left running: a journalctl that hangs holds nothing up.
		_, _ = m.conn.StopUnitContext(context.WithoutCancel(ctx), name, "replace", nil)
		return nil, fmt.Errorf("%s on the node: %w", argv[0], ctx.Err())
	}
	stdout, err := os.ReadFile(filepath.Join(localDir, out))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s on the node: %w", argv[0], err)
	}
	stderr, _ := os.ReadFile(filepath.Join(localDir, errOut))
	if msg := strings.TrimSpace(string(stderr)); msg != "" && (len(stdout) == 0 || result != "done") {
		return nil, fmt.Errorf("%s on the node: %s", argv[0], msg)
	}
	if result != "done" {
		return nil, fmt.Errorf("%s on the node: its job ended %s", argv[0], result)
	}
	return stdout, nil
}
