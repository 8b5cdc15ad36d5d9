package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// specDoc is the hook spec's reference, and specSection its title: the
// text of hostprov-hooks(5), so that the page and the reference cannot
// tell two stories.
const (
	specDoc     = "docs/spec.md"
	specSection = "# The hook spec"
)

// specManPage writes hostprov-hooks(5), the hook spec's file format, from
// its reference (specDoc): its headings, paragraphs, lists, tables and
// examples turned into man(7) macros.
func specManPage(doc []byte, version string, date time.Time) (manPage, error) {
	md, err := docSection(string(doc), specSection)
	if err != nil {
		return manPage{}, err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, ".TH %s 5 %s %s %s\n", roffArg("HOSTPROV-HOOKS"),
		roffArg(date.UTC().Format("2006-01-02")), roffArg("hostprov "+version), roffArg("hostprov manual"))
	b.WriteString(".SH NAME\nhostprov\\-hooks \\- the hook spec: what a machine needs at boot, as hostprov reads it\n")
	b.WriteString(".SH SYNOPSIS\n.nf\napiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n\\- name: NAME\n  ...\n.fi\n")
	b.WriteString(".SH DESCRIPTION\n")
	markdownRoff(&b, md)
	b.WriteString(".SH SEE ALSO\n.BR hostprov (1),\n.BR hostprov\\-validate (1),\n.BR systemd.unit (5)\n")
	return manPage{name: "hostprov-hooks.5", roff: b.Bytes()}, nil
}

// docSection is the text under heading, up to the next heading of the
// same level; the heading may be the document's first line.
func docSection(doc, heading string) (string, error) {
	doc = "\n" + doc
	start := strings.Index(doc, "\n"+heading+"\n")
	if start < 0 {
		return "", fmt.Errorf("%s has no %q section", specDoc, heading)
	}
	body := doc[start+len(heading)+2:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	inCode := false
	off := 0
	for _, l := range strings.SplitAfter(body, "\n") {
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(l, level) {
			return body[:off], nil
		}
		off += len(l)
	}
	return body, nil
}

// markdownRoff writes the Markdown the docs use (## headings, paragraphs,
// - and 1. lists, tables, fenced code) as man(7).
func markdownRoff(b *bytes.Buffer, md string) {
	lines := strings.Split(strings.TrimSpace(md), "\n")
	para := false // inside a filled paragraph or list item
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			b.WriteString(".PP\n.RS 4\n.nf\n")
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				b.WriteString(fonts(roffLine(strings.ReplaceAll(lines[i], "\t", "        "))) + "\n")
			}
			b.WriteString(".fi\n.RE\n")
			para = false
		case t == "":
			para = false
		case strings.HasPrefix(l, "## "):
			fmt.Fprintf(b, ".SS %s\n", fonts(roffArg(inline(strings.TrimPrefix(l, "## ")))))
			para = false
		case strings.HasPrefix(t, "|"):
			var rows [][]string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
				rows = append(rows, tableCells(lines[i]))
			}
			i--
			writeTable(b, rows)
			para = false
		case strings.HasPrefix(l, "- "):
			b.WriteString(".IP \\(bu 2\n" + fonts(roffLine(inline(strings.TrimPrefix(l, "- ")))) + "\n")
			para = true
		case numbered.MatchString(l):
			m := numbered.FindStringSubmatch(l)
			fmt.Fprintf(b, ".IP %s 4\n%s\n", m[1], fonts(roffLine(inline(m[2]))))
			para = true
		default:
			if !para {
				b.WriteString(".PP\n")
				para = true
			}
			b.WriteString(fonts(roffLine(inline(t))) + "\n")
		}
	}
}

var numbered = regexp.MustCompile(`^([0-9]+\.) (.*)$`)

// tableCells splits a Markdown table row into its cells.
func tableCells(row string) []string {
	row = strings.Trim(strings.TrimSpace(row), "|")
	var cells []string
	for _, c := range strings.Split(row, "|") {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

// writeTable writes a table as a tagged list, a form every man reader
// shows well on a narrow terminal: the first cell is the tag, the middle
// cells follow it in parentheses, the last is the text.
func writeTable(b *bytes.Buffer, rows [][]string) {
	if len(rows) < 2 {
		return
	}
	for _, r := range rows[2:] { // rows[1] is the |---| line
		if len(r) == 0 {
			continue
		}
		tag := "\\fB" + fonts(roffText(inline(r[0]))) + "\\fR"
		if len(r) > 2 {
			var mid []string
			for _, c := range r[1 : len(r)-1] {
				mid = append(mid, fonts(roffText(inline(c))))
			}
			tag += " (" + strings.Join(mid, "; ") + ")"
		}
		b.WriteString(".TP\n" + tag + "\n")
		if len(r) < 2 || r[len(r)-1] == "" {
			b.WriteString("\\(em\n")
			continue
		}
		b.WriteString(fonts(roffLine(inline(r[len(r)-1]))) + "\n")
	}
}

var (
	mdLink = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	mdCode = regexp.MustCompile("`([^`]*)`")
	mdBold = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	mdEm   = regexp.MustCompile(`(^|[\s(])\*([^*\s][^*]*)\*`)
)

// inline turns the docs' inline Markdown into plain text, marking code
// and emphasis with control characters that fonts makes font changes: a link
// keeps its text, code and bold become bold, emphasis italic. Escape the
// result for roff, then give it to fonts.
func inline(s string) string {
	s = mdLink.ReplaceAllString(s, "$1")
	s = mdCode.ReplaceAllString(s, "\x01$1\x02")
	s = mdBold.ReplaceAllString(s, "\x01$1\x02")
	s = mdEm.ReplaceAllString(s, "$1\x03$2\x02")
	return s
}

// fonts turns inline's marks into font changes and every character
// beyond ASCII into groff's escape for it (\[u2026]), so that the page
// reads the same whatever encoding man assumes.
func fonts(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\x01':
			b.WriteString(`\fB`)
		case r == '\x03':
			b.WriteString(`\fI`)
		case r == '\x02':
			b.WriteString(`\fR`)
		case r > 0x7e:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
