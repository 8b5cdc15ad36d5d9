package ignition_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v34 "github.com/coreos/ignition/v2/config/v3_4"
	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

func TestIgnitionVersionsList(t *testing.T) {
	want := []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"}
	if diff := cmp.Diff(want, ignition.Versions()); diff != "" {
		t.Errorf("IgnitionVersions (-want +got):\n%s", diff)
	}
	if !slices.Contains(ignition.Versions(), ignition.DefaultVersion) {
		t.Errorf("the default %s is not a supported version", ignition.DefaultVersion)
	}
	for _, v := range ignition.Versions() {
		if rendertest.IgnitionParsers[v] == nil {
			t.Errorf("the tests have no parser for Ignition %s", v)
		}
	}
}

// TestIgnitionEveryVersion renders every golden spec at every Ignition
// version and parses it with that version's own parser: no error, no
// warning, and unit files byte-identical to the rendered units.
func TestIgnitionEveryVersion(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		us := rendertest.Units(t, path)
		want := map[string]string{}
		for _, f := range render.Files(us) {
			want[f.Path] = string(f.Contents)
		}
		for _, v := range ignition.Versions() {
			t.Run(name+"/"+v, func(t *testing.T) {
				for _, pretty := range []bool{false, true} {
					ign, err := ignition.Render(us, ignition.Options{Version: v, Pretty: pretty})
					if err != nil {
						t.Fatal(err)
					}
					rendertest.CompareFiles(t, "ignition "+v, want, rendertest.ParseIgnition(t, v, ign).Files())
				}
			})
		}
	}
}

// TestIgnitionVersionsDifferOnlyInVersion: the unit features hostprov uses
// are the same in every version, so the configs differ in the version
// field only.
func TestIgnitionVersionsDifferOnlyInVersion(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		us := rendertest.Units(t, path)
		base, err := ignition.Render(us, ignition.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range ignition.Versions() {
			ign, err := ignition.Render(us, ignition.Options{Version: v})
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Replace(string(ign), `"version":"`+v+`"`, `"version":"`+ignition.DefaultVersion+`"`, 1)
			if got != string(base) {
				t.Errorf("%s: Ignition %s differs from %s in more than the version:\n%s\n%s", name, v, ignition.DefaultVersion, ign, base)
			}
		}
	}
}

func TestIgnitionOptions(t *testing.T) {
	got, err := ignition.Options{}.Resolve()
	if err != nil || got.Version != ignition.DefaultVersion || got.Pretty {
		t.Errorf("zero options resolve to %+v, %v", got, err)
	}
	for _, bad := range []string{"3.6.0", "3.6.0-experimental", "2.3.0", "3.4", "v3.4.0", "latest"} {
		_, err := ignition.Render(nil, ignition.Options{Version: bad})
		var oe *render.OptionError
		if !errors.As(err, &oe) || oe.Option != "ignition-version" {
			t.Errorf("version %q: got %v, want an *OptionError for ignition-version", bad, err)
			continue
		}
		want := `unknown Ignition spec version "` + bad + `": use one of 3.0.0, 3.1.0, 3.2.0, 3.3.0, 3.4.0, 3.5.0`
		if err.Error() != want {
			t.Errorf("got  %s\nwant %s", err, want)
		}
	}
}

func TestIgnitionRefusesInvalidUTF8(t *testing.T) {
	us := []compile.Unit{{Name: "a.service", Contents: []byte("[Service]\nExecStart=/bin/echo \xff\n")}}
	if _, err := ignition.Render(us, ignition.Options{}); err == nil || !strings.Contains(err.Error(), "a.service: contents are not valid UTF-8") {
		t.Errorf("got %v", err)
	}
}

// TestIgnitionAvoidsWarnings covers the warnings Ignition's parser gives
// for units, and what hostprov does about each: it leaves out an
// enabled: true that cannot do anything (the spec's warning at render time
// said so), and keeps what the spec asks for everywhere else.
func TestIgnitionAvoidsWarnings(t *testing.T) {
	spec := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: lonely
  useRawManifest: true
  manifest: |
    [Service]
    ExecStart=/bin/true
- name: empty-install
  useRawManifest: true
  manifest: |
    [Service]
    ExecStart=/bin/true
    [Install]
- name: worker@.service
  useRawName: true
  useRawManifest: true
  enabled: false
  manifest: |
    [Service]
    ExecStart=/bin/echo %i
- name: worker@a.service
  useRawName: true
  enabled: true
- name: image@x.service
  useRawName: true
  enabled: true
- name: countme.timer
  mask: true
  enabled: false
- name: off
  exec: [/bin/true]
  enabled: false
- name: on
  exec: [/bin/true]
`
	r, diags := compile.Build("t.yaml", []byte(spec), compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatal(diags)
	}
	// The render pipeline warns about the units enabling cannot start.
	var warned []string
	for _, d := range diags {
		warned = append(warned, d.Path)
	}
	if diff := cmp.Diff([]string{"hooks[0].manifest", "hooks[1].manifest"}, warned); diff != "" {
		t.Errorf("render warnings at (-want +got):\n%s\n%v", diff, diags)
	}

	for _, v := range ignition.Versions() {
		ign, err := ignition.Render(us, ignition.Options{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		cfg := rendertest.ParseIgnition(t, v, ign) // no warning
		got := map[string]string{}
		for _, u := range cfg.Systemd.Units {
			got[u.Name] = state(u.Enabled) + "," + state(u.Mask)
		}
		want := map[string]string{
			"lonely.service":        "-,-",     // no [Install]: enable does nothing
			"empty-install.service": "-,-",     // an empty [Install] neither
			"worker@.service":       "false,-", // as asked
			"worker@a.service":      "-,-",     // its template has no [Install]
			"image@x.service":       "true,-",  // template not known here: as asked
			"countme.timer":         "false,true",
			"off.service":           "false,-",
			"on.service":            "true,-",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Ignition %s: enabled,mask per unit (-want +got):\n%s", v, diff)
		}
	}

	// What Ignition says about an enabled: true hostprov leaves out: the
	// warnings avoided are real.
	for _, raw := range []string{
		`{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"lonely.service","enabled":true,"contents":"[Service]\nExecStart=/bin/true\n"}]}}`,
		`{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"name":"w@.service","contents":"[Service]\nExecStart=/bin/true\n"},{"name":"w@a.service","enabled":true}]}}`,
	} {
		_, rpt, err := v34.Parse([]byte(raw))
		if err != nil || len(rpt.Entries) != 1 || !strings.Contains(strings.ToLower(rpt.String()), "install section") {
			t.Errorf("expected Ignition to warn about a missing [Install] for %s, got %v %s", raw, err, rpt)
		}
	}
}

func state(b *bool) string {
	if b == nil {
		return "-"
	}
	if *b {
		return "true"
	}
	return "false"
}

// TestIgnitionMaskedEnabled: a masked unit is never told to be enabled,
// which would contradict the mask.
func TestIgnitionMaskedEnabled(t *testing.T) {
	yes := true
	us := []compile.Unit{{Name: "a.service", Mask: true, Enabled: &yes}}
	ign, err := ignition.Render(us, ignition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"ignition":{"version":"3.4.0"},"systemd":{"units":[{"mask":true,"name":"a.service"}]}}` + "\n"; string(ign) != want {
		t.Errorf("got  %s\nwant %s", ign, want)
	}
}

// TestGolden renders every golden spec and example to Ignition and
// compares it with the files under testdata/golden.
func TestGolden(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			us := rendertest.Units(t, path)
			dir := filepath.Join("..", "..", "..", "testdata", "golden")
			ign, err := ignition.Render(us, ignition.Options{Pretty: true})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(dir, name+".ign.json"), ign)
		})
	}
}

// TestIgnitionShape checks what Ignition is told about each unit.
func TestIgnitionShape(t *testing.T) {
	spec := `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: a
  exec: [/bin/true]
- name: b
  exec: [/bin/true]
  enabled: false
- name: c.service
  mask: true
- name: d
  dropins: [{name: x.conf, contents: "[Service]\nNice=5\n"}]
`
	r, diags := compile.Build("t.yaml", []byte(spec), compile.Options{})
	us := r.Units
	if diags.HasErrors(true) {
		t.Fatal(diags)
	}
	ign, err := ignition.Render(us, ignition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Ignition struct{ Version string }
		Systemd  struct {
			Units []map[string]any
		}
	}
	if err := json.Unmarshal(ign, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Ignition.Version != "3.4.0" {
		t.Errorf("version %q", cfg.Ignition.Version)
	}
	want := []map[string]any{
		{"name": "a.service", "enabled": true},
		{"name": "b.service", "enabled": false},
		{"name": "c.service", "mask": true},
		{"name": "d.service"},
	}
	if len(cfg.Systemd.Units) != len(want) {
		t.Fatalf("got %d units, want %d: %s", len(cfg.Systemd.Units), len(want), ign)
	}
	for i, w := range want {
		g := cfg.Systemd.Units[i]
		for _, k := range []string{"name", "enabled", "mask"} {
			if g[k] != w[k] {
				t.Errorf("unit %d: %s = %v, want %v", i, k, g[k], w[k])
			}
		}
	}
	if _, ok := cfg.Systemd.Units[3]["contents"]; ok {
		t.Error("a drop-in-only hook must not get contents")
	}
}
