// Package examples_test checks that the bundled examples do what their
// READMEs say; their rendered units are goldens of package render.
package examples_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/corpus"
	_ "github.com/hostprov/hostprov/internal/golden" // defines -update
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/units"
)

// corpus is the real-world material beside the repository, when it is there.
var corpusDir = corpus.Path()

// iscsiStep returns the shell script of a step of the iSCSI example's
// command hook, read back from the rendered unit the way systemd reads it:
// the ExecStart= line after the step's comment, split into its arguments.
func iscsiStep(t *testing.T, step string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("iscsi", "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, diags := compile.Build("hostprov.yaml", data, compile.Options{})
	us := r.Units
	if diags.HasErrors(true) {
		t.Fatal(diags)
	}
	for _, u := range us {
		f, err := units.Parse(u.Contents)
		if err != nil {
			t.Fatal(err)
		}
		s := f.Section(units.SectionService)
		if s == nil {
			continue
		}
		for _, e := range s.Entries {
			if e.Key != "ExecStart" || len(e.Comments) == 0 || e.Comments[0] != compile.StepComment+step {
				continue
			}
			argv, err := units.SplitExec(e.Value)
			if err != nil {
				t.Fatal(err)
			}
			if len(argv) != 3 || argv[0] != "/bin/sh" || argv[1] != "-ec" {
				t.Fatalf("step %s runs %q, want /bin/sh -ec SCRIPT", step, argv)
			}
			// systemd turns "$$" into "$" when it runs the command.
			return strings.ReplaceAll(argv[2], "$$", "$")
		}
	}
	t.Fatalf("no step %s in the iSCSI example", step)
	return ""
}

// TestISCSIDetect runs the detect step of the iSCSI example against the
// os-release file of every distribution in the corpus, with fake package
// managers on PATH (only whether dnf exists matters), and checks the plan
// it leaves for the install step: the package manager and package, or that
// the tools are present.
func TestISCSIDetect(t *testing.T) {
	dir := filepath.Join(corpusDir, "iscsi", "os-release")
	files, _ := filepath.Glob(filepath.Join(dir, "*.os-release"))
	if len(files) == 0 {
		t.Skipf("no os-release files under %s: the real-world corpus is not beside the repository", dir)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := iscsiStep(t, "detect")

	// What each distribution must get. el7-era systems have yum and no dnf.
	want := map[string]string{
		"almalinux_9.4":             "dnf iscsi-initiator-utils",
		"amzn_2":                    "yum iscsi-initiator-utils",
		"amzn_2018.03":              "yum iscsi-initiator-utils",
		"amzn_2023":                 "dnf iscsi-initiator-utils",
		"centos_7":                  "yum iscsi-initiator-utils",
		"centos_9":                  "dnf iscsi-initiator-utils",
		"debian_12":                 "apt-get open-iscsi",
		"debian_9":                  "apt-get open-iscsi",
		"fedora_coreos_40":          "present fedora CoreOS ships the iSCSI tools",
		"flatcar_4459.0.0":          "present flatcar ships the iSCSI tools",
		"local-debian12-base-files": "apt-get open-iscsi",
		"ol_9.1":                    "dnf iscsi-initiator-utils",
		"opensuse-leap_15.6":        "zypper open-iscsi",
		"opensuse-tumbleweed_opensuse-tumbleweed": "zypper open-iscsi",
		"photon_5.0":   "tdnf open-iscsi",
		"rhel_9.4":     "dnf iscsi-initiator-utils",
		"rocky_9.4":    "dnf iscsi-initiator-utils",
		"sles_15.6":    "zypper open-iscsi",
		"ubuntu_18.04": "apt-get open-iscsi",
		"ubuntu_20.04": "apt-get open-iscsi",
		"ubuntu_22.04": "apt-get open-iscsi",
		"ubuntu_24.04": "apt-get open-iscsi",
	}
	yumOnly := map[string]bool{"amzn_2": true, "amzn_2018.03": true, "centos_7": true}

	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".os-release")
		t.Run(name, func(t *testing.T) {
			w, ok := want[name]
			if !ok {
				t.Fatalf("the corpus has %s, which this test does not know: add what it must get", name)
			}
			bin := t.TempDir()
			managers := []string{"apt-get", "yum", "zypper", "tdnf", "dnf"}
			if yumOnly[name] {
				managers = managers[:4]
			}
			for _, m := range managers {
				fake := "#!/bin/sh\necho " + m + " \"$@\"\n"
				if err := os.WriteFile(filepath.Join(bin, m), []byte(fake), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			os.Symlink(sh, filepath.Join(bin, "sh"))
			run := t.TempDir()
			cmd := exec.Command(sh, "-ec", script)
			cmd.Env = []string{"PATH=" + bin, "OS_RELEASE=" + f, "RUNTIME_DIRECTORY=" + run}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			plan, err := os.ReadFile(filepath.Join(run, "plan"))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(plan)); got != w {
				t.Errorf("plan:\n%s\nwant:\n%s", got, w)
			}
		})
	}

	t.Run("unsupported", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "os-release")
		os.WriteFile(f, []byte("ID=plan9\nID_LIKE=\"bell labs\"\n"), 0o644)
		cmd := exec.Command(sh, "-ec", script)
		cmd.Env = []string{"PATH=" + t.TempDir(), "OS_RELEASE=" + f, "RUNTIME_DIRECTORY=" + t.TempDir()}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("an unknown distribution must fail; got:\n%s", out)
		}
		if got := strings.TrimSpace(string(out)); got != "unsupported distribution: ID=plan9 ID_LIKE=bell labs" {
			t.Errorf("got %q", got)
		}
	})
}

// TestISCSIInstall runs the install step of the iSCSI example on each plan
// the detect step can leave, with fake package managers on PATH that only
// say how they were called.
func TestISCSIInstall(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := iscsiStep(t, "install")
	bin := t.TempDir()
	for _, m := range []string{"apt-get", "yum", "zypper", "tdnf", "dnf"} {
		fake := "#!/bin/sh\necho " + m + " \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, m), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for plan, want := range map[string]string{
		"apt-get open-iscsi":                    "apt-get update -q\napt-get install -y -q open-iscsi",
		"zypper open-iscsi":                     "zypper --non-interactive install open-iscsi",
		"dnf iscsi-initiator-utils":             "dnf install -y iscsi-initiator-utils",
		"yum iscsi-initiator-utils":             "yum install -y iscsi-initiator-utils",
		"tdnf open-iscsi":                       "tdnf install -y open-iscsi",
		"present flatcar ships the iSCSI tools": "nothing to install: flatcar ships the iSCSI tools",
	} {
		t.Run(plan, func(t *testing.T) {
			run := t.TempDir()
			if err := os.WriteFile(filepath.Join(run, "plan"), []byte(plan+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sh, "-ec", script)
			cmd.Env = []string{"PATH=" + bin, "RUNTIME_DIRECTORY=" + run}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
