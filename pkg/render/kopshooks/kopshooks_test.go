package kopshooks_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

// kopsHook is a hook as kops reads it (v1alpha2 and v1alpha3 fields).
type kopsHook struct {
	Name           string
	Disabled       *bool
	Enabled        *bool
	UseRawManifest bool `yaml:"useRawManifest"`
	Manifest       *string
}

func parseKops(t *testing.T, out []byte) []kopsHook {
	t.Helper()
	var doc struct{ Hooks []kopsHook }
	dec := yaml.NewDecoder(bytes.NewReader(out))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("the kops output is not the YAML it should be: %v\n%s", err, out)
	}
	return doc.Hooks
}

// kopsReasons are the documented reasons for kops to refuse a unit.
var kopsReasons = []error{kopshooks.ErrMask, kopshooks.ErrDropin, kopshooks.ErrDisabledUnit, kopshooks.ErrTemplate, kopshooks.ErrExisting, kopshooks.ErrDeviceTimeout}

// kopsRefusals lists, for the golden specs that kops cannot express, each
// unit and why.
var kopsRefusals = map[string]map[string]error{
	"device-timeout": {
		"mnt-lun.mount":                      kopshooks.ErrDeviceTimeout,
		`dev-disk-by\x2dpartlabel-swap.swap`: kopshooks.ErrDeviceTimeout,
	},
	"dropins": {
		"docker.service":            kopshooks.ErrDropin,
		"update-engine.service":     kopshooks.ErrMask,
		"systemd-timesyncd.service": kopshooks.ErrExisting,
		"metrics.service":           kopshooks.ErrDropin,
	},
	"exact-bytes-dropins": {
		"agent.service":      kopshooks.ErrDropin,
		"getty@tty1.service": kopshooks.ErrDropin,
	},
	"raw": {
		"no-install.service": kopshooks.ErrDisabledUnit,
	},
	"templates": {
		"worker@.service":            kopshooks.ErrTemplate,
		"tunnel@.service":            kopshooks.ErrDisabledUnit,
		"serial-getty@ttyS0.service": kopshooks.ErrDropin,
	},
	"unit-types": {
		"echo@.service":        kopshooks.ErrDisabledUnit,
		"cleanup.service":      kopshooks.ErrDisabledUnit,
		"reload-certs.service": kopshooks.ErrDisabledUnit,
		"srv-data.mount":       kopshooks.ErrDisabledUnit,
		"agents.slice":         kopshooks.ErrDisabledUnit,
	},
}

// TestKopsGolden renders every golden spec to kops hooks. Where kops can
// express every unit, the output is compared with
// testdata/golden/<case>.kops.yml (.yml: goldenSpecs takes every
// testdata/golden/*.yaml for a spec). Otherwise the error must name each
// unit kops cannot express with one of the documented reasons; for the
// specs in kopsRefusals, exactly the units and reasons listed there.
func TestKopsGolden(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			out, err := kopshooks.Render(rendertest.Units(t, path), kopshooks.Options{})
			want, listed := kopsRefusals[name]
			if err == nil {
				if listed {
					t.Fatalf("kops accepts a spec listed in kopsRefusals:\n%s", out)
				}
				golden.Check(t, rendertest.Path("testdata", "golden", name+".kops.yml"), out)
				return
			}
			var ke *kopshooks.Error
			if !errors.As(err, &ke) {
				t.Fatalf("got %v; want a *KopsError", err)
			}
			got := map[string]error{}
			for _, p := range ke.Problems {
				for _, reason := range kopsReasons {
					if errors.Is(p.Err, reason) {
						got[p.Unit] = reason
					}
				}
				if got[p.Unit] == nil {
					t.Errorf("%s is refused for an undocumented reason: %v", p.Unit, p.Err)
				}
				if line := fmt.Sprintf("hooks[%d] (%s): ", p.Hook, p.Unit); !strings.Contains(err.Error(), line) {
					t.Errorf("the error does not name %q:\n%v", line, err)
				}
			}
			if !listed {
				t.Logf("kops cannot express %s: %v", name, err)
				return
			}
			if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return a == b })); diff != "" {
				t.Errorf("refusals (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKopsSameBytes reads the kops output back: one raw hook per unit, in
// order, named by the full unit name, whose manifest is the unit's bytes.
func TestKopsSameBytes(t *testing.T) {
	cases := map[string][]compile.Unit{}
	for name, path := range rendertest.GoldenSpecs(t) {
		us := rendertest.Units(t, path)
		if _, err := kopshooks.Render(us, kopshooks.Options{}); err == nil {
			cases[name] = us
		}
	}
	on := true
	for i, u := range rendertest.TrickyUnits() {
		if i != len(rendertest.TrickyUnits())-1 { // all but the one that is not UTF-8
			u.Enabled = &on
			cases["tricky/"+u.Name] = []compile.Unit{u}
		}
	}
	for name, us := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := kopshooks.Render(us, kopshooks.Options{})
			if err != nil {
				t.Fatal(err)
			}
			hooks := parseKops(t, out)
			if len(hooks) != len(us) {
				t.Fatalf("%d hooks for %d units", len(hooks), len(us))
			}
			for i, h := range hooks {
				u := us[i]
				if h.Name != u.Name || !h.UseRawManifest || h.Disabled != nil || h.Enabled != nil || h.Manifest == nil {
					t.Errorf("hook %d: %+v; want name %s, useRawManifest and a manifest", i, h, u.Name)
					continue
				}
				if *h.Manifest != string(u.Contents) {
					t.Errorf("%s: the manifest reads back as\n%q\nwant\n%q", u.Name, *h.Manifest, u.Contents)
				}
			}
		})
	}
}

// TestKopsDisable checks a unit of the image with enabled: false, kops's
// own use of a disabled hook, in both API versions.
func TestKopsDisable(t *testing.T) {
	r, diags := compile.Build("t.yaml", []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: update-engine\n  enabled: false\n"), compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	for _, c := range []struct {
		version, want string
	}{
		{"", "- name: update-engine.service\n    disabled: true # in a Cluster"},
		{kopshooks.V1Alpha2, "- name: update-engine.service\n    disabled: true # in a Cluster; a v1alpha2 InstanceGroup reads it the wrong way round"},
		{kopshooks.V1Alpha3, "- name: update-engine.service\n    enabled: false\n"},
	} {
		out, err := kopshooks.Render(us, kopshooks.Options{APIVersion: c.version})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out, []byte(c.want)) || !bytes.Contains(out, []byte("kops.k8s.io/"+kopsVersionOr(c.version, "v1alpha2"))) {
			t.Errorf("version %q:\n%s\nwant it to contain %q", c.version, out, c.want)
		}
		h := parseKops(t, out)
		if len(h) != 1 || h[0].Manifest != nil || h[0].UseRawManifest {
			t.Errorf("version %q: %+v", c.version, h)
		}
	}
	if _, err := kopshooks.Render(us, kopshooks.Options{APIVersion: "v1"}); err == nil {
		t.Error("an unknown kops API version is accepted")
	}
}

func kopsVersionOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func TestKopsEmpty(t *testing.T) {
	out, err := kopshooks.Render(nil, kopshooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if h := parseKops(t, out); len(h) != 0 || !bytes.HasSuffix(out, []byte("hooks: []\n")) {
		t.Errorf("no units give\n%s", out)
	}
}

func TestKopsNotUTF8(t *testing.T) {
	us := rendertest.TrickyUnits()
	on := true
	u := us[len(us)-1]
	u.Enabled = &on
	_, err := kopshooks.Render([]compile.Unit{u}, kopshooks.Options{})
	if err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Errorf("got %v; want an error that the unit is not UTF-8", err)
	}
}

// A kops hook cannot create accounts: each is refused at its entry.
func TestAccountsKopsRefused(t *testing.T) {
	r := rendertest.Build(t, filepath.Join(rendertest.StorageDir(), "accounts.yaml"))
	_, err := kopshooks.Render(r.Units, kopshooks.Options{Storage: r.Storage})
	var ke *kopshooks.Error
	if !errors.As(err, &ke) || !errors.Is(err, kopshooks.ErrAccounts) {
		t.Fatalf("got %v, want a *KopsError with ErrKopsAccounts", err)
	}
	var accounts int
	for _, d := range ke.Diagnostics() {
		if strings.Contains(d.Message, "cannot create users or groups") {
			accounts++
		}
	}
	if want := len(r.Storage.Users) + len(r.Storage.Groups); accounts != want || want != 5 {
		t.Errorf("%d accounts refused, want %d (5):\n%v", accounts, want, ke.Diagnostics())
	}
}

// A kops hook cannot carry files: each entry is refused at its place.
func TestStorageKopsRefused(t *testing.T) {
	path := filepath.Join(rendertest.StorageDir(), "files.yaml")
	r := rendertest.Build(t, path)
	_, err := kopshooks.Render(r.Units, kopshooks.Options{Storage: r.Storage})
	var ke *kopshooks.Error
	if !errors.As(err, &ke) || !errors.Is(err, kopshooks.ErrStorage) {
		t.Fatalf("got %v, want a *KopsError with ErrKopsStorage", err)
	}
	ds := ke.Diagnostics()
	if n := len(r.Storage.Files) + len(r.Storage.Directories) + len(r.Storage.Links); len(ds) != n {
		t.Fatalf("%d diagnostics, want one per entry (%d):\n%v", len(ds), n, ds)
	}
	if !strings.HasPrefix(ds[0].String(), path+":15:9: error: hooks[0]: file /etc/node-exporter/web.yml: a kops hook is a unit and nothing else") {
		t.Errorf("first diagnostic: %s", ds[0])
	}
}
