package systemdtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
	"github.com/google/go-cmp/cmp"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startJob starts unit and returns the job's result ("done", "failed", ...).
func startJob(ctx context.Context, t *testing.T, conn *sddbus.Conn, unit string) string {
	t.Helper()
	done := make(chan string, 1)
	if _, err := conn.StartUnitContext(ctx, unit, "replace", done); err != nil {
		t.Fatalf("StartUnit %s: %v", unit, err)
	}
	select {
	case result := <-done:
		return result
	case <-ctx.Done():
		t.Fatalf("StartUnit %s: no job result: %v", unit, ctx.Err())
		return ""
	}
}

// unitState reads ActiveState and SubState of a unit and the Result of its
// type-specific interface.
func unitState(ctx context.Context, t *testing.T, conn *sddbus.Conn, unit, unitType string) (active, sub, result string) {
	t.Helper()
	props, err := conn.GetUnitPropertiesContext(ctx, unit)
	if err != nil {
		t.Fatalf("properties of %s: %v", unit, err)
	}
	res, err := conn.GetUnitTypePropertyContext(ctx, unit, unitType, "Result")
	if err != nil {
		t.Fatalf("Result of %s: %v", unit, err)
	}
	return props["ActiveState"].(string), props["SubState"].(string), res.Value.Value().(string)
}

// TestOneshotLifecycle drives a unit through what hostprov apply does:
// write, reload, enable, start, and reads the outcome back over D-Bus.
func TestOneshotLifecycle(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := Start(t)

	unit := `[Unit]
Description=rig test: a harmless oneshot

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/touch /var/lib/rig-test.done
ExecStart=/bin/echo hello from the rig

[Install]
WantedBy=multi-user.target
`
	if err := r.WriteUnit("rig-test.service", []byte(unit)); err != nil {
		t.Fatal(err)
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	hasInstall, changes, err := r.Conn.EnableUnitFilesContext(ctx, []string{"rig-test.service"}, false, false)
	if err != nil {
		t.Fatalf("EnableUnitFiles: %v", err)
	}
	if !hasInstall || len(changes) != 1 || changes[0].Type != "symlink" {
		t.Fatalf("EnableUnitFiles: install section %v, changes %+v; want one symlink", hasInstall, changes)
	}
	link := filepath.Join(r.UnitDir, "multi-user.target.wants/rig-test.service")
	if target, err := os.Readlink(link); err != nil || target != "/etc/systemd/system/rig-test.service" {
		t.Errorf("enable link %s -> %q (%v); want -> /etc/systemd/system/rig-test.service", link, target, err)
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}

	if job := startJob(ctx, t, r.Conn, "rig-test.service"); job != "done" {
		t.Errorf("start job result %q, want done", job)
	}
	active, sub, result := unitState(ctx, t, r.Conn, "rig-test.service", "Service")
	if active != "active" || sub != "exited" || result != "success" {
		t.Errorf("state %s/%s result %s; want active/exited success", active, sub, result)
	}
	if _, err := os.Stat(filepath.Join(r.Root, "var/lib/rig-test.done")); err != nil {
		t.Errorf("the unit's command did not run: %v", err)
	}
	out, err := r.Run(ctx, "systemctl", "is-enabled", "rig-test.service")
	if err != nil || strings.TrimSpace(out) != "enabled" {
		t.Errorf("systemctl is-enabled: %q, %v; want enabled", out, err)
	}
	// The unit's output reaches the rig's journal. --sync first: journald
	// writes stream output asynchronously.
	if _, err := r.Run(ctx, "journalctl", "--sync"); err != nil {
		t.Fatal(err)
	}
	out, err = r.Run(ctx, "journalctl", "--no-pager", "-o", "cat", "-u", "rig-test.service")
	if err != nil || !strings.Contains(out, "hello from the rig") {
		t.Errorf("journalctl -u rig-test.service: %q, %v; want the unit's output", out, err)
	}
}

// TestFailingOneshot shows that a failure reaches the test as data: the job
// result, the unit's state and the service's Result.
func TestFailingOneshot(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := Start(t)
	unit := "[Service]\nType=oneshot\nExecStart=/bin/false\n"
	if err := r.WriteUnit("rig-fail.service", []byte(unit)); err != nil {
		t.Fatal(err)
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	if job := startJob(ctx, t, r.Conn, "rig-fail.service"); job != "failed" {
		t.Errorf("start job result %q, want failed", job)
	}
	active, sub, result := unitState(ctx, t, r.Conn, "rig-fail.service", "Service")
	if active != "failed" || sub != "failed" || result != "exit-code" {
		t.Errorf("state %s/%s result %s; want failed/failed exit-code", active, sub, result)
	}
	status, err := r.Conn.GetServicePropertyContext(ctx, "rig-fail.service", "ExecMainStatus")
	if err != nil || status.Value.Value() != int32(1) {
		t.Errorf("ExecMainStatus %v (%v), want 1", status, err)
	}
}

// TestParsedCommandAndEnvironment proves the decoding of ExecStart and
// Environment: systemd's own parse of quoting, one argv per ExecStart= line.
func TestParsedCommandAndEnvironment(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := Start(t)
	unit := `[Service]
Type=oneshot
Environment="GREETING=hello world" PLAIN=x
Environment=EMPTY=
ExecStart=/bin/echo "a b" 'c'
ExecStart=/bin/true
`
	if err := r.WriteUnit("rig-argv.service", []byte(unit)); err != nil {
		t.Fatal(err)
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	argv, err := ExecStartArgv(ctx, r.Conn, "rig-argv.service")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"/bin/echo", "a b", "c"}, {"/bin/true"}}
	if diff := cmp.Diff(want, argv); diff != "" {
		t.Errorf("ExecStart argv (-want +got):\n%s", diff)
	}
	env, err := EnvironmentOf(ctx, r.Conn, "rig-argv.service")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"GREETING=hello world", "PLAIN=x", "EMPTY="}, env); diff != "" {
		t.Errorf("Environment (-want +got):\n%s", diff)
	}
}

// TestTwoRigsAtOnce runs two rigs side by side and checks that they share
// nothing: a unit of one is unknown to the other.
func TestTwoRigsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	a, b := Start(t), Start(t)
	if a.PID == b.PID || a.Root == b.Root || a.Socket == b.Socket {
		t.Fatalf("rigs share a PID, root or socket: %+v %+v", a, b)
	}
	if err := a.WriteUnit("only-in-a.service", []byte("[Service]\nType=oneshot\nExecStart=/bin/true\n")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Rig{a, b} {
		if err := r.Conn.ReloadContext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		r    *Rig
		want string
	}{{a, "loaded"}, {b, "not-found"}} {
		p, err := c.r.Conn.GetUnitPropertyContext(ctx, "only-in-a.service", "LoadState")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Value.Value(); got != c.want {
			t.Errorf("rig %d: LoadState %v, want %s", c.r.PID, got, c.want)
		}
	}
	if job := startJob(ctx, t, a.Conn, "only-in-a.service"); job != "done" {
		t.Errorf("start in rig a: %s", job)
	}
}

// TestParallelBoots boots several rigs concurrently, as tests of different
// packages and parallel tests do.
func TestParallelBoots(t *testing.T) {
	t.Parallel()
	for i := range 4 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			r := Start(t)
			out, err := r.Run(testContext(t), "systemctl", "is-system-running")
			if err != nil || strings.TrimSpace(out) != "running" {
				t.Errorf("is-system-running: %q, %v", out, err)
			}
		})
	}
}

// TestDial checks that a connection from Dial outlives the context it was
// dialled with, as documented: only connecting is bounded by it.
func TestDial(t *testing.T) {
	t.Parallel()
	r := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	conn, err := r.Dial(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(10 * time.Millisecond)
	v, err := conn.GetManagerProperty("Version")
	if err != nil || !strings.Contains(v, ".") {
		t.Errorf("Version over a connection whose dial context ended: %q, %v", v, err)
	}
}

// TestRunReportsFailure checks that Run returns the command's stderr in its
// error, and that the command runs inside the rig.
func TestRun(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := Start(t)
	out, err := r.Run(ctx, "cat", "/etc/hostname")
	if err != nil || out != "hostprov-rig\n" {
		t.Errorf("cat /etc/hostname in the rig: %q, %v", out, err)
	}
	pid1, err := r.Run(ctx, "cat", "/proc/1/comm")
	if err != nil || pid1 != "systemd\n" {
		t.Errorf("PID 1 in the rig: %q, %v; want systemd", pid1, err)
	}
	_, err = r.Run(ctx, "systemctl", "status", "no-such-unit.service")
	if err == nil || !strings.Contains(err.Error(), "could not be found") {
		t.Errorf("failing command: error %v, want one carrying systemctl's message", err)
	}
}

// TestCleanupLeavesNothing checks that when a test ends, its rig is gone:
// no process (not even a service that would run forever), no cgroup, no
// files.
func TestCleanupLeavesNothing(t *testing.T) {
	t.Parallel()
	var pid, sleeper int
	var cgroup, dir string
	t.Run("rig", func(t *testing.T) {
		ctx := testContext(t)
		r := Start(t)
		pid, dir = r.PID, filepath.Dir(r.Root)
		if err := r.WriteUnit("forever.service", []byte("[Service]\nExecStart=/bin/sleep infinity\n")); err != nil {
			t.Fatal(err)
		}
		if err := r.Conn.ReloadContext(ctx); err != nil {
			t.Fatal(err)
		}
		if job := startJob(ctx, t, r.Conn, "forever.service"); job != "done" {
			t.Fatalf("start forever.service: %s", job)
		}
		// MainPID would be the rig's pid; the host's is in the service's
		// cgroup.
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			t.Fatal(err)
		}
		cgroup = hostCgroupDir(t, string(cg))
		procs, err := os.ReadFile(filepath.Join(cgroup, "system.slice/forever.service/cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		sleeper, _ = strconv.Atoi(strings.TrimSpace(string(procs)))
		if sleeper == 0 {
			t.Fatalf("no process in forever.service's cgroup: %q", procs)
		}
	})
	for _, p := range []int{pid, sleeper} {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", p)); err == nil {
			t.Errorf("process %d of the rig still exists", p)
		}
	}
	for _, d := range []string{cgroup, dir} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s still exists", d)
		}
	}
}

// hostCgroupDir returns the rig's cgroup directory on the host, from the
// /proc/PID/cgroup of its PID 1 read from the host ("0::/hostprov-rig-.../init.scope").
func hostCgroupDir(t *testing.T, procCgroup string) string {
	t.Helper()
	for _, line := range strings.Split(procCgroup, "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
				if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
					return filepath.Join(root, filepath.Dir(rest))
				}
			}
		}
	}
	t.Fatalf("no cgroup2 line in %q", procCgroup)
	return ""
}

func TestWriteUnitStaysInUnitDir(t *testing.T) {
	r := &Rig{UnitDir: t.TempDir()}
	for _, bad := range []string{"../escape.service", "/etc/passwd", ""} {
		if err := r.WriteUnit(bad, []byte("x")); err == nil {
			t.Errorf("WriteUnit(%q) succeeded", bad)
		}
	}
	if err := r.WriteUnit("a.service.d/10-x.conf", []byte("[Unit]\n")); err != nil {
		t.Errorf("drop-in: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Join(r.UnitDir, "a.service.d"))
	if !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "10-x.conf" }) {
		t.Errorf("drop-in not written: %v", entries)
	}
}

// TestReboot reboots a rig: a new systemd on the same root, which keeps
// /etc and /var, starts with an empty /run, and starts the units enabled in
// multi-user.target, as a node's boot does.
func TestReboot(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	r := Start(t)
	unit := "[Unit]\nDescription=counts boots\n\n[Service]\nType=oneshot\nExecStart=/bin/sh -c 'echo boot >> /var/lib/boots'\n\n[Install]\nWantedBy=multi-user.target\n"
	if err := r.WriteUnit("count-boots.service", []byte(unit)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.UnitDir, "multi-user.target.wants"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/systemd/system/count-boots.service", filepath.Join(r.UnitDir, "multi-user.target.wants/count-boots.service")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Root, "run/forgotten"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	oldPID := r.PID
	if err := r.Reboot(); err != nil {
		t.Fatal(err)
	}
	if r.PID == oldPID || r.Conn == nil {
		t.Errorf("after the reboot: PID %d (was %d), conn %v", r.PID, oldPID, r.Conn)
	}
	data, err := os.ReadFile(filepath.Join(r.Root, "var/lib/boots"))
	if err != nil || string(data) != "boot\n" {
		t.Errorf("the enabled unit ran at the reboot: %q, %v; want once", data, err)
	}
	if _, err := os.Stat(filepath.Join(r.Root, "run/forgotten")); !os.IsNotExist(err) {
		t.Errorf("/run kept a file across the reboot: %v", err)
	}
	if active, _, result := unitState(ctx, t, r.Conn, "count-boots.service", "Service"); active != "inactive" || result != "success" {
		t.Errorf("count-boots.service after the reboot: %s, %s; want inactive, success", active, result)
	}
	out, err := r.Run(ctx, "cat", "/etc/hostname")
	if err != nil || out != "hostprov-rig\n" {
		t.Errorf("Run after the reboot: %q, %v", out, err)
	}
}
