package kops_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/corpus"
	_ "github.com/hostprov/hostprov/internal/golden" // defines -update
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/kops"
)

// corpusDir is the real kops material beside the repository.
var corpusDir = corpus.Path("kops")

func needCorpus(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skipf("the kops corpus is not at %s (it lives beside the repository in ../shared/corpus): %v", corpusDir, err)
	}
}

// readCorpus returns a corpus file without its provenance header.
func readCorpus(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, rel))
	if err != nil {
		t.Fatal(err)
	}
	return stripHeader(data)
}

// stripHeader removes the provenance header of a corpus file that has one.
func stripHeader(data []byte) []byte {
	body, _ := corpus.Strip(data)
	return body
}

// task is one task of a kops tasks file (a kops golden or an oracle).
type task struct {
	Name         string  `yaml:"Name"`
	Definition   *string `yaml:"definition"`
	Enabled      *bool   `yaml:"enabled"`
	ManageState  *bool   `yaml:"manageState"`
	Running      *bool   `yaml:"running"`
	SmartRestart *bool   `yaml:"smartRestart"`
}

func parseTasks(t *testing.T, data []byte) []task {
	t.Helper()
	var out []task
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var tk task
		if err := dec.Decode(&tk); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("reading tasks: %v", err)
		}
		out = append(out, tk)
	}
	return out
}

// envRun matches the --env options of a kops container command.
var envRun = regexp.MustCompile(`(?: --env (?:"(?:[^"\\]|\\.)*"|\S+))+`)
var envOne = regexp.MustCompile(` --env (?:"(?:[^"\\]|\\.)*"|\S+)`)

// sortEnv sorts each run of --env options: kops writes them in Go's map
// order, so only their set is kops's output.
func sortEnv(def string) string {
	return envRun.ReplaceAllStringFunc(def, func(run string) string {
		opts := envOne.FindAllString(run, -1)
		sort.Strings(opts)
		return strings.Join(opts, "")
	})
}

// compareTasks compares hostprov's tasks with kops's, field by field.
func compareTasks(t *testing.T, want []task, got []kops.Task) {
	t.Helper()
	if len(got) != len(want) {
		var names []string
		for _, g := range got {
			names = append(names, g.Name)
		}
		t.Fatalf("kops renders %d tasks, hostprov %d (%s)", len(want), len(got), strings.Join(names, ", "))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name {
			t.Errorf("task %d: name %q, kops %q", i, g.Name, w.Name)
		}
		switch {
		case w.Definition == nil && g.Contents != nil:
			t.Errorf("%s: hostprov writes a file, kops none:\n%s", w.Name, g.Contents)
		case w.Definition != nil && g.Contents == nil:
			t.Errorf("%s: hostprov writes no file, kops:\n%s", w.Name, *w.Definition)
		case w.Definition != nil:
			wd, gd := sortEnv(*w.Definition), sortEnv(string(g.Contents))
			// The oracle writes every definition as a "|" block, which
			// cannot show a file without a final newline: kops's
			// systemd.Manifest adds none after a manifest that lacks one
			// (as the nodeupconfig goldens' "|-" manifests do).
			if gd != wd && !(gd+"\n" == wd && !strings.HasSuffix(gd, "\n")) {
				t.Errorf("%s: definition differs\n--- kops\n%s\n--- hostprov\n%s", w.Name, wd, gd)
			}
		}
		flag := func(what string, want *bool, got bool) {
			if (want != nil && *want) != got {
				t.Errorf("%s: %s is %t, kops %t", w.Name, what, got, want != nil && *want)
			}
		}
		enabled := g.Enabled != nil && *g.Enabled
		flag("enabled", w.Enabled, enabled)
		flag("running", w.Running, g.Running)
		flag("manageState", w.ManageState, g.ManageState)
		flag("smartRestart", w.SmartRestart, g.SmartRestart)
	}
}

var (
	inputRE  = regexp.MustCompile(`Input: (\S+) \(kind=(\w+)`)
	paramsRE = regexp.MustCompile(`corpus-generated-params: mode=(\w+)`)
)

// oracleInput builds the kops manifests of an oracle's input. The docs
// excerpts are spec fragments without apiVersion and kind: they are given
// the kind the oracle names; nodeup configs hold kops's hook lists after
// role filtering, [instance group hooks, cluster hooks], which become an
// InstanceGroup and a Cluster; the cluster template loses its Go template
// lines, which are no YAML.
func oracleInput(t *testing.T, name, kind string) (file string, data []byte) {
	t.Helper()
	for _, dir := range []string{"docs", "third-party", "golden/bootstrapscript-role-filtering"} {
		if _, err := os.Stat(filepath.Join(corpusDir, dir, name)); err == nil {
			file = filepath.Join(dir, name)
		}
	}
	if file == "" {
		t.Fatalf("the oracle's input %s is not in the corpus", name)
	}
	src := readCorpus(t, file)
	switch kind {
	case "cluster":
		if strings.HasSuffix(name, ".tpl") {
			src = untemplate(src)
		}
		if !bytes.Contains(src, []byte("\nkind:")) && !bytes.HasPrefix(src, []byte("apiVersion:")) {
			src = append([]byte("apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n"), src...)
		}
	case "ig":
		head := "apiVersion: kops.k8s.io/v1alpha2\nkind: InstanceGroup\nmetadata:\n  name: nodes\n"
		if bytes.HasPrefix(src, []byte("spec:\n")) {
			src = append([]byte(head+"spec:\n  role: Node\n"), src[len("spec:\n"):]...)
		} else {
			src = append([]byte(head+"spec:\n  role: Node\n"), src...)
		}
	case "nodeup":
		src = nodeupManifests(t, src)
	default:
		t.Fatalf("unknown oracle input kind %q", kind)
	}
	return file, src
}

var templateLine = regexp.MustCompile(`(?m)^[ \t]*\{\{[^\n]*\}\}[ \t]*\n`)
var templateExpr = regexp.MustCompile(`\{\{[^}]*\}\}`)

func untemplate(src []byte) []byte {
	src = templateLine.ReplaceAll(src, nil)
	return templateExpr.ReplaceAll(src, []byte("x"))
}

// nodeupManifests turns a nodeup config's Hooks into an InstanceGroup and a
// Cluster manifest. The hooks there are kops's internal HookSpecs, which
// spell enablement as v1alpha3 does.
func nodeupManifests(t *testing.T, src []byte) []byte {
	t.Helper()
	var cfg struct {
		Hooks []yaml.Node `yaml:"Hooks"`
	}
	if err := yaml.Unmarshal(src, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Hooks) != 2 {
		t.Fatalf("a nodeup config has two hook lists, this one %d", len(cfg.Hooks))
	}
	var b bytes.Buffer
	for i, kind := range []string{"InstanceGroup", "Cluster"} {
		list, err := yaml.Marshal(&cfg.Hooks[i])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\napiVersion: kops.k8s.io/v1alpha3\nkind: " + kind + "\nmetadata:\n  name: x\nspec:\n")
		if kind == "InstanceGroup" {
			b.WriteString("  role: Node\n")
		}
		b.WriteString("  hooks:\n")
		for _, line := range strings.SplitAfter(strings.TrimSuffix(string(list), "\n"), "\n") {
			b.WriteString("    " + line)
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

// expectedDiagnostics are the problems the oracle inputs have on purpose:
// kops renders them anyway, and hostprov must say so.
var expectedDiagnostics = map[string][]string{
	"unattributed-cluster-template-boot-upgrade-hook.yaml.tpl": {"spec.useRawManifest: useRawManifest is a field of a hook"},
}

// TestOracle renders the input of every oracle in the corpus as kops
// nodeup does, and compares with what kops renders for it.
func TestOracle(t *testing.T) {
	needCorpus(t)
	files, err := filepath.Glob(filepath.Join(corpusDir, "oracle", "*.tasks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("the corpus has no oracle files")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			in := inputRE.FindSubmatch(raw)
			params := paramsRE.FindSubmatch(raw)
			if in == nil || params == nil {
				t.Fatalf("the oracle's header names no input or mode")
			}
			rt := kops.Runtime(params[1])
			name, kind := string(in[1]), string(in[2])
			file, data := oracleInput(t, name, kind)
			got := renderCompat(t, file, data, name, "", rt)
			compareTasks(t, parseTasks(t, stripHeader(raw)), got)
		})
	}
}

// renderCompat reads, selects and renders as kops, failing the test on
// every diagnostic but the expected ones.
func renderCompat(t *testing.T, file string, data []byte, name string, role kops.Role, rt kops.Runtime) []kops.Task {
	t.Helper()
	ms, diags := kops.Read(file, data)
	checkExpected(t, diags, expectedDiagnostics[name])
	hs, diags := ms.Hooks(role, "")
	if len(diags) > 0 {
		t.Fatalf("selecting hooks:\n%v", diags)
	}
	tasks, err := kops.RenderCompat(hs, rt)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

func checkExpected(t *testing.T, diags hooks.Diagnostics, want []string) {
	t.Helper()
	var got []string
	for _, d := range diags {
		s := d.Path + ": " + d.Message
		ok := false
		for _, w := range want {
			ok = ok || strings.HasPrefix(s, w)
		}
		if !ok {
			t.Errorf("unexpected diagnostic: %s", d)
		}
		got = append(got, s)
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("missing diagnostic %q; got:\n%v", w, diags)
		}
	}
}

// TestKopsGoldens renders the input of kops's own nodeup goldens and
// compares with kops's expected tasks.
func TestKopsGoldens(t *testing.T) {
	needCorpus(t)
	for _, c := range []struct {
		dir string
		rt  kops.Runtime
	}{
		{"hooks-containerd-exec", kops.Containerd},
		{"hooks-docker-exec-legacy", kops.Docker},
	} {
		t.Run(c.dir, func(t *testing.T) {
			file := filepath.Join("golden", c.dir, "cluster.yaml")
			ms, diags := kops.Read(file, readCorpus(t, file))
			if len(diags) > 0 {
				t.Fatal(diags)
			}
			// The runtime is the cluster's own.
			rt := kops.Containerd
			if ms.Cluster.ContainerRuntime == "docker" {
				rt = kops.Docker
			}
			if rt != c.rt {
				t.Errorf("the cluster's runtime is %s, want %s", rt, c.rt)
			}
			hs, diags := ms.Hooks("", "")
			if len(diags) > 0 {
				t.Fatal(diags)
			}
			if len(ms.InstanceGroups) != 1 || ms.InstanceGroups[0].Role != kops.ControlPlane {
				t.Errorf("the golden's instance group is a Master, read as ControlPlane; got %+v", ms.InstanceGroups)
			}
			tasks, err := kops.RenderCompat(hs, rt)
			if err != nil {
				t.Fatal(err)
			}
			compareTasks(t, parseTasks(t, readCorpus(t, filepath.Join("golden", c.dir, "tasks-hooks.yaml"))), tasks)
		})
	}
}
