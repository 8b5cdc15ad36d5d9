package butane_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/internal/yamlnode"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// TestButaneGolden renders every golden spec and example to a Butane
// config (fcos, the default version) and compares it with
// testdata/golden/<case>.bu.
func TestButaneGolden(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			bu, err := butane.Render(rendertest.Units(t, path), butane.Options{})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, rendertest.Path("testdata", "golden", name+".bu"), bu)
		})
	}
}

// translate runs Butane's own translation and fails on any error or
// warning.
func translate(t testing.TB, bu []byte) []byte {
	t.Helper()
	ign, rpt, err := butaneconfig.TranslateBytes(bu, common.TranslateBytesOptions{})
	if err != nil {
		t.Fatalf("Butane refuses the config: %v\n%s\n%s", err, rpt, bu)
	}
	if len(rpt.Entries) > 0 {
		t.Fatalf("Butane reports:\n%s\n%s", rpt, bu)
	}
	return ign
}

// TestButaneTranslatesToIgnition: for every golden spec, every variant and
// every Butane version hostprov writes, Butane's own TranslateBytes
// translates the Butane config without an error or a warning into the
// Ignition config --format ignition emits for the matching version.
func TestButaneTranslatesToIgnition(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		us := rendertest.Units(t, path)
		want := map[string]string{}
		for _, f := range render.Files(us) {
			want[f.Path] = string(f.Contents)
		}
		for _, v := range butane.Versions() {
			t.Run(fmt.Sprintf("%s/%s-%s", name, v.Variant, v.Version), func(t *testing.T) {
				bu, err := butane.Render(us, butane.Options{Variant: v.Variant, Version: v.Version})
				if err != nil {
					t.Fatal(err)
				}
				got := translate(t, bu)
				ign, err := ignition.Render(us, ignition.Options{Version: v.IgnitionVersion})
				if err != nil {
					t.Fatal(err)
				}
				rendertest.SameJSON(t, "Butane's translation differs from --format ignition", ign, got)
				rendertest.CompareFiles(t, "butane", want, rendertest.ParseIgnition(t, v.IgnitionVersion, got).Files())
			})
		}
	}
}

// TestButaneReadable: every unit file and drop-in of the goldens is a
// literal block in the Butane config, so that it reads as the file itself,
// unless a literal block cannot keep its bytes (a text of a hook with
// exactBytes that has carriage returns or no final newline, see
// yamlnode.BlockSafe).
func TestButaneReadable(t *testing.T) {
	for name, path := range rendertest.GoldenSpecs(t) {
		bu, err := butane.Render(rendertest.Units(t, path), butane.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(bu, &doc); err != nil {
			t.Fatal(err)
		}
		n := 0
		walkContents(&doc, func(v *yaml.Node) {
			n++
			if v.Style != yaml.LiteralStyle && yamlnode.BlockSafe([]byte(v.Value)) {
				t.Errorf("%s: line %d: contents are not a literal block:\n%s", name, v.Line, v.Value)
			}
		})
		if n == 0 && strings.Contains(string(bu), "contents") {
			t.Errorf("%s: found no contents in\n%s", name, bu)
		}
	}
}

func walkContents(n *yaml.Node, f func(*yaml.Node)) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "contents" {
				f(n.Content[i+1])
			}
		}
	}
	for _, c := range n.Content {
		walkContents(c, f)
	}
}

// awkwardContents are texts a literal block cannot keep, or that yaml.v3
// writes wrongly as one; each must reach Butane byte for byte.
var awkwardContents = []string{
	"[Service]\nExecStart=/bin/true\n",
	"[Service]\nExecStart=/bin/true   \n",                 // trailing spaces
	"[Service]\nExecStart=/bin/true\t\n",                  // trailing tab
	"[Service]\nExecStart=/bin/true",                      // no final newline
	"[Service]\nExecStart=/bin/true\n\n\n",                // several
	"\tExecStart=/bin/true\n",                             // leading tab
	"  [Service]\nExecStart=/bin/true\n",                  // leading spaces
	"\n[Service]\nExecStart=/bin/true\n",                  // leading empty line
	"[Service]\n\t\nExecStart=/bin/true\n",                // whitespace-only line
	"[Service]\nExecStart=/bin/sh -c 'a \\\n\t--b'\n",     // tab after a continuation
	"[Service]\nExecStart=/bin/echo \"tab\tinside\"\n",    // tab inside
	"[Service]\r\nExecStart=/bin/true\r\n",                // CRLF
	"[Unit]\nDescription=emoji 🤠 ünïcödé 中文\n",            // UTF-8
	"[Unit]\nDescription=a\u0085b\u2028c\u2029d\ufeffe\n", // YAML line breaks, BOM
	"[Unit]\nDescription=bell\a\x00nul\x7f\n",             // control characters
	"# a comment\n; another\n[Unit]\n",
	"---\n...\n[Unit]\n",           // document markers
	"[Unit]\nDescription=|\n- >\n", // indicators
	"[Unit]\nDescription=key: value # not a comment\n",
	"",
	"\n",
	" ",
}

// TestButaneKeepsBytes: every awkward text reads back from the Butane
// config as exactly itself, through yaml.v3 (what Butane parses with) and,
// for those that are unit files, through Butane's translation.
func TestButaneKeepsBytes(t *testing.T) {
	for i, s := range awkwardContents {
		checkButaneBytes(t, fmt.Sprintf("case %d %q", i, s), s)
	}
	// Units Butane can translate: the bytes of the translation.
	for _, s := range []string{
		"[Service]\nExecStart=/bin/true   \n",
		"[Service]\nExecStart=/bin/true\t\n",
		"[Service]\nExecStart=/bin/true",
		"[Service]\nExecStart=/bin/sh -c 'a \\\n\t--b'\n",
		"  [Service]\nExecStart=/bin/true\n",
		"[Unit]\nDescription=emoji 🤠 ünïcödé 中文\n",
		"# a comment\n; another\n[Unit]\n",
	} {
		us := []compile.Unit{{Name: "a.service", Contents: []byte(s), Enabled: boolp(false),
			Dropins: []compile.Dropin{{Name: "x.conf", Contents: []byte(s)}}}}
		bu, err := butane.Render(us, butane.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ign := rendertest.ParseIgnition(t, ignition.DefaultVersion, translate(t, bu))
		if diff := cmp.Diff(map[string]string{"a.service": s, "a.service.d/x.conf": s}, ign.Files()); diff != "" {
			t.Errorf("%q: Butane's translation changes the bytes (-want +got):\n%s", s, diff)
		}
	}
}

func boolp(b bool) *bool { return &b }

func checkButaneBytes(t *testing.T, what, s string) {
	t.Helper()
	us := []compile.Unit{{Name: "a.service", Contents: []byte(s), Dropins: []compile.Dropin{{Name: "x.conf", Contents: []byte(s)}}}}
	bu, err := butane.Render(us, butane.Options{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var cfg struct {
		Systemd struct {
			Units []struct {
				Contents string
				Dropins  []struct{ Contents string }
			}
		}
	}
	if err := yaml.Unmarshal(bu, &cfg); err != nil {
		t.Fatalf("%s: the Butane config does not parse: %v\n%s", what, err, bu)
	}
	if len(cfg.Systemd.Units) != 1 || len(cfg.Systemd.Units[0].Dropins) != 1 {
		t.Fatalf("%s: unexpected config\n%s", what, bu)
	}
	if got := cfg.Systemd.Units[0].Contents; got != s {
		t.Errorf("%s: unit contents read back as %q\n%s", what, got, bu)
	}
	if got := cfg.Systemd.Units[0].Dropins[0].Contents; got != s {
		t.Errorf("%s: drop-in contents read back as %q\n%s", what, got, bu)
	}
}

// FuzzButaneKeepsBytes: any UTF-8 text reads back from the Butane config as
// exactly itself (go test -fuzz=FuzzButaneKeepsBytes ./pkg/render).
func FuzzButaneKeepsBytes(f *testing.F) {
	for _, s := range awkwardContents {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			if _, err := butane.Render([]compile.Unit{{Name: "a.service", Contents: []byte(s)}}, butane.Options{}); err == nil {
				t.Errorf("invalid UTF-8 %q accepted", s)
			}
			return
		}
		checkButaneBytes(t, fmt.Sprintf("%q", s), s)
	})
}

func TestButaneRefusesInvalidUTF8(t *testing.T) {
	us := []compile.Unit{{Name: "a.service", Dropins: []compile.Dropin{{Name: "x.conf", Contents: []byte("[Service]\nNice=\xff\n")}}}}
	if _, err := butane.Render(us, butane.Options{}); err == nil || !strings.Contains(err.Error(), "a.service.d/x.conf: contents are not valid UTF-8") {
		t.Errorf("got %v", err)
	}
}

// TestButaneOptions checks the defaults, the mapping between Butane and
// Ignition versions, and the messages for what cannot be met.
func TestButaneOptions(t *testing.T) {
	for _, tc := range []struct {
		in      butane.Options
		want    butane.Options
		option  string
		message string
	}{
		{in: butane.Options{}, want: butane.Options{Variant: "fcos", Version: "1.5.0", IgnitionVersion: "3.4.0"}},
		{in: butane.Options{Variant: "flatcar"}, want: butane.Options{Variant: "flatcar", Version: "1.1.0", IgnitionVersion: "3.4.0"}},
		{in: butane.Options{IgnitionVersion: "3.2.0"}, want: butane.Options{Variant: "fcos", Version: "1.3.0", IgnitionVersion: "3.2.0"}},
		{in: butane.Options{IgnitionVersion: "3.0.0"}, want: butane.Options{Variant: "fcos", Version: "1.0.0", IgnitionVersion: "3.0.0"}},
		{in: butane.Options{IgnitionVersion: "3.5.0"}, want: butane.Options{Variant: "fcos", Version: "1.6.0", IgnitionVersion: "3.5.0"}},
		{in: butane.Options{Version: "1.2.0"}, want: butane.Options{Variant: "fcos", Version: "1.2.0", IgnitionVersion: "3.2.0"}},
		{in: butane.Options{Variant: "flatcar", Version: "1.0.0", IgnitionVersion: "3.3.0"}, want: butane.Options{Variant: "flatcar", Version: "1.0.0", IgnitionVersion: "3.3.0"}},
		{in: butane.Options{Variant: "flatcar", IgnitionVersion: "3.3.0"}, want: butane.Options{Variant: "flatcar", Version: "1.0.0", IgnitionVersion: "3.3.0"}},

		{in: butane.Options{Variant: "rhcos"}, option: "variant",
			message: `unknown Butane variant "rhcos": use fcos or flatcar`},
		{in: butane.Options{Variant: "flatcar", IgnitionVersion: "3.5.0"}, option: "ignition-version",
			message: "no Butane flatcar version translates to Ignition 3.5.0: use 1.0.0 (Ignition 3.3.0) or 1.1.0 (Ignition 3.4.0)"},
		{in: butane.Options{Variant: "flatcar", IgnitionVersion: "3.0.0"}, option: "ignition-version",
			message: "no Butane flatcar version translates to Ignition 3.0.0: use 1.0.0 (Ignition 3.3.0) or 1.1.0 (Ignition 3.4.0)"},
		{in: butane.Options{Variant: "flatcar", Version: "1.5.0"}, option: "butane-version",
			message: `Butane flatcar has no version "1.5.0": use 1.0.0 (Ignition 3.3.0) or 1.1.0 (Ignition 3.4.0)`},
		{in: butane.Options{Version: "1.7.0-experimental"}, option: "butane-version",
			message: `Butane fcos has no version "1.7.0-experimental": use 1.0.0 (Ignition 3.0.0), 1.1.0 (Ignition 3.1.0), 1.2.0 (Ignition 3.2.0), 1.3.0 (Ignition 3.2.0), 1.4.0 (Ignition 3.3.0), 1.5.0 (Ignition 3.4.0) or 1.6.0 (Ignition 3.5.0)`},
		{in: butane.Options{Version: "1.4.0", IgnitionVersion: "3.4.0"}, option: "butane-version",
			message: "Butane fcos 1.4.0 translates to Ignition 3.3.0, not 3.4.0: fcos 1.5.0 translates to 3.4.0; or give only one of the two versions"},
		{in: butane.Options{Variant: "flatcar", Version: "1.1.0", IgnitionVersion: "3.5.0"}, option: "butane-version",
			message: "Butane flatcar 1.1.0 translates to Ignition 3.4.0, not 3.5.0: give only one of the two versions"},
		{in: butane.Options{IgnitionVersion: "3.6.0"}, option: "ignition-version",
			message: `unknown Ignition spec version "3.6.0": use one of 3.0.0, 3.1.0, 3.2.0, 3.3.0, 3.4.0, 3.5.0`},
	} {
		got, err := tc.in.Resolve()
		if tc.message == "" {
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("%+v resolves to %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			continue
		}
		var oe *render.OptionError
		if !errors.As(err, &oe) || oe.Option != tc.option || err.Error() != tc.message {
			t.Errorf("%+v: got %#v\nwant option %s: %s", tc.in, err, tc.option, tc.message)
		}
		if _, err := butane.Render(nil, tc.in); !errors.As(err, &oe) {
			t.Errorf("%+v: Butane returns %v, want the same *OptionError", tc.in, err)
		}
	}
}

// TestButaneVersionsAreButanes: the table of versions is Butane's own: each
// version is one Butane translates, to the Ignition version the table says.
func TestButaneVersionsAreButanes(t *testing.T) {
	for _, v := range butane.Versions() {
		bu := fmt.Sprintf("variant: %s\nversion: %s\n", v.Variant, v.Version)
		var cfg rendertest.IgnitionSystemd
		if err := json.Unmarshal(translate(t, []byte(bu)), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.Ignition.Version != v.IgnitionVersion {
			t.Errorf("Butane translates %s %s to Ignition %s, the table says %s", v.Variant, v.Version, cfg.Ignition.Version, v.IgnitionVersion)
		}
	}
}
