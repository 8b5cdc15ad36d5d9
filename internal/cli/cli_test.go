package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
