package kopshooks_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/corpus"
	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

// corpusDir is the real kops material beside the repository.
var corpusDir = corpus.Path("kops")

// exampleDir is the kops example of the repository.
var exampleDir = rendertest.Path("examples", "kops")

// exampleUnits renders the example's hostprov spec.
func exampleUnits(t *testing.T) []compile.Unit {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(exampleDir, "hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, diags := compile.Build("hooks.yaml", data, compile.Options{})
	us := r.Units
	if diags.HasErrors(true) {
		t.Fatal(diags)
	}
	return us
}

// checkSetHooks sets units into a manifest and checks what SetHooks
// promises: every line of the input is still there, in order; the result
// reads back without new problems; a second run changes nothing; and
// setting no units gives the input back.
func checkSetHooks(t *testing.T, in []byte, ig string, us []compile.Unit) []byte {
	t.Helper()
	out, err := kopshooks.Set(in, ig, us)
	if err != nil {
		t.Fatal(err)
	}
	if missing := notSubsequence(in, out); missing != "" {
		t.Errorf("the line %q of the input is gone or moved", missing)
	}
	_, before := kops.Read("in.yaml", in)
	_, after := kops.Read("out.yaml", out)
	if len(after) != len(before) {
		t.Errorf("the result reads with %d diagnostics, the input with %d:\n%v", len(after), len(before), after)
	}
	again, err := kopshooks.Set(out, ig, us)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, out) {
		t.Errorf("a second run changes the file:\n%s", again)
	}
	back, err := kopshooks.Set(out, ig, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A spec that had no hooks: key keeps the one SetHooks added, empty.
	if !bytes.Equal(back, in) && !bytes.Equal(dropEmptyHooksKey(back), in) {
		t.Errorf("removing hostprov's hooks does not give the input back:\n%s", back)
	}
	return out
}

// dropEmptyHooksKey removes a "hooks:" line with nothing under it.
func dropEmptyHooksKey(b []byte) []byte {
	lines := strings.SplitAfter(string(b), "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != "hooks:" {
			continue
		}
		ind := len(l) - len(strings.TrimLeft(l, " "))
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		if nind := len(next) - len(strings.TrimLeft(next, " ")); strings.TrimSpace(next) == "" || nind < ind || nind == ind && !strings.HasPrefix(strings.TrimSpace(next), "-") {
			return []byte(strings.Join(append(lines[:i:i], lines[i+1:]...), ""))
		}
	}
	return b
}

// notSubsequence returns the first line of a that is not, in order, a line
// of b.
func notSubsequence(a, b []byte) string {
	bl := strings.Split(string(b), "\n")
	j := 0
	for _, l := range strings.Split(string(a), "\n") {
		for j < len(bl) && bl[j] != l {
			j++
		}
		if j == len(bl) {
			return l
		}
		j++
	}
	return ""
}

func TestSetHooksExample(t *testing.T) {
	in, err := os.ReadFile(filepath.Join(exampleDir, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := checkSetHooks(t, in, "", exampleUnits(t))
	golden.Check(t, filepath.Join(exampleDir, "cluster.after.yaml"), out)

	// Into an instance group, which has its own hooks.
	out = checkSetHooks(t, in, "nodes-eu-west-1a", exampleUnits(t))
	golden.Check(t, rendertest.Path("testdata", "golden", "kops", "example.ig-after.yaml"), out)
	// Into one that has none.
	checkSetHooks(t, in, "control-plane-eu-west-1a", exampleUnits(t))
}

// TestSetHooksCorpus writes units into every kops file of the corpus that
// is a manifest (or a spec excerpt, given apiVersion and kind), in both
// list styles, keeping every other line.
func TestSetHooksCorpus(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("the kops corpus is not at %s (it lives beside the repository in ../shared/corpus): %v", corpusDir, err)
	}
	us := exampleUnits(t)
	files, _ := filepath.Glob(filepath.Join(corpusDir, "docs", "cluster_spec.ex[1-7]*.yaml"))
	for _, f := range []string{"conversion/v1alpha2.yaml", "conversion/v1alpha3.yaml", "golden/hooks-containerd-exec/cluster.yaml"} {
		files = append(files, filepath.Join(corpusDir, f))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in, _ := corpus.Strip(data)
			if !bytes.Contains(in, []byte("kind:")) {
				in = append([]byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n"), in...)
			}
			checkSetHooks(t, in, "", us)
			if bytes.Contains(in, []byte("name: nodes\n")) {
				checkSetHooks(t, in, "nodes", us)
			}
			// The same file with indented lists keeps that style.
			indented := reindentLists(in)
			out := checkSetHooks(t, indented, "", us)
			if !bytes.Contains(out, []byte("\n    - name: max-map-count.service\n")) && !bytes.Contains(out, []byte("\n      - name: max-map-count.service\n")) {
				t.Errorf("the hooks are not indented as the file's lists:\n%s", out)
			}
		})
	}
}

// reindentLists turns compact lists ("key:\n- a") into indented ones
// ("key:\n  - a") by indenting every list item's lines by two more.
func reindentLists(in []byte) []byte {
	lines := strings.Split(string(in), "\n")
	// The indentation added to lines at each depth of the stack.
	type frame struct{ dash, add int }
	var stack []frame
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		ind := len(l) - len(t)
		for len(stack) > 0 && (ind < stack[len(stack)-1].dash || ind == stack[len(stack)-1].dash && !strings.HasPrefix(t, "-")) {
			stack = stack[:len(stack)-1]
		}
		add := 0
		if len(stack) > 0 {
			add = stack[len(stack)-1].add
		}
		if strings.HasPrefix(t, "- ") && (len(stack) == 0 || stack[len(stack)-1].dash != ind) && i > 0 {
			prev := strings.TrimRight(lines[i-1], " ")
			if strings.HasSuffix(prev, ":") && len(prev)-len(strings.TrimLeft(prev, " ")) == ind+add {
				stack = append(stack, frame{dash: ind, add: add + 2})
				add += 2
			}
		}
		lines[i] = strings.Repeat(" ", add) + l
	}
	return []byte(strings.Join(lines, "\n"))
}

func TestSetHooksRefuses(t *testing.T) {
	cluster := []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata:\n  name: c\nspec:\n  hooks:\n  - name: mine.service\n    manifest: ExecStart=/bin/true\n")
	yes, no := true, false
	for _, c := range []struct {
		name string
		in   []byte
		ig   string
		u    compile.Unit
		want string
	}{
		{"mask", cluster, "", compile.Unit{Name: "a.service", Mask: true}, "cannot mask"},
		{"template", cluster, "", compile.Unit{Name: "a@.service", Contents: []byte("[Unit]\n")}, "template"},
		{"drop-ins", cluster, "", compile.Unit{Name: "a.service", Dropins: []compile.Dropin{{Name: "x.conf"}}}, "drop-ins"},
		{"not enabled", cluster, "", compile.Unit{Name: "a.service", Contents: []byte("[Unit]\n"), Enabled: &no}, "without enabling and starting it"},
		{"enable existing", cluster, "", compile.Unit{Name: "a.service", Enabled: &yes}, "cannot enable a unit it does not write"},
		{"a hook of the person", cluster, "", compile.Unit{Name: "mine.service", Contents: []byte("[Unit]\n")}, "not hostprov's"},
		{"no instance group", cluster, "nodes", compile.Unit{Name: "a.service", Contents: []byte("[Unit]\n")}, `no an InstanceGroup named "nodes"`},
		{"v1alpha2 instance group disabled", []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\nmetadata:\n  name: nodes\nspec:\n  role: Node\n"),
			"nodes", compile.Unit{Name: "a.service", Enabled: &no}, "reads disabled: the wrong way round"},
		{"two hooks keys", []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nspec:\n  hooks: []\n  hooks: []\n"), "",
			compile.Unit{Name: "a.service", Contents: []byte("[Unit]\n")}, "hooks: a second time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := kopshooks.Set(c.in, c.ig, []compile.Unit{c.u})
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(c.want, "no ")) {
				t.Errorf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}

// TestSetHooksRefusesAtTheHooks: every unit that cannot be written is
// refused at once, each at the place of its hook in the spec.
func TestSetHooksRefusesAtTheHooks(t *testing.T) {
	ig := []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\nmetadata:\n  name: nodes\nspec:\n  role: Node\n")
	no := false
	us := []compile.Unit{
		{Name: "a.service", Enabled: &no, Hook: 0, Pos: hooks.Position{File: "hooks.yaml", Line: 4, Column: 3}},
		{Name: "b.service", Contents: []byte("[Unit]\n"), Hook: 1, Pos: hooks.Position{File: "hooks.yaml", Line: 6, Column: 3}},
		{Name: "c.service", Enabled: &no, Hook: 2, Pos: hooks.Position{File: "hooks.yaml", Line: 9, Column: 3}},
	}
	_, err := kopshooks.Set(ig, "nodes", us)
	var ke *kopshooks.Error
	if !errors.As(err, &ke) || !errors.Is(err, kopshooks.ErrV1Alpha2Disabled) {
		t.Fatalf("got %v, want a *kopshooks.Error with ErrV1Alpha2Disabled", err)
	}
	var got []string
	for _, d := range ke.Diagnostics() {
		got = append(got, d.Pos.String()+" "+d.Path+" "+strings.SplitN(d.Message, ":", 2)[0])
	}
	want := []string{"hooks.yaml:4:3 hooks[0] a.service", "hooks.yaml:9:3 hooks[2] c.service"}
	if !slices.Equal(got, want) {
		t.Errorf("diagnostics at %q, want %q", got, want)
	}
}

// TestSetHooksDisabled writes a disabled unit in each version's spelling.
func TestSetHooksDisabled(t *testing.T) {
	no := false
	for _, v := range []string{kops.V1Alpha2, kops.V1Alpha3} {
		in := []byte("apiVersion: " + v + "\nkind: Cluster\nspec:\n  channel: stable\n")
		out, err := kopshooks.Set(in, "", []compile.Unit{{Name: "update-engine.service", Enabled: &no}})
		if err != nil {
			t.Fatal(err)
		}
		ms, diags := kops.Read("c.yaml", out)
		if len(diags) > 0 || len(ms.Cluster.Hooks) != 1 || ms.Cluster.Hooks[0].IsEnabled() {
			t.Errorf("%s: the unit is not disabled: %v\n%s", v, diags, out)
		}
	}
}

// TestSetHooksKeepsBytes writes units whose text a YAML literal block
// cannot hold as it is (trailing blanks, a tab first, no final newline)
// and reads the manifest back: the bytes must be the unit's.
func TestSetHooksKeepsBytes(t *testing.T) {
	cluster := []byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata:\n  name: c\nspec:\n  hooks: []\n")
	for _, contents := range []string{
		"[Service]\nExecStart=/bin/true   \n",
		"\t[Service]\nExecStart=/bin/true\n",
		"[Service]\nExecStart=/bin/true",
		"[Service]\nExecStart=/bin/echo \"ünïcödé\"\n\n",
	} {
		out, err := kopshooks.Set(cluster, "", []compile.Unit{{Name: "a.service", Contents: []byte(contents)}})
		if err != nil {
			t.Fatalf("%q: %v", contents, err)
		}
		m, diags := kops.Read("cluster.yaml", out)
		if diags.HasErrors(false) || m.Cluster == nil || len(m.Cluster.Hooks) != 1 {
			t.Fatalf("%q: reading back:\n%s\n%v", contents, out, diags)
		}
		if got := m.Cluster.Hooks[0].Manifest; got != contents {
			t.Errorf("manifest read back %q, want %q; file:\n%s", got, contents, out)
		}
	}
}
