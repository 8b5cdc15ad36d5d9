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

	_ "github.com/hostprov/hostprov/internal/golden" // defines -update
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/units"
)

// corpus is the real-world material beside the repository, when it is there.
var corpus = filepath.Join("..", "..", "shared", "corpus")

// iscsiScript returns the shell program of the iSCSI example's install
// hook, read back from the rendered unit the way systemd reads it.
func iscsiScript(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("iscsi", "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	us, diags := render.Build("hostprov.yaml", data)
	if diags.HasErrors(true) {
		t.Fatal(diags)
	}
	for _, u := range us {
		if u.Name != "iscsi-install.service" {
			continue
		}
		f, err := units.Parse(u.Contents)
		if err != nil {
			t.Fatal(err)
		}
		argv, err := units.SplitExec(f.Values(units.SectionService, "ExecStart")[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(argv) != 3 || argv[0] != "/bin/sh" || argv[1] != "-ec" {
			t.Fatalf("ExecStart is %q, want /bin/sh -ec SCRIPT", argv)
		}
		return argv[2]
	}
	t.Fatal("no iscsi-install.service")
	return ""
}

// TestISCSIDetect runs the install script of the iSCSI example against
// the os-release file of every distribution in the corpus, with fake
// package managers on PATH that only say how they were called, and checks
// the package manager and package it chose.
func TestISCSIDetect(t *testing.T) {
	dir := filepath.Join(corpus, "iscsi", "os-release")
	files, _ := filepath.Glob(filepath.Join(dir, "*.os-release"))
	if len(files) == 0 {
		t.Skipf("no os-release files under %s: the real-world corpus is not beside the repository", dir)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	script := iscsiScript(t)

	// What each distribution must get. el7-era systems have yum and no dnf.
	want := map[string]string{
		"almalinux_9.4":             "dnf install -y iscsi-initiator-utils",
		"amzn_2":                    "yum install -y iscsi-initiator-utils",
		"amzn_2018.03":              "yum install -y iscsi-initiator-utils",
		"amzn_2023":                 "dnf install -y iscsi-initiator-utils",
		"centos_7":                  "yum install -y iscsi-initiator-utils",
		"centos_9":                  "dnf install -y iscsi-initiator-utils",
		"debian_12":                 "apt-get update -q\napt-get install -y -q open-iscsi",
		"debian_9":                  "apt-get update -q\napt-get install -y -q open-iscsi",
		"fedora_coreos_40":          "fedora CoreOS ships the iSCSI tools",
		"flatcar_4459.0.0":          "flatcar ships the iSCSI tools",
		"local-debian12-base-files": "apt-get update -q\napt-get install -y -q open-iscsi",
		"ol_9.1":                    "dnf install -y iscsi-initiator-utils",
		"opensuse-leap_15.6":        "zypper --non-interactive install open-iscsi",
		"opensuse-tumbleweed_opensuse-tumbleweed": "zypper --non-interactive install open-iscsi",
		"photon_5.0":   "tdnf install -y open-iscsi",
		"rhel_9.4":     "dnf install -y iscsi-initiator-utils",
		"rocky_9.4":    "dnf install -y iscsi-initiator-utils",
		"sles_15.6":    "zypper --non-interactive install open-iscsi",
		"ubuntu_18.04": "apt-get update -q\napt-get install -y -q open-iscsi",
		"ubuntu_20.04": "apt-get update -q\napt-get install -y -q open-iscsi",
		"ubuntu_22.04": "apt-get update -q\napt-get install -y -q open-iscsi",
		"ubuntu_24.04": "apt-get update -q\napt-get install -y -q open-iscsi",
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
			cmd := exec.Command(sh, "-ec", script)
			cmd.Env = []string{"PATH=" + bin, "OS_RELEASE=" + f}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if got := strings.TrimSpace(out.String()); got != w {
				t.Errorf("got:\n%s\nwant:\n%s", got, w)
			}
		})
	}

	t.Run("unsupported", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "os-release")
		os.WriteFile(f, []byte("ID=plan9\nID_LIKE=\"bell labs\"\n"), 0o644)
		cmd := exec.Command(sh, "-ec", script)
		cmd.Env = []string{"PATH=" + t.TempDir(), "OS_RELEASE=" + f}
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("an unknown distribution must fail; got:\n%s", out)
		}
		if got := strings.TrimSpace(string(out)); got != "unsupported distribution: ID=plan9 ID_LIKE=bell labs" {
			t.Errorf("got %q", got)
		}
	})
}
