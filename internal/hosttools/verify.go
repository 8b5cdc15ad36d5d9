package hosttools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// toolTimeout bounds one run of an offline systemd tool; a call takes tens
// of milliseconds, so reaching it means the tool hangs.
const toolTimeout = time.Minute

// Verify runs `systemd-analyze verify` on the unit files names in dir, all
// in one call, and fails the test if the tool reports anything at all.
//
// Any output is a failure, not only a non-zero exit: systemd-analyze exits 0
// for unknown keys, unknown values and lines without "=", which systemd then
// silently ignores, and no flag makes those warnings fatal.
//
// The units of dir may refer to each other (a .swap that Requires= the
// .service preparing its file) and to standard units such as
// multi-user.target; see VerifyFiles for how those references resolve.
func Verify(t testing.TB, dir string, names ...string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		Unavailable(t, "systemd-analyze not found (Debian package systemd)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	out, err := VerifyFiles(ctx, dir, names...)
	if err != nil {
		t.Fatalf("systemd-analyze verify %s: %v", strings.Join(names, " "), err)
	}
	if out != "" {
		t.Errorf("systemd-analyze verify %s reports problems (any output counts):\n%s", strings.Join(names, " "), out)
	}
}

// VerifyFiles runs `systemd-analyze verify --man=no` on the unit files names
// in dir and returns what the tool printed. Files are verified in one call:
// systemd-analyze loads and checks every file it is given independently and
// prefixes each message with the unit's name, so batching changes nothing
// but the cost (one call is ~55 ms, almost all of it start-up).
//
// References between units resolve in this order: first the units of dir,
// then the standard unit path of the host (/etc/systemd/system,
// /usr/lib/systemd/system, ...). systemd-analyze itself puts the directories
// of the given files first, but it also honours an inherited
// SYSTEMD_UNIT_PATH, which without a trailing ":" replaces the standard path
// and makes even sysinit.target unknown; the path is therefore set
// explicitly, as "dir:" (the trailing ":" appends the standard path).
// Note that verify also checks that every Exec*= binary exists on this host.
//
// A non-nil error means the tool could not be run or died; a unit that
// systemd would refuse shows in the output (with a non-zero exit that is
// folded into the returned text).
func VerifyFiles(ctx context.Context, dir string, names ...string) (string, error) {
	if len(names) == 0 {
		return "", errors.New("no unit files named")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	args := []string{"verify", "--man=no"}
	for _, n := range names {
		if !filepath.IsLocal(n) || strings.ContainsRune(n, filepath.Separator) {
			return "", fmt.Errorf("unit file name %q: want a file name inside %s", n, abs)
		}
		if _, err := os.Stat(filepath.Join(abs, n)); err != nil {
			return "", err
		}
		args = append(args, filepath.Join(abs, n))
	}
	cmd := exec.CommandContext(ctx, "systemd-analyze", args...)
	cmd.Dir = abs
	cmd.Env = toolEnv("SYSTEMD_UNIT_PATH=" + abs + ":")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.Exited() {
		return strings.TrimSpace(out.String()) + fmt.Sprintf("\n(exit status %d)", exit.ExitCode()), nil
	}
	if err != nil {
		return out.String(), err
	}
	return strings.TrimSpace(out.String()), nil
}

// Escape runs systemd-escape with args (for example "--path", "/mnt/data")
// and returns its output without the trailing newline. It fails the test if
// the tool fails.
func Escape(t testing.TB, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("systemd-escape"); err != nil {
		Unavailable(t, "systemd-escape not found (Debian package systemd)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "systemd-escape", args...)
	cmd.Env = toolEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("systemd-escape %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSuffix(string(out), "\n")
}

// toolEnv is a fixed environment for the systemd tools, so that nothing the
// developer's shell exports (SYSTEMD_UNIT_PATH, SYSTEMD_LOG_LEVEL, colors,
// a pager) changes what they print.
func toolEnv(extra ...string) []string {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8",
		"SYSTEMD_COLORS=0",
		"SYSTEMD_PAGER=",
		"SYSTEMD_LOG_COLOR=0",
	}
	return append(env, extra...)
}

// VerifyRoot runs `systemd-analyze verify --root=ROOT` on the units names,
// as they are installed in the file system tree at root (a package
// unpacked there), and fails the test if the tool reports anything at all
// (see Verify for why any output counts).
//
// With --root, the units, the Exec*= binaries they name and every unit they
// refer to are looked up inside root: verifying an installed unit proves
// that the binary it runs is where the package puts it. References to the
// standard units (multi-user.target, sysinit.target, ...) need those units
// in root as well; CopyStandardUnits puts the host's there.
func VerifyRoot(t testing.TB, root string, names ...string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		Unavailable(t, "systemd-analyze not found (Debian package systemd)")
	}
	if len(names) == 0 {
		t.Fatal("VerifyRoot: no units named")
	}
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	args := append([]string{"verify", "--man=no", "--root=" + root}, names...)
	cmd := exec.CommandContext(ctx, "systemd-analyze", args...)
	cmd.Env = toolEnv()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("systemd-analyze %s: %v", strings.Join(args, " "), err)
	}
	if text := strings.TrimSpace(string(out)); text != "" || err != nil {
		t.Errorf("systemd-analyze %s reports problems (any output counts; %v):\n%s", strings.Join(args, " "), err, text)
	}
}

// CopyStandardUnits copies the unit files of the host's systemd unit
// directory (/usr/lib/systemd/system, or /lib/systemd/system where /usr is
// not merged) into root's /usr/lib/systemd/system, keeping any file root
// has there already, so that VerifyRoot can resolve references to the
// standard targets. It fails the test if the host has no such directory.
func CopyStandardUnits(t testing.TB, root string) {
	t.Helper()
	var src string
	for _, d := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			src = d
			break
		}
	}
	if src == "" {
		Unavailable(t, "no systemd unit directory on this host (Debian package systemd)")
	}
	dst := filepath.Join(root, "usr", "lib", "systemd", "system")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		// Regular unit files only: the .wants directories and alias links
		// of the host say what the host enables, not what a unit means.
		if !e.Type().IsRegular() {
			continue
		}
		target := filepath.Join(dst, e.Name())
		if _, err := os.Lstat(target); err == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
