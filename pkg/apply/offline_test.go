package apply_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/unitdir"
)

// TestOfflineMatchesSystemctl applies each golden spec with --root to an
// empty directory and compares the files and links with what the same
// files plus `systemctl --root=DIR enable` and `mask` give.
func TestOfflineMatchesSystemctl(t *testing.T) {
	systemctl, err := exec.LookPath("systemctl")
	if err != nil {
		hosttools.Unavailable(t, "systemctl is not installed")
	}
	specs, _ := filepath.Glob("../../testdata/golden/*.yaml")
	examples, _ := filepath.Glob("../../examples/*/hostprov.yaml")
	specs = append(specs, examples...)
	if len(specs) == 0 {
		t.Fatal("no golden specs found")
	}
	// [Install] keys the goldens do not use.
	extra := filepath.Join(t.TempDir(), "install.yaml")
	os.WriteFile(extra, []byte(installSpec), 0o644)
	specs = append(specs, extra)
	// A unit the image lacks, named by After=, Requires= and Also=.
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	os.WriteFile(missing, []byte(missingSpec), 0o644)
	specs = append(specs, missing)
	for _, path := range specs {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		if name == "hostprov" {
			name = filepath.Base(filepath.Dir(path))
		}
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r, diags := compile.Build(path, data, compile.Options{})
			us := r.Units
			if diags.HasErrors(false) {
				t.Fatalf("%v", diags)
			}

			// Units the spec enables without giving them come with the
			// image, in /usr/lib.
			a, b := t.TempDir(), t.TempDir()
			for _, u := range us {
				if u.Contents == nil && u.Enabled != nil && *u.Enabled {
					for _, root := range []string{a, b} {
						vendor := filepath.Join(root, "usr/lib/systemd/system", u.Name)
						os.MkdirAll(filepath.Dir(vendor), 0o755)
						os.WriteFile(vendor, []byte("[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=sysinit.target\n"), 0o644)
					}
				}
			}

			// hostprov apply --root A
			opts := apply.Options{Root: a, Offline: true}
			p, err := apply.NewPlan(context.Background(), us, &apply.State{Version: apply.StateVersion}, opts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := apply.Execute(context.Background(), p, apply.NewOffline(a, ""), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Counts.Reloads != 0 || res.Counts.Starts != 0 {
				t.Errorf("offline apply reloaded or started: %+v", res.Counts)
			}

			// the files, then systemctl --root B
			if err := unitdir.Write(filepath.Join(b, "etc/systemd/system"), withoutMasks(us)); err != nil {
				t.Fatal(err)
			}
			var enable, mask []string
			for _, u := range us {
				switch {
				case u.Mask:
					mask = append(mask, u.Name)
				case u.Enabled != nil && *u.Enabled:
					enable = append(enable, u.Name)
				}
			}
			for _, cmd := range [][]string{append([]string{"enable"}, enable...), append([]string{"mask"}, mask...)} {
				if len(cmd) == 1 {
					continue
				}
				out, err := exec.Command(systemctl, append([]string{"--root=" + b}, cmd...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("systemctl %v: %v\n%s", cmd, err, out)
				}
			}
			got := files(t, filepath.Join(a, "etc"))
			want := files(t, filepath.Join(b, "etc"))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("offline apply differs from systemctl --root (-systemctl +hostprov):\n%s", diff)
			}
		})
	}
}

func withoutMasks(us []compile.Unit) []compile.Unit {
	var out []compile.Unit
	for _, u := range us {
		if !u.Mask {
			out = append(out, u)
		}
	}
	return out
}

const installSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: a.service
  useRawName: true
  useRawManifest: true
  manifest: |
    [Service]
    ExecStart=/bin/true
    [Install]
    WantedBy=multi-user.target graphical.target
    RequiredBy=b.target
    Alias=a-alias.service
    Also=helper.service
- name: helper.service
  useRawName: true
  useRawManifest: true
  enabled: false
  manifest: |
    [Service]
    ExecStart=/bin/true
    [Install]
    WantedBy=default.target
- name: t@.service
  useRawName: true
  useRawManifest: true
  manifest: |
    [Service]
    ExecStart=/bin/echo %i
    [Install]
    WantedBy=multi-user.target
    DefaultInstance=x
`

// missingSpec names a unit that is not in the image: enabling reads only
// [Install], and systemctl skips a unit of Also= it cannot find, so every
// hook is enabled all the same.
const missingSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: login
  type: oneshot
  exec: [/sbin/iscsiadm, -m, node, --login]
  requires: [iscsid.service]
  after: [iscsid.service]
  directives:
    Install:
    - WantedBy=multi-user.target
    - Also=iscsid.service
- name: hello
  exec: [/bin/echo, hello]
`
