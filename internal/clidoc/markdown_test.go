package clidoc_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/cli"
	"github.com/hostprov/hostprov/internal/clidoc"
)

// reference is the command-line reference, from this package's directory.
var reference = filepath.Join("..", "..", "docs", "cli.md")

// tree is hostprov's command tree as the generator sees it: built in an
// empty environment, since some flags take their defaults from it.
func tree(t *testing.T) *cobra.Command {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		t.Setenv(name, "")
	}
	return cli.Command()
}

// TestReferenceUpToDate: docs/cli.md is what the generator writes from
// today's commands. In the build with the Kubernetes commands (make test's)
// the whole file must be; the node's build hides three commands and so
// lists others on the root's part, and there every other command's part
// must be in the file as it is written now.
func TestReferenceUpToDate(t *testing.T) {
	doc, err := os.ReadFile(reference)
	if err != nil {
		t.Fatal(err)
	}
	root := tree(t)
	const hint = "docs/cli.md is out of date with the commands: run make generate and commit what it writes"
	if clidoc.KubeBuild(root) {
		if d := cmp.Diff(strings.Split(string(doc), "\n"), strings.Split(string(clidoc.Markdown(root)), "\n")); d != "" {
			t.Errorf("%s (-docs/cli.md +generated):\n%s", hint, d)
		}
		return
	}
	for _, c := range clidoc.Commands(root)[1:] {
		if !bytes.Contains(doc, clidoc.Section(c)) {
			t.Errorf("%s: its part on %s differs:\n%s", hint, c.CommandPath(), clidoc.Section(c))
		}
	}
}

// TestSection: a command's part has its synopsis, its help with an
// indented example as a code block, its flags with their defaults, and
// what Markdown would misread escaped.
func TestSection(t *testing.T) {
	root := &cobra.Command{Use: "tool", Short: "The tool"}
	root.PersistentFlags().Bool("strict", false, "treat warnings as errors")
	sub := &cobra.Command{
		Use:   "do-it [-n] FILE",
		Short: "Do it to *.yaml",
		Long: "Filled text, wrapped\nby hand, with a_b and <x> and [y].\n- not a list\n1. not a list either\n--force starts this line\n\n" +
			"Examples:\n  tool do-it -n a.yaml   # aligned\n  tool do-it b.yaml      # columns",
		RunE: func(*cobra.Command, []string) error { return nil },
	}
	sub.Flags().BoolP("dry-run", "n", false, "change nothing")
	sub.Flags().String("out", "dist", "where to write, a `DIR`")
	sub.Flags().String("hidden", "", "not shown")
	if err := sub.Flags().MarkHidden("hidden"); err != nil {
		t.Fatal(err)
	}
	root.AddCommand(sub)
	want := "## tool do-it\n\n" +
		"Do it to \\*.yaml\n\n" +
		"```\ntool do-it [-n] FILE [flags]\n```\n\n" +
		"Filled text, wrapped\nby hand, with a\\_b and \\<x\\> and \\[y\\].\n\\- not a list\n1\\. not a list either\n--force starts this line\n\n" +
		"```\nExamples:\n  tool do-it -n a.yaml   # aligned\n  tool do-it b.yaml      # columns\n```\n\n" +
		"Options:\n\n" +
		"- `-n`, `--dry-run`: change nothing\n" +
		"- `--out DIR`: where to write, a DIR (default dist)\n\n" +
		"Options inherited from parent commands:\n\n" +
		"- `--strict`: treat warnings as errors\n\n" +
		"See also: [tool](#tool).\n"
	if d := cmp.Diff(want, string(clidoc.Section(sub))); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
