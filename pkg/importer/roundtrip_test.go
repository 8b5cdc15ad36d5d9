package importer_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	butaneconfig "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"github.com/coreos/vcontext/report"
	"github.com/google/go-cmp/cmp"
	"github.com/vincent-petithory/dataurl"
	"gopkg.in/yaml.v3"

	v30 "github.com/coreos/ignition/v2/config/v3_0"
	v31 "github.com/coreos/ignition/v2/config/v3_1"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v33 "github.com/coreos/ignition/v2/config/v3_3"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	v36 "github.com/coreos/ignition/v2/config/v3_6_experimental"

	"github.com/hostprov/hostprov/internal/corpus"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/importer"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/ignition"
)

var butaneCorpus = corpus.Path("butane")

func parse[T any](f func([]byte) (T, report.Report, error)) func([]byte) (any, report.Report, error) {
	return func(b []byte) (any, report.Report, error) { return f(b) }
}

var parsers = map[string]func([]byte) (any, report.Report, error){
	"3.0.0": parse(v30.Parse), "3.1.0": parse(v31.Parse), "3.2.0": parse(v32.Parse),
	"3.3.0": parse(v33.Parse), "3.4.0": parse(v34.Parse), "3.5.0": parse(v35.Parse),
	// The Ignition module knows 3.6.0 only as 3.6.0-experimental: a 3.6.0
	// config is read with it, its version said as that one.
	"3.6.0": func(b []byte) (any, report.Report, error) {
		return v36.Parse(bytes.Replace(b, []byte(`"3.6.0"`), []byte(`"3.6.0-experimental"`), 1))
	},
}

// roundTrip imports in, renders the spec to Ignition of the input's own
// spec version with the leftovers merged, as render --format ignition
// --merge REST does, and returns the rendered config and the original
// (want), both as normalised data (see normalise); every warning must be
// one that changes nothing (see checkWarnings). The Butane
// output with the leftovers merged (render --format butane --merge REST),
// translated with Butane, must be the rendered config too, unless the
// leftovers are an Ignition config, which the Butane output cannot merge.
func roundTrip(t *testing.T, in importer.Input, original []byte) (got, want any, res *importer.Result, diags hooks.Diagnostics) {
	t.Helper()
	res, diags = importer.Import(in)
	if res == nil {
		return nil, nil, nil, diags
	}
	r, bdiags := compile.Build(res.Name+".yaml", res.Spec, compile.Options{Locals: res.Locals})
	if bdiags.HasErrors(false) {
		t.Fatalf("the imported spec does not render:\n%s\n%s", bdiags.Error(), res.Spec)
	}
	var merge []render.MergeFile
	if res.Rest != nil {
		merge = append(merge, render.MergeFile{Name: "leftovers", Data: res.Rest, Dir: t.TempDir()})
	}
	ignOpts := ignition.Options{Version: res.IgnitionVersion, Storage: r.Storage}
	own, err := ignition.Render(r.Units, ignOpts)
	if err != nil {
		t.Fatal(err)
	}
	out, mdiags, err := ignition.Merge(own, r.Units, ignOpts, merge)
	if err != nil || mdiags.HasErrors(false) {
		t.Fatalf("render --merge of the leftovers: %v\n%s\nleftovers:\n%s", err, mdiags.Error(), res.Rest)
	}
	if d := ignition.Validate(res.IgnitionVersion, out); d.HasErrors(false) {
		t.Fatalf("Ignition refuses the rendered config: %s", d.Error())
	}
	got = normalise(t, res.IgnitionVersion, out)
	want = normalise(t, ignitionVersion(t, original), original)
	// A 3.6.0 config renders to 3.5.0, the newest version hostprov
	// writes, which import says: the versions differ, nothing else may.
	for _, c := range []any{got, want} {
		if ign, ok := get(c, "ignition").(map[string]any); ok {
			delete(ign, "version")
			if len(ign) == 0 {
				delete(c.(map[string]any), "ignition")
			}
		}
	}
	checkWarnings(t, diags)
	canonicalLists(got)
	canonicalLists(want)

	// render --format butane --merge REST, translated with Butane, is
	// the same config: the Butane leftovers go round through Butane too
	// (the Butane output takes no Ignition config to merge).
	if res.Rest != nil && res.RestFormat != importer.FormatButane {
		return got, want, res, diags
	}
	// The Butane output is of the leftovers' variant (render --variant).
	var head struct{ Variant string }
	_ = yaml.Unmarshal(res.Rest, &head)
	buOpts := butane.Options{Variant: head.Variant, IgnitionVersion: res.IgnitionVersion, Storage: r.Storage}
	ownBu, err := butane.Render(r.Units, buOpts)
	if err != nil {
		t.Fatal(err)
	}
	bu, bdiags, err := butane.Merge(ownBu, r.Units, buOpts, merge)
	if err != nil || bdiags.HasErrors(false) {
		t.Fatalf("render --format butane --merge of the leftovers: %v\n%s\nleftovers:\n%s", err, bdiags.Error(), res.Rest)
	}
	filesDir := t.TempDir()
	for name, data := range res.Locals {
		p := filepath.Join(filesDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ign, rpt, err := butaneconfig.TranslateBytes(bu, butanecommon.TranslateBytesOptions{TranslateOptions: butanecommon.TranslateOptions{FilesDir: filesDir}})
	if err != nil || rpt.IsFatal() {
		t.Fatalf("Butane does not translate the Butane output: %v %s\n%s", err, rpt, bu)
	}
	viaButane := normalise(t, ignitionVersion(t, ign), ign)
	if ig, ok := get(viaButane, "ignition").(map[string]any); ok {
		delete(ig, "version")
		if len(ig) == 0 {
			delete(viaButane.(map[string]any), "ignition")
		}
	}
	canonicalLists(viaButane)
	if d := cmp.Diff(got, viaButane); d != "" {
		t.Errorf("the Butane output with the leftovers merged, translated, differs from the Ignition output (-Ignition +Butane):\n%s\n%s", d, bu)
	}
	return got, want, res, diags
}

// ignitionVersion is the spec version of an Ignition config.
func ignitionVersion(t *testing.T, data []byte) string {
	t.Helper()
	var v struct{ Ignition struct{ Version string } }
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v.Ignition.Version
}

// normalise parses an Ignition config with Ignition's own config package
// of its spec version (which validates it, and is what Ignition reads at
// boot), marshals the typed config back to JSON data and takes out what
// Ignition's types mean as absent (empty objects and lists, nulls). Then
// it spells out the defaults Ignition applies to what is left unsaid, so
// that saying them is no difference: a file's mode 0644, a directory's
// 0755, a file without contents as an empty data URL, an empty
// compression as none. Every file's
// contents become their bytes (data URLs decoded, gzip undone), because
// how the bytes are encoded (URL-escaped, base64, compressed) is no
// difference to what Ignition writes.
func normalise(t *testing.T, version string, data []byte) any {
	t.Helper()
	p, ok := parsers[version]
	if !ok {
		t.Fatalf("no parser for Ignition %s", version)
	}
	cfg, rpt, err := p(data)
	if err != nil || rpt.IsFatal() {
		t.Fatalf("Ignition %s refuses the config: %v %s", version, err, rpt)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	v = pruneEmpty(v)
	storage, _ := get(v, "storage").(map[string]any)
	for _, f := range list(get(storage, "files")) {
		f := f.(map[string]any)
		if f["mode"] == nil {
			f["mode"] = float64(0o644)
		}
		c, _ := f["contents"].(map[string]any)
		if c == nil {
			c = map[string]any{}
			f["contents"] = c
		}
		src, _ := c["source"].(string)
		if src == "" {
			src = "data:,"
		}
		if strings.HasPrefix(src, "data:") {
			du, err := dataurl.DecodeString(src)
			if err != nil {
				t.Fatalf("%v: %v", f["path"], err)
			}
			bs := du.Data
			if c["compression"] == "" {
				delete(c, "compression")
			}
			if c["compression"] == "gzip" {
				zr, err := gzip.NewReader(bytes.NewReader(bs))
				if err == nil {
					bs, err = io.ReadAll(zr)
				}
				if err != nil {
					t.Fatal(err)
				}
				delete(c, "compression")
			}
			delete(c, "source")
			c["bytes"] = string(bs)
		}
	}
	for _, d := range list(get(storage, "directories")) {
		d := d.(map[string]any)
		if d["mode"] == nil {
			d["mode"] = float64(0o755)
		}
	}
	return v
}

// canonicalLists orders units (and their drop-ins), files, directories,
// links, users and groups by their name or path: Ignition reads them as sets keyed so
// (its merge and its validation of duplicates both key them by it), and
// import puts the storage hook first whatever the config's order.
func canonicalLists(v any) {
	for _, p := range [][]string{{"systemd", "units"}, {"storage", "files"}, {"storage", "directories"}, {"storage", "links"}, {"passwd", "users"}, {"passwd", "groups"}} {
		parent, _ := get(v, p[0]).(map[string]any)
		l := list(get(parent, p[1]))
		sort.SliceStable(l, func(i, j int) bool { return key(l[i]) < key(l[j]) })
	}
	// A unit's drop-ins are a set by name too: a merge appends those of
	// the leftovers.
	for _, u := range list(get(get(v, "systemd"), "units")) {
		l := list(get(u, "dropins"))
		sort.SliceStable(l, func(i, j int) bool { return key(l[i]) < key(l[j]) })
	}
}

func key(e any) string {
	m, _ := e.(map[string]any)
	if s, ok := m["name"].(string); ok {
		return s
	}
	s, _ := m["path"].(string)
	return s
}

// checkWarnings fails the test for a warning import gives that it does
// not know to change nothing of the data: the round trip compares the
// original as it is, so every warning must be one of
//
//   - what Ignition or Butane say of the config on their own, and that
//     a config of Ignition 3.6.0 renders to 3.5.0 (the versions are not
//     compared);
//   - what went to the leftovers: they are merged back;
//   - a unit file or drop-in kept byte for byte with exactBytes.
//
// A warning of another kind fails the test, so that a new kind is looked
// at (does it change the data?) before it passes.
func checkWarnings(t *testing.T, diags hooks.Diagnostics) {
	t.Helper()
	for _, d := range diags {
		switch {
		case d.Severity != hooks.Warning:
		case strings.HasPrefix(d.Message, "Ignition: "), strings.HasPrefix(d.Message, "Butane: "):
		case d.Path == "ignition.version" && strings.Contains(d.Message, "the spec renders to Ignition 3.5.0 at most"):
		case strings.HasPrefix(d.Message, importer.Leftovers):
		case strings.Contains(d.Message, "kept byte for byte with exactBytes: true"):
		default:
			t.Fatalf("a warning the round trip does not know to change nothing: %s", d)
		}
	}
}

func get(v any, k string) any {
	m, _ := v.(map[string]any)
	return m[k]
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func pruneEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e = pruneEmpty(e); e == nil {
				delete(x, k)
			} else {
				x[k] = e
			}
		}
		if len(x) == 0 {
			return nil
		}
	case []any:
		for i, e := range x {
			x[i] = pruneEmpty(e)
		}
		if len(x) == 0 {
			return nil
		}
	}
	return v
}

// TestCorpusRoundTrip is issue's done-when: for every Butane config of
// the corpus (imported through Butane's library) and every Ignition
// config (Butane's own output for those, imported as they are), import
// and then render --format ignition at the input's spec version gives,
// as data after Ignition's normalisation (normalise), the Ignition config
// Butane made of it, with no change that a warning could excuse (checkWarnings). A
// config of Ignition 3.6.0 (Butane fcos 1.7.0), which the Ignition and
// Butane modules hostprov is built with know only as experimental, is
// read as that, renders to 3.5.0, and must say so at its version; the
// versions are the one difference allowed.
func TestCorpusRoundTrip(t *testing.T) {
	if _, err := os.Stat(butaneCorpus); err != nil {
		t.Skipf("no Butane corpus at %s (the shared corpus beside the repository): %v", butaneCorpus, err)
	}
	inputs, err := filepath.Glob(filepath.Join(butaneCorpus, "*.bu"))
	if err != nil {
		t.Fatal(err)
	}
	igns, err := filepath.Glob(filepath.Join(butaneCorpus, "*.ign.json"))
	if err != nil {
		t.Fatal(err)
	}
	inputs = append(inputs, igns...)
	if len(inputs) == 0 {
		t.Fatalf("no configs in %s", butaneCorpus)
	}
	var compared, ahead, rest int
	for _, file := range inputs {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var body, original []byte
			if strings.HasSuffix(file, ".bu") {
				body, _ = corpus.Strip(data)
				ign, err := os.ReadFile(strings.TrimSuffix(file, ".bu") + ".ign.json")
				if err != nil {
					t.Fatal(err)
				}
				original = ign
			} else {
				body, original = data, data
			}
			in := importer.Input{Name: filepath.Base(file), Data: body, Dir: butaneCorpus, Locals: true}
			got, want, res, diags := roundTrip(t, in, original)
			if res == nil {
				t.Fatalf("import refused a config of Ignition %s:\n%s", ignitionVersion(t, original), diags.Error())
			}
			if v := ignitionVersion(t, original); v == "3.6.0" {
				if !slices.ContainsFunc(diags, func(d hooks.Diagnostic) bool {
					return d.Path == "ignition.version" && d.Pos.Line > 0 && strings.Contains(d.Message, "Ignition 3.6.0 (read with Ignition's 3.6.0-experimental config package")
				}) {
					t.Errorf("no warning that Ignition 3.6.0 renders to 3.5.0:\n%s", diags.Error())
				}
				ahead++
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("import, render --merge of the leftovers differs from the original (-original +rendered):\n%s\nspec:\n%s\nleftovers:\n%s\nwarnings:\n%s", d, res.Spec, res.Rest, diags.Error())
			}
			compared++
			if res.Rest != nil {
				rest++
			}
		})
	}
	t.Logf("%d configs round-tripped, %d of them with leftovers, %d of them Ignition 3.6.0 (rendered as 3.5.0)", compared, rest, ahead)
	if compared == 0 {
		t.Fatal("no config round-tripped")
	}
}

// TestOwnCorpusRoundTrip: the project's own corpus of Ignition and Butane
// configs, what render writes in testdata/golden (every golden of those
// outputs), goes round too: imported, rendered to Ignition of its version
// with the leftovers merged, it is the config again, as data (see
// roundTrip). A Butane config's local:
// files are read from its directory (an example's from the example's), as
// render wrote them for.
func TestOwnCorpusRoundTrip(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "golden")
	var inputs []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".ign.json") || strings.HasSuffix(p, ".bu")) {
			inputs = append(inputs, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 10 {
		t.Fatalf("found %d Ignition and Butane goldens in %s; the test expects the repository's", len(inputs), root)
	}
	var rest int
	for _, file := range inputs {
		rel, _ := filepath.Rel(root, file)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			// The local: files of an example's golden are the
			// example's.
			dir := filepath.Dir(file)
			if filepath.Base(dir) == "examples" {
				dir = filepath.Join("..", "..", "examples", strings.TrimSuffix(strings.TrimSuffix(filepath.Base(file), ".bu"), ".ign.json"))
			}
			original := data
			if strings.HasSuffix(file, ".bu") {
				original, _, err = butaneconfig.TranslateBytes(data, butanecommon.TranslateBytesOptions{TranslateOptions: butanecommon.TranslateOptions{FilesDir: dir}})
				if err != nil {
					t.Fatalf("Butane does not translate render's golden: %v", err)
				}
			}
			in := importer.Input{Name: filepath.Base(file), Data: data, Dir: dir, Locals: true}
			got, want, res, diags := roundTrip(t, in, original)
			if res == nil {
				t.Fatalf("import refused render's own output:\n%s", diags.Error())
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("import, render --merge of the leftovers differs from the original (-original +rendered):\n%s\nleftovers:\n%s\nwarnings:\n%s", d, res.Rest, diags.Error())
			}
			if res.Rest != nil {
				rest++
			}
		})
	}
	t.Logf("%d configs of render's goldens round-tripped, %d of them with leftovers", len(inputs), rest)
}
