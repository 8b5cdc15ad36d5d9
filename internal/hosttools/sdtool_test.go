package hosttools

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// writeUnits writes unit files into a new directory and returns it.
func writeUnits(t *testing.T, units map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range units {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func needAnalyze(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		Unavailable(t, "systemd-analyze not found (Debian package systemd)")
	}
}

// siblings is a set of units that refer to each other and to standard
// targets, as hostprov generates them: a swap file made by a oneshot, a
// mount, a target grouping them, a template and its instance.
var siblings = map[string]string{
	"mkswap-swapfile.service": `[Unit]
Description=make the swap file
ConditionPathExists=!/swapfile
[Service]
Type=oneshot
ExecStart=/usr/bin/fallocate -l 64m /swapfile
ExecStart=/usr/sbin/mkswap /swapfile
`,
	"swapfile.swap": `[Unit]
Requires=mkswap-swapfile.service
After=mkswap-swapfile.service
[Swap]
What=/swapfile
[Install]
WantedBy=swap.target
`,
	"mnt-data.mount": `[Mount]
What=tmpfs
Where=/mnt/data
Type=tmpfs
[Install]
WantedBy=multi-user.target
`,
	"hostprov.target": `[Unit]
Description=all hooks
Wants=swapfile.swap mnt-data.mount
After=network-online.target
`,
	"agent@.service": `[Service]
ExecStart=/bin/echo %i
`,
}

func TestVerifyResolvesSiblings(t *testing.T) {
	needAnalyze(t)
	dir := writeUnits(t, siblings)
	// An inherited SYSTEMD_UNIT_PATH must not change the outcome.
	t.Setenv("SYSTEMD_UNIT_PATH", "/nonexistent")
	Verify(t, dir, "swapfile.swap", "mkswap-swapfile.service", "mnt-data.mount", "hostprov.target", "agent@.service")
}

// TestVerifyFindsProblems lists what must fail: what systemd refuses (non-zero
// exit) and what it only warns about (exit 0, but output).
func TestVerifyFindsProblems(t *testing.T) {
	needAnalyze(t)
	cases := []struct {
		name, unit, want string
	}{
		{"no-exec.service", "[Service]\nType=oneshot\n", "no ExecStart"},
		{"unknown-key.service", "[Service]\nExecStart=/bin/true\nExecStrat=/bin/true\n", "Unknown key 'ExecStrat'"},
		{"no-equals.service", "[Service]\nExecStart=/bin/true\njust words\n", "Missing '='"},
		{"lonely.swap", "[Unit]\nRequires=not-here.service\n[Swap]\nWhat=/lonely\n", "not-here.service not found"},
		{"wrong-name.mount", "[Mount]\nWhat=tmpfs\nWhere=/mnt/other\nType=tmpfs\n", "Where= setting doesn't match unit name"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeUnits(t, map[string]string{c.name: c.unit})
			out, err := VerifyFiles(ctx, dir, c.name)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("output %q does not contain %q", out, c.want)
			}
		})
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// TestVerifyFailsOnWarnings checks the point of Verify: a unit that
// systemd-analyze passes with exit 0 but warns about fails the test.
func TestVerifyFailsOnWarnings(t *testing.T) {
	needAnalyze(t)
	dir := writeUnits(t, map[string]string{
		"typo.service": "[Service]\nExecStart=/bin/true\nRestartSec=5x\n",
	})
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Verify(rec, dir, "typo.service")
	}()
	<-done
	if len(rec.failures) != 1 || !strings.Contains(rec.failures[0], "typo.service:3: Failed to parse sec value, ignoring: 5x") {
		t.Errorf("Verify failures %q; want one quoting the warning", rec.failures)
	}
}

func TestVerifyFilesRejectsPaths(t *testing.T) {
	for _, name := range []string{"../x.service", "sub/x.service", "/etc/x.service"} {
		if _, err := VerifyFiles(context.Background(), t.TempDir(), name); err == nil {
			t.Errorf("VerifyFiles(%q) accepted a path outside the directory", name)
		}
	}
}

// TestVerifyBatch verifies 30 units in one call and logs how long that
// takes next to a call for one unit: nearly all of a call is start-up, the
// reason Verify batches.
func TestVerifyBatch(t *testing.T) {
	needAnalyze(t)
	units := map[string]string{}
	var names []string
	for i := range 30 {
		name := fmt.Sprintf("hook-%02d.service", i)
		units[name] = fmt.Sprintf("[Unit]\nAfter=network-online.target\n[Service]\nType=oneshot\nExecStart=/bin/echo %d\n[Install]\nWantedBy=multi-user.target\n", i)
		names = append(names, name)
	}
	dir := writeUnits(t, units)
	t0 := time.Now()
	Verify(t, dir, names...)
	batch := time.Since(t0)
	t0 = time.Now()
	Verify(t, dir, names[0])
	t.Logf("systemd-analyze verify: 30 units in one call %v, one unit %v", batch.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
}

func TestEscape(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--path", "/mnt/data disk"}, `mnt-data\x20disk`},
		{[]string{"--path", "--suffix=swap", "/var/swap-1"}, `var-swap\x2d1.swap`},
		{[]string{"--template=agent@.service", "eth0 1"}, `agent@eth0\x201.service`},
	} {
		if got := Escape(t, c.args...); got != c.want {
			t.Errorf("systemd-escape %q = %q, want %q", c.args, got, c.want)
		}
	}
}
