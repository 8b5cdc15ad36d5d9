package pipeline

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// oddHeads are inputs on the edge of what hostprovHead accepts: comments,
// quotes, flow style, document markers and directives, tags, anchors and
// merges, duplicate keys, other line breaks, apiVersion not first.
var oddHeads = []string{
	"",
	"apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks: []\n",
	"apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\n",
	"apiVersion: kops/v1alpha2\nkind: InstanceGroup\n",
	"apiVersion: kops.k8s.io/v1alpha2\napiVersion: kops.k8s.io/v1alpha2\n",
	"apiVersion: hostprov/v1alpha1\napiVersion: kops.k8s.io/v1alpha2\n",
	"apiVersion: hostprov/v1alpha1\n\"apiVersion\": kops.k8s.io/v1alpha2\n",
	"apiVersion: hostprov/v1alpha1\n!!binary YXBpVmVyc2lvbg==: kops/v1\n",
	"apiVersion: hostprov/v1alpha1\n<<: {apiVersion: kops/v1}\n",
	"<<: {apiVersion: kops/v1}\napiVersion: hostprov/v1alpha1\n",
	"<<: {apiVersion: kops/v1}\n",
	"base: &b {apiVersion: kops/v1}\n<<: *b\n",
	"kind: Cluster\napiVersion: kops.k8s.io/v1alpha2\n",
	"kind: Hooks\napiVersion: hostprov/v1alpha1\n",
	"# kops.k8s.io\napiVersion: kops.k8s.io/v1alpha2\n",
	"# comment\n\n  # indented comment\n\t\napiVersion: hostprov/v1alpha1\n",
	"# comment\rapiVersion: kops/v1\n",
	"# comment\u0085apiVersion: kops/v1\n",
	"# comment\u2028apiVersion: kops/v1\n",
	"---\napiVersion: hostprov/v1alpha1\n",
	"---\napiVersion: kops/v1\n",
	"--- \napiVersion: kops/v1\n",
	"---\n---\napiVersion: kops/v1\n",
	"--- # c\napiVersion: kops/v1\n",
	"--- |\napiVersion: kops/v1\n",
	"--- |\napiVersion: hostprov/v1\n",
	"...\napiVersion: kops/v1\n",
	"%YAML 1.2\n---\napiVersion: kops/v1\n",
	"%TAG !e! tag:yaml.org,2002:\n---\napiVersion: !e!binary a29wcy8=\n",
	"apiVersion: !!binary a29wcy8=\n",
	"apiVersion: !!str kops/v1\n",
	"apiVersion: 'kops/v1'\n",
	"apiVersion: \"kops/v1\"\n",
	"apiVersion: \"\\x6bops/v1\"\n",
	"apiVersion: \"\\u006bops/v1\"\n",
	"apiVersion: \"ko\\\n  ps/v1\"\n",
	"apiVersion: ko\n  ps/v1\n",
	"apiVersion: k\n",
	"apiVersion: kube/v1\n",
	"apiVersion: &a kops/v1\nother: *a\n",
	"apiVersion: *a\n",
	"a: &a kops/v1\napiVersion: *a\n",
	"apiVersion:\n  kops/v1\n",
	"apiVersion:\tkops/v1\n",
	"apiVersion : kops/v1\n",
	"apiVersion: hostprov/v1alpha1: x\n",
	"apiVersion: hostprov/v1alpha1 # kops/v1\n",
	"apiVersion: hostprov\n  /v1\n",
	"apiVersion: 1\n",
	"apiVersion: true\n",
	"apiVersion: null\n",
	"apiVersion: ~\n",
	"apiVersion: [kops/v1]\n",
	"apiVersion: {kops: v1}\n",
	"{apiVersion: kops/v1}\n",
	"{apiVersion: hostprov/v1alpha1}\n",
	"{\"apiVersion\": \"kops.k8s.io/v1alpha2\", \"kind\": \"Cluster\"}\n",
	"? apiVersion\n: kops/v1\n",
	"- apiVersion: kops/v1\n",
	"apiVersion: kops/v1\n---\napiVersion: hostprov/v1alpha1\n",
	"apiVersion: hostprov/v1alpha1\n---\napiVersion: kops/v1\n",
	"apiVersion: kops/v1\nbad: [\n",
	"apiVersion: hostprov/v1alpha1\nbad: [\n",
	"apiVersion: kops/v1\nkind: Cluster\nspec: {a: 1, a: 2}\n",
	"\ufeffapiVersion: kops/v1\n",
	"\ufeffapiVersion: hostprov/v1alpha1\n",
	"apiVersion: kops/v1\r\nkind: Cluster\r\n",
	"apiVersion: hostprov/v1alpha1\r\nkind: Hooks\r\n",
	"apiVersion: hostprov/v1alpha1\rapiVersion: kops/v1\r",
	"\xff\xfeapiVersion: kops/v1\n",
	"apiVersion: hostprov/\xff\n",
	"\"\n",
	"'\n",
	"apiVersion",
	"apiVersion: ",
	"apiVersion: h",
}

// headInputs is every input the test gives both functions: oddHeads, the
// YAML and txtar files of the repository (each txtar section on its
// own too), the fuzz corpora, and variants of each with other openings.
func headInputs(t *testing.T) []string {
	t.Helper()
	inputs := append([]string(nil), oddHeads...)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == "bin" || e.Name() == "dist") {
			return filepath.SkipDir
		}
		if e.IsDir() {
			return nil
		}
		inFuzz := strings.Contains(filepath.ToSlash(path), "/testdata/fuzz/")
		ext := filepath.Ext(path)
		if !inFuzz && ext != ".yaml" && ext != ".yml" && ext != ".txtar" && ext != ".bu" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch {
		case inFuzz:
			inputs = append(inputs, fuzzValues(data)...)
		case ext == ".txtar":
			inputs = append(inputs, string(data))
			inputs = append(inputs, txtarSections(data)...)
		default:
			inputs = append(inputs, string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, in := range inputs {
		all = append(all, in,
			"# comment\n"+in, "---\n"+in, "\n\n"+in, "  # c\n---\n"+in,
			strings.ReplaceAll(in, "\n", "\r\n"), strings.ReplaceAll(in, "\n", "\r"),
			"apiVersion: kops.k8s.io/v1alpha2\n"+in, in+"\napiVersion: kops.k8s.io/v1alpha2\n",
			strings.ReplaceAll(in, "hostprov/", "kops/"))
	}
	return all
}

// fuzzValues reads the string and []byte values of a file of a Go fuzz
// corpus.
func fuzzValues(data []byte) []string {
	var vs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		line := sc.Text()
		for _, p := range []string{"[]byte(", "string("} {
			if q, ok := strings.CutPrefix(line, p); ok {
				if v, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					vs = append(vs, v)
				}
			}
		}
	}
	return vs
}

// txtarSections returns the files of a txtar archive.
func txtarSections(data []byte) []string {
	var secs []string
	var cur *strings.Builder
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.HasPrefix(line, "-- ") && strings.HasSuffix(strings.TrimSpace(line), " --") {
			if cur != nil {
				secs = append(secs, cur.String())
			}
			cur = &strings.Builder{}
			continue
		}
		if cur != nil {
			cur.WriteString(line)
		}
	}
	if cur != nil {
		secs = append(secs, cur.String())
	}
	return secs
}

// TestKopsManifestHead checks that kopsManifest, which skips the parse
// for a spec that opens with a hostprov apiVersion, answers as a parse of
// the first document does, on every input of headInputs.
func TestKopsManifestHead(t *testing.T) {
	inputs := headInputs(t)
	fast := 0
	for _, in := range inputs {
		want := kopsHead([]byte(in))
		if got := kopsManifest([]byte(in)); got != want {
			t.Errorf("kopsManifest(%q) = %v, a parse says %v", in, got, want)
		}
		if hostprovHead([]byte(in)) {
			fast++
		}
	}
	if fast == 0 || fast == len(inputs) {
		t.Errorf("hostprovHead decided %d of %d inputs: the test inputs do not cover both ways", fast, len(inputs))
	}
	t.Logf("%d inputs, %d decided without a parse", len(inputs), fast)
}

// TestHostprovHeadSpecs checks that the way hostprov's own specs open is
// the one hostprovHead decides without a parse.
func TestHostprovHeadSpecs(t *testing.T) {
	for _, in := range []string{
		"apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks: []\n",
		"# Hooks of the web tier.\n\napiVersion: hostprov/v1alpha1\nkind: Hooks\n",
		"---\napiVersion: hostprov/v1alpha1\nkind: Hooks\n",
	} {
		if !hostprovHead([]byte(in)) {
			t.Errorf("hostprovHead(%q) = false, want true", in)
		}
	}
}

// FuzzKopsManifest compares kopsManifest with a parse of the first
// document on any input.
func FuzzKopsManifest(f *testing.F) {
	for _, in := range oddHeads {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := kopsManifest(data), kopsHead(data); got != want {
			t.Errorf("kopsManifest(%q) = %v, a parse says %v", data, got, want)
		}
	})
}
