package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/systemdtest"
)

// TestWatchRig boots a real systemd with the package's three units as they
// are in packaging/systemd and proves the wiring: the boot service runs
// once and stays active, and each file added to, changed in or removed
// from /etc/hostprov/hooks.d runs the apply again (through
// hostprov-reapply.service). Drop-ins replace only the ExecStart= lines, with
// a command that records which unit ran, so that the test does not depend
// on what hostprov apply does.
func TestWatchRig(t *testing.T) {
	if testing.Short() {
		t.Skip("boots systemd; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := startWatchRig(ctx, t)
	w.start("hostprov-apply.service")
	w.start("hostprov-apply.path")
	if got := w.applies(1); strings.Join(got, " ") != "hostprov-apply" {
		t.Fatalf("after boot, the applies are %q, want the boot service's alone", got)
	}
	// The boot service stays active, as units ordered after it expect.
	if got := w.activeState("hostprov-apply.service"); got != "active" {
		t.Errorf("hostprov-apply.service is %s after its run, want active (RemainAfterExit=yes)", got)
	}
	w.checkChanges()
	w.checkBurst()
}

// watchRig is a rig with the package's units, whose apply services record
// which of them ran in /var/log/applies.
type watchRig struct {
	t     *testing.T
	ctx   context.Context
	r     *systemdtest.Rig
	hooks string // the rig's /etc/hostprov/hooks.d, on the host
}

// startWatchRig starts a rig with the package's units as they are in
// packaging/systemd, and drop-ins that replace the ExecStart= lines of the
// apply services with a command that records which unit ran.
func startWatchRig(ctx context.Context, t *testing.T) *watchRig {
	r := systemdtest.Start(t)
	for _, u := range units {
		data, err := os.ReadFile(filepath.Join(repoRoot, "packaging/systemd", u))
		if err != nil {
			t.Fatal(err)
		}
		if err := r.WriteUnit(u, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"hostprov-apply.service", "hostprov-reapply.service"} {
		name := strings.TrimSuffix(u, ".service")
		dropIn := "[Service]\nExecStart=\nExecStart=/bin/sh -c 'echo " + name + " >> /var/log/applies'\n"
		if err := r.WriteUnit(u+".d/test.conf", []byte(dropIn)); err != nil {
			t.Fatal(err)
		}
	}
	hooks := filepath.Join(r.Root, "etc/hostprov/hooks.d")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	return &watchRig{t: t, ctx: ctx, r: r, hooks: hooks}
}

// start starts unit and waits for the job to be done.
func (w *watchRig) start(unit string) {
	w.t.Helper()
	done := make(chan string, 1)
	if _, err := w.r.Conn.StartUnitContext(w.ctx, unit, "replace", done); err != nil {
		w.t.Fatalf("start %s: %v", unit, err)
	}
	select {
	case res := <-done:
		if res != "done" {
			w.t.Fatalf("start %s: %s", unit, res)
		}
	case <-w.ctx.Done():
		w.t.Fatalf("start %s: %v", unit, w.ctx.Err())
	}
}

// applies waits until the record has n lines, for 10 seconds at most
// (a run takes milliseconds), and returns them.
func (w *watchRig) applies(n int) []string {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := w.r.Run(w.ctx, "cat", "/var/log/applies")
		lines := strings.Fields(out)
		if len(lines) >= n || time.Now().After(deadline) {
			return lines
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// activeState is the ActiveState of unit.
func (w *watchRig) activeState(unit string) string {
	w.t.Helper()
	prop, err := w.r.Conn.GetUnitPropertyContext(w.ctx, unit, "ActiveState")
	if err != nil {
		w.t.Fatal(err)
	}
	return strings.Trim(prop.Value.String(), `"`)
}

// waitInactive waits until the reapply service has exited. A change
// is made only then: systemd 252 sets its inotify watches up again
// when the triggered unit exits, and a change in that instant is lost
// (the next change, or the next boot, applies it).
func (w *watchRig) waitInactive() {
	w.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if w.activeState("hostprov-reapply.service") == "inactive" {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.t.Fatal("hostprov-reapply.service is still active after 10s")
}

// checkChanges checks that each file added to, changed in or removed from
// hooks.d runs the apply again, through hostprov-reapply.service.
func (w *watchRig) checkChanges() {
	t := w.t
	spec := filepath.Join(w.hooks, "node.yaml")
	steps := []struct {
		what   string
		change func() error
	}{
		{"a spec file added", func() error { return os.WriteFile(spec, []byte("hooks: []\n"), 0o644) }},
		{"a spec file changed", func() error { return os.WriteFile(spec, []byte("hooks: [] # changed\n"), 0o644) }},
		{"a spec file replaced by a rename", func() error {
			tmp := filepath.Join(w.hooks, ".node.yaml.tmp")
			if err := os.WriteFile(tmp, []byte("hooks: [] # renamed\n"), 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, spec)
		}},
		{"a spec file removed", func() error { return os.Remove(spec) }},
	}
	for i, s := range steps {
		// Each change is made once the apply of the one before has run:
		// changes made during an apply are folded into one more run.
		if err := s.change(); err != nil {
			t.Fatal(err)
		}
		want := i + 2
		got := w.applies(want)
		if len(got) < want || got[want-1] != "hostprov-reapply" {
			t.Fatalf("after %s, the applies are %q, want run %d by hostprov-reapply", s.what, got, want)
		}
		// The reapply service exits, so that the next change starts it
		// again.
		w.waitInactive()
	}
	if got := w.applies(0); len(got) != len(steps)+1 {
		t.Errorf("applies %q: want one per change and the boot's, %d in all", got, len(steps)+1)
	}
}

// checkBurst checks that a configuration tool that drops a dozen files
// one after another does not stop the watch: systemd's start rate limit
// would fail the path unit after five starts in ten seconds, and no change
// after that would be applied.
func (w *watchRig) checkBurst() {
	t := w.t
	before := len(w.applies(0))
	for i := range 12 {
		name := filepath.Join(w.hooks, "burst"+strings.Repeat("x", i)+".yaml")
		if err := os.WriteFile(name, []byte("hooks: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// Each write after the apply of the one before has ended.
		if got := w.applies(before + i + 1); len(got) < before+i+1 {
			status, _ := w.r.Run(w.ctx, "systemctl", "status", "--no-pager", "hostprov-apply.path", "hostprov-reapply.service")
			t.Errorf("change %d of a burst ran no apply:\n%s", i+1, status)
			break
		}
		w.waitInactive()
	}
	if got := w.activeState("hostprov-apply.path"); got != "active" {
		t.Errorf("after a burst of changes, hostprov-apply.path is %s, want active", got)
	}
}
