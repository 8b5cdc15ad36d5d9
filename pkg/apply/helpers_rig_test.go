package apply_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

func rigContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// dialRig connects an sdbus.Manager to the rig's systemd, reading the
// journal of the rig (not of the host) for failed jobs.
func dialRig(ctx context.Context, t testing.TB, r *systemdtest.Rig) *sdbus.Manager {
	t.Helper()
	m, err := rigManager(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// rigManager is dialRig for a caller that closes the Manager itself.
func rigManager(ctx context.Context, r *systemdtest.Rig) (*sdbus.Manager, error) {
	m, err := sdbus.Dial(ctx, r.Socket)
	if err != nil {
		return nil, err
	}
	m.RunJournalctl = func(ctx context.Context, args ...string) ([]byte, error) {
		out, err := r.Run(ctx, append([]string{"journalctl"}, args...)...)
		return []byte(out), err
	}
	return m, nil
}

func rigStatus(ctx context.Context, t *testing.T, s apply.Systemd, name string) apply.UnitStatus {
	t.Helper()
	st, err := s.Status(ctx, name)
	if err != nil {
		t.Fatalf("Status(%s): %v", name, err)
	}
	return st
}

// rigRuns counts the lines the lifecycle unit appended to its run log, in
// the rig's /var/lib.
func rigRuns(t *testing.T, r *systemdtest.Rig) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.Root, "var/lib/lifecycle.runs"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// rigNode is a rig driven by apply as hostprov apply drives a node: the
// rig's root as Options.Root (so paths are the node's), its systemd as the
// Systemd.
type rigNode struct {
	t    testing.TB
	r    *systemdtest.Rig
	m    *sdbus.Manager
	opts apply.Options
}

func newRigNode(ctx context.Context, t testing.TB) *rigNode {
	t.Helper()
	r := systemdtest.Start(t)
	n := &rigNode{t: t, r: r, m: dialRig(ctx, t, r), opts: apply.Options{Root: r.Root}}
	if err := apply.PrepareDirs(n.opts); err != nil {
		t.Fatal(err)
	}
	return n
}

// rigRender renders a spec's units as the CLI does.
func rigRender(t testing.TB, specYAML string) []compile.Unit {
	t.Helper()
	r, diags := compile.Build("hostprov.yaml", []byte(specYAML), compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatalf("spec: %v", diags)
	}
	return us
}

// plan plans a spec against the node's state and unit directory.
func (n *rigNode) plan(ctx context.Context, specYAML string) *apply.Plan {
	n.t.Helper()
	us := rigRender(n.t, specYAML)
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		n.t.Fatal(err)
	}
	p, err := apply.NewPlan(ctx, us, st, n.opts)
	if err != nil {
		n.t.Fatal(err)
	}
	return p
}

// apply plans and executes a spec, and returns the plan and the result;
// an error of Execute (a failed start) is returned, not fatal.
func (n *rigNode) apply(ctx context.Context, specYAML string) (*apply.Plan, *apply.Result, error) {
	n.t.Helper()
	p := n.plan(ctx, specYAML)
	res, err := apply.Execute(ctx, p, n.m, nil)
	if res == nil {
		n.t.Fatalf("Execute returned no result: %v", err)
	}
	return p, res, err
}

// mustApply is apply for a spec whose every step must succeed.
func (n *rigNode) mustApply(ctx context.Context, specYAML string) (*apply.Plan, *apply.Result) {
	n.t.Helper()
	p, res, err := n.apply(ctx, specYAML)
	if err != nil {
		n.t.Fatalf("apply: %v\nevents:\n%s", err, eventsText(res))
	}
	return p, res
}

func eventsText(res *apply.Result) string {
	var b strings.Builder
	for _, e := range res.Events {
		b.WriteString("  " + e.Text())
		if e.Error != "" {
			b.WriteString(": " + e.Error)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// installTools puts executables into the rig's /usr/local/bin, which units
// find first on systemd's default PATH. The rig's /usr is the host's,
// read-only; its /usr/local is its own. They are written into the rig's
// /tmp from here and installed from inside, where /usr/local is mounted.
func (n *rigNode) installTools(ctx context.Context, tools map[string]string) {
	n.t.Helper()
	dir := filepath.Join(n.r.Root, "tmp/tools")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		n.t.Fatal(err)
	}
	for name, script := range tools {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			n.t.Fatal(err)
		}
	}
	if _, err := n.r.Run(ctx, "sh", "-c", "mkdir -p /usr/local/bin && cp -p /tmp/tools/* /usr/local/bin/"); err != nil {
		n.t.Fatal(err)
	}
}

// readExample reads an example spec and replaces commands in it (old, new,
// old, new, ...), each of which must be there: the units stay as the
// example makes them, with harmless commands.
func readExample(t testing.TB, name string, replace ...string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../examples", name, "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("examples/%s no longer has %q: update the test's replacements", name, replace[i])
		}
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	return s
}

// checkUnitsApplied checks every unit of a spec against systemd: loaded;
// enabled when it has an [Install] section; a oneshot that remains after
// exit active with result success; the file on disk the rendered bytes.
func (n *rigNode) checkUnitsApplied(ctx context.Context, t *testing.T, specYAML string, except ...string) {
	t.Helper()
	us := rigRender(t, specYAML)
	for _, u := range us {
		if slices.Contains(except, u.Name) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(n.r.UnitDir, u.Name))
		if err != nil || !bytes.Equal(data, u.Contents) {
			t.Errorf("%s on disk is not what the spec renders (%v)", u.Name, err)
		}
		st := rigStatus(ctx, t, n.m, u.Name)
		if st.LoadState != "loaded" || st.NeedDaemonReload {
			t.Errorf("%s: load state %q, needs reload %v; want loaded, no", u.Name, st.LoadState, st.NeedDaemonReload)
		}
		text := string(u.Contents)
		if strings.Contains(text, "\n[Install]\n") && st.UnitFileState != "enabled" {
			t.Errorf("%s: unit file state %q, want enabled", u.Name, st.UnitFileState)
		}
		if strings.Contains(text, "\nType=oneshot\n") && strings.Contains(text, "\nRemainAfterExit=yes\n") &&
			(st.ActiveState != "active" || st.Result != "success") {
			t.Errorf("%s: %s, result %q; want active, success", u.Name, st.ActiveState, st.Result)
		}
	}
}

// newRigNodeWithHostprov is newRigNode with the hostprov binary, built with
// the build tags, installed in the rig as /opt/hostprov.
func newRigNodeWithHostprov(ctx context.Context, t testing.TB, tags ...string) *rigNode {
	t.Helper()
	bin := testbin.Hostprov(t, tags...)
	n := newRigNode(ctx, t)
	if err := n.r.Install(bin, "/opt/hostprov"); err != nil {
		t.Fatal(err)
	}
	return n
}
