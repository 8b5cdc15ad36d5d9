package systemdtest

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/hostprov/hostprov/internal/hosttools"
)

// bootScript builds the rig's mount table inside its new namespaces and
// execs systemd. It is a script because that work must happen in the new
// child process before systemd runs, where no Go code can run.
//
//go:embed boot.sh
var bootScript string

const (
	// systemdBinary and proxydBinary are the host's, and the rig's: /usr is
	// shared. Debian 12 has merged /usr, so /lib/systemd is the same place.
	systemdBinary = "/usr/lib/systemd/systemd"
	proxydBinary  = "/usr/lib/systemd/systemd-socket-proxyd"

	// relaySocket is where, inside the rig, the relay to systemd's private
	// socket listens (see relayUnits).
	relaySocket = "/run/hostprov-rig.sock"

	bootTimeout = 30 * time.Second
	// poweroffTimeout bounds a rig's shutdown. A rig powers off in well
	// under a second on a quiet machine, but a CI run with every package's
	// rigs at once once took more than 10 s, and failed a test that had
	// passed. A unit whose stop hangs still shows: systemd waits 90 s for
	// it by default.
	poweroffTimeout = 60 * time.Second

	// sigPoweroff is SIGRTMIN+4, systemd's "poweroff" signal. SIGRTMIN here
	// is the C library's (34), not the kernel's (32): glibc keeps the first
	// two real-time signals for itself, and systemd counts from glibc's.
	sigPoweroff = syscall.Signal(34 + 4)

	// rigPrefix names the cgroups and directories of rigs:
	// rigPrefix<pid>-..., where pid is the test process, so that a later run
	// can remove what a killed run left behind.
	rigPrefix = "hostprov-rig-"
)

// rigSeq makes cgroup names unique among the rigs of one test process.
var rigSeq atomic.Int64

// Start boots a real systemd as PID 1 in fresh PID, mount, UTS, IPC, network
// and cgroup namespaces, with a throwaway root (own /etc, /var and /run; the
// host's /usr read-only; only the curated unit set), waits until it has
// finished booting and returns it connected.
//
// When the test cannot run here (not root, no systemd, no nsenter or mount,
// no cgroup2) Start skips it with the reason, except under CI=true, where it
// fails it: in CI these tests must run.
//
// t.Cleanup powers the rig off (gracefully, then by force), removes its
// cgroup and its files, and, if the test failed, prints the tail of the
// rig's console.
func Start(t testing.TB) *Rig {
	t.Helper()
	h := checkHost()
	if h.missing != "" {
		hosttools.Unavailable(t, "rig: cannot boot systemd here: %s", h.missing)
	}
	t0 := time.Now()
	dir, err := makeRigDir()
	if err != nil {
		t.Fatalf("rig: %v", err)
	}
	b := &boot{t: t, dir: dir, host: h}
	t.Cleanup(b.cleanup)
	r, err := b.start()
	if errors.Is(err, errUnavailable) {
		hosttools.Unavailable(t, "rig: cannot boot systemd here: %v", err)
	}
	if err != nil {
		t.Fatalf("rig: boot: %v", err)
	}
	t.Logf("rig: systemd PID %d booted in %v (root %s)", r.PID, time.Since(t0).Round(time.Millisecond), r.Root)
	return r
}

// errUnavailable marks a boot error that means "not possible on this
// machine" (a read-only cgroup file system, no permission to create
// namespaces, as in an unprivileged container) rather than a broken rig.
var errUnavailable = errors.New("the machine does not allow it")

// toolPath is where the rig looks for the host tools it runs: the same
// fixed PATH that boot.sh gets, whatever the test process's PATH.
var toolPath = []string{"/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// findTool returns the path of a host tool in toolPath, or "".
func findTool(name string) string {
	for _, d := range toolPath {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// host is what Start found out about the machine.
type host struct {
	missing string // why a rig cannot boot here, or ""
	cgroot  string // the cgroup2 hierarchy of the host
	nsenter string
}

// checkHost finds out whether a rig can boot here, and collects every
// reason why not, so that one skip message says everything to install.
func checkHost() host {
	var h host
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "needs root (it creates namespaces, mounts and cgroups)")
	}
	for _, p := range []string{systemdBinary, proxydBinary, "/bin/sh"} {
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p+" not found (Debian package systemd)")
		}
	}
	// The rig's root links /bin, /lib ... into /usr, as a merged-/usr host
	// (every Debian 12) does; on other layouts those links would be wrong.
	if l, err := os.Readlink("/lib"); err != nil || strings.TrimPrefix(l, "/") != "usr/lib" {
		missing = append(missing, "host /usr is not merged (/lib is not a link to usr/lib)")
	}
	for _, tool := range []string{"nsenter", "mount", "chroot", "mknod", "env"} {
		if findTool(tool) == "" {
			missing = append(missing, tool+" not found (Debian packages util-linux, mount, coreutils)")
		}
	}
	h.nsenter = findTool("nsenter")
	// A pure cgroup2 host mounts it at /sys/fs/cgroup; a "hybrid" host (v1
	// controllers plus a v2 tree for systemd) at /sys/fs/cgroup/unified.
	// Either will do: the rig needs only a cgroup2 directory of its own.
	for _, d := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		if _, err := os.Stat(filepath.Join(d, "cgroup.controllers")); err == nil {
			h.cgroot = d
			break
		}
	}
	if h.cgroot == "" {
		missing = append(missing, "no cgroup2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified")
	}
	h.missing = strings.Join(missing, "; ")
	return h
}

// boot holds what cleanup must undo, as far as start got.
type boot struct {
	t      testing.TB
	dir    string // everything of the rig on the host: root/, units/, ...
	host   host
	cgroup string        // the rig's cgroup directory, once made
	cmd    *exec.Cmd     // PID 1, once started
	exited chan struct{} // closed when PID 1 has been reaped
	pty    *os.File      // the console's master side
	copied chan struct{} // closed when the console copier is done
	rig    *Rig
}

func (b *boot) start() (*Rig, error) {
	root := filepath.Join(b.dir, "root")
	r := &Rig{
		Root:       root,
		UnitDir:    filepath.Join(root, "etc/systemd/system"),
		Socket:     filepath.Join(root, relaySocket),
		ConsoleLog: filepath.Join(b.dir, "console.log"),
		nsenter:    b.host.nsenter,
		boot:       b,
	}
	b.rig = r
	if err := makeRoot(root); err != nil {
		return nil, err
	}
	if err := makeUnits(filepath.Join(b.dir, "units")); err != nil {
		return nil, err
	}
	for _, d := range []string{"empty", "usr-local"} {
		if err := os.Mkdir(filepath.Join(b.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	removeStale(b.host.cgroot)
	if err := b.boot(os.O_TRUNC); err != nil {
		return nil, err
	}
	return r, nil
}

// boot starts systemd on the rig's root, prepared by start, and waits
// until it has booted. logMode is os.O_TRUNC for the first boot and
// os.O_APPEND for a reboot, which adds to the console log.
func (b *boot) boot(logMode int) error {
	r := b.rig
	b.cgroup = filepath.Join(b.host.cgroot, fmt.Sprintf("%s%d-%d", rigPrefix, os.Getpid(), rigSeq.Add(1)))
	if err := os.Mkdir(b.cgroup, 0o755); err != nil {
		b.cgroup = ""
		// A container typically mounts the cgroup file system read-only.
		return fmt.Errorf("%w: make a cgroup: %w", errUnavailable, err)
	}
	cg, err := os.Open(b.cgroup)
	if err != nil {
		return err
	}
	defer cg.Close()

	logFile, err := os.OpenFile(r.ConsoleLog, os.O_WRONLY|os.O_CREATE|logMode, 0o644)
	if err != nil {
		return err
	}
	pty, console, err := openPty()
	if err != nil {
		logFile.Close()
		return fmt.Errorf("console: %w", err)
	}
	defer console.Close()
	b.pty = pty
	b.copied = make(chan struct{})
	go func() {
		defer close(b.copied)
		defer logFile.Close()
		// Ends with EIO once every holder of the console has closed it.
		io.Copy(logFile, pty)
	}()

	cmd := exec.Command("/bin/sh", "-c", bootScript)
	cmd.Env = []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"RIG_ROOT=" + r.Root,
		"RIG_UNITS=" + filepath.Join(b.dir, "units"),
		"RIG_EMPTY=" + filepath.Join(b.dir, "empty"),
		"RIG_USRLOCAL=" + filepath.Join(b.dir, "usr-local"),
		"RIG_CONSOLE=" + console.Name(),
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = console, console, console
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWNET | syscall.CLONE_NEWCGROUP,
		// Born in the rig's cgroup (clone3 CLONE_INTO_CGROUP), so the new
		// cgroup namespace is rooted there and systemd's own cgroup tree
		// lands below it, where cleanup can remove it.
		UseCgroupFD: true,
		CgroupFD:    int(cg.Fd()),
		Setsid:      true,
		// If the test binary dies without cleaning up, the kernel kills PID
		// 1, and with it every process of the rig's PID namespace.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		// EPERM: no right to create namespaces (an unprivileged container);
		// ENOSYS: a kernel older than 5.7, without clone3 into a cgroup.
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOSYS) {
			err = fmt.Errorf("%w: %w", errUnavailable, err)
		}
		return fmt.Errorf("start systemd in new namespaces: %w", err)
	}
	b.cmd = cmd
	r.PID = cmd.Process.Pid
	b.exited = make(chan struct{})
	go func() {
		cmd.Wait()
		close(b.exited)
	}()

	return b.waitBooted(r)
}

// Reboot powers the rig off and boots a new systemd on the same root, as a
// machine reboots: /etc and /var, and so the unit files, their links and
// whatever the units wrote there, stay; /run starts empty, as the tmpfs it
// is on a machine; systemd forgets every unit's state. A rebooted rig's
// default target also pulls in multi-user.target, as a node's boot does,
// so that the units enabled in UnitDir start as they would on a node (the
// first boot starts nothing but the relay).
//
// Conn and PID are then the new systemd's, and every other connection to
// the old one is dead: dial again. On an error the rig is unusable; the
// test's cleanup still removes it.
func (r *Rig) Reboot() error {
	b := r.boot
	if b == nil {
		return errors.New("rig: Reboot of a rig that Start did not boot")
	}
	if r.Conn != nil {
		r.Conn.Close()
		r.Conn = nil
	}
	if err := b.poweroff(); err != nil {
		return fmt.Errorf("rig: reboot: %w", err)
	}
	if b.cgroup != "" {
		if err := removeCgroup(b.cgroup); err != nil {
			return fmt.Errorf("rig: reboot: %w", err)
		}
		b.cgroup = ""
	}
	// The old mount namespace died with its last process; what it had
	// mounted over /run is gone, and below it is the rig's own directory.
	if m := mountsUnder(b.dir); len(m) > 0 {
		return fmt.Errorf("rig: reboot: mounts below %s are visible on the host: %v", b.dir, m)
	}
	run := filepath.Join(r.Root, "run")
	entries, err := os.ReadDir(run)
	if err != nil {
		return fmt.Errorf("rig: reboot: %w", err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(run, e.Name())); err != nil {
			return fmt.Errorf("rig: reboot: empty /run: %w", err)
		}
	}
	wants := filepath.Join(b.dir, "units", "hostprov-rig.target.wants", "multi-user.target")
	if err := os.Symlink("../multi-user.target", wants); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("rig: reboot: %w", err)
	}
	t0 := time.Now()
	if err := b.boot(os.O_APPEND); err != nil {
		return fmt.Errorf("rig: reboot: %w", err)
	}
	b.t.Logf("rig: rebooted: systemd PID %d booted in %v", r.PID, time.Since(t0).Round(time.Millisecond))
	return nil
}

// poweroff stops a booted systemd, gracefully (so that the units' stop
// paths run as on a real machine), then by force, and closes its console.
// It reports a systemd that did not power off in time (and was killed).
func (b *boot) poweroff() error {
	var err error
	if b.cmd != nil {
		b.cmd.Process.Signal(sigPoweroff)
		select {
		case <-b.exited:
		case <-time.After(poweroffTimeout):
			err = fmt.Errorf("systemd did not power off within %v; killed it", poweroffTimeout)
			b.cmd.Process.Kill()
			<-b.exited
		}
		b.cmd = nil
	}
	if b.pty != nil {
		b.pty.Close()
		<-b.copied
		b.pty = nil
	}
	return err
}

// waitBooted waits for the relay socket, connects, and waits until systemd
// says it has finished starting up.
func (b *boot) waitBooted(r *Rig) error {
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for r.Conn == nil {
		select {
		case <-b.exited:
			return fmt.Errorf("systemd exited during boot: %v", b.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("no relay socket at %s after %v", r.Socket, bootTimeout)
		case <-tick.C:
		}
		if _, err := os.Stat(r.Socket); err != nil {
			continue
		}
		conn, err := r.Dial(ctx)
		// The socket file appears at bind(2), a moment before systemd
		// listens on it: until then connecting is refused.
		if errors.Is(err, syscall.ECONNREFUSED) {
			continue
		}
		if err != nil {
			return err
		}
		r.Conn = conn
	}
	for {
		// GetManagerProperty returns the GVariant text form: a quoted string.
		v, err := r.Conn.GetManagerProperty("SystemState")
		if err != nil {
			return fmt.Errorf("read SystemState: %w", err)
		}
		state, _ := strconv.Unquote(v)
		switch state {
		case "running":
			return nil
		case "degraded":
			failed, _ := r.Run(ctx, "systemctl", "--failed", "--no-legend")
			return fmt.Errorf("rig booted degraded; failed units:\n%s", failed)
		}
		select {
		case <-b.exited:
			return fmt.Errorf("systemd exited during boot: %v", b.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("systemd still %q after %v", state, bootTimeout)
		case <-tick.C:
		}
	}
}

// cleanup powers the rig off and removes every trace of it. It runs however
// far start got.
func (b *boot) cleanup() {
	t := b.t
	if b.rig != nil && b.rig.Conn != nil {
		b.rig.Conn.Close()
	}
	if err := b.poweroff(); err != nil {
		t.Errorf("rig: %v", err)
	}
	if t.Failed() && b.rig != nil {
		if log, err := os.ReadFile(b.rig.ConsoleLog); err == nil {
			t.Logf("rig: console (last lines of %s):\n%s", b.rig.ConsoleLog, tail(string(log), 60))
		}
	}
	if b.cgroup != "" {
		if err := removeCgroup(b.cgroup); err != nil {
			t.Errorf("rig: %v", err)
		}
	}
	// The rig's mounts lived in its own mount namespace, which died with its
	// last process. Should one show up on the host, RemoveAll would walk
	// into it (the host's /usr, say): refuse rather than risk that.
	if m := mountsUnder(b.dir); len(m) > 0 {
		t.Errorf("rig: not removing %s: mounts below it are visible on the host: %v", b.dir, m)
		return
	}
	if err := os.RemoveAll(b.dir); err != nil {
		t.Errorf("rig: %v", err)
	}
}

// openPty opens a new pseudo-terminal of the host's devpts and returns its
// master side and its subordinate side. It becomes the rig's /dev/console:
// systemd writes its log to the console only when that is a terminal.
func openPty() (master, console *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var n uint32
	var ioctlErr error
	// Through SyscallConn, not Fd(): Fd() would switch the file to blocking
	// mode, and then Close could not interrupt the copier's Read.
	rc, err := master.SyscallConn()
	if err == nil {
		err = rc.Control(func(fd uintptr) {
			var unlock int32
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
				ioctlErr = fmt.Errorf("unlock pty: %w", e)
				return
			}
			if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
				ioctlErr = fmt.Errorf("pty number: %w", e)
			}
		})
	}
	if err == nil {
		err = ioctlErr
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	console, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, console, nil
}

// tail returns the last n lines of s, without the carriage returns a
// terminal adds.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(strings.ReplaceAll(s, "\r", ""), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// removeCgroup removes a cgroup and the tree systemd made below it, deepest
// first (a cgroup directory goes only once it has no children). The kernel
// frees a cgroup shortly after its last process is reaped, so EBUSY is
// retried for a moment.
func removeCgroup(cg string) error {
	var err error
	for i := 0; i < 100; i++ {
		var dirs []string
		filepath.WalkDir(cg, func(p string, d fs.DirEntry, werr error) error {
			if werr == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		if len(dirs) == 0 {
			return nil
		}
		slices.Reverse(dirs)
		err = nil
		for _, d := range dirs {
			if e := syscall.Rmdir(d); e != nil && !errors.Is(e, fs.ErrNotExist) {
				err = fmt.Errorf("remove cgroup %s: %w", d, e)
			}
		}
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// makeRigDir makes the host directory that holds everything of a rig.
// Not t.TempDir(): its path grows with the test's name, and the relay
// socket's path must stay below the 108 bytes a unix socket address holds.
func makeRigDir() (string, error) {
	base := os.TempDir()
	if len(base) > 40 {
		base = "/tmp"
	}
	return os.MkdirTemp(base, fmt.Sprintf("%s%d-", rigPrefix, os.Getpid()))
}

// removeStale removes the cgroups and directories of rigs whose test
// process no longer exists: it was killed before its cleanup ran (its rigs
// died with it, by Pdeathsig). A cgroup that still holds processes cannot
// be removed and stays; a directory with mounts below it is left alone.
func removeStale(cgroot string) {
	for _, parent := range []string{cgroot, os.TempDir(), "/tmp"} {
		entries, _ := os.ReadDir(parent)
		for _, e := range entries {
			rest, ok := strings.CutPrefix(e.Name(), rigPrefix)
			if !ok || !e.IsDir() {
				continue
			}
			pidText, _, _ := strings.Cut(rest, "-")
			pid, err := strconv.Atoi(pidText)
			if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
				continue
			}
			path := filepath.Join(parent, e.Name())
			if parent == cgroot {
				_ = removeCgroup(path)
			} else if len(mountsUnder(path)) == 0 {
				_ = os.RemoveAll(path)
			}
		}
	}
}

// mountsUnder lists the host's mount points at or below dir.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var found []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		// Field 5 is the mount point, with spaces and such octal-escaped;
		// dir (from MkdirTemp) needs no escaping.
		if mp := fields[4]; mp == dir || strings.HasPrefix(mp, dir+"/") {
			found = append(found, mp)
		}
	}
	return found
}
