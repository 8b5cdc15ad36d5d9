package clidoc

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Header is what the reference says before its commands: that it is
// generated, how, and for which build.
const Header = `# Command-line reference

<!-- Generated from hostprov's command tree by make generate (internal/gen/clidoc); do not edit. -->

Every command of hostprov and its flags, as ` + "`--help`" + ` gives them, in the build of the container image
(` + "`go build -tags kube`" + `). The node's build (` + "`make build`" + `, the packages) has the same commands but
` + "`agent`, `controller` and `retry`" + `. What the commands share, and the exit codes, are in
[Command line](usage.md).
`

// Markdown is the command-line reference of root's tree: Header, an index
// of the commands, then a Section for each command of Commands(root).
func Markdown(root *cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString(Header)
	b.WriteString("\n")
	cs := Commands(root)
	for _, c := range cs {
		depth := strings.Count(c.CommandPath(), " ")
		fmt.Fprintf(&b, "%s- [%s](#%s): %s\n", strings.Repeat("  ", depth), c.CommandPath(), anchor(c), escape(c.Short))
	}
	for _, c := range cs {
		b.WriteString("\n")
		b.Write(Section(c))
	}
	return b.Bytes()
}

// Section is c's part of the reference: its heading (the command's path),
// its short description, its synopsis, its help, its examples, its own
// flags, those it inherits, and links to its parent and subcommands.
func Section(c *cobra.Command) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "## %s\n\n%s\n\n", c.CommandPath(), escape(c.Short))

	synopsis := c.CommandPath()
	if !c.Runnable() && c.HasAvailableSubCommands() {
		// A command that only groups others (hostprov, hostprov kops).
		synopsis += " COMMAND"
	}
	if rest := strings.TrimSpace(strings.TrimPrefix(c.UseLine(), c.CommandPath())); rest != "" {
		synopsis += " " + rest
	}
	fmt.Fprintf(&b, "```\n%s\n```\n", synopsis)

	if c.Long != "" {
		b.WriteString("\n")
		writeProse(&b, c.Long)
	}
	if c.Example != "" {
		b.WriteString("\nExamples:\n\n")
		writeProse(&b, c.Example)
	}
	writeFlags(&b, "Options", c.NonInheritedFlags())
	writeFlags(&b, "Options inherited from parent commands", c.InheritedFlags())

	var see []string
	for _, r := range Related(c) {
		see = append(see, link(r))
	}
	if len(see) > 0 {
		fmt.Fprintf(&b, "\nSee also: %s.\n", strings.Join(see, ", "))
	}
	return b.Bytes()
}

// anchor is the id GitHub gives c's heading: its path, with dashes for
// spaces.
func anchor(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

func link(c *cobra.Command) string {
	return fmt.Sprintf("[%s](#%s)", c.CommandPath(), anchor(c))
}

// writeProse writes help text as Markdown: a filled paragraph as text, a
// literal one as a code block, so that an example's columns stay as
// --help shows them.
func writeProse(b *bytes.Buffer, text string) {
	for i, p := range Paragraphs(text) {
		if i > 0 {
			b.WriteString("\n")
		}
		if p.Literal {
			b.WriteString("```\n" + strings.Join(p.Lines, "\n") + "\n```\n")
			continue
		}
		for _, l := range p.Lines {
			b.WriteString(escapeLine(l) + "\n")
		}
	}
}

// writeFlags writes the flags of fs that are not hidden as a list under
// the heading, each with its value's name, its usage and its default as
// --help gives them; or nothing when there are none.
func writeFlags(b *bytes.Buffer, heading string, fs *pflag.FlagSet) {
	flags := Flags(fs)
	if len(flags) == 0 {
		return
	}
	fmt.Fprintf(b, "\n%s:\n\n", heading)
	for _, f := range flags {
		varname, usage := pflag.UnquoteUsage(f)
		name := "`--" + f.Name
		if varname != "" {
			name += " " + varname
		}
		name += "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		text := usage
		if !ZeroDefault(f) {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(b, "- %s: %s\n", name, escape(text))
	}
}

// escape makes s plain text in Markdown: every character that could start
// emphasis, strikethrough, code, a link, HTML or a table cell is escaped
// with a backslash, which Markdown drops.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapeLine escapes s as a line of a paragraph: besides escape, a line
// that would start a heading, a list item or a rule, or underline the line
// before as a heading, does not. (A flag at the start of a line, --force,
// starts none of them.)
func escapeLine(s string) string {
	s = escape(s)
	switch {
	case s == "":
		return s
	case s[0] == '#',
		(s[0] == '-' || s[0] == '+') && (len(s) == 1 || s[1] == ' '),
		strings.Trim(s, "-= ") == "":
		return `\` + s
	}
	if i := strings.IndexAny(s, ".)"); i > 0 && strings.Trim(s[:i], "0123456789") == "" {
		return s[:i] + `\` + s[i:]
	}
	return s
}
