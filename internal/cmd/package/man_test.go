package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/cli"
	"github.com/hostprov/hostprov/internal/hosttools"
)

// TestManPages formats every page with groff in its strictest warning mode
// (-ww), as lintian's man page check does, and fails on any message: an
// escape or a request the writer got wrong shows there.
func TestManPages(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		hosttools.Unavailable(t, "groff not found (Debian package groff-base)")
	}
	pages := manPages(cli.Command(), "0.1.0", date)
	seen := map[string]bool{}
	for _, p := range pages {
		if seen[p.name] {
			t.Errorf("two pages named %s", p.name)
		}
		seen[p.name] = true
		groffCheck(t, p)
	}
	for _, name := range []string{"hostprov.1", "hostprov-apply.1", "hostprov-kops.1", "hostprov-kops-set-hooks.1", "hostprov-completion-fish.1"} {
		if !seen[name] {
			t.Errorf("no page %s", name)
		}
	}
	if seen["hostprov-help.1"] {
		t.Error("a page for cobra's help command")
	}
}

// TestManRoff checks the writer's escapes on a command whose help has what
// roff would misread: a line starting with a period or an apostrophe, a
// backslash, hyphens, and an indented example kept line for line.
func TestManRoff(t *testing.T) {
	root := &cobra.Command{Use: "tool"}
	sub := &cobra.Command{
		Use:   "do-it [-n] FILE",
		Short: "Do it to a file",
		Long: "Filled text, wrapped\nby hand.\n.starts with a period\n'starts with an apostrophe\n" +
			"a \\backslash and --long-flag\n\nExamples:\n  tool do-it -n a.yaml   # aligned\n  tool do-it b.yaml      # columns",
		RunE: func(*cobra.Command, []string) error { return nil },
	}
	sub.Flags().BoolP("dry-run", "n", false, "change nothing")
	sub.Flags().String("out", "dist", "where to write, a `DIR`")
	root.AddCommand(sub)
	got := string(manRoff(sub, "1.0", date))
	for _, want := range []string{
		`.TH "TOOL\-DO\-IT" 1 "2026\-12\-01" "hostprov 1.0" "hostprov manual"` + "\n",
		"tool\\-do\\-it \\- Do it to a file\n",
		".B tool do\\-it\n[\\-n] FILE [flags]\n",
		"Filled text, wrapped\nby hand.\n\\&.starts with a period\n\\&'starts with an apostrophe\na \\ebackslash and \\-\\-long\\-flag\n",
		".nf\nExamples:\n  tool do\\-it \\-n a.yaml   # aligned\n  tool do\\-it b.yaml      # columns\n.fi\n",
		".TP\n\\fB\\-n\\fR, \\fB\\-\\-dry\\-run\\fR\nchange nothing\n",
		".TP\n\\fB\\-\\-out\\fR \\fIDIR\\fR\nwhere to write, a DIR (default dist)\n",
		".SH SEE ALSO\n.BR tool (1)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("page lacks\n%s\ngot:\n%s", want, got)
		}
	}
}

// TestSpecManPage writes hostprov-hooks(5) from the repository's spec
// reference, formats it with groff as strictly as TestManPages does, and
// checks that the reference made it there: every field of its table a
// tagged entry, the example kept line for line.
func TestSpecManPage(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, specDoc))
	if err != nil {
		t.Fatal(err)
	}
	p, err := specManPage(doc, "0.1.0", date)
	if err != nil {
		t.Fatal(err)
	}
	if p.name != "hostprov-hooks.5" {
		t.Errorf("page named %s", p.name)
	}
	page := string(p.roff)
	for _, want := range []string{
		`.TH "HOSTPROV\-HOOKS" 5 "2026\-12\-01" "hostprov 0.1.0" "hostprov manual"` + "\n",
		".SS \"Fields\"\n",
		".TP\n\\fB\\fBuseRawName\\fR\\fR (bool)\nkeep \\fBname\\fR exactly as written;",
		".nf\napiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n\\- name: create\\-swapfile            # becomes create\\-swapfile.service\n",
		".SS \"Command hooks\"\n",
		".BR systemd.unit (5)\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks\n%s", want)
		}
	}
	if strings.Contains(page, "## ") || strings.Contains(page, "```") || strings.Contains(page, "|---") {
		t.Errorf("Markdown left in the page:\n%s", page)
	}
	if _, err := exec.LookPath("groff"); err != nil {
		hosttools.Unavailable(t, "groff not found (Debian package groff-base)")
	}
	groffCheck(t, p)
}

// groffCheck formats p with groff in its strictest warning mode (-ww), as
// lintian's man page check does, and fails the test on any message.
func groffCheck(t *testing.T, p manPage) {
	t.Helper()
	cmd := exec.Command("groff", "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = bytes.NewReader(p.roff)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
		t.Errorf("groff on %s: %v\n%s", p.name, err, out)
	}
}

// TestMarkdownRoff: each kind of Markdown the spec reference uses,
// and what roff would misread in it.
func TestMarkdownRoff(t *testing.T) {
	md := "intro with `code`, **bold**, *em* and a [link](#there)\n" +
		".starts with a period\n\n" +
		"## A heading\n\n" +
		"| field | type | meaning |\n|---|---|---|\n| `a` | bool | first → second |\n| `b` | string | |\n\n" +
		"- one item\n  continued\n- two\n\n" +
		"1. first\n\n" +
		"```yaml\nkey: -value # \\ kept\n```\n" +
		"after\n"
	var b bytes.Buffer
	markdownRoff(&b, md)
	want := ".PP\nintro with \\fBcode\\fR, \\fBbold\\fR, \\fIem\\fR and a link\n\\&.starts with a period\n" +
		`.SS "A heading"` + "\n" +
		".TP\n\\fB\\fBa\\fR\\fR (bool)\nfirst \\[u2192] second\n" +
		".TP\n\\fB\\fBb\\fR\\fR (string)\n\\(em\n" +
		".IP \\(bu 2\none item\ncontinued\n.IP \\(bu 2\ntwo\n" +
		".IP 1. 4\nfirst\n" +
		".PP\n.RS 4\n.nf\nkey: \\-value # \\e kept\n.fi\n.RE\n" +
		".PP\nafter\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
