package ignition_test

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	butane "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/corpus"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// butaneCorpus is real Butane configs, each with the Ignition config
// upstream Butane made of it (../shared/corpus beside the repository).
var butaneCorpus = corpus.Path("butane")

// corpusDifferences are the differences between hostprov's units and
// Butane's that have a reason, per corpus case: "UNIT: FIELD" with why.
// Anything else that differs fails the test, and so does a difference
// listed here that no longer occurs.
var corpusDifferences = map[string]map[string]string{
	"01-butane-docs-swap-partition-with_mount_unit": {
		"dev-disk-by\\x2dpartlabel-swap.swap: contents": withMountUnit,
	},
	"04-butane-docs-var-btrfs-with_mount_unit": {
		"var.mount: contents": withMountUnit,
	},
	"14-flatcar-docs-swap-disk-with_mount_unit": {
		"dev-disk-by\\x2dpartlabel-swap.swap: contents": withMountUnit,
	},
}

// withMountUnit is why a unit Butane generates for a filesystem differs.
const withMountUnit = "Butane writes the unit it generates for storage.filesystems[].with_mount_unit " +
	"without a final newline; hostprov ends every unit file with exactly one newline (a raw manifest's " +
	"only normalisation), so its contents are Butane's plus \"\\n\""

// butaneFile is the part of a Butane config (or of the Ignition config made
// of it: the unit fields are spelled the same) that holds units.
type butaneFile struct {
	Variant string `yaml:"variant"`
	Version string `yaml:"version"`
	Systemd struct {
		Units []butaneUnit `yaml:"units"`
	} `yaml:"systemd"`
	Storage yaml.Node `yaml:"storage"`
	Passwd  yaml.Node `yaml:"passwd"`
}

type butaneUnit struct {
	Name     string  `yaml:"name" json:"name"`
	Enabled  *bool   `yaml:"enabled" json:"enabled,omitempty"`
	Mask     *bool   `yaml:"mask" json:"mask,omitempty"`
	Contents *string `yaml:"contents" json:"contents,omitempty"`
	Dropins  []struct {
		Name     string  `yaml:"name" json:"name"`
		Contents *string `yaml:"contents" json:"contents,omitempty"`
	} `yaml:"dropins" json:"dropins,omitempty"`
}

// hookOf is the hook spec entry for a unit: raw name, raw manifest, and
// enabled, mask and drop-ins as the Butane config says them. A unit the
// Butane config leaves without enabled gets hostprov's default (enabled);
// in the corpus those are all units without [Install], which render warns
// about and Ignition is then not told to enable, as in Butane's output.
type hookOf struct {
	Name           string   `yaml:"name"`
	UseRawName     bool     `yaml:"useRawName"`
	UseRawManifest bool     `yaml:"useRawManifest,omitempty"`
	Manifest       string   `yaml:"manifest,omitempty"`
	Enabled        *bool    `yaml:"enabled,omitempty"`
	Mask           bool     `yaml:"mask,omitempty"`
	Dropins        []dropIn `yaml:"dropins,omitempty"`
}

type dropIn struct {
	Name     string `yaml:"name"`
	Contents string `yaml:"contents"`
}

func hooksOf(units []butaneUnit) []hookOf {
	var hs []hookOf
	for _, u := range units {
		h := hookOf{Name: u.Name, UseRawName: true, Enabled: u.Enabled, Mask: u.Mask != nil && *u.Mask}
		if u.Contents != nil {
			h.UseRawManifest, h.Manifest = true, *u.Contents
		}
		for _, d := range u.Dropins {
			h.Dropins = append(h.Dropins, dropIn{Name: d.Name, Contents: *d.Contents})
		}
		hs = append(hs, h)
	}
	return hs
}

// stripHeader removes the corpus's provenance header, which every corpus
// file has.
func stripHeader(t *testing.T, data []byte) []byte {
	t.Helper()
	body, ok := corpus.Strip(data)
	if !ok {
		t.Fatal("no corpus-header-end line")
	}
	return body
}

// TestCorpusButaneParity: for every real Butane config of the corpus, a
// hook spec holding the same units as raw manifests renders to Ignition
// whose systemd.units (name, enabled, mask, contents, drop-ins) are those of
// the Ignition config upstream Butane made of it, apart from the spec
// version. Storage, passwd and the rest are not hostprov's and are not
// compared. Units Butane generates itself (with_mount_unit) are rendered
// from its output as raw manifests too, so that they are compared as well.
func TestCorpusButaneParity(t *testing.T) {
	if _, err := os.Stat(butaneCorpus); err != nil {
		t.Skipf("no Butane corpus at %s (the shared corpus beside the repository): %v", butaneCorpus, err)
	}
	bus, err := filepath.Glob(filepath.Join(butaneCorpus, "[0-9][0-9]-*.bu"))
	if err != nil {
		t.Fatal(err)
	}
	if len(bus) == 0 {
		t.Fatalf("no NN-*.bu in %s", butaneCorpus)
	}
	seen := map[string]bool{}
	for _, bu := range bus {
		name := strings.TrimSuffix(filepath.Base(bu), ".bu")
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(bu)
			if err != nil {
				t.Fatal(err)
			}
			var in butaneFile
			if err := yaml.Unmarshal(stripHeader(t, data), &in); err != nil {
				t.Fatal(err)
			}
			// Butane's output: NN-*.ign.json, and where the corpus has
			// it, the output the documentation publishes. The JSON files
			// have their provenance in a sidecar .source.txt.
			outputs, err := filepath.Glob(strings.TrimSuffix(bu, ".bu") + ".*ign.json")
			if err != nil || len(outputs) == 0 {
				t.Fatalf("no Ignition config beside %s: %v", bu, err)
			}
			for _, o := range outputs {
				t.Run(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(o), name+"."), ".json"), func(t *testing.T) {
					compareWithButane(t, name, in, o)
				})
			}
		})
	}
	for name := range corpusDifferences {
		if !seen[name] {
			t.Errorf("corpusDifferences names %s, which is not in the corpus", name)
		}
	}
}

// compareWithButane renders the units of a corpus Butane config and
// compares them with Butane's output in the file ignFile.
func compareWithButane(t *testing.T, name string, in butaneFile, ignFile string) {
	raw, err := os.ReadFile(ignFile)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Ignition struct{ Version string }
		Systemd  struct{ Units []butaneUnit }
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if in.Storage.Kind != 0 || in.Passwd.Kind != 0 {
		t.Logf("compares systemd.units only: the storage and passwd sections are not hostprov's")
	}

	// The units of the Butane config, then those Butane made
	// itself from other sections, as they are in its output.
	units := slices.Clone(in.Systemd.Units)
	for _, u := range out.Systemd.Units {
		if !slices.ContainsFunc(units, func(b butaneUnit) bool { return b.Name == u.Name }) {
			t.Logf("%s is not in the Butane config's systemd.units: Butane generated it (with_mount_unit); rendered from Butane's output", u.Name)
			units = append(units, u)
		}
	}
	spec, err := yaml.Marshal(map[string]any{"apiVersion": "hostprov/v1alpha1", "kind": "Hooks", "hooks": hooksOf(units)})
	if err != nil {
		t.Fatal(err)
	}
	r, diags := compile.Build(name+".yaml", spec, compile.Options{})
	us := r.Units
	if diags.HasErrors(false) {
		t.Fatalf("hostprov refuses the units:\n%v\n%s", diags.Error(), spec)
	}
	for _, d := range diags {
		t.Logf("render says: %s", d.String())
	}

	version := out.Ignition.Version
	if !slices.Contains(ignition.Versions(), version) {
		version = ignition.Versions()[len(ignition.Versions())-1]
		t.Logf("Butane wrote Ignition %s, which hostprov does not emit; comparing with %s", out.Ignition.Version, version)
	}
	ign, err := ignition.Render(us, ignition.Options{Version: version})
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Systemd struct{ Units []butaneUnit } }
	if err := json.Unmarshal(ign, &got); err != nil {
		t.Fatal(err)
	}

	diffs := unitDifferences(out.Systemd.Units, got.Systemd.Units)
	want := corpusDifferences[name]
	for _, d := range slices.Sorted(maps.Keys(diffs)) {
		if why, ok := want[d]; ok {
			t.Logf("differs, as expected: %s\n\twhy: %s\n\t%s", d, why, diffs[d])
		} else {
			t.Errorf("%s differs from Butane's output:\n%s\nspec:\n%s", d, diffs[d], spec)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(want)) {
		if _, ok := diffs[d]; !ok {
			t.Errorf("%s no longer differs from Butane's output: remove it from corpusDifferences", d)
		}
	}
}

// unitDifferences compares two systemd.units lists, unit by unit and field
// by field, and returns what differs as "UNIT: FIELD" -> a diff.
func unitDifferences(want, got []butaneUnit) map[string]string {
	diffs := map[string]string{}
	byName := func(us []butaneUnit) map[string]butaneUnit {
		m := map[string]butaneUnit{}
		for _, u := range us {
			m[u.Name] = u
		}
		return m
	}
	w, g := byName(want), byName(got)
	var wn, gn []string
	for _, u := range want {
		wn = append(wn, u.Name)
	}
	for _, u := range got {
		gn = append(gn, u.Name)
	}
	if d := cmp.Diff(wn, gn); d != "" {
		diffs["units: names"] = d
	}
	for name, wu := range w {
		gu, ok := g[name]
		if !ok {
			continue
		}
		for field, pair := range map[string][2]any{
			"enabled":  {wu.Enabled, gu.Enabled},
			"mask":     {wu.Mask, gu.Mask},
			"contents": {wu.Contents, gu.Contents},
			"dropins":  {wu.Dropins, gu.Dropins},
		} {
			if d := cmp.Diff(pair[0], pair[1]); d != "" {
				diffs[fmt.Sprintf("%s: %s", name, field)] = "(-Butane +hostprov)\n" + d
			}
		}
	}
	return diffs
}

// TestButaneMergesHostprov proves docs/outputs.md's way of adding one's own
// storage and passwd to hostprov's units without editing generated files:
// a Butane config of one's own that merges hostprov's Ignition config as a
// local file, translated by Butane with --files-dir. The merged config must
// carry hostprov's config byte for byte, and the result must be a valid
// Ignition config.
func TestButaneMergesHostprov(t *testing.T) {
	ign, err := ignition.Render(rendertest.Units(t, filepath.Join("..", "..", "..", "examples", "swap", "hostprov.yaml")), ignition.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hostprov.ign"), ign, 0o644); err != nil {
		t.Fatal(err)
	}
	own := []byte(`variant: fcos
version: 1.5.0
ignition:
  config:
    merge:
      - local: hostprov.ign
storage:
  files:
    - path: /etc/myapp/config.toml
      contents:
        inline: |
          listen = ":8080"
passwd:
  users:
    - name: myapp
`)
	out, rpt, err := butane.TranslateBytes(own, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: dir}})
	if err != nil || len(rpt.Entries) > 0 {
		t.Fatalf("Butane: %v\n%s", err, rpt)
	}
	if _, rpt, err := v34.Parse(out); err != nil || len(rpt.Entries) > 0 {
		t.Fatalf("Ignition refuses the merged config: %v\n%s\n%s", err, rpt, out)
	}
	var cfg struct {
		Ignition struct {
			Config struct {
				Merge []struct {
					Source      string  `json:"source"`
					Compression *string `json:"compression"`
				} `json:"merge"`
			} `json:"config"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Ignition.Config.Merge) != 1 {
		t.Fatalf("want one merged config, got %s", out)
	}
	m := cfg.Ignition.Config.Merge[0]
	got := decodeDataURL(t, m.Source)
	if m.Compression != nil && *m.Compression == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(got))
		if err != nil {
			t.Fatal(err)
		}
		if got, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(got, ign) {
		t.Errorf("the merged config is not hostprov's Ignition config:\n got %s\nwant %s", got, ign)
	}
}

// decodeDataURL decodes an RFC 2397 data URL, base64 or percent-encoded.
func decodeDataURL(t *testing.T, s string) []byte {
	t.Helper()
	meta, data, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	if !ok || !strings.HasPrefix(s, "data:") {
		t.Fatalf("not a data URL: %.80s", s)
	}
	if strings.HasSuffix(meta, ";base64") {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b, err := url.PathUnescape(data)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(b)
}
