package apply_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/apply/applytest"
)

const twoHooks = `
- name: hello
  exec: [/bin/echo, hello]
- name: prep
  type: oneshot
  exec: [/bin/true]
`

func checkCalls(t *testing.T, got []string, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("systemd calls (-want +got):\n%s", diff)
	}
}

func TestFirstApply(t *testing.T) {
	n := newNode(t)
	p := n.plan(twoHooks)
	if got, want := p.Summary(), "Plan: 2 to add, 0 to change, 0 to remove."; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	res, calls := n.mustApply(twoHooks)
	checkCalls(t, calls, "enable hello.service prep.service", "reload", "start hello.service", "start prep.service")
	if c := res.Counts; c.Writes != 2 || c.Reloads != 1 || c.Enables != 2 || c.Starts != 2 {
		t.Errorf("counts %+v", c)
	}
	if !strings.Contains(n.read("hello.service"), "ExecStart=/bin/echo hello") {
		t.Errorf("hello.service:\n%s", n.read("hello.service"))
	}
	fi, err := os.Stat(n.unitPath("hello.service"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("hello.service mode: %v %v", fi.Mode(), err)
	}
	st := n.state()
	if len(st.Units) != 2 || st.Units[0].Name != "hello.service" || st.Units[0].Hook != "hello" || st.Units[0].Incomplete {
		t.Fatalf("state: %+v", st.Units)
	}
	if f := st.Units[0].Files; len(f) != 1 || f[0].Path != "hello.service" || len(f[0].SHA256) != 64 || f[0].Next != "" {
		t.Errorf("state files: %+v", f)
	}
	sfi, err := os.Stat(apply.StatePath(n.opts.StateDirPath()))
	if err != nil || sfi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode: %v %v", sfi.Mode(), err)
	}
}

func TestReapplyDoesNothing(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	p := n.plan(twoHooks)
	if p.HasChanges() || p.Summary() != "No changes." || len(p.Actions) != 0 {
		t.Errorf("re-plan: %s, actions %v", p.Summary(), p.Actions)
	}
	res, calls := n.mustApply(twoHooks)
	checkCalls(t, calls)
	if c := res.Counts; c.Writes != 0 || c.Reloads != 0 || c.Restarts != 0 || c.Unchanged != 2 || c.StateSaves != 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestChangeBody(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]", "[/bin/echo, bonjour]", 1)
	p := n.plan(changed)
	if got := p.Summary(); got != "Plan: 0 to add, 1 to change, 0 to remove." {
		t.Errorf("summary %q", got)
	}
	res, calls := n.mustApply(changed)
	checkCalls(t, calls, "reload", "restart hello.service")
	if c := res.Counts; c.Writes != 1 || c.Reloads != 1 || c.Restarts != 1 || c.Enables != 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestOneshotIsRerun(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	changed := strings.Replace(twoHooks, "[/bin/true]", "[/bin/false]", 1)
	p := n.plan(changed)
	var reason string
	for _, a := range p.Actions {
		if a.Kind == apply.ActRestart {
			reason = a.Reason
		}
	}
	if !strings.Contains(reason, "runs again") {
		t.Errorf("restart reason %q, want a oneshot re-run", reason)
	}
}

func TestChangeOnlyInstall(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]\n", "[/bin/echo, hello]\n  wantedBy: [graphical.target]\n", 1)
	res, calls := n.mustApply(changed)
	checkCalls(t, calls, "disable hello.service", "enable hello.service", "reload")
	if c := res.Counts; c.Writes != 1 || c.Restarts != 0 || c.Starts != 0 {
		t.Errorf("counts %+v", c)
	}
}

// TestChangeOnlyInstallWithDropin: a unit's drop-in does not hide a change
// of its [Install]: the unit is enabled again, not restarted.
func TestChangeOnlyInstallWithDropin(t *testing.T) {
	n := newNode(t)
	withDropin := strings.Replace(twoHooks, "[/bin/echo, hello]\n", "[/bin/echo, hello]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=A=1\\n\"\n", 1)
	n.mustApply(withDropin)
	changed := strings.Replace(withDropin, "[/bin/echo, hello]\n", "[/bin/echo, hello]\n  wantedBy: [graphical.target]\n", 1)
	res, calls := n.mustApply(changed)
	checkCalls(t, calls, "disable hello.service", "enable hello.service", "reload")
	if c := res.Counts; c.Writes != 1 || c.Restarts != 0 || c.Starts != 0 {
		t.Errorf("counts %+v", c)
	}
}

func TestCommentOnlyChangeWritesWithoutRestart(t *testing.T) {
	n := newNode(t)
	raw := "- name: r.service\n  useRawName: true\n  useRawManifest: true\n  manifest: |\n    [Service]\n    ExecStart=/bin/true\n    [Install]\n    WantedBy=multi-user.target\n"
	n.mustApply(raw)
	_, calls := n.mustApply(strings.Replace(raw, "    [Service]\n", "    # a comment\n    [Service]\n", 1))
	checkCalls(t, calls, "reload")
}

func TestEnabledFalse(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	_, calls := n.mustApply(twoHooks + "  enabled: false\n")
	checkCalls(t, calls, "stop prep.service", "disable prep.service", "reload")
	if n.sd.Active("prep.service") || n.sd.Enabled("prep.service") {
		t.Errorf("prep.service still active or enabled: %v", n.sd.State())
	}
	// And back.
	_, calls = n.mustApply(twoHooks)
	checkCalls(t, calls, "enable prep.service", "reload", "start prep.service")
}

func TestMask(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	masked := "- name: hello\n  exec: [/bin/echo, hello]\n- name: prep.service\n  mask: true\n"
	p := n.plan(masked)
	if got := p.Summary(); got != "Plan: 0 to add, 1 to change, 0 to remove." {
		t.Errorf("summary %q", got)
	}
	_, calls := n.mustApply(masked)
	checkCalls(t, calls, "stop prep.service", "disable prep.service", "mask prep.service", "reload")
	if n.exists("prep.service") {
		t.Error("prep.service's file is still there")
	}
	if !n.sd.Masked("prep.service") {
		t.Error("prep.service is not masked")
	}
	// Unmask again: the file comes back, enabled and started.
	_, calls = n.mustApply(twoHooks)
	checkCalls(t, calls, "unmask prep.service", "enable prep.service", "reload", "start prep.service")
}

func TestRemoveHook(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks + "  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=A=1\\n\"\n")
	if !n.exists("prep.service.d/10-x.conf") {
		t.Fatal("drop-in not written")
	}
	// Modes: the drop-in directory 0755, the drop-in 0644, whatever the umask.
	for path, mode := range map[string]os.FileMode{"prep.service.d": 0o755, "prep.service.d/10-x.conf": 0o644} {
		if fi, err := os.Stat(n.unitPath(path)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: mode %v, %v; want %04o", path, fi.Mode(), err, mode)
		}
	}
	only := "- name: hello\n  exec: [/bin/echo, hello]\n"
	p := n.plan(only)
	if got := p.Summary(); got != "Plan: 0 to add, 0 to change, 1 to remove." {
		t.Errorf("summary %q", got)
	}
	res, calls := n.mustApply(only)
	checkCalls(t, calls, "stop prep.service", "disable prep.service", "reload")
	if c := res.Counts; c.Removes != 2 {
		t.Errorf("counts %+v", c)
	}
	if n.exists("prep.service") || n.exists("prep.service.d") {
		t.Error("prep.service or its drop-in directory is still there")
	}
	if st := n.state(); st.Unit("prep.service") != nil {
		t.Errorf("prep.service still in the state")
	}
}

func TestNoPrune(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	only := "- name: hello\n  exec: [/bin/echo, hello]\n"
	p := n.plan(only, noPrune)
	if p.HasChanges() {
		t.Errorf("--no-prune plan: %s", p.Summary())
	}
	_, calls := n.mustApply(only, noPrune)
	checkCalls(t, calls)
	if !n.exists("prep.service") || n.state().Unit("prep.service") == nil {
		t.Error("--no-prune removed prep.service")
	}
}

func TestRemovePlan(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	p, err := apply.NewRemovePlan(context.Background(), []string{"prep"}, n.state(), n.opts)
	if err != nil {
		t.Fatal(err)
	}
	n.sd.Reset()
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
		t.Fatal(err)
	}
	checkCalls(t, n.sd.Log(), "stop prep.service", "disable prep.service", "reload")
	if n.exists("prep.service") || !n.exists("hello.service") {
		t.Error("remove prep removed the wrong files")
	}
	if _, err := apply.NewRemovePlan(context.Background(), []string{"nope"}, n.state(), n.opts); err == nil || !strings.Contains(err.Error(), "hello.service") {
		t.Errorf("removing an unknown hook: %v", err)
	}
}

func TestForeignFile(t *testing.T) {
	n := newNode(t)
	os.WriteFile(n.unitPath("hello.service"), []byte("[Service]\nExecStart=/bin/mine\n"), 0o644)
	p := n.plan(twoHooks)
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].String(), "--adopt") {
		t.Fatalf("conflicts: %v", p.Conflicts)
	}
	_, calls, err := n.apply(twoHooks)
	if err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("apply over a foreign file: %v", err)
	}
	checkCalls(t, calls)
	if got := n.read("hello.service"); got != "[Service]\nExecStart=/bin/mine\n" {
		t.Errorf("foreign file changed:\n%s", got)
	}
	if n.exists("prep.service") {
		t.Error("a conflicting plan wrote files")
	}
	// --adopt takes it over.
	n.mustApply(twoHooks, adopt)
	if !strings.Contains(n.read("hello.service"), "/bin/echo hello") {
		t.Error("--adopt did not write the file")
	}
	if n.plan(twoHooks).HasChanges() {
		t.Error("not converged after --adopt")
	}
}

func TestForeignUnitOfAnotherNameIsUntouched(t *testing.T) {
	n := newNode(t)
	os.WriteFile(n.unitPath("other.service"), []byte("[Service]\nExecStart=/bin/other\n"), 0o644)
	n.mustApply(twoHooks)
	n.mustApply("")
	if got := n.read("other.service"); got != "[Service]\nExecStart=/bin/other\n" {
		t.Errorf("other.service changed: %q", got)
	}
}

func TestDrift(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	edited := "# edited by hand\n" + n.read("hello.service")
	os.WriteFile(n.unitPath("hello.service"), []byte(edited), 0o644)
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]", "[/bin/echo, bonjour]", 1)
	p := n.plan(changed)
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0].Message, "--force") || len(p.Conflicts) != 0 {
		t.Fatalf("warnings %v conflicts %v", p.Warnings, p.Conflicts)
	}
	res, calls := n.mustApply(changed)
	checkCalls(t, calls)
	if res.Counts.Kept != 1 || n.read("hello.service") != edited {
		t.Errorf("drifted file overwritten without --force (counts %+v)", res.Counts)
	}
	// --force overwrites it, and then all is as the spec says.
	_, calls = n.mustApply(changed, force)
	checkCalls(t, calls, "reload", "restart hello.service")
	if !strings.Contains(n.read("hello.service"), "bonjour") {
		t.Error("--force did not overwrite")
	}
	if p := n.plan(changed); p.HasChanges() || len(p.Warnings) != 0 {
		t.Errorf("after --force: %s %v", p.Summary(), p.Warnings)
	}
}

func TestCorruptState(t *testing.T) {
	n := newNode(t)
	path := apply.StatePath(n.opts.StateDirPath())
	for name, data := range map[string]string{
		"garbage":     "{not json",
		"version":     `{"version": 99, "units": []}`,
		"escape":      `{"version": 1, "units": [{"name": "a.service", "files": [{"path": "../../etc/shadow"}]}]}`,
		"other-unit":  `{"version": 1, "units": [{"name": "a.service", "files": [{"path": "b.service"}]}]}`,
		"bad-name":    `{"version": 1, "units": [{"name": "../x.service"}]}`,
		"bad-hash":    `{"version": 1, "units": [{"name": "a.service", "files": [{"path": "a.service", "sha256": "xyz"}]}]}`,
		"unknown-key": `{"version": 1, "units": [], "extra": 1}`,
	} {
		os.WriteFile(path, []byte(data), 0o600)
		_, err := apply.LoadState(path)
		if err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), "--adopt") {
			t.Errorf("%s: %v", name, err)
		}
	}
	os.Remove(path)
	if st, err := apply.LoadState(path); err != nil || len(st.Units) != 0 {
		t.Errorf("missing state: %v %v", st, err)
	}
}

func TestStateForAnotherUnitDir(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	us, _ := spec(t, twoHooks)
	opts := n.opts
	opts.UnitDir = "/run/systemd/system"
	if _, err := apply.NewPlan(context.Background(), us, n.state(), opts); err == nil || !strings.Contains(err.Error(), "--unit-dir /etc/systemd/system") {
		t.Errorf("plan with another unit dir: %v", err)
	}
}

func TestFailedStart(t *testing.T) {
	n := newNode(t)
	n.sd.FailOn("start", "prep.service", errors.New("job failed"))
	_, calls, err := n.apply(twoHooks)
	if err == nil || !strings.Contains(err.Error(), "result exit-code, exit status 1") || !strings.Contains(err.Error(), "run hostprov apply again") {
		t.Fatalf("failed start: %v", err)
	}
	checkCalls(t, calls, "enable hello.service prep.service", "reload", "start hello.service", "start prep.service")
	// A failed start is a result of an apply that finished, not an
	// interrupted apply.
	prep := n.state().Unit("prep.service")
	if !n.exists("prep.service") || prep.Incomplete || !prep.Failed || n.state().Unit("hello.service").Failed {
		t.Errorf("after a failed start: files or state wrong: %+v", n.state().Units)
	}
	// The next apply tries the start again, and only that: no link
	// changes, no reload, no restart of an "unfinished" apply.
	var acts []string
	for _, a := range n.plan(twoHooks).Actions {
		acts = append(acts, string(a.Kind)+" "+a.Unit+" ("+a.Reason+")")
	}
	if want := "start prep.service (retry: it failed to start at the last apply)"; join(acts) != want {
		t.Errorf("re-apply after a failed start plans %q, want %q", join(acts), want)
	}
	// It fails again: still failed, and retried again.
	_, calls, err = n.apply(twoHooks)
	checkCalls(t, calls, "start prep.service")
	if err == nil || !n.state().Unit("prep.service").Failed {
		t.Errorf("a second failed start: %v, state %+v", err, n.state().Unit("prep.service"))
	}
	// With --no-start nothing is started and the failure stays recorded.
	_, calls = n.mustApply(twoHooks, func(o *apply.Options) { o.NoStart = true })
	checkCalls(t, calls)
	if !n.state().Unit("prep.service").Failed {
		t.Error("--no-start forgot the failed start")
	}
	n.sd.FailOn("start", "prep.service", nil)
	_, calls = n.mustApply(twoHooks)
	checkCalls(t, calls, "start prep.service")
	if n.state().Unit("prep.service").Failed {
		t.Error("still marked failed after a successful start")
	}
	if n.plan(twoHooks).HasChanges() {
		t.Error("not converged")
	}
}

// TestFailedStartThenChanged: a unit that failed to start and whose hook
// then changed is restarted for the change, once; its failure is not
// retried on top.
func TestFailedStartThenChanged(t *testing.T) {
	n := newNode(t)
	n.sd.FailOn("start", "prep.service", errors.New("job failed"))
	if _, _, err := n.apply(twoHooks); err == nil {
		t.Fatal("the start did not fail")
	}
	n.sd.FailOn("start", "prep.service", nil)
	changed := strings.Replace(twoHooks, "exec: [/bin/true]", "exec: [/bin/true, again]", 1)
	if changed == twoHooks {
		t.Fatal("twoHooks changed; update this test")
	}
	_, calls := n.mustApply(changed)
	checkCalls(t, calls, "reload", "restart prep.service")
	if n.state().Unit("prep.service").Failed {
		t.Error("still marked failed")
	}
}

func TestTemplateStartsDefaultInstance(t *testing.T) {
	n := newNode(t)
	tmpl := "- name: w@.service\n  specifiers: true\n  exec: [/bin/echo, \"%i\"]\n  directives:\n    Install: [DefaultInstance=one]\n- name: t@.service\n  specifiers: true\n  exec: [/bin/echo, \"%i\"]\n  wantedBy: []\n"
	_, calls := n.mustApply(tmpl)
	checkCalls(t, calls, "enable w@.service t@.service", "reload", "start w@one.service")
}

func TestDropinOnExistingUnit(t *testing.T) {
	n := newNode(t)
	d := "- name: docker\n  dropins:\n  - name: 10-proxy.conf\n    contents: \"[Service]\\nEnvironment=HTTP_PROXY=http://a\\n\"\n"
	res, calls := n.mustApply(d)
	checkCalls(t, calls, "reload") // docker is not running: nothing to restart
	if res.Counts.Skipped != 1 {
		t.Errorf("counts %+v", res.Counts)
	}
	n.sd.SetActive("docker.service", true)
	_, calls = n.mustApply(strings.Replace(d, "http://a", "http://b", 1))
	checkCalls(t, calls, "reload", "restart docker.service")
	// Removing the hook removes the drop-in and restarts docker, but
	// neither stops nor disables a unit hostprov did not install.
	_, calls = n.mustApply("")
	checkCalls(t, calls, "reload", "restart docker.service")
	if n.exists("docker.service.d") {
		t.Error("the drop-in directory is still there")
	}
}

func TestPlanText(t *testing.T) {
	n := newNode(t)
	n.mustApply(twoHooks)
	var b bytes.Buffer
	changed := strings.Replace(twoHooks, "[/bin/echo, hello]", "[/bin/echo, bonjour]", 1)
	changed = strings.Replace(changed, "- name: prep\n  type: oneshot\n  exec: [/bin/true]\n", "- name: new\n  exec: [/bin/sleep, infinity]\n", 1)
	if err := n.plan(changed).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "plan.txt"), b.Bytes())
}

// TestMaskUnitNotRunning masks a unit of the image that is not running (or
// not there): no stop, which systemd would refuse for an unknown unit.
func TestMaskUnitNotRunning(t *testing.T) {
	n := newNode(t)
	res, calls := n.mustApply("- name: update-engine.service\n  mask: true\n")
	checkCalls(t, calls, "mask update-engine.service", "reload")
	if res.Counts.Skipped != 1 || res.Counts.Stops != 0 {
		t.Errorf("counts %+v", res.Counts)
	}
	_, calls = n.mustApply("")
	checkCalls(t, calls, "unmask update-engine.service", "reload")
}

// queueRecorder wraps the fake to record when a job is queued and when
// Execute waits for it.
type queueRecorder struct {
	*applytest.Fake
	mu     sync.Mutex
	events []string
}

func (q *queueRecorder) Queue(ctx context.Context, kind apply.ActionKind, name string) (func() error, error) {
	wait, err := q.Fake.Queue(ctx, kind, name)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.events = append(q.events, "queue "+name)
	return func() error {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.events = append(q.events, "wait "+name)
		return wait()
	}, err
}

// sequential hides the fake's Queue: a Systemd that can only wait.
type sequential struct{ apply.Systemd }

// TestStartsQueuedTogether: the starts of an apply are queued in plan order
// before the first is waited for (so that systemd runs them in parallel,
// in the order of their units' After=), at most 64 at a time, and logged in
// plan order; a Systemd that cannot queue starts one at a time.
func TestStartsQueuedTogether(t *testing.T) {
	var b strings.Builder
	const hooks = 70
	for i := range hooks {
		fmt.Fprintf(&b, "- name: h%02d\n  type: oneshot\n  exec: [/bin/true]\n", i)
	}
	n := newNode(t)
	q := &queueRecorder{Fake: n.sd}
	res, err := apply.Execute(context.Background(), n.plan(b.String()), q, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 64 {
		want = append(want, fmt.Sprintf("queue h%02d.service", i))
	}
	for i := 64; i < hooks; i++ {
		want = append(want, fmt.Sprintf("wait h%02d.service", i-64), fmt.Sprintf("queue h%02d.service", i))
	}
	for i := hooks - 64; i < hooks; i++ {
		want = append(want, fmt.Sprintf("wait h%02d.service", i))
	}
	if diff := cmp.Diff(want, q.events); diff != "" {
		t.Errorf("queued and waited (-want +got):\n%s", diff)
	}
	var started []string
	for _, ev := range res.Events {
		if ev.Action == apply.EvStarted {
			started = append(started, ev.Unit)
		}
	}
	if len(started) != hooks || !sort.StringsAreSorted(started) {
		t.Errorf("started events not in plan order: %v", started)
	}

	// Without Queue: one at a time, the same outcome.
	n2 := newNode(t)
	res2, err := apply.Execute(context.Background(), n2.plan(b.String()), sequential{n2.sd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(res.Events, res2.Events); diff != "" {
		t.Errorf("events without Queue differ (-queued +sequential):\n%s", diff)
	}
}

// TestQueuedStartFails: a queued start that fails is logged with the
// unit's result, the others are started, and the unit is marked failed.
func TestQueuedStartFails(t *testing.T) {
	n := newNode(t)
	n.sd.FailOn("start", "prep.service", errors.New("job failed"))
	res, _, err := n.apply(twoHooks + "- name: third\n  type: oneshot\n  exec: [/bin/true]\n")
	if err == nil || !strings.Contains(err.Error(), "prep.service: job failed (failed/failed, result exit-code, exit status 1)") {
		t.Fatalf("error: %v", err)
	}
	if c := res.Counts; c.Starts != 2 || c.Failed != 1 {
		t.Errorf("counts %+v; want 2 starts, 1 failed", c)
	}
	for _, u := range n.state().Units {
		if u.Failed != (u.Name == "prep.service") || u.Incomplete {
			t.Errorf("%s: failed %v, incomplete %v", u.Name, u.Failed, u.Incomplete)
		}
	}
}
