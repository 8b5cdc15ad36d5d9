package main

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hostprov/hostprov/internal/clidoc"
)

// A man page is written here from the cobra command itself rather than
// with cobra/doc: that package renders through Markdown (go-md2man and
// blackfriday), two dependencies for what is a page of roff, and its pages
// put every line of a command's hand-wrapped help into one filled
// paragraph, which runs the example columns of hostprov's help together.
// The walk of the tree, the flags and the paragraphs of help text are
// clidoc's, which docs/cli.md is written with too.

// manPage is one section-1 page: its file name (hostprov-render.1) and roff
// source.
type manPage struct {
	name string
	roff []byte
}

// manPages returns a page for root and for every command below it that a
// user can run (clidoc.Commands): hidden commands and cobra's help command
// have none.
func manPages(root *cobra.Command, version string, date time.Time) []manPage {
	var pages []manPage
	for _, c := range clidoc.Commands(root) {
		pages = append(pages, manPage{name: manName(c) + ".1", roff: manRoff(c, version, date)})
	}
	return pages
}

// manName is the page's name: the command's path joined by dashes, as git
// and systemd name theirs (hostprov-kops-set-hooks).
func manName(c *cobra.Command) string {
	return strings.ReplaceAll(c.CommandPath(), " ", "-")
}

// manRoff writes c's page in the man(7) macros: NAME, SYNOPSIS,
// DESCRIPTION, the command's own options, the options it inherits, and
// SEE ALSO with its parent and subcommands.
func manRoff(c *cobra.Command, version string, date time.Time) []byte {
	var b bytes.Buffer
	name := manName(c)
	fmt.Fprintf(&b, ".TH %s 1 %s %s %s\n",
		roffArg(strings.ToUpper(name)), roffArg(date.UTC().Format("2006-01-02")),
		roffArg("hostprov "+version), roffArg("hostprov manual"))
	b.WriteString(".SH NAME\n")
	fmt.Fprintf(&b, "%s \\- %s\n", roffText(name), roffText(c.Short))

	b.WriteString(".SH SYNOPSIS\n")
	fmt.Fprintf(&b, ".B %s\n", roffText(c.CommandPath()))
	if !c.Runnable() && c.HasAvailableSubCommands() {
		// A command that only groups others (hostprov, hostprov kops).
		b.WriteString(".I COMMAND\n")
	}
	if rest := strings.TrimSpace(strings.TrimPrefix(c.UseLine(), c.CommandPath())); rest != "" {
		b.WriteString(roffLine(rest) + "\n")
	}

	b.WriteString(".SH DESCRIPTION\n")
	long := c.Long
	if long == "" {
		long = c.Short
	}
	writeProse(&b, long)

	if c.Example != "" {
		b.WriteString(".SH EXAMPLES\n")
		writeProse(&b, c.Example)
	}
	writeFlags(&b, "OPTIONS", c.NonInheritedFlags())
	writeFlags(&b, "OPTIONS INHERITED FROM PARENT COMMANDS", c.InheritedFlags())

	var see []string
	for _, r := range clidoc.Related(c) {
		see = append(see, manName(r))
	}
	if !c.HasParent() {
		see = append(see, "systemd.unit")
	}
	b.WriteString(".SH SEE ALSO\n")
	for i, s := range see {
		sep := ","
		if i == len(see)-1 {
			sep = ""
		}
		fmt.Fprintf(&b, ".BR %s (%d)%s\n", roffText(s), seeSection(s), sep)
	}
	return b.Bytes()
}

// seeSection is the manual section of a page SEE ALSO names: hostprov's
// own are commands (1), systemd.unit is a file format (5).
func seeSection(page string) int {
	if strings.HasPrefix(page, "systemd.") {
		return 5
	}
	return 1
}

// writeProse writes help text, whose authors wrap it by hand: a paragraph
// of plain lines is filled, and a paragraph with an indented line (an
// example, a table of commands) is kept line for line, as --help shows it.
func writeProse(b *bytes.Buffer, text string) {
	for _, p := range clidoc.Paragraphs(text) {
		b.WriteString(".PP\n")
		if p.Literal {
			b.WriteString(".nf\n")
		}
		for _, l := range p.Lines {
			b.WriteString(roffLine(l) + "\n")
		}
		if p.Literal {
			b.WriteString(".fi\n")
		}
	}
}

// writeFlags writes the flags of fs that are not hidden under the heading,
// in name order, or nothing when there are none.
func writeFlags(b *bytes.Buffer, heading string, fs *pflag.FlagSet) {
	flags := clidoc.Flags(fs)
	if len(flags) == 0 {
		return
	}
	fmt.Fprintf(b, ".SH %s\n", roffArg(heading))
	for _, f := range flags {
		varname, usage := pflag.UnquoteUsage(f)
		b.WriteString(".TP\n")
		var head strings.Builder
		if f.Shorthand != "" {
			fmt.Fprintf(&head, "\\fB\\-%s\\fR, ", roffEscape(f.Shorthand))
		}
		fmt.Fprintf(&head, "\\fB\\-\\-%s\\fR", roffEscape(f.Name))
		if varname != "" {
			fmt.Fprintf(&head, " \\fI%s\\fR", roffEscape(varname))
		}
		b.WriteString(head.String() + "\n")
		text := usage
		if !clidoc.ZeroDefault(f) {
			text += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		b.WriteString(roffLine(text) + "\n")
	}
}

// roffEscape makes s plain text to roff: a backslash is the escape
// character and a hyphen would be typeset as a hyphen rather than the minus
// sign that options and commands are typed with.
func roffEscape(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// roffText escapes s for use inside a line.
func roffText(s string) string { return roffEscape(s) }

// roffLine escapes s as a whole input line: one that starts with a period
// or an apostrophe would be read as a request, and an empty one as a blank
// line, so each gets the zero-width \& in front.
func roffLine(s string) string {
	s = roffEscape(s)
	if s == "" || s[0] == '.' || s[0] == '\'' {
		return `\&` + s
	}
	return s
}

// roffArg quotes s as one argument of a macro.
func roffArg(s string) string {
	return `"` + strings.ReplaceAll(roffEscape(s), `"`, `\(dq`) + `"`
}
