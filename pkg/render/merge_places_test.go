package render_test

import (
	"strings"
	"testing"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"
	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/ignition"
)

// filesSpec writes a configuration file besides its unit.
const filesSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: app
  exec: [/bin/echo, hello]
  files:
  - path: /etc/app.conf
    contents: "a=1\n"
`

func buildText(t *testing.T, name, spec string) compile.Result {
	t.Helper()
	r, diags := compile.Build(name, []byte(spec), compile.Options{})
	if len(diags) > 0 {
		t.Fatalf("the spec must build without a diagnostic:\n%s", diags.Error())
	}
	return r
}

// TestMergeButaneStorageClash: a file that a Butane config and the spec
// both write, as other entries, is reported by the Butane output where
// the Ignition output reports it, at the user's entry and the spec's, and
// not at a line of the merged output; the same entry is written once, and
// Butane translates the merged config to the merged Ignition config.
func TestMergeButaneStorageClash(t *testing.T) {
	r := buildText(t, "spec.yaml", filesSpec)
	merges := map[string]func(render.MergeFile) ([]byte, hooks.Diagnostics, error){
		"ignition": func(f render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeIgnition(r.Units, ignition.Options{Storage: r.Storage}, []render.MergeFile{f})
		},
		"butane": func(f render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeButane(r.Units, butane.Options{Storage: r.Storage}, []render.MergeFile{f})
		},
	}
	clash := render.MergeFile{Name: "mine.bu", Data: []byte(`variant: fcos
version: 1.5.0
storage:
  files:
    - path: /etc/motd
      contents:
        inline: hello
    - path: /etc/app.conf
      mode: 0644
      contents:
        inline: "a=2\n"
`)}
	want := "mine.bu:8:7: error: storage.files[1]: /etc/app.conf is in hostprov's spec too, at spec.yaml:7:5 (hooks[0], app), as another entry: Ignition's merge would keep only yours\n" +
		"\thint: keep the path in one place: your config or the spec"
	for _, format := range []string{"ignition", "butane"} {
		out, diags, err := merges[format](clash)
		if err != nil {
			t.Fatal(err)
		}
		if got := diags.Error(); out != nil || got != want {
			t.Errorf("%s: diagnostics:\n%s\nwant:\n%s\noutput:\n%s", format, got, want, out)
		}
	}

	same := render.MergeFile{Name: "same.bu", Data: []byte(`variant: fcos
version: 1.5.0
storage:
  files:
    - path: /etc/app.conf
      mode: 0644
      contents:
        inline: "a=1\n"
    - path: /etc/motd
      contents:
        inline: hello
`)}
	ign, diags, err := merges["ignition"](same)
	noDiags(t, "MergeIgnition", diags, err)
	bu, diags, err := merges["butane"](same)
	noDiags(t, "MergeButane", diags, err)
	fromButane, rpt, err := butaneconfig.TranslateBytes(bu, common.TranslateBytesOptions{})
	if err != nil || len(rpt.Entries) > 0 {
		t.Fatalf("Butane: %v\n%s\n%s", err, rpt, bu)
	}
	if d := cmp.Diff(jsonData(t, ign), jsonData(t, fromButane)); d != "" {
		t.Errorf("Butane's translation differs from the merged Ignition config (-ignition +butane):\n%s\n%s", d, bu)
	}
}

// TestMergeCloudInitFileClash: a write_files entry of the user's for a
// file of a hook's files:, with other contents, is an error at the
// user's entry that names the spec's, with a hint about files rather than
// units.
func TestMergeCloudInitFileClash(t *testing.T) {
	r := buildText(t, "spec.yaml", filesSpec)
	f := render.MergeFile{Name: "mine.yml", Data: []byte("#cloud-config\nwrite_files:\n  - path: /etc/motd\n    content: hello\n  - path: /etc/app.conf\n    content: \"a=2\\n\"\n")}
	out, diags, err := mergeCloudInit(r.Units, cloudinit.Options{Storage: r.Storage}, []render.MergeFile{f})
	if err != nil {
		t.Fatal(err)
	}
	want := "mine.yml:5:11: error: write_files.path: /etc/app.conf is written by hostprov's spec too, at spec.yaml:7:5 (hooks[0], app), with other contents or mode\n" +
		"\thint: keep the file in one place: drop the entry from your cloud-config or the file from the spec, or make both the same"
	if got := diags.Error(); out != nil || got != want {
		t.Errorf("diagnostics:\n%s\nwant:\n%s\noutput:\n%s", got, want, out)
	}
}

// TestMergeButaneWarningsOnce: each warning Butane gives of a --merge
// file is reported once, at its place: not again by Ignition's
// validation of Butane's output (which Butane ran already), nor inside the
// error of a merged config that Butane refuses.
func TestMergeButaneWarningsOnce(t *testing.T) {
	r := buildText(t, "spec.yaml", filesSpec)
	warned := render.MergeFile{Name: "mine.bu", Data: []byte("variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: /etc/x\n      mode: 644\n      contents:\n        inline: x\n")}
	const hint = "\n\thint: fix your config: Butane says so of it on its own, without hostprov's units"
	want := "mine.bu:6:13: warning: storage.files[0].mode: Butane: unreasonable mode would be reasonable if specified in octal; remember to add a leading zero" + hint + "\n" +
		"mine.bu:6:13: warning: storage.files[0].mode: Butane: setuid/setgid/sticky bits are not supported or functional in spec versions older than 3.6.0" + hint
	_, diags, err := mergeIgnition(r.Units, ignition.Options{Storage: r.Storage}, []render.MergeFile{warned})
	if err != nil {
		t.Fatal(err)
	}
	if got := diags.Error(); got != want {
		t.Errorf("Ignition output: diagnostics:\n%s\nwant:\n%s", got, want)
	}
	_, diags, err = mergeButane(r.Units, butane.Options{Storage: r.Storage}, []render.MergeFile{warned})
	if err != nil {
		t.Fatal(err)
	}
	if got := diags.Error(); got != want {
		t.Errorf("Butane output: diagnostics:\n%s\nwant:\n%s", got, want)
	}

	// A directory where the spec has its file: the merged config is
	// refused, and each warning is still said once.
	refused := render.MergeFile{Name: "mine.bu", Data: append(append([]byte(nil), warned.Data...), "  directories:\n    - path: /etc/app.conf\n"...)}
	out, diags, err := mergeButane(r.Units, butane.Options{Storage: r.Storage}, []render.MergeFile{refused})
	if err != nil {
		t.Fatal(err)
	}
	if out != nil || !diags.HasErrors(false) {
		t.Fatalf("merged a directory at the spec's file:\n%s", out)
	}
	for _, w := range []string{"unreasonable mode would be reasonable", "setuid/setgid/sticky bits are not supported"} {
		if n := strings.Count(diags.Error(), w); n != 1 {
			t.Errorf("%q is said %d times:\n%s", w, n, diags.Error())
		}
	}
}

// TestMergeStorageKindClash: a directory of the user's where the spec has
// a file is an error at both places, in the Ignition and the Butane
// output alike, rather than Butane's duplicate at a line of the merged
// output or Ignition's refusal of the merged config at no line.
func TestMergeStorageKindClash(t *testing.T) {
	r := buildText(t, "spec.yaml", filesSpec)
	f := render.MergeFile{Name: "mine.bu", Data: []byte("variant: fcos\nversion: 1.5.0\nstorage:\n  directories:\n    - path: /etc/motd.d\n    - path: /etc/app.conf\n")}
	want := "mine.bu:6:7: error: storage.directories[1]: /etc/app.conf is a file in hostprov's spec too, at spec.yaml:7:5 (hooks[0], app), and a directory here: there can be only one thing at a path\n" +
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
