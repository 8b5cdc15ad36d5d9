package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/inputs"
)

// TestPlanFromStateEqualsRendered: a plan of the inputs of the last apply,
// made from the state without rendering, prints exactly what the plan made
// by rendering prints, text and JSON, with the same exit code, for specs
// with drop-ins, a mask, a disabled unit, a stamp (when: Once) and two spec
// sets of one directory.
func TestPlanFromStateEqualsRendered(t *testing.T) {
	n := newLiveNode(t)
	dir := filepath.Join(filepath.Dir(n.spec), "hooks.d")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(`apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: prep
  type: oneshot
  when: Once
  steps:
  - name: first
    sh: "true"
  dropins:
  - name: 10-env.conf
    contents: "[Service]\nEnvironment=A=1\n"
- name: update-engine.service
  mask: true
`), 0o644)
	os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(`apiVersion: hostprov/v1alpha1
kind: Hooks
metadata:
  name: monitoring
hooks:
- name: agent
  exec: [/bin/true]
- name: idle
  exec: [/bin/sleep, infinity]
  enabled: false
- name: containerd.service
  dropins:
  - name: 10-limits.conf
    contents: "[Service]\nLimitNOFILE=1048576\n"
`), 0o644)
	run := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		args = append(args, "-d", dir, "--unit-dir", n.unitDir, "--state-dir", n.stateDir)
		code := Run(args, strings.NewReader(""), &o, &e)
		return code, o.String(), e.String()
	}
	if code, o, e := run("apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, o, e)
	}
	if code, o, e := run("apply"); code != 0 || !strings.Contains(o, "No changes.") {
		t.Fatalf("re-apply: exit %d\n%s%s", code, o, e)
	}
	state, _ := os.ReadFile(filepath.Join(n.stateDir, "state.json"))
	for _, want := range []string{"update-engine.service", "10-limits.conf", "10-env.conf", "idle.service", "monitoring", `"inputs": "sha256:`} {
		if !bytes.Contains(state, []byte(want)) {
			t.Fatalf("the state lacks %s:\n%s", want, state)
		}
	}
	for _, args := range [][]string{
		{"plan"}, {"plan", "-o", "json"}, {"plan", "--detailed-exitcode"},
		{"apply", "--dry-run"}, {"apply", "--dry-run", "-o", "json"},
	} {
		before := renders.Load()
		code, o, e := run(args...)
		if got := renders.Load() - before; got != 0 {
			t.Errorf("%v of an unchanged spec rendered %d times, want 0", args, got)
		}
		old := inputs.BuildID
		inputs.BuildID = func() string { return "" } // no fingerprint: rendered
		before = renders.Load()
		rcode, ro, re := run(args...)
		inputs.BuildID = old
		if got := renders.Load() - before; got != 1 {
			t.Errorf("%v without a fingerprint rendered %d times, want 1", args, got)
		}
		if code != rcode || o != ro || e != re {
			t.Errorf("%v from the state: exit %d\n%s%s\nrendered: exit %d\n%s%s", args, code, o, e, rcode, ro, re)
		}
		if code != 0 || !strings.Contains(o, "No changes.") && !strings.Contains(o, `"changes": false`) {
			t.Errorf("%v: exit %d\n%s%s", args, code, o, e)
		}
	}
}

func TestPlanDetailedExitCode(t *testing.T) {
	n := newLiveNode(t)
	if code, _, e := n.run("plan", "--detailed-exitcode"); code != 2 {
		t.Errorf("plan with changes: exit %d, want 2\n%s", code, e)
	}
	if code, _, e := n.run("plan"); code != 0 {
		t.Errorf("plan without --detailed-exitcode: exit %d, want 0\n%s", code, e)
	}
	if code, _, e := n.run("apply"); code != 0 {
		t.Fatalf("apply: exit %d\n%s", code, e)
	}
	if code, o, e := n.run("plan", "--detailed-exitcode"); code != 0 || !strings.Contains(o, "No changes.") {
		t.Errorf("plan without changes: exit %d, want 0\n%s%s", code, o, e)
	}
	n.write("- name: a/b\n  exec: [/bin/true]\n")
	if code, _, e := n.run("plan", "--detailed-exitcode"); code != 1 {
		t.Errorf("plan of an invalid spec: exit %d, want 1\n%s", code, e)
	}
	if code, _, e := n.run("plan"); code != ExitInvalid {
		t.Errorf("plan of an invalid spec without --detailed-exitcode: exit %d, want %d\n%s", code, ExitInvalid, e)
	}
	n.write("- name: hello\n  exec: [/bin/echo, hello]\n- name: x\n  exec: [/bin/true]\n")
	os.WriteFile(filepath.Join(n.unitDir, "x.service"), []byte("[Service]\nExecStart=/bin/mine\n"), 0o644)
	if code, _, e := n.run("plan", "--detailed-exitcode"); code != 1 || !strings.Contains(e, "apply would refuse") {
		t.Errorf("plan with a conflict: exit %d, want 1\n%s", code, e)
	}
}
