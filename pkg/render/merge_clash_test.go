package render_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"
	"github.com/coreos/ignition/v2/config/merge"
	v32 "github.com/coreos/ignition/v2/config/v3_2"
	v34 "github.com/coreos/ignition/v2/config/v3_4"
	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// kindsSpec has a file, a directory and a link, each at a path of its own.
const kindsSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: tz
  files:
  - path: /etc/localtime
    contents: "UTC\n"
  directories:
  - path: /etc/tz.d
  links:
  - path: /etc/timezone
    target: ../usr/share/zoneinfo/UTC
`

// kindsAt is where kindsSpec has each kind: its path and its place.
var kindsAt = map[string]struct{ path, place string }{
	"file":      {"/etc/localtime", "spec.yaml:6:5 (hooks[0])"},
	"directory": {"/etc/tz.d", "spec.yaml:9:5 (hooks[0])"},
	"link":      {"/etc/timezone", "spec.yaml:11:5 (hooks[0])"},
}

// userEntry is a user's config with one entry of kind at p: a Butane
// config (fcos 1.4.0, which translates to Ignition 3.3.0) or an Ignition
// 3.2.0 config, with the line and column of the entry.
func userEntry(kind, p string, ign bool) (render.MergeFile, int, int) {
	if ign {
		list, entry := kindList[kind], map[string]string{
			"file":      `{"path": "` + p + `", "contents": {"source": "data:,Berlin"}}`,
			"directory": `{"path": "` + p + `"}`,
			"link":      `{"path": "` + p + `", "target": "../usr/share/zoneinfo/Europe/Berlin"}`,
		}[kind]
		data := "{\n  \"ignition\": {\"version\": \"3.2.0\"},\n  \"storage\": {\n    \"" + list + "\": [\n      " + entry + "\n    ]\n  }\n}\n"
		return render.MergeFile{Name: "mine.ign", Data: []byte(data)}, 5, 7
	}
	entry := map[string]string{
		"file":      "  files:\n    - path: " + p + "\n      contents:\n        inline: Berlin\n",
		"directory": "  directories:\n    - path: " + p + "\n",
		"link":      "  links:\n    - path: " + p + "\n      target: ../usr/share/zoneinfo/Europe/Berlin\n",
	}[kind]
	return render.MergeFile{Name: "mine.bu", Data: []byte("variant: fcos\nversion: 1.4.0\nstorage:\n" + entry)}, 5, 7
}

// userIgnitionOf is the user's config as Ignition reads it: Butane's
// translation of a Butane config, then Ignition's own parser of 3.4.0.
func userIgnitionOf(t *testing.T, f render.MergeFile) any {
	t.Helper()
	raw := f.Data
	if strings.HasSuffix(f.Name, ".bu") {
		var rpt fmt.Stringer
		var err error
		raw, rpt, err = translateButane(raw)
		if err != nil {
			t.Fatalf("Butane refuses %s: %v\n%s", f.Name, err, rpt)
		}
	} else if _, rpt, err := v32.Parse(raw); err != nil || rpt.IsFatal() {
		t.Fatalf("Ignition 3.2.0 refuses %s: %v\n%s", f.Name, err, rpt)
	}
	cfg, rpt, err := v34.ParseCompatibleVersion(raw)
	if err != nil || rpt.IsFatal() {
		t.Fatalf("Ignition refuses %s: %v\n%s", f.Name, err, rpt)
	}
	return cfg
}

func translateButane(b []byte) ([]byte, fmt.Stringer, error) {
	out, rpt, err := butaneconfig.TranslateBytes(b, common.TranslateBytesOptions{})
	if err == nil && rpt.IsFatal() {
		err = fmt.Errorf("fatal report")
	}
	return out, rpt, err
}

// kindsAtPath is the kinds an Ignition config has at path p.
func kindsAtPath(t *testing.T, cfg any, p string) []string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Storage map[string][]struct {
			Path string `json:"path"`
		} `json:"storage"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, list := range []string{"files", "directories", "links"} {
		for _, e := range c.Storage[list] {
			if e.Path == p {
				kinds = append(kinds, list)
			}
		}
	}
	return kinds
}

var kindList = map[string]string{"file": "files", "directory": "directories", "link": "links"}

// TestMergeKindClashes: a path where the spec has one kind (file,
// directory, link) and the user's config, Butane or Ignition 3.2.0,
// another is refused by every output that takes the config, at the
// user's entry and the spec's, and nothing is written. It would be lost
// otherwise: Ignition's own merge (as it merges ignition.config.merge at
// boot) keeps only the user's entry, and Ignition's parser accepts the
// result, so the spec's entry would be gone without a word.
func TestMergeKindClashes(t *testing.T) {
	r := buildText(t, "spec.yaml", kindsSpec)
	own, err := ignition.Render(r.Units, ignition.Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []string{"file", "directory", "link"} {
		for _, user := range []string{"file", "directory", "link"} {
			if spec == user {
				continue
			}
			for _, ign := range []bool{false, true} {
				at := kindsAt[spec]
				f, line, col := userEntry(user, at.path, ign)
				t.Run(fmt.Sprintf("spec %s, %s %s", spec, f.Name, user), func(t *testing.T) {
					// What Ignition itself makes of the two.
					parent, rpt, err := v34.Parse(own)
					if err != nil || rpt.IsFatal() {
						t.Fatalf("Ignition refuses hostprov's config: %v\n%s", err, rpt)
					}
					merged, _ := merge.MergeStructTranscribe(parent, userIgnitionOf(t, f))
					b, err := json.Marshal(merged)
					if err != nil {
						t.Fatal(err)
					}
					if _, rpt, err := v34.Parse(b); err != nil || rpt.IsFatal() {
						t.Fatalf("Ignition refuses its own merge, so the clash would not be silent: %v\n%s", err, rpt)
					}
					if got := kindsAtPath(t, merged, at.path); !cmp.Equal(got, []string{kindList[user]}) {
						t.Fatalf("Ignition's merge has %v at %s, want only the user's %s", got, at.path, kindList[user])
					}

					want := fmt.Sprintf("%s:%d:%d: error: storage.%s[0]: %s is a %s in hostprov's spec too, at %s, and a %s here: there can be only one thing at a path\n"+
						"\thint: keep the path in one place: your config or the spec",
						f.Name, line, col, kindList[user], at.path, spec, at.place, user)
					outputs := map[string]func() ([]byte, hooks.Diagnostics, error){
						"ignition": func() ([]byte, hooks.Diagnostics, error) {
							return ignition.Merge(own, r.Units, ignition.Options{Storage: r.Storage}, []render.MergeFile{f})
						},
					}
					if !ign {
						outputs["butane"] = func() ([]byte, hooks.Diagnostics, error) {
							return mergeButane(r.Units, butane.Options{Storage: r.Storage}, []render.MergeFile{f})
						}
					}
					for name, run := range outputs {
						out, diags, err := run()
						if err != nil {
							t.Fatal(err)
						}
						if got := diags.Error(); out != nil || got != want {
							t.Errorf("%s output: diagnostics:\n%s\nwant:\n%s\noutput:\n%s", name, got, want, out)
						}
					}
				})
			}
		}
	}
}

// TestMergeButaneIsIgnition holds the Butane output of a merge to the
// rule of docs/outputs.md: Butane's library translates it to the Ignition
// output of the same merge, as data, or it is refused with hostprov's own
// message at places in the files the user wrote (never Butane's error at
// a line of the merged config, which the user never saw).
func TestMergeButaneIsIgnition(t *testing.T) {
	specDir, userDir := t.TempDir(), t.TempDir()
	write := func(dir, name, data string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spec := strings.Replace(kindsSpec, "  directories:\n", "  - path: /etc/motd\n    local: motd\n  directories:\n", 1)
	write(specDir, "motd", "hello\n", 0o644)
	specFile := write(specDir, "spec.yaml", spec, 0o644)
	specData, err := os.ReadFile(specFile)
	if err != nil {
		t.Fatal(err)
	}
	r, diags := compile.Build(specFile, specData, compile.Options{})
	if len(diags) > 0 {
		t.Fatalf("the spec must build without a diagnostic:\n%s", diags.Error())
	}
	for _, d := range []string{specDir, userDir} {
		write(d, "tree/etc/localtime", "UTC\n", 0o644)
		write(d, "tree/etc/other", "other\n", 0o644)
		write(d, "mine.txt", "mine\n", 0o644)
	}
	bu := func(dir, name, storage string) render.MergeFile {
		return render.MergeFile{Name: name, Dir: dir, Data: []byte("variant: fcos\nversion: 1.5.0\nstorage:\n" + storage)}
	}
	same := "  files:\n    - path: /etc/localtime\n      mode: 0644\n      contents:\n        inline: \"UTC\\n\"\n"
	local := "  files:\n    - path: /etc/mine\n      contents:\n        local: mine.txt\n"
	tree := "  trees:\n    - local: tree\n"
	cases := []struct {
		name  string
		files []render.MergeFile
		// refused is the user's places of each error when the Butane
		// output refuses the merge, nil when it takes it.
		refused []string
	}{
		{"the spec's entry, the same", []render.MergeFile{bu(userDir, "mine.bu", same)}, nil},
		{"the spec's entry, the same, in a tree of the spec's directory", []render.MergeFile{bu(specDir, "mine.bu", tree)}, []string{"mine.bu:5:7"}},
		{"an earlier file's entry, the same",
			[]render.MergeFile{bu(userDir, "a.bu", "  files:\n    - path: /etc/y\n      contents:\n        inline: y\n"), bu(userDir, "b.bu", "  files:\n    - path: /etc/y\n      contents:\n        inline: y\n")}, nil},
		{"an earlier file's entry, another",
			[]render.MergeFile{bu(userDir, "a.bu", "  files:\n    - path: /etc/y\n      contents:\n        inline: a\n"), bu(userDir, "b.bu", "  files:\n    - path: /etc/y\n      contents:\n        inline: b\n")}, []string{"b.bu:5:7"}},
		{"an earlier file's entry, another kind",
			[]render.MergeFile{bu(userDir, "a.bu", "  files:\n    - path: /etc/y\n      contents:\n        inline: a\n"), bu(userDir, "b.bu", "  links:\n    - path: /etc/y\n      target: /etc/a\n")}, []string{"b.bu:5:7"}},
		{"an earlier file's tree",
			[]render.MergeFile{bu(specDir, "a.bu", "  trees:\n    - local: tree\n      path: /etc/x\n"), bu(specDir, "b.bu", "  files:\n    - path: /etc/x/etc/other\n      mode: 0644\n      contents:\n        inline: \"other\\n\"\n")}, []string{"b.bu:5:7"}},
		{"local files beside the spec's", []render.MergeFile{bu(specDir, "mine.bu", local)}, nil},
		{"local files elsewhere", []render.MergeFile{bu(userDir, "mine.bu", local)}, []string{"mine.bu:7:9"}},
		{"no local files, elsewhere", []render.MergeFile{bu(userDir, "mine.bu", "  files:\n    - path: /etc/z\n      contents:\n        inline: z\n")}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ign, diags, err := mergeIgnition(r.Units, ignition.Options{Storage: r.Storage}, c.files)
			noDiags(t, "MergeIgnition", diags, err)
			checkIgnitionValid(t, ignition.DefaultVersion, ign)
			out, diags, err := mergeButane(r.Units, butane.Options{Storage: r.Storage}, c.files)
			if err != nil {
				t.Fatal(err)
			}
			if c.refused == nil {
				noDiags(t, "MergeButane", diags, err)
				// As docs/outputs.md says: butane --files-dir, the spec's directory.
				fromButane, rpt, err := butaneconfig.TranslateBytes(out, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: specDir}})
				if err != nil || len(rpt.Entries) > 0 {
					t.Fatalf("Butane: %v\n%s\n%s", err, rpt, out)
				}
				if d := cmp.Diff(jsonData(t, ign), jsonData(t, fromButane)); d != "" {
					t.Errorf("Butane's translation of the Butane output differs from the Ignition output (-ignition +butane):\n%s\n%s", d, out)
				}
				return
			}
			var places []string
			for _, d := range diags {
				places = append(places, d.Pos.String())
			}
			if out != nil || !cmp.Equal(places, c.refused) || strings.Contains(diags.Error(), "Butane cannot translate the merged config") {
				t.Errorf("want hostprov's own errors at %v, got:\n%s\noutput:\n%s", c.refused, diags.Error(), out)
			}
		})
	}
}

// underSpec has a file in a directory of its own and a link.
const underSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: app
  files:
  - path: /etc/app/app.conf
    contents: "a=1\n"
  links:
  - path: /etc/app-link
    target: /opt/app
`

// TestMergeUnderClashes: an entry of the user's under a file or link of
// the spec, or a file or link of the user's above an entry of the spec,
// is refused at both places by both outputs; a directory above or below
// is not a clash. Ignition's parser takes the merge of a file above the
// spec's (Ignition fails on it at boot, see
// TestMergeClashesIgnitionApply), and refuses one under a link only at
// no line of either file.
func TestMergeUnderClashes(t *testing.T) {
	r := buildText(t, "spec.yaml", underSpec)
	own, err := ignition.Render(r.Units, ignition.Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	const hint = "\n\thint: move one of the two, or keep both in one place: your config or the spec"
	for _, c := range []struct{ name, storage, want string }{
		{"a file above the spec's file", "  files:\n    - path: /etc/app\n      contents:\n        inline: x\n",
			"mine.bu:5:7: error: storage.files[0]: /etc/app is a file here, and hostprov's spec has /etc/app/app.conf under it, at spec.yaml:6:5 (hooks[0]): nothing can be under a file" + hint},
		{"a link above the spec's file", "  links:\n    - path: /etc/app\n      target: /opt/app\n",
			"mine.bu:5:7: error: storage.links[0]: /etc/app is a link here, and hostprov's spec has /etc/app/app.conf under it, at spec.yaml:6:5 (hooks[0]): nothing can be under a link (it would land wherever the link points)" + hint},
		{"a directory under the spec's file", "  directories:\n    - path: /etc/app/app.conf/d\n",
			"mine.bu:5:7: error: storage.directories[0]: /etc/app/app.conf/d is under /etc/app/app.conf, a file in hostprov's spec, at spec.yaml:6:5 (hooks[0]): nothing can be under a file" + hint},
		{"a file under the spec's link", "  files:\n    - path: /etc/app-link/x\n      contents:\n        inline: x\n",
			"mine.bu:5:7: error: storage.files[0]: /etc/app-link/x is under /etc/app-link, a link in hostprov's spec, at spec.yaml:9:5 (hooks[0]): nothing can be under a link (it would land wherever the link points)" + hint},
		{"a directory above the spec's file", "  directories:\n    - path: /etc/app\n", ""},
		{"a file beside the spec's", "  files:\n    - path: /etc/app/other.conf\n      contents:\n        inline: x\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := render.MergeFile{Name: "mine.bu", Data: []byte("variant: fcos\nversion: 1.5.0\nstorage:\n" + c.storage)}
			ign, diags, err := ignition.Merge(own, r.Units, ignition.Options{Storage: r.Storage}, []render.MergeFile{f})
			if err != nil {
				t.Fatal(err)
			}
			if got := diags.Error(); got != c.want || (ign == nil) != (c.want != "") {
				t.Errorf("Ignition output: diagnostics:\n%s\nwant:\n%s\noutput:\n%s", got, c.want, ign)
			}
			bu, diags, err := mergeButane(r.Units, butane.Options{Storage: r.Storage}, []render.MergeFile{f})
			if err != nil {
				t.Fatal(err)
			}
			if got := diags.Error(); got != c.want || (bu == nil) != (c.want != "") {
				t.Errorf("Butane output: diagnostics:\n%s\nwant:\n%s\noutput:\n%s", got, c.want, bu)
			}
			if bu == nil || ign == nil {
				return
			}
			checkIgnitionValid(t, ignition.DefaultVersion, ign)
			fromButane, rpt, err := butaneconfig.TranslateBytes(bu, common.TranslateBytesOptions{})
			if err != nil || len(rpt.Entries) > 0 {
				t.Fatalf("Butane: %v\n%s\n%s", err, rpt, bu)
			}
			if d := cmp.Diff(jsonData(t, ign), jsonData(t, fromButane)); d != "" {
				t.Errorf("Butane's translation differs from the Ignition output (-ignition +butane):\n%s", d)
			}
		})
	}
}

// TestMergeClashesIgnitionApply shows with Ignition's own apply tool what
// the clashes that render --merge refuses would do on a machine, were
// the two configs merged as Ignition merges them: a link of the user's
// where the spec has a file leaves the link and no trace of the spec's
// file, without an error; a file of the user's above the spec's file
// fails the first boot.
func TestMergeClashesIgnitionApply(t *testing.T) {
	if _, err := exec.LookPath("systemctl"); err != nil {
		hosttools.Unavailable(t, "systemctl not found (Debian package systemd)")
	}
	m := rendertest.NewIgnitionMachine(t)
	ignitionMerge := func(t *testing.T, spec string, f render.MergeFile) []byte {
		t.Helper()
		r := buildText(t, "spec.yaml", spec)
		own, err := ignition.Render(r.Units, ignition.Options{Storage: r.Storage})
		if err != nil {
			t.Fatal(err)
		}
		out, diags, err := ignition.Merge(own, r.Units, ignition.Options{Storage: r.Storage}, []render.MergeFile{f})
		if err != nil || out != nil || !diags.HasErrors(false) {
			t.Fatalf("render --merge takes the clash: %v\n%s\n%s", err, diags.Error(), out)
		}
		parent, rpt, err := v34.Parse(own)
		if err != nil || rpt.IsFatal() {
			t.Fatalf("Ignition refuses hostprov's config: %v\n%s", err, rpt)
		}
		merged, _ := merge.MergeStructTranscribe(parent, userIgnitionOf(t, f))
		b, err := json.Marshal(merged)
		if err != nil {
			t.Fatal(err)
		}
		if _, rpt, err := v34.Parse(b); err != nil || rpt.IsFatal() {
			t.Fatalf("Ignition refuses its own merge: %v\n%s", err, rpt)
		}
		return b
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("a link where the spec has a file", func(t *testing.T) {
		f, _, _ := userEntry("link", "/etc/localtime", false)
		cfg := ignitionMerge(t, kindsSpec, f)
		inside, root, err := m.NewRoot()
		if err != nil {
			t.Fatal(err)
		}
		if log, err := m.Apply(ctx, inside, cfg); err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		target, err := os.Readlink(filepath.Join(root, "etc", "localtime"))
		if err != nil || target != "../usr/share/zoneinfo/Europe/Berlin" {
			t.Fatalf("etc/localtime: %q %v, want the user's link", target, err)
		}
	})
	t.Run("a file above the spec's file", func(t *testing.T) {
		f := render.MergeFile{Name: "mine.bu", Data: []byte("variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/app\n      contents:\n        inline: x\n")}
		cfg := ignitionMerge(t, underSpec, f)
		inside, _, err := m.NewRoot()
		if err != nil {
			t.Fatal(err)
		}
		log, err := m.Apply(ctx, inside, cfg)
		if err == nil {
			t.Fatalf("Ignition applied a file under a file:\n%s", log)
		}
		if !strings.Contains(log, "/etc/app/app.conf") {
			t.Errorf("Ignition failed, but not at the spec's file:\n%s", log)
		}
	})
}

// TestMergeTreeClashPlace: an entry of a Butane tree (storage.trees)
// that clashes with the spec's is reported at the tree in the file, by
// both outputs, since the entry itself is in no list of the file.
func TestMergeTreeClashPlace(t *testing.T) {
	r := buildText(t, "spec.yaml", kindsSpec)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tree", "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tree", "etc", "localtime"), []byte("Berlin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := render.MergeFile{Name: "mine.bu", Dir: dir, Data: []byte("variant: fcos\nversion: 1.5.0\nstorage:\n  trees:\n    - local: tree\n")}
	want := "mine.bu:5:7: error: storage.files[0]: /etc/localtime is in hostprov's spec too, at spec.yaml:6:5 (hooks[0]), as another entry: Ignition's merge would keep only yours\n" +
		"\thint: keep the path in one place: your config or the spec"
	out, diags, err := mergeIgnition(r.Units, ignition.Options{Storage: r.Storage}, []render.MergeFile{f})
	if err != nil {
		t.Fatal(err)
	}
	if got := diags.Error(); out != nil || got != want {
		t.Errorf("Ignition output: diagnostics:\n%s\nwant:\n%s", got, want)
	}
	out, diags, err = mergeButane(r.Units, butane.Options{Storage: r.Storage}, []render.MergeFile{f})
	if err != nil {
		t.Fatal(err)
	}
	if got := diags.Error(); out != nil || got != want {
		t.Errorf("Butane output: diagnostics:\n%s\nwant:\n%s", got, want)
	}
}
