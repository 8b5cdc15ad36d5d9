package sdbus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"

	"github.com/hostprov/hostprov/pkg/apply"
)

// HostTools returns the apply.Tools that runs the node's own programs
// (systemd-sysusers, chpasswd) as transient oneshot services of the
// connected systemd: on the node, as its root, with its file system, its
// libraries and its PAM and NSS configuration, whatever this process's
// are. An agent in a container uses it, whose image has none of those
// programs and which has no capability to chroot into the node.
//
// Like HostJournalctl it passes data through files in nodeDir, a
// directory of the node's that this process sees at localDir (the state
// directory, root's alone): the standard input too. A password hash given
// as the unit's StandardInputData would be a property of the unit, which
// every user of the node may read over the system bus while the unit is
// loaded; a file of mode 0600 in root's directory shows it to root alone,
// and is removed once the program ends. A run killed midway (the agent's
// pod deleted) leaves its files, which the next run removes: runs must
// therefore not overlap, as apply's do not (they run under its lock).
func (m *Manager) HostTools(nodeDir, localDir string) apply.Tools {
	return &hostTools{m: m, nodeDir: nodeDir, localDir: localDir}
}

type hostTools struct {
	m                 *Manager
	nodeDir, localDir string
}

func (h *hostTools) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, error) {
	if len(argv) == 0 || !path.IsAbs(argv[0]) {
		return nil, fmt.Errorf("run on the node: %q is not the absolute path of a program", argv)
	}
	// What a run killed midway left: its output, and its standard
	// input, which may be a password hash.
	if left, err := filepath.Glob(filepath.Join(h.localDir, ".hostprov-tool-*")); err == nil {
		for _, f := range left {
			os.Remove(f)
		}
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	// Unique, so that two runs (of two agents, or an agent and its
	// successor) never share a unit or a file.
	base := "hostprov-tool-" + hex.EncodeToString(id[:])
	name := base + ".service"
	prog := path.Base(argv[0])
	out, errOut, in := "."+base+".out", "."+base+".err", "."+base+".in"
	defer os.Remove(filepath.Join(h.localDir, out))
	defer os.Remove(filepath.Join(h.localDir, errOut))
	props := []sddbus.Property{
		sddbus.PropDescription("hostprov: " + strings.Join(argv, " ")),
		sddbus.PropExecStart(argv, false),
		// A oneshot's start job ends when its process has exited, and
		// fails when it fails.
		sddbus.PropType("oneshot"),
		sddbus.PropRemainAfterExit(false),
		{Name: "StandardOutputFile", Value: godbus.MakeVariant(path.Join(h.nodeDir, out))},
		{Name: "StandardErrorFile", Value: godbus.MakeVariant(path.Join(h.nodeDir, errOut))},
		{Name: "UMask", Value: godbus.MakeVariant(uint32(0o077))},
	}
	if stdin != nil {
		local := filepath.Join(h.localDir, in)
		f, err := os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("%s on the node: its standard input: %w", prog, err)
		}
		defer os.Remove(local)
		_, err = f.Write(stdin)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%s on the node: its standard input: %w", prog, err)
		}
		props = append(props, sddbus.Property{Name: "StandardInputFile", Value: godbus.MakeVariant(path.Join(h.nodeDir, in))})
	} else {
		props = append(props, sddbus.Property{Name: "StandardInput", Value: godbus.MakeVariant("null")})
	}
	done := make(chan string, 1)
	if _, err := h.m.conn.StartTransientUnitContext(ctx, name, "fail", props, done); err != nil {
		return nil, fmt.Errorf("run %s on the node through systemd: %w", prog, err)
	}
	var result string
	select {
	case result = <-done:
	case <-ctx.Done():
		bg := context.WithoutCancel(ctx)
		_, _ = h.m.conn.StopUnitContext(bg, name, "replace", nil)
		_ = h.m.conn.ResetFailedUnitContext(bg, name)
		return nil, fmt.Errorf("%s on the node: %w", prog, ctx.Err())
	}
	stdout, err := os.ReadFile(filepath.Join(h.localDir, out))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s on the node: %w", prog, err)
	}
	stderr, _ := os.ReadFile(filepath.Join(h.localDir, errOut))
	output := append(stdout, stderr...)
	if result == "done" {
		// Gone by itself: an inactive transient unit is unloaded.
		return output, nil
	}
	// A failed unit stays loaded until reset, so that how its process
	// ended can be read; then it goes.
	how := "its job ended " + result
	if code, status, ok := h.exitOf(ctx, name); ok {
		how = exitText(code, status)
	}
	_ = h.m.conn.ResetFailedUnitContext(context.WithoutCancel(ctx), name)
	return output, fmt.Errorf("%s on the node (%s): %s", argv[0], name, how)
}

// exitOf reads how the main process of the unit name ended: its
// ExecMainCode (CLD_EXITED, CLD_KILLED, CLD_DUMPED) and ExecMainStatus.
func (h *hostTools) exitOf(ctx context.Context, name string) (code, status int32, ok bool) {
	c, err := h.m.conn.GetServicePropertyContext(ctx, name, "ExecMainCode")
	if err != nil {
		return 0, 0, false
	}
	s, err := h.m.conn.GetServicePropertyContext(ctx, name, "ExecMainStatus")
	if err != nil {
		return 0, 0, false
	}
	code, ok1 := c.Value.Value().(int32)
	status, ok2 := s.Value.Value().(int32)
	return code, status, ok1 && ok2 && code != 0
}

// exitText is how a process ended.
func exitText(code, status int32) string {
	switch code {
	case 1: // CLD_EXITED
		if status == 203 { // systemd's EXIT_EXEC
			return "exit status 203: systemd could not execute it (is it on the node?)"
		}
		return fmt.Sprintf("exit status %d", status)
	case 2, 3: // CLD_KILLED, CLD_DUMPED
		return fmt.Sprintf("killed by signal %d", status)
	}
	return fmt.Sprintf("ended with code %d, status %d", code, status)
}
