package compile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/unitdir"
	"github.com/hostprov/hostprov/pkg/units"
)

// nastyArgv are argument lists that break naive quoting. Each must reach
// the process exactly as written.
var nastyArgv = [][]string{
	{"/bin/echo", "a b"},
	{"/bin/echo", `"double"`},
	{"/bin/echo", "'single'"},
	{"/bin/echo", `mixed 'single' and "double" quotes`},
	{"/bin/echo", `back\slash`},
	{"/bin/echo", `trailing\`},
	{"/bin/echo", `a\nb`, `\x41`, `\\`},
	{"/bin/echo", "100%"},
	{"/bin/echo", "%n %i %% %"},
	{"/bin/echo", "$HOME", "${HOME}", "$$", "$"},
	{"/bin/echo", ";"},
	{"/bin/echo", "a;b", `\;`, "; "},
	{"/bin/echo", ""},
	{"/bin/echo", "", "x", ""},
	{"/bin/echo", "ünïcödé 🤠 中文"},
	{"/bin/echo", "-dash", "--flag=value with space"},
	{"/bin/echo", "#not-a-comment", ";not-either"},
	{"/bin/echo", "  leading and trailing  "},
	{"/bin/echo", "{}[]()<>|&*?~`!^"},
	{"/bin/echo", "=", "a=b", "=c"},
	{"/bin/sh", "-c", `echo "$1" | tr a-z A-Z`, "sh", "it's"},
	{"/bin/echo", `'`, `"`, `'"'"'`},
	{"/bin/echo", "-", "@", "+", "!", ":"},
	{"/bin/echo", "multiple   spaces", "no\u00a0break"},
	{"/bin/echo", "line1\nline2", "tab\there", "bell\a\x1b\x7f", "cr\rExecStart=/bin/evil", "trailing\n"},
}

// nastyEnv are environment values with everything that needs escaping.
var nastyEnv = map[string]string{
	"SPACES":  "a b  c",
	"QUOTES":  `say "hi" it's`,
	"DOLLAR":  "$HOME ${HOME} $$",
	"PERCENT": "100% %n %%",
	"EQUALS":  "a=b=c",
	"BACKSL":  `C:\path\`,
	"EMPTY":   "",
	"UTF8":    "ünïcödé 🤠",
}

// dumpArgv is a shell program that writes its own argv ($0 and every
// argument), each ending in NUL, to the file named by the last part of the
// hook's name: the process itself says what it received.
const dumpArgv = `f=/var/lib/out-$(basename "$HOSTPROV_HOOK"); printf '%s\0' "$0" "$@" > "$f"`

// nastyHook is a hook of the spec TestRealSystemd gives systemd.
type nastyHook struct {
	Name      string            `yaml:"name"`
	Type      string            `yaml:"type"`
	Exec      []string          `yaml:"exec"`
	Env       map[string]string `yaml:"env,omitempty"`
	ExpandEnv bool              `yaml:"expandEnv,omitempty"`
}

// nastyHooks are a hook for each of nastyArgv, which writes the argv it
// got, one that writes its environment of nastyEnv, and one that
// expands variables.
func nastyHooks() []nastyHook {
	var hs []nastyHook
	for i, argv := range nastyArgv {
		name := fmt.Sprintf("argv-%02d", i)
		exec := append([]string{"/bin/sh", "-c", dumpArgv}, argv...)
		hs = append(hs, nastyHook{Name: name, Type: "oneshot", Exec: exec, Env: map[string]string{"HOSTPROV_HOOK": name}})
	}
	env := map[string]string{"HOSTPROV_HOOK": "env"}
	for k, v := range nastyEnv {
		env[k] = v
	}
	hs = append(hs,
		nastyHook{Name: "env", Type: "oneshot", Exec: []string{"/bin/sh", "-c", `env -0 > /var/lib/out-env`}, Env: env},
		nastyHook{Name: "expand", Type: "oneshot", Exec: []string{"/bin/echo", "$HOME", "${HOME}/x"}, ExpandEnv: true},
	)
	return hs
}

// checkProcesses waits for the start jobs of TestRealSystemd and checks
// what each process received: the argv of the spec, or the environment.
func checkProcesses(t *testing.T, r *systemdtest.Rig, hs []nastyHook, jobs map[string]chan string) {
	t.Helper()
	for _, h := range hs {
		unit := h.Name + ".service"
		if jobs[unit] == nil {
			continue
		}
		text, _ := os.ReadFile(filepath.Join(r.UnitDir, unit))
		if res := <-jobs[unit]; res != "done" {
			t.Errorf("%s: start job %s\n%s", unit, res, text)
			continue
		}
		want := []string{}
		for k, v := range h.Env {
			want = append(want, k+"="+v)
		}
		sort.Strings(want)
		out, err := os.ReadFile(filepath.Join(r.Root, "var/lib/out-"+h.Name))
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Split(string(out), "\x00")
		fields = fields[:len(fields)-1] // every field ends in NUL
		if h.Name == "env" {
			var vars []string
			for _, f := range fields {
				if k, _, _ := strings.Cut(f, "="); h.Env[k] != "" || f == k+"=" && hasKey(h.Env, k) {
					vars = append(vars, f)
				}
			}
			sort.Strings(vars)
			if diff := cmp.Diff(want, vars); diff != "" {
				t.Errorf("%s: the process's environment differs from the spec (-spec +process):\n%s", unit, diff)
			}
			continue
		}
		if diff := cmp.Diff(h.Exec[3:], fields); diff != "" {
			t.Errorf("%s: the process's argv differs from the spec (-spec +process):\n%s\nunit:\n%s", unit, diff, text)
		}
	}
}

// TestRealSystemd renders hooks with nasty argument lists and environments,
// installs them in a real systemd, and checks what systemd understood, over
// D-Bus, and what the started processes received: argv and environment must
// be exactly what the spec says, and every unit must load.
func TestRealSystemd(t *testing.T) {
	hs := nastyHooks()
	r, ctx := installSpec(t, "nasty.yaml", specOf(t, hs), true)
	jobs := map[string]chan string{}
	for _, h := range hs {
		unit := h.Name + ".service"
		text, _ := os.ReadFile(filepath.Join(r.UnitDir, unit))
		props, err := r.Conn.GetUnitPropertiesContext(ctx, unit)
		if err != nil {
			t.Fatal(err)
		}
		if props["LoadState"] != "loaded" {
			t.Errorf("%s: LoadState=%v, want loaded\n%s", unit, props["LoadState"], text)
			continue
		}

		// What systemd parsed. D-Bus shows argv before the substitution
		// systemd makes when it runs the command, where "$$" becomes
		// "$" (and, with expandEnv, $VAR its value).
		argvs, err := systemdtest.ExecStartArgv(ctx, r.Conn, unit)
		if err != nil {
			t.Fatal(err)
		}
		if !h.ExpandEnv {
			for _, argv := range argvs {
				for i := range argv {
					argv[i] = strings.ReplaceAll(argv[i], "$$", "$")
				}
			}
		}
		if diff := cmp.Diff([][]string{h.Exec}, argvs); diff != "" {
			t.Errorf("%s: systemd's argv differs from the spec (-spec +systemd):\n%s\nunit:\n%s", unit, diff, text)
		}
		// The splitter the fuzz tests and status use as systemd's
		// stand-in must read the line as systemd did.
		if f, err := units.Parse(text); err != nil {
			t.Errorf("%s: %v", unit, err)
		} else if !h.ExpandEnv {
			var split [][]string
			for _, v := range f.Values(units.SectionService, "ExecStart") {
				argv, err := units.SplitExec(v)
				if err != nil {
					t.Errorf("%s: SplitExec(%q): %v", unit, v, err)
				}
				split = append(split, argv)
			}
			if diff := cmp.Diff(argvs, split); diff != "" {
				t.Errorf("%s: units.SplitExec differs from systemd (-systemd +SplitExec):\n%s", unit, diff)
			}
		}
		got, err := systemdtest.EnvironmentOf(ctx, r.Conn, unit)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{}
		for k, v := range h.Env {
			want = append(want, k+"="+v)
		}
		sort.Strings(want)
		sort.Strings(got)
		if diff := cmp.Diff(want, append([]string{}, got...)); diff != "" {
			t.Errorf("%s: systemd's environment differs from the spec (-spec +systemd):\n%s", unit, diff)
		}
		if h.ExpandEnv {
			continue
		}

		// Start them all at once; what the processes received is
		// checked below, once every job has finished.
		done := make(chan string, 1)
		if _, err := r.Conn.StartUnitContext(ctx, unit, "replace", done); err != nil {
			t.Fatal(err)
		}
		jobs[unit] = done
	}
	checkProcesses(t, r, hs, jobs)
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// TestRealSystemdStepProcess runs a command hook in a real systemd and
// checks that its steps run as the process fields say: as the hook's
// user, in its working directory, with its environment exactly, and with
// a state directory systemd made writable for that user.
func TestRealSystemdStepProcess(t *testing.T) {
	spec := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: step-process
  when: Always
  user: nobody
  workingDirectory: /tmp
  stateDirectory: step-process
  env:
    GREETING: say "hi" at 100% for $5 with a=b
  steps:
  - name: whoami
    sh: |
      id -un > "$STATE_DIRECTORY/user"
      pwd > "$STATE_DIRECTORY/cwd"
      printf '%s' "$GREETING" > "$STATE_DIRECTORY/env"
  - name: argv
    run: [/bin/sh, -c, 'printf "%s" "$1" > "$STATE_DIRECTORY/arg"', sh, "it's 50% of $HOME"]
`
	r, ctx := installSpec(t, "step.yaml", []byte(spec), true)
	done := make(chan string, 1)
	if _, err := r.Conn.StartUnitContext(ctx, "step-process.service", "replace", done); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res != "done" {
		out, _ := r.Run(ctx, "journalctl", "-u", "step-process.service", "--no-pager")
		t.Fatalf("start: %s\n%s", res, out)
	}
	dir := filepath.Join(r.Root, "var/lib/step-process")
	for file, want := range map[string]string{
		"user": "nobody\n",
		"cwd":  "/tmp\n",
		"env":  `say "hi" at 100% for $5 with a=b`,
		"arg":  "it's 50% of $HOME",
	} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%s: %v", file, err)
		} else if string(got) != want {
			t.Errorf("%s: got %q, want %q", file, got, want)
		}
	}
}

// TestRealSystemdExpandEnv runs hooks with expandEnv: true in a real
// systemd and checks the argv the process received: "$VAR" as a whole
// word becomes the split value of VAR, or nothing when VAR is unset, as
// systemd documents; "${VAR}" its value; "$$" a '$'; and every other word,
// including those systemd would take for a reference to a variable that
// cannot exist ("$", "$-", "$FOO-bar"), arrives exactly as written. The
// splitter that stands in for systemd must agree with what ran.
func TestRealSystemdExpandEnv(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"expand-dollar", []string{"$", "x", "$"}, []string{"$", "x", "$"}},
		{"expand-nonames", []string{"$-", "$FOO-bar", "$1", "$ x", "$/"}, []string{"$-", "$FOO-bar", "$1", "$ x", "$/"}},
		{"expand-literal", []string{"a$", "a$1", "$$", "$$X", "a$$X", "${X"}, []string{"a$", "a$1", "$", "$X", "a$X", "${X"}},
		// systemd expands $VAR only as a word of its own; inside a word
		// it is written as ${VAR}, so that it expands as a shell would.
		{"expand-inword", []string{"x$X", "<$X>", "a$UNSET-b", "${X}$X", "a$$X$X", "x$X_1.y"},
			[]string{"xone  two", "<one  two>", "a-b", "one  twoone  two", "a$Xone  two", "x.y"}},
		{"expand-braces", []string{"${X}", "<${X}>", "${UNSET}", "<${UNSET}>"}, []string{"one  two", "<one  two>", "", "<>"}},
		{"expand-whole", []string{"$X", "$UNSET", "end"}, []string{"one", "two", "end"}},
	}
	type hook struct {
		Name      string            `yaml:"name"`
		Type      string            `yaml:"type"`
		Exec      []string          `yaml:"exec"`
		Env       map[string]string `yaml:"env"`
		ExpandEnv bool              `yaml:"expandEnv"`
	}
	var hs []hook
	for _, tt := range tests {
		// The script's '$' are the shell's: "$$" keeps them from systemd.
		exec := append([]string{"/bin/sh", "-c", strings.ReplaceAll(dumpArgv, "$", "$$"), "sh"}, tt.args...)
		hs = append(hs, hook{Name: tt.name, Type: "oneshot", Exec: exec, ExpandEnv: true,
			Env: map[string]string{"HOSTPROV_HOOK": tt.name, "X": "one  two"}})
	}
	r, ctx := installSpec(t, "expand.yaml", specOf(t, hs), false)
	for _, tt := range tests {
		unit := tt.name + ".service"
		text, _ := os.ReadFile(filepath.Join(r.UnitDir, unit))
		done := make(chan string, 1)
		if _, err := r.Conn.StartUnitContext(ctx, unit, "replace", done); err != nil {
			t.Fatal(err)
		}
		if res := <-done; res != "done" {
			t.Errorf("%s: start job %s\n%s", unit, res, text)
			continue
		}
		out, err := os.ReadFile(filepath.Join(r.Root, "var/lib/out-"+tt.name))
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Split(string(out), "\x00")
		fields = fields[1 : len(fields)-1] // $0 is "sh"; every field ends in NUL
		if diff := cmp.Diff(tt.want, fields); diff != "" {
			t.Errorf("%s: the process's argv differs (-want +process):\n%s\nunit:\n%s", unit, diff, text)
		}

		// SplitExec keeps references to set variables as written; once
		// their values are put in, it must give what the process got.
		f, err := units.Parse(text)
		if err != nil {
			t.Fatalf("%s: %v", unit, err)
		}
		split, err := units.SplitExec(f.Values(units.SectionService, "ExecStart")[0])
		if err != nil {
			t.Fatalf("%s: %v", unit, err)
		}
		resolved := split[4:]
		if strings.HasSuffix(tt.name, "-braces") || strings.HasSuffix(tt.name, "-whole") || strings.HasSuffix(tt.name, "-inword") {
			// Only these hooks hold references; elsewhere a "$X" that
			// SplitExec gives is the literal text.
			resolved = nil
			for _, w := range split[4:] {
				switch w {
				case "$X":
					resolved = append(resolved, "one", "two")
				case "$UNSET":
				default:
					w = strings.ReplaceAll(w, "${X}", "one  two")
					resolved = append(resolved, strings.NewReplacer("${UNSET}", "", "${X_1}", "").Replace(w))
				}
			}
		}
		if diff := cmp.Diff(fields, resolved); diff != "" {
			t.Errorf("%s: units.SplitExec differs from the process (-process +SplitExec):\n%s", unit, diff)
		}
	}
}

// specOf writes a spec of the hooks hs.
func specOf(t *testing.T, hs any) []byte {
	t.Helper()
	spec, err := yaml.Marshal(map[string]any{"apiVersion": "hostprov/v1alpha1", "kind": "Hooks", "hooks": hs})
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// installSpec compiles spec (whose warnings fail the test too when
// strict), writes its units into a fresh rig and reloads its systemd.
// ctx bounds the test's calls to that systemd.
func installSpec(t *testing.T, file string, spec []byte, strict bool) (*systemdtest.Rig, context.Context) {
	t.Helper()
	built, diags := compile.Build(file, spec, compile.Options{})
	if diags.HasErrors(strict) {
		t.Fatalf("%v\n%s", diags, spec)
	}
	r := systemdtest.Start(t)
	if err := unitdir.Write(r.UnitDir, built.Units); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	return r, ctx
}
