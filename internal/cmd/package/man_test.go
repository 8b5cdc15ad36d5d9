package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/cli"
	"github.com/hostprov/hostprov/internal/sdtool"
)

// TestManPages formats every page with groff in its strictest warning mode
// (-ww), as lintian's man page check does, and fails on any message: an
// escape or a request the writer got wrong shows there.
func TestManPages(t *testing.T) {
	if _, err := exec.LookPath("groff"); err != nil {
		sdtool.Unavailable(t, "groff not found (Debian package groff-base)")
	}
	pages := manPages(cli.Command(), "0.1.0", date)
	seen := map[string]bool{}
	for _, p := range pages {
		if seen[p.name] {
			t.Errorf("two pages named %s", p.name)
		}
		seen[p.name] = true
		cmd := exec.Command("groff", "-man", "-ww", "-z", "-Tutf8")
		cmd.Stdin = bytes.NewReader(p.roff)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) != 0 {
			t.Errorf("groff on %s: %v\n%s", p.name, err, out)
		}
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
