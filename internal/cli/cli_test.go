package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hostprov/hostprov/internal/golden"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"hostprov": func() { os.Exit(Main()) },
	})
}

// TestScript runs the command-line tests in testdata/script: one txtar
// file per behaviour, named category first (render_swap.txtar), each a
// script of hostprov commands and the output they must give. With
// -update, the scripts' expected output files are rewritten.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: golden.Updating(),
		// [root]: running as root, which chown needs, or under CI=true,
		// where a test that needs root must fail rather than skip.
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0 || os.Getenv("CI") == "true", nil
			}
			if cond == "kube" {
				// make test builds with -tags kube.
				return kubeBuild, nil
			}
			if cond == "sysusers" {
				// CI=true runs the script, which then fails
				// without the tool.
				_, err := exec.LookPath("systemd-sysusers")
				return err == nil || os.Getenv("CI") == "true", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			// The examples, goldens and test data, so that scripts can render the
			// examples as users do and compare with the same goldens.
			for name, dir := range map[string]string{"EXAMPLES": "../../examples", "GOLDEN": "../../testdata/golden", "TESTDATA": "../../testdata"} {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return err
				}
				env.Setenv(name, abs)
			}
			return nil
		},
	})
}

// TestExitCodes checks the documented exit codes: 0 success, 1 failure to
// do the work, 2 invalid input or usage.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a\n  exec: [/bin/true]\n")
	bad := write("bad.yaml", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a/b\n  exec: [/bin/true]\n")
	warn := write("warn.yaml", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a\n  useRawManifest: true\n  manifest: \"[Service]\\nExecStart=/bin/true\\n\"\n")
	unit := write("bad.service", "[Unit]\nno equals here\n")
	notADir := write("file", "")

	for _, tc := range []struct {
		args []string
		code int
		err  string // a fragment of stderr
	}{
		{[]string{"render", "-f", good}, ExitOK, ""},
		{[]string{"validate", "-f", warn}, ExitOK, "warning"},
		{[]string{"validate", "-f", warn, "--strict"}, ExitInvalid, "fatal under --strict"},
		{[]string{"render", "-f", bad}, ExitInvalid, "nothing written"},
		{[]string{"render", "-f", filepath.Join(dir, "missing.yaml")}, ExitInvalid, "no such file"},
		{[]string{"render", "-f", good, "--format", "xml"}, ExitInvalid, "unknown --format"},
		{[]string{"render", "--bogus"}, ExitInvalid, "unknown flag"},
		{[]string{"frobnicate"}, ExitInvalid, "unknown command"},
		{[]string{"render", "-f", good, "--format", "dir", "--out", filepath.Join(notADir, "sub")}, ExitFailure, "writing units"},
		{[]string{"fmt", unit}, ExitInvalid, "bad.service:2:"},
		{[]string{"version"}, ExitOK, ""},
		// A directory where a file is wanted is invalid input, with the
		// flag that reads a directory where there is one.
		{[]string{"render", "-f", dir}, ExitInvalid, "is a directory: -f reads one spec file; read every *.yaml file of a directory with -d " + dir},
		{[]string{"plan", "-f", dir, "--root", dir}, ExitInvalid, "with -d " + dir},
		{[]string{"kops", "set-hooks", "-f", dir, "--cluster", good}, ExitInvalid, "is a directory: -f reads one spec file"},
		{[]string{"import", dir}, ExitInvalid, "is a directory: import reads one config file"},
		{[]string{"render", "-f", good, "--merge", dir}, ExitInvalid, "is a directory"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Run(tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.err) {
				t.Errorf("stderr lacks %q:\n%s", tc.err, stderr.String())
			}
		})
	}
}

// TestExitCodesDocumented: the table of exit codes in docs/usage.md has a
// row for every code a command exits with, and says which commands give 3
// and 4; plan's and status's --help say what their codes mean.
func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../docs/usage.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, code := range strings.Split(cells[1], ",") {
			rows[strings.Trim(strings.TrimSpace(code), "`")] = cells[2]
		}
	}
	for code, want := range map[int][]string{
		ExitOK:         {"success"},
		ExitFailure:    {"failure"},
		ExitInvalid:    {"invalid input", "`remove` of a name", "`-d`", "`plan --detailed-exitcode`: changes"},
		ExitDrift:      {"drift", "`plan --detailed-exitcode`", "`status`"},
		ExitUnitFailed: {"`status`", "failed"},
		130:            {"SIGINT"},
		143:            {"SIGTERM"},
	} {
		row, ok := rows[fmt.Sprint(code)]
		if !ok {
			t.Errorf("the table of exit codes in docs/usage.md has no row for %d", code)
			continue
		}
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("docs/usage.md's row for exit code %d lacks %q: %s", code, w, row)
			}
		}
	}
	for args, want := range map[string][]string{
		"plan --help":   {"  2  changes", "  3  no changes, but drift"},
		"status --help": {"  3  drift", "  4  a unit failed"},
	} {
		var stdout, stderr bytes.Buffer
		if code := Run(strings.Fields(args), strings.NewReader(""), &stdout, &stderr); code != ExitOK {
			t.Fatalf("%s: exit %d\n%s", args, code, stderr.String())
		}
		for _, w := range want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%s lacks %q", args, w)
			}
		}
	}
}
