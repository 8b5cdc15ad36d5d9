package render_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/corpus"
	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// butaneCorpus is real Butane configs, each with the Ignition config
// upstream Butane made of it (../shared/corpus beside the repository).
var butaneCorpus = corpus.Path("butane")

// mergeDir holds the merge tests' spec and the configs of a user's own.
var mergeDir = filepath.Join("..", "..", "testdata", "merge")

func mergeGolden(name string) string {
	return filepath.Join("..", "..", "testdata", "golden", "merge", name)
}

func mergeFile(t *testing.T, path string) render.MergeFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	return render.MergeFile{Name: filepath.Base(path), Data: data, Dir: dir}
}

// merged is render --merge of one format as the command does it:
// hostprov's own output of the units first, then the user's files merged
// into it by the format's merge.
func merged[O any](own func([]compile.Unit, O) ([]byte, error), merge func([]byte, []compile.Unit, O, []render.MergeFile) ([]byte, hooks.Diagnostics, error)) func([]compile.Unit, O, []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
	return func(us []compile.Unit, opts O, files []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
		b, err := own(us, opts)
		if err != nil {
			return nil, nil, err
		}
		return merge(b, us, opts, files)
	}
}

// The merges of the three formats that take --merge. Ignition's own
// config is compact whatever opts.Pretty says; the merge writes it out.
var (
	mergeIgnition = merged(func(us []compile.Unit, o ignition.Options) ([]byte, error) {
		return ignition.Render(us, ignition.Options{Version: o.Version, Storage: o.Storage})
	}, ignition.Merge)
	mergeButane    = merged(butane.Render, butane.Merge)
	mergeCloudInit = merged(func(us []compile.Unit, o cloudinit.Options) ([]byte, error) {
		return cloudinit.Render(us, cloudinit.Options{Storage: o.Storage})
	}, cloudinit.Merge)
)

func noDiags(t *testing.T, what string, diags hooks.Diagnostics, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(diags) > 0 {
		t.Fatalf("%s:\n%s", what, diags.Error())
	}
}

// TestMergeGolden merges the user's own configs of testdata/merge into the
// spec there, for every output, and compares with the goldens.
func TestMergeGolden(t *testing.T) {
	us := mergeSpec(t)
	for _, name := range []string{"own.ign", "own.bu"} {
		t.Run(name, func(t *testing.T) {
			out, diags, err := mergeIgnition(us, ignition.Options{Pretty: true}, []render.MergeFile{mergeFile(t, filepath.Join(mergeDir, name))})
			noDiags(t, "MergeIgnition", diags, err)
			golden.Check(t, mergeGolden(name+".ign"), out)
			checkIgnitionValid(t, ignition.DefaultVersion, out)
		})
	}
	t.Run("butane", func(t *testing.T) {
		out, diags, err := mergeButane(us, butane.Options{}, []render.MergeFile{mergeFile(t, filepath.Join(mergeDir, "own.bu"))})
		noDiags(t, "MergeButane", diags, err)
		golden.Check(t, mergeGolden("own.bu.bu"), out)
	})
	t.Run("cloud-init", func(t *testing.T) {
		out, diags, err := mergeCloudInit(us, cloudinit.Options{}, []render.MergeFile{mergeFile(t, filepath.Join(mergeDir, "own.cloud-config.yml"))})
		noDiags(t, "MergeCloudInit", diags, err)
		golden.Check(t, mergeGolden("own.cloud-config.yml"), out)
		checkCloudInitSchema(t, out)
	})
}

// TestMergeClashes checks that a unit, a drop-in or a unit file that the
// user's config and the spec both make differently is an error at both
// places, for every output, that every one is reported, and that nothing
// is returned.
func TestMergeClashes(t *testing.T) {
	us := mergeSpec(t)
	run := map[string]func([]render.MergeFile) ([]byte, hooks.Diagnostics, error){
		"ignition": func(fs []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeIgnition(us, ignition.Options{}, fs)
		},
		"butane": func(fs []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeButane(us, butane.Options{}, fs)
		},
		"cloud-init": func(fs []render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeCloudInit(us, cloudinit.Options{}, fs)
		},
	}
	for _, c := range []struct{ format, file string }{
		{"ignition", "clash.ign"}, {"ignition", "clash.bu"}, {"butane", "clash.bu"}, {"butane", "own.ign"},
		{"cloud-init", "clash.cloud-config.yml"}, {"cloud-init", "own.bu"},
	} {
		t.Run(c.format+"/"+c.file, func(t *testing.T) {
			out, diags, err := run[c.format]([]render.MergeFile{mergeFile(t, filepath.Join(mergeDir, c.file))})
			if err != nil {
				t.Fatal(err)
			}
			if out != nil || !diags.HasErrors(false) {
				t.Fatalf("merged without an error:\n%s", out)
			}
			golden.Check(t, mergeGolden(c.format+"-"+c.file+".want"), []byte(diags.Error()+"\n"))
		})
	}
}

// TestMergeButaneTranslates proves the rule of the Butane output: Butane
// translates the merged Butane config to the same Ignition config as
// merging the user's config into the Ignition output, for the small
// config of testdata and every Butane config of the corpus.
func TestMergeButaneTranslates(t *testing.T) {
	cases := map[string]render.MergeFile{"own.bu": mergeFile(t, filepath.Join(mergeDir, "own.bu"))}
	for name, f := range corpusButane(t) {
		cases[name] = f
	}
	us := mergeSpec(t)
	var digests []string
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			if butaneRefuses(t, us, f) {
				return
			}
			variant, version := butaneHead(t, f.Data)
			opts, err := butane.Options{Variant: variant, Version: version}.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			bu, diags, err := mergeButane(us, opts, []render.MergeFile{f})
			noDiags(t, "MergeButane", diags, err)
			fromButane, rpt, err := butaneconfig.TranslateBytes(bu, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: f.Dir}})
			if err != nil || rpt.IsFatal() {
				t.Fatalf("Butane: %v\n%s\n%s", err, rpt, bu)
			}
			ign, diags, err := mergeIgnition(us, ignition.Options{Version: opts.IgnitionVersion}, []render.MergeFile{f})
			noDiags(t, "MergeIgnition", diags, err)
			if d := cmp.Diff(jsonData(t, ign), jsonData(t, fromButane)); d != "" {
				t.Errorf("Butane's translation of the merged Butane config differs from the merged Ignition config (-ignition +butane):\n%s", d)
			}
			if name != "own.bu" {
				digests = append(digests, fmt.Sprintf("%x  %s.bu", sha256.Sum256(bu), name))
			}
		})
	}
	// The corpus's merged Butane configs, as digests (see TestMergeCorpus).
	if len(digests) > 0 && !t.Failed() {
		sort.Strings(digests)
		golden.Check(t, mergeGolden("corpus-butane.sha256"), []byte(strings.Join(digests, "\n")+"\n"))
	}
}

// TestMergeCorpus merges every Butane config of the corpus, and the
// Ignition config upstream Butane made of it, into the swap example's
// Ignition output: both give the same config, Ignition's own validation
// accepts it, and it carries every unit of both. Every cloud-config of the
// corpus that cloud-init accepts on its own is merged into the swap
// example's cloud-config, and cloud-init accepts the result. The digests
// of the merged outputs are a golden, so that a change shows, without
// copying corpus text into the project.
func TestMergeCorpus(t *testing.T) {
	bus := corpusButane(t)
	us := mergeSpec(t)
	var digests []string
	for name, f := range bus {
		t.Run(name, func(t *testing.T) {
			ignPath := filepath.Join(butaneCorpus, strings.TrimSuffix(name, ".bu")+".ign.json")
			raw, err := os.ReadFile(ignPath)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := corpus.Strip(raw)
			fromIgn, diags, err := mergeIgnition(us, ignition.Options{Version: "3.5.0"},
				[]render.MergeFile{{Name: filepath.Base(ignPath), Data: body, Dir: butaneCorpus}})
			if err == nil && fromIgn == nil && len(diags) == 1 && diags[0].Pos.Line > 0 && strings.Contains(diags[0].Message, "newer than the output's 3.5.0") {
				// Ignition 3.6.0 (Butane fcos 1.7.0), which this
				// Ignition and Butane cannot write: refused at its
				// version, and the Butane config too.
				butaneRefuses(t, us, f)
				t.Logf("refused: %s", diags.Error())
				return
			}
			noDiags(t, "MergeIgnition of upstream's Ignition", diags, err)
			checkIgnitionValid(t, "3.5.0", fromIgn)
			out := fromIgn
			// A Butane version this Butane does not know: upstream's
			// Ignition config is merged, and the Butane config refused.
			if !butaneRefuses(t, us, f) {
				out, diags, err = mergeIgnition(us, ignition.Options{Version: "3.5.0"}, []render.MergeFile{f})
				noDiags(t, "MergeIgnition", diags, err)
				checkIgnitionValid(t, "3.5.0", out)
				if d := cmp.Diff(jsonData(t, fromIgn), jsonData(t, out)); d != "" {
					t.Errorf("merging upstream's Ignition config and merging the Butane config differ (-ignition +butane):\n%s", d)
				}
			}
			var cfg struct {
				Systemd struct {
					Units []struct{ Name string } `json:"units"`
				} `json:"systemd"`
			}
			if err := json.Unmarshal(out, &cfg); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, u := range cfg.Systemd.Units {
				got[u.Name] = true
			}
			for _, u := range us {
				if !got[u.Name] {
					t.Errorf("the merged config lost hostprov's %s", u.Name)
				}
			}
			var theirs struct {
				Systemd struct {
					Units []struct{ Name string } `json:"units"`
				} `json:"systemd"`
			}
			if err := json.Unmarshal(body, &theirs); err != nil {
				t.Fatal(err)
			}
			for _, u := range theirs.Systemd.Units {
				if !got[u.Name] {
					t.Errorf("the merged config lost the corpus config's %s", u.Name)
				}
			}
			digests = append(digests, fmt.Sprintf("%x  %s.ign", sha256.Sum256(out), name))
		})
	}
	for name, f := range corpusCloudConfigs(t) {
		t.Run(name, func(t *testing.T) {
			out, diags, err := mergeCloudInit(us, cloudinit.Options{}, []render.MergeFile{f})
			noDiags(t, "MergeCloudInit", diags, err)
			checkCloudInitSchema(t, out)
			digests = append(digests, fmt.Sprintf("%x  %s", sha256.Sum256(out), name))
		})
	}
	if len(digests) > 0 && !t.Failed() {
		sort.Strings(digests)
		golden.Check(t, mergeGolden("corpus.sha256"), []byte(strings.Join(digests, "\n")+"\n"))
	}
}

// butaneRefuses reports whether Butane itself cannot translate the file
// (a version newer than this Butane knows), and checks that merging it is
// then an error at the file, not a config without it.
func butaneRefuses(t *testing.T, us []compile.Unit, f render.MergeFile) bool {
	t.Helper()
	_, _, err := butaneconfig.TranslateBytes(f.Data, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: f.Dir}})
	if err == nil {
		return false
	}
	out, diags, merr := mergeIgnition(us, ignition.Options{Version: "3.5.0"}, []render.MergeFile{f})
	if merr != nil || out != nil || !diags.HasErrors(false) || !strings.HasPrefix(diags.Error(), f.Name) {
		t.Errorf("Butane refuses %s (%v), but merging it gives no error at the file:\n%s\n%s", f.Name, err, diags.Error(), out)
	}
	t.Logf("Butane cannot translate %s, and neither does --merge: %v", f.Name, err)
	return true
}

// corpusButane is the corpus's Butane configs without their provenance
// headers, by file name; the test skips when there is no corpus.
func corpusButane(t *testing.T) map[string]render.MergeFile {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(butaneCorpus, "*.bu"))
	if len(paths) == 0 {
		t.Skipf("no corpus at %s", butaneCorpus)
	}
	out := map[string]render.MergeFile{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := corpus.Strip(raw)
		out[filepath.Base(p)] = render.MergeFile{Name: filepath.Base(p), Data: body, Dir: butaneCorpus}
	}
	return out
}

// corpusCloudConfigs is the corpus's cloud-configs that cloud-init's
// schema accepts on their own (the Flatcar coreos-cloudinit ones have keys
// cloud-init does not know), by file name.
func corpusCloudConfigs(t *testing.T) map[string]render.MergeFile {
	t.Helper()
	if _, err := exec.LookPath("cloud-init"); err != nil {
		hosttools.Unavailable(t, "cloud-init not found (Debian package cloud-init)")
	}
	dir := corpus.Path("cloudinit")
	paths, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	out := map[string]render.MergeFile{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".clc.yaml") {
			continue // a Container Linux Config, not a cloud-config
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := corpus.Strip(raw)
		if !strings.HasPrefix(string(body), "#cloud-config") {
			body = append([]byte("#cloud-config\n"), body...)
		}
		file := filepath.Join(t.TempDir(), filepath.Base(p))
		if err := os.WriteFile(file, body, 0o644); err != nil {
			t.Fatal(err)
		}
		if s, err := rendertest.CloudInitSchema(file); err != nil || s != "Valid cloud-config: "+file+"\n" {
			t.Logf("%s: not merged, cloud-init refuses it on its own: %s", filepath.Base(p), strings.TrimSpace(s))
			continue
		}
		out[filepath.Base(p)] = render.MergeFile{Name: filepath.Base(p), Data: body, Dir: dir}
	}
	return out
}

func butaneHead(t *testing.T, data []byte) (variant, version string) {
	t.Helper()
	var h struct{ Variant, Version string }
	if err := yaml.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	return h.Variant, h.Version
}

// jsonData is an Ignition config as data, its systemd.units sorted by
// name: Ignition installs units by name, in no order, and Butane puts the
// units it generates (with_mount_unit) first.
func jsonData(t *testing.T, b []byte) any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if sd, ok := v["systemd"].(map[string]any); ok {
		if us, ok := sd["units"].([]any); ok {
			sort.SliceStable(us, func(i, j int) bool {
				return fmt.Sprint(us[i].(map[string]any)["name"]) < fmt.Sprint(us[j].(map[string]any)["name"])
			})
		}
	}
	return v
}

func checkIgnitionValid(t *testing.T, version string, out []byte) {
	t.Helper()
	diags := ignition.Validate(version, out)
	if len(diags) > 0 {
		t.Errorf("Ignition's validation of the merged config:\n%s\n%s", diags, out)
	}
}

func checkCloudInitSchema(t *testing.T, doc []byte) {
	t.Helper()
	if _, err := exec.LookPath("cloud-init"); err != nil {
		hosttools.Unavailable(t, "cloud-init not found (Debian package cloud-init)")
	}
	file := filepath.Join(t.TempDir(), "merged.yaml")
	if err := os.WriteFile(file, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := rendertest.CloudInitSchema(file); err != nil || out != "Valid cloud-config: "+file+"\n" {
		t.Errorf("cloud-init schema: %v\n%s\n%s", err, out, doc)
	}
}

// TestMergeIgnitionApply applies the merged Ignition config with
// Ignition's own apply tool and checks that the user's file, directory and
// units and hostprov's units land on disk with their bytes and modes.
// (own.ign has no passwd: ignition-apply refuses to create users on the
// machine it runs on; own.bu, which has, is checked by Ignition's
// validation.)
func TestMergeIgnitionApply(t *testing.T) {
	if _, err := exec.LookPath("systemctl"); err != nil {
		hosttools.Unavailable(t, "systemctl not found (Debian package systemd)")
	}
	us := mergeSpec(t)
	ign, diags, err := mergeIgnition(us, ignition.Options{}, []render.MergeFile{mergeFile(t, filepath.Join(mergeDir, "own.ign"))})
	noDiags(t, "MergeIgnition", diags, err)
	m := rendertest.NewIgnitionMachine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inside, root, err := m.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	if log, err := m.Apply(ctx, inside, ign); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	want := map[string]struct {
		mode     os.FileMode
		contents string
	}{
		"etc/myapp/config.toml":                              {0o644, "listen = \":8080\"\n"},
		"etc/systemd/system/myapp-backup.service":            {0o644, "[Service]\nType=oneshot\nExecStart=/usr/local/bin/myapp backup\n"},
		"etc/systemd/system/docker.service.d/20-mirror.conf": {0o644, "[Service]\nEnvironment=MIRROR=https://mirror.example.com\n"},
		"etc/systemd/system/docker.service.d/10-proxy.conf":  {0o644, string(us[1].Dropins[0].Contents)},
		"etc/systemd/system/myapp.service":                   {0o644, string(us[0].Contents)},
	}
	for rel, w := range want {
		p := filepath.Join(root, rel)
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if fi.Mode().Perm() != w.mode {
			t.Errorf("%s: mode %o, want %o", rel, fi.Mode().Perm(), w.mode)
		}
		if b, _ := os.ReadFile(p); string(b) != w.contents {
			t.Errorf("%s: %q, want %q", rel, b, w.contents)
		}
	}
	preset, err := os.ReadFile(filepath.Join(root, "etc", "systemd", "system-preset", "20-ignition.preset"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"enable myapp.service", "enable myapp-backup.timer"} {
		if !strings.Contains(string(preset), l+"\n") {
			t.Errorf("the preset file has no line %q:\n%s", l, preset)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "var", "lib", "myapp")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("var/lib/myapp: %v %v", fi, err)
	}
}

// TestMergeCorpusClash merges a real Flatcar config that makes
// create-swapfile.service into the swap example, which makes it too: an
// error at the unit in the corpus file and at the hook, nothing merged.
func TestMergeCorpusClash(t *testing.T) {
	fs := corpusButane(t)
	f, ok := fs["12-flatcar-docs-swapfile-create-service-bindsto.bu"]
	if !ok {
		t.Skip("corpus case 12 not found")
	}
	us := rendertest.Units(t, filepath.Join("..", "..", "examples", "swap", "hostprov.yaml"))
	out, diags, err := mergeIgnition(us, ignition.Options{}, []render.MergeFile{f})
	if err != nil {
		t.Fatal(err)
	}
	if out != nil || len(diags) != 1 || diags[0].Pos.Line == 0 ||
		!strings.Contains(diags[0].Message, "create-swapfile.service is made by hostprov's spec too, at ../../examples/swap/hostprov.yaml:8:3") {
		t.Fatalf("want one clash at both places, got:\n%s\n%s", diags.Error(), out)
	}
}

// TestMergeNothing merges no file into every golden spec's outputs: each
// is its output as it is without --merge, byte for byte, so that merging
// reads hostprov's own output without changing it.
func TestMergeNothing(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			us := rendertest.Units(t, path)
			for _, pretty := range []bool{false, true} {
				want, err := ignition.Render(us, ignition.Options{Pretty: pretty})
				if err != nil {
					t.Fatal(err)
				}
				got, diags, err := mergeIgnition(us, ignition.Options{Pretty: pretty}, nil)
				noDiags(t, "MergeIgnition", diags, err)
				if d := cmp.Diff(string(want), string(got)); d != "" {
					t.Errorf("Ignition (pretty %v) (-want +got):\n%s", pretty, d)
				}
			}
			want, err := butane.Render(us, butane.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, diags, err := mergeButane(us, butane.Options{}, nil)
			noDiags(t, "MergeButane", diags, err)
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("Butane (-want +got):\n%s", d)
			}
			want, err = cloudinit.Render(us, cloudinit.Options{})
			if err != nil {
				t.Fatal(err)
			}
			got, diags, err = mergeCloudInit(us, cloudinit.Options{}, nil)
			noDiags(t, "MergeCloudInit", diags, err)
			if d := cmp.Diff(string(want), string(got)); d != "" {
				t.Errorf("cloud-init (-want +got):\n%s", d)
			}
		})
	}
}

// TestMergeStorageClashes merges into a config of hostprov's that has a
// file of its own (as a spec's files: give): the same path in the user's
// config, as another entry, is an error at the user's entry; the same
// entry is not.
func TestMergeStorageClashes(t *testing.T) {
	own := []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/app.conf","contents":{"source":"data:,a"},"mode":420}]}}`)
	same := render.MergeFile{Name: "same.ign", Data: []byte(`{"ignition":{"version":"3.4.0"},"storage":{"files":[{"path":"/etc/app.conf","contents":{"source":"data:,a"},"mode":420}]}}`)}
	other := render.MergeFile{Name: "other.bu", Data: []byte("variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/other\n    - path: /etc/app.conf\n      contents:\n        inline: b\n")}
	out, diags, err := ignition.Merge(own, nil, ignition.Options{}, []render.MergeFile{same})
	noDiags(t, "the same entry", diags, err)
	if !strings.Contains(string(out), `"/etc/app.conf"`) {
		t.Errorf("merged: %s", out)
	}
	out, diags, err = ignition.Merge(own, nil, ignition.Options{}, []render.MergeFile{other})
	if err != nil {
		t.Fatal(err)
	}
	want := "other.bu:6:7: error: storage.files[1]: /etc/app.conf is in hostprov's spec too, as another entry: Ignition's merge would keep only yours"
	if out != nil || len(diags) != 1 || !strings.HasPrefix(diags.Error(), want) {
		t.Errorf("want %q, got:\n%s\n%s", want, diags.Error(), out)
	}

	ci := []byte("#cloud-config\nwrite_files:\n  - path: /etc/app.conf\n    content: a\n")
	_, diags, err = cloudinit.Merge(ci, nil, cloudinit.Options{},
		[]render.MergeFile{{Name: "mine.yml", Data: []byte("#cloud-config\nwrite_files:\n  - path: /etc/app.conf\n    content: b\n")}})
	if err != nil {
		t.Fatal(err)
	}
	want = "mine.yml:3:11: error: write_files.path: /etc/app.conf is written by hostprov's spec, with other contents or mode"
	if len(diags) != 1 || !strings.HasPrefix(diags.Error(), want) {
		t.Errorf("want %q, got:\n%s", want, diags.Error())
	}
}

// mergeSpec builds the merge tests' spec under its own name, so that the
// messages of clashes name it as a user's spec file would.
func mergeSpec(t *testing.T) []compile.Unit {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mergeDir, "hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, diags := compile.Build("hooks.yaml", data, compile.Options{})
	us := r.Units
	if len(diags) > 0 {
		t.Fatalf("the merge spec must render without any diagnostic:\n%v", diags.Error())
	}
	return us
}
