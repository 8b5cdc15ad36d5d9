package hooks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var backticked = regexp.MustCompile("`([A-Za-z]+)`")

// TestSpecDocStorageFields: the spec reference's table of user and group
// fields names every field a user and a group have, and no other; its
// sentence on directories and links names every field of theirs.
func TestSpecDocStorageFields(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	got := map[string][]string{}
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		entry := strings.TrimSpace(cells[2])
		if entry != "user" && entry != "group" && entry != "user, group" {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			for _, e := range strings.Split(entry, ", ") {
				got[e] = append(got[e], m[1])
			}
		}
	}
	for kind, want := range map[string][]string{"user": userKind.keys, "group": groupKind.keys} {
		g := slices.Clone(got[kind])
		slices.Sort(g)
		w := slices.Clone(want)
		slices.Sort(w)
		// The table writes the ids as one row: uid for users, gid for
		// groups.
		if kind == "user" {
			g = slices.DeleteFunc(g, func(s string) bool { return s == "gid" })
		} else {
			g = slices.DeleteFunc(g, func(s string) bool { return s == "uid" })
		}
		if !slices.Equal(g, w) {
			t.Errorf("docs/spec.md's table has the %s fields %v, the spec %v", kind, g, w)
		}
	}
	i := strings.Index(doc, "`links` entries have")
	if i < 0 {
		t.Fatal("docs/spec.md does not say what links entries have")
	}
	sentence := doc[i:]
	sentence = sentence[:strings.Index(sentence, "\n\n")]
	for _, f := range linkKind.keys {
		if !strings.Contains(sentence, "`"+f+"`") {
			t.Errorf("docs/spec.md's sentence on links does not name %s:\n%s", f, sentence)
		}
	}
}
