// Package docs_test holds the documentation to the repository: every
// relative link of its Markdown files leads to a file that is there, and
// every #anchor to a heading of that file; and the README stays short, with
// the reference here in docs/.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, from this package's directory.
const root = ".."

// documents are the Markdown files whose links are checked, relative to
// root: the README, SECURITY.md, everything under docs/ and the examples'
// READMEs.
func documents(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "SECURITY.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join(root, "examples", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range examples {
		rel, _ := filepath.Rel(root, e)
		files = append(files, rel)
	}
	return files
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`^#{1,6} (.*)$`)
	textLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	url       = regexp.MustCompile(`^[a-z]+:`)
)

// prose is a Markdown text without its fenced code blocks, each line of
// one left empty so that line numbers stay, and the headings outside them.
func prose(md string) (string, []string) {
	lines := strings.Split(md, "\n")
	var headings []string
	code := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			code = !code
			lines[i] = ""
			continue
		}
		if code {
			lines[i] = ""
			continue
		}
		if m := mdHeading.FindStringSubmatch(l); m != nil {
			headings = append(headings, m[1])
		}
	}
	return strings.Join(lines, "\n"), headings
}

// anchors are the ids GitHub gives a file's headings: lower case, every
// character but letters, digits, spaces, hyphens and underscores dropped,
// spaces as hyphens, and -1, -2, ... after a repeated one.
func anchors(headings []string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, h := range headings {
		h = textLink.ReplaceAllString(h, "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			seen[id] = n + 1
			id += "-" + strconv.Itoa(n)
		} else {
			seen[id] = 1
		}
		ids[id] = true
	}
	return ids
}

// TestLinks: every relative link of the docs leads to a file or directory
// of the repository, and its #anchor, if any, to a heading of that file.
func TestLinks(t *testing.T) {
	headings := map[string]map[string]bool{}
	ids := func(file string) map[string]bool {
		if h, ok := headings[file]; ok {
			return h
		}
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		_, hs := prose(string(data))
		headings[file] = anchors(hs)
		return headings[file]
	}
	links := 0
	for _, doc := range documents(t) {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text, _ := prose(string(data))
		for _, m := range mdLink.FindAllStringSubmatchIndex(text, -1) {
			target := text[m[2]:m[3]]
			line := 1 + strings.Count(text[:m[0]], "\n")
			if url.MatchString(target) {
				continue // a URL: not the repository's to check
			}
			links++
			path, frag, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), path)
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("%s:%d: link to %s: no such file or directory %s", doc, line, target, file)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !ids(file)[frag] {
				t.Errorf("%s:%d: link to %s: %s has no heading #%s", doc, line, target, file, frag)
			}
		}
	}
	if links < 50 {
		t.Errorf("only %d relative links found in the docs: is the link pattern right?", links)
	}
}

// TestReadmeShort: the README says what hostprov is, its two commands, a
// tour and where to read on, in at most 300 lines (issue 26); the
// reference belongs in docs/.
func TestReadmeShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n > 300 {
		t.Errorf("README.md has %d lines, more than 300: move reference text into docs/ and link to it", n)
	}
}

// TestAnchors: the ids of headings as GitHub makes them.
func TestAnchors(t *testing.T) {
	got := anchors([]string{"Your own files, users and settings beside hostprov's units", "Disruption: drain and reboot", "`hostprov agent`", "Fields", "Fields"})
	for _, want := range []string{"your-own-files-users-and-settings-beside-hostprovs-units", "disruption-drain-and-reboot", "hostprov-agent", "fields", "fields-1"} {
		if !got[want] {
			t.Errorf("no anchor %s in %v", want, got)
		}
	}
}
