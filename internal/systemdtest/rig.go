// Package systemdtest boots a real systemd for tests: the host's own systemd binary
// runs as PID 1 of fresh Linux namespaces, chrooted into a throwaway root,
// and the test talks to it over D-Bus exactly as hostprov talks to the
// systemd of a node.
//
// A rig shares the host's /usr read-only and has its own /etc, /var and
// /run. Its unit path holds only a curated set of standard targets and
// journald, and none of the host's generators run, so nothing of the host
// starts inside it and nothing of the host changes. Boot to a connected
// manager takes a fraction of a second; tests may run several rigs at once.
package systemdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	sddbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/hostprov/hostprov/internal/sdbus"
)

// Rig is a running systemd started by Start. Its fields are read-only.
type Rig struct {
	// Root is the rig's "/" as seen from the host.
	Root string
	// UnitDir is Root+"/etc/systemd/system", the rig's administrator unit
	// directory. It starts empty: the rig's own units live elsewhere, so a
	// test may treat every file here as its own.
	UnitDir string
	// Socket is the host path of a socket that speaks systemd's private
	// D-Bus protocol (peer-to-peer, no Hello); see sdbus.DialPrivate.
	Socket string
	// Conn is a connection over Socket, closed when the test ends.
	Conn *sddbus.Conn
	// PID is the host's process id of the rig's PID 1.
	PID int
	// ConsoleLog is the host path of the file that collects what systemd
	// writes to its console, while the test runs; when a test fails, the
	// cleanup prints its tail before removing the rig.
	ConsoleLog string

	nsenter string
	boot    *boot // nil where rigs cannot boot
}

// Run runs a command inside the rig, in all of its namespaces, its root
// directory and its working directory ("/"), and returns its standard
// output. A command that fails returns an error that carries its standard
// error. Use it for what D-Bus does not offer, such as journalctl; read
// systemd's state over Conn rather than by scraping systemctl's output.
//
// The command gets a fixed environment, so that nothing the test process
// exports leaks into the rig. If ctx ends, the command is killed.
func (r *Rig) Run(ctx context.Context, args ...string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("rig: Run needs a command")
	}
	cmd := r.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("rig: %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Command returns the command that Run runs for args (which must not be
// empty), not started and with no output set: for a caller that reads its
// output as it comes, such as a benchmark that times each line of a log.
func (r *Rig) Command(ctx context.Context, args ...string) *exec.Cmd {
	// nsenter -a alone enters the namespaces but not the chroot: -r and -w
	// take the root and working directory of the target process too.
	nsArgs := append([]string{"-t", fmt.Sprint(r.PID), "-a", "-r", "-w", "--"}, args...)
	cmd := exec.CommandContext(ctx, r.nsenter, nsArgs...)
	cmd.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"SYSTEMD_COLORS=0",
		"SYSTEMD_PAGER=",
	}
	// nsenter forks to enter the PID namespace; on cancel, kill its whole
	// process group, not only nsenter itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	return cmd
}

// Dial opens a new connection to the rig's systemd, for code under test that
// takes a socket path or wants a connection of its own. ctx bounds the dial
// only; the caller closes the connection.
func (r *Rig) Dial(ctx context.Context) (*sddbus.Conn, error) {
	return sdbus.DialPrivate(ctx, r.Socket)
}

// WriteUnit writes a unit file, or a drop-in such as
// "foo.service.d/10-limits.conf", into UnitDir. It does not reload systemd:
// call Conn.ReloadContext when the files are in place. (systemd reads unit
// files only on a reload, so a plain write is enough here; the rig is
// thrown away, so it is not synced to disk either.)
func (r *Rig) WriteUnit(name string, data []byte) error {
	if !filepath.IsLocal(name) {
		return fmt.Errorf("rig: unit file name %q is not a path inside the unit directory", name)
	}
	path := filepath.Join(r.UnitDir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// Install copies the host file src into the rig at path (an absolute path
// inside the rig, such as /opt/tool), executable, making its directory:
// how a test puts a binary it built, or the test binary itself, in reach
// of commands run with Run.
func (r *Rig) Install(src, path string) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("rig: %q is not an absolute path inside the rig", path)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	dst := filepath.Join(r.Root, path)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}
