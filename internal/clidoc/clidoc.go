// Package clidoc reads hostprov's command tree for its documentation: the
// man pages of the packages (internal/cmd/package) and the command-line
// reference docs/cli.md (Markdown, written by make generate). Both walk the
// tree with Commands, list flags with Flags and split help text with
// Paragraphs, so that the pages and the reference describe the same
// commands, flags and defaults as --help.
package clidoc

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Commands returns root and every command below it that a user can run,
// depth first in the tree's order: hidden commands (in the node's build,
// the stand-ins for the Kubernetes commands) and cobra's help command are
// left out, with what is below them.
func Commands(root *cobra.Command) []*cobra.Command {
	var cs []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !Shown(c) {
			return
		}
		cs = append(cs, c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return cs
}

// Shown reports whether c is documented: neither hidden nor cobra's help
// command.
func Shown(c *cobra.Command) bool {
	return !c.Hidden && c.Name() != "help"
}

// Related are the commands a command's page points to: its parent, then
// the subcommands that are shown.
func Related(c *cobra.Command) []*cobra.Command {
	var rel []*cobra.Command
	if c.HasParent() {
		rel = append(rel, c.Parent())
	}
	for _, sub := range c.Commands() {
		if Shown(sub) {
			rel = append(rel, sub)
		}
	}
	return rel
}

// Flags returns the flags of fs that are not hidden, in name order, as
// --help lists them.
func Flags(fs *pflag.FlagSet) []*pflag.Flag {
	var flags []*pflag.Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			flags = append(flags, f)
		}
	})
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	return flags
}

// ZeroDefault reports whether f's default goes without saying: false, empty
// or zero, which --help does not print either.
func ZeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "false", "0", "0s", "[]":
		return true
	}
	return false
}

// A Paragraph is one paragraph of a command's help text.
type Paragraph struct {
	// Lines are the paragraph's lines: trimmed when it is filled text,
	// as written (tabs as four spaces) when it is literal.
	Lines []string
	// Literal is set when a line of the paragraph is indented: an
	// example or a table of commands, to be kept line for line as --help
	// shows it. Other paragraphs are filled.
	Literal bool
}

// Paragraphs splits help text, whose authors wrap it by hand, at its empty
// lines.
func Paragraphs(text string) []Paragraph {
	var ps []Paragraph
	for _, para := range strings.Split(strings.TrimSpace(text), "\n\n") {
		lines := strings.Split(strings.Trim(para, "\n"), "\n")
		p := Paragraph{}
		for _, l := range lines {
			if strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t") {
				p.Literal = true
			}
		}
		for _, l := range lines {
			if p.Literal {
				l = strings.ReplaceAll(l, "\t", "    ")
			} else {
				l = strings.TrimSpace(l)
			}
			p.Lines = append(p.Lines, l)
		}
		ps = append(ps, p)
	}
	return ps
}

// KubeBuild reports whether root's tree has the Kubernetes commands
// (agent, controller, retry), which the node's build hides.
func KubeBuild(root *cobra.Command) bool {
	c, _, err := root.Find([]string{"agent"})
	return err == nil && c != root && Shown(c)
}
