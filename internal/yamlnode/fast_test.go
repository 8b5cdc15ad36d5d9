package yamlnode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/internal/corpus"
)

// sameTree returns where the fast parser's tree a differs from yaml.v3's
// b, or nil: in kind, tag, value, style, line, column, anchor, alias or
// the number of children. Comments are not compared: Fast keeps none, and
// no reader of specs uses them.
func sameTree(path string, a, b *yaml.Node) error {
	switch {
	case a.Kind != b.Kind:
		return fmt.Errorf("%s: kind %v, yaml.v3 %v", path, a.Kind, b.Kind)
	case a.Tag != b.Tag:
		return fmt.Errorf("%s: tag %q, yaml.v3 %q", path, a.Tag, b.Tag)
	case a.Value != b.Value:
		return fmt.Errorf("%s: value %q, yaml.v3 %q", path, a.Value, b.Value)
	case a.Style != b.Style:
		return fmt.Errorf("%s: style %v, yaml.v3 %v", path, a.Style, b.Style)
	case a.Line != b.Line || a.Column != b.Column:
		return fmt.Errorf("%s: at %d:%d, yaml.v3 %d:%d", path, a.Line, a.Column, b.Line, b.Column)
	case a.Anchor != b.Anchor || a.Alias != nil || b.Alias != nil:
		return fmt.Errorf("%s: anchor %q, yaml.v3 %q (or an alias)", path, a.Anchor, b.Anchor)
	case len(a.Content) != len(b.Content):
		return fmt.Errorf("%s: %d children, yaml.v3 %d", path, len(a.Content), len(b.Content))
	}
	for i := range a.Content {
		if err := sameTree(fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkFast holds Fast to yaml.v3 on data: whatever Fast accepts, yaml.v3
// reads as one document with the same tree. It reports whether Fast
// accepted data.
func checkFast(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := Fast(data)
	streamed, sok := checkStream(t, data)
	if sok != ok {
		t.Fatalf("Fast accepts: %v, FastStream: %v:\n%s", ok, sok, data)
	}
	if !ok {
		return false
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var want yaml.Node
	if err := Decode(dec, &want); err != nil {
		t.Fatalf("Fast accepts what yaml.v3 refuses (%v):\n%s", err, data)
	}
	var extra yaml.Node
	if err := Decode(dec, &extra); !errors.Is(err, io.EOF) {
		t.Fatalf("Fast accepts a stream that yaml.v3 reads more of (%v):\n%s", err, data)
	}
	if err := sameTree("", got, &want); err != nil {
		t.Fatalf("Fast's tree differs from yaml.v3's: %v\n%s", err, data)
	}
	if err := sameTree("", streamed, &want); err != nil {
		t.Fatalf("FastStream's tree, with the items it gave put back, differs from yaml.v3's: %v\n%s", err, data)
	}
	return true
}

// copyTree returns a deep copy of n.
func copyTree(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = nil
	for _, k := range n.Content {
		c.Content = append(c.Content, copyTree(k))
	}
	return &c
}

// spoil overwrites the nodes of n, as FastStream reuses them.
func spoil(n *yaml.Node) {
	for _, k := range n.Content {
		spoil(k)
	}
	*n = yaml.Node{Kind: yaml.ScalarNode, Value: "spoilt", Line: -1}
}

// checkStream reads data with FastStream, giving the items of hooks away,
// and returns the tree with them put back in their sequence, after
// checking that they came in order, with the count Start announced.
func checkStream(t *testing.T, data []byte) (*yaml.Node, bool) {
	t.Helper()
	var seq *yaml.Node
	var items []*yaml.Node
	count := 0
	doc, ok := FastStream(data, &Stream{
		Key: "hooks",
		Start: func(root, s *yaml.Node, n int) {
			if seq != nil || root == nil || root.Kind != yaml.MappingNode {
				t.Fatalf("Start called twice, or without the top mapping:\n%s", data)
			}
			seq, count = s, n
		},
		Item: func(i int, item *yaml.Node) {
			if seq == nil || i != len(items) {
				t.Fatalf("item %d given after %d items (Start called: %v):\n%s", i, len(items), seq != nil, data)
			}
			// The item is valid only during the call: keep a copy, and
			// spoil the original, as the next item will.
			items = append(items, copyTree(item))
			spoil(item)
		},
	})
	if !ok || seq == nil {
		return doc, ok
	}
	if len(seq.Content) != 0 || count != len(items) {
		t.Fatalf("the streamed sequence keeps %d items; Start announced %d and %d came:\n%s", len(seq.Content), count, len(items), data)
	}
	seq.Content = items
	return doc, ok
}

// fastCases are inputs inside and outside the fast parser's subset, and at
// its edges; each says whether Fast must accept it.
var fastCases = []struct {
	in     string
	accept bool
}{
	{"a: b\n", true},
	{"# head\n\na: b # c\n'k': \"v\"\n\"q\": 'it''s'\n", true},
	{"a:\n  b: 1\n  c: [x, 'y', \"z\", [1, 2], {k: v}]\nd:\n- 1\n- two\ne: {}\nf: []\n", true},
	{"hooks:\n  - name: x\n    exec: [/bin/true]\n  -\n    name: y\n", true},
	{"a: 1\nhooks:\n- name: x\n  m: |\n    - not an item\n# c\n- b\nz:\n  hooks:\n  - nested\nhooks:\n- second\n", true},
	{"hooks: [a]\nhooks:\n- b\n", true},
	{"hooks:\n- a\n- b: c\n  d: e\n-\n  - f\n", true},
	{"m: |\n  line 1\n\n    indented\n  # not a comment\nn: |-\n  strip\n\no: x\n", true},
	{"- a\n", false},                              // the top is not a mapping
	{"a: b", false},                               // no final line break
	{"a: &x b\nc: *x\n", false},                   // anchors and aliases
	{"a: !foo b\n", false},                        // tags
	{"a: >\n  folded\n", false},                   // folded block
	{"a: |+\n  keep\n\n", false},                  // kept block
	{"a: |2\n   x\n", false},                      // indentation indicator
	{"a: b\n  c\n", false},                        // multi-line plain
	{"a: [b,\n  c]\n", false},                     // multi-line flow
	{"a:\n", false},                               // an empty value
	{"a: 'b\n  c'\n", false},                      // multi-line quoted
	{"? a\n: b\n", false},                         // complex key
	{"---\na: b\n", false},                        // document marker
	{"a: b\n---\nc: d\n", false},                  // two documents
	{"%YAML 1.2\n---\na: b\n", false},             // directive
	{"a:\tb\n", false},                            // tab
	{"a: b\r\n", false},                           // carriage return
	{"a: é\n", false},                             // beyond ASCII
	{"a: b: c\n", false},                          // a mapping in a value
	{"a: [b, ]\n", false},                         // trailing comma
	{"a: {b}\n", false},                           // a flow key without a value
	{"a: [b: c]\n", false},                        // a pair in a flow list
	{"a: b\n c: d\n", false},                      // odd indentation
	{"a:\n  b: c\n d: e\n", false},                // odd indentation
	{"a: \"\\q\"\n", false},                       // an unknown escape
	{"a: \"\\x41\\u00e9\\n\\\\\\\"\"\n", true},    // known escapes
	{"a: - b\n", false},                           // a sequence in a value
	{"a: \"b\" c\n", false},                       // text after a quote
	{"a: b\n\n  # deeper comment\nc: d\n", false}, // conservative: may continue
	{"a: ~\nb: null\nc: 1\nd: 0x1f\ne: true\nf: 2001-12-14\n<<: x\n", true},
	{"a: \"\\'\"\n", true},  // yaml.v3 takes \' in a double-quoted scalar
	{"a: \"\\/\"\n", false}, // but not \/, which JSON has
	// Plain scalars whose first character may make them other than strings.
	{"a: -p\nb: --id\nc: +x\nd: -/x\ne: 123\nf: 0123\ng: 1_0\nh: TRUE\ni: nulls\nj: -1\nk: +.inf\nl: 999999999999999999\n" +
		"m: 9999999999999999999\nn: Off\no: True\np: ~x\nq: -_1\nr: -0b1\ns: 1e3\nt: 2001-12-14t21:59:43.10-05:00\nu: NULL\nv: fals\n", true},
}

func TestFastCases(t *testing.T) {
	for _, c := range fastCases {
		if got := checkFast(t, []byte(c.in)); got != c.accept {
			t.Errorf("Fast(%q) accepted: %v, want %v", c.in, got, c.accept)
		}
	}
}

// TestFastCorpus holds Fast to yaml.v3 on every spec and example of the
// repository and on the benchmark's spec, which it must accept: the spec
// the figures of make bench-butane are measured on.
func TestFastCorpus(t *testing.T) {
	root := filepath.Join("..", "..")
	accepted, all := 0, 0
	for _, dir := range []string{"examples", "testdata", "pkg", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			all++
			if checkFast(t, data) {
				accepted++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if all == 0 {
		t.Fatal("no YAML files found")
	}
	t.Logf("Fast read %d of %d YAML files of the repository", accepted, all)
	if !checkFast(t, benchspec.Spec(40)) {
		t.Error("Fast does not read the benchmark's spec")
	}
}

// TestFastRealWorld holds Fast to yaml.v3 on the YAML files of the corpus
// of real-world configs (cloud-configs, Butane configs, kops manifests):
// YAML that people, not this project, wrote.
func TestFastRealWorld(t *testing.T) {
	root := corpus.Path()
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no corpus at %s", root)
	}
	accepted, all := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml") && !strings.HasSuffix(path, ".bu") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		body, _ := corpus.Strip(data)
		all++
		if checkFast(t, body) {
			accepted++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Fast read %d of %d YAML files of the corpus", accepted, all)
}

func FuzzFast(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.in))
	}
	f.Add(benchspec.Spec(5))
	for _, glob := range []string{"../../examples/*/*.yaml", "../../testdata/bad/*.yaml", "../../pkg/hooks/testdata/*.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFast(t, data)
	})
}
