package compile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
)

// longLineDiag is a diagnostic a case of longLineCases must give.
type longLineDiag struct {
	sev  hooks.Severity
	pos  string // line:col
	path string
	msg  string // a substring
}

type longLineCase struct {
	name string
	spec string
	want []longLineDiag
}

// longLineCases are the specs of TestLongLines (after the header; line 4
// is the first hook) with the diagnostics each gives, in order.
func longLineCases() []longLineCase {
	const execLine = len("ExecStart=/bin/echo ")
	x := func(n int) string { return strings.Repeat("x", n) }
	tooLong := fmt.Sprintf("a unit file line of %d bytes or more (LONG_LINE_MAX), and the unit would not load", units.MaxLineLen+1)
	return []longLineCase{
		{
			name: "5 MB exec argument",
			spec: "- name: big\n  exec:\n  - /bin/sh\n  - -c\n  - " + x(5<<20) + "\n",
			want: []longLineDiag{{hooks.Error, "8:5", "hooks[0].exec[2]", fmt.Sprintf("this makes ExecStart= a line of %d bytes; systemd refuses %s", len("ExecStart=/bin/sh -c ")+5<<20, tooLong)}},
		},
		{
			name: "longest line systemd reads",
			spec: "- name: edge\n  exec: [/bin/echo, " + x(units.MaxLineLen-execLine) + "]\n",
			want: []longLineDiag{{hooks.Warning, "5:21", "hooks[0].exec[1]", "Linux refuses to start a program with an argument or environment variable of 131072 bytes or more"}},
		},
		{
			name: "one byte more",
			spec: "- name: edge\n  exec: [/bin/echo, " + x(units.MaxLineLen-execLine+1) + "]\n",
			want: []longLineDiag{{hooks.Error, "5:21", "hooks[0].exec[1]", "this makes ExecStart= a line of 1048576 bytes"}},
		},
		{
			name: "many arguments, none long",
			spec: "- name: many\n  exec: [/bin/echo" + strings.Repeat(", "+x(999)+"y", 1100) + "]\n",
			want: []longLineDiag{{hooks.Error, "5:9", "hooks[0].exec", "this makes ExecStart= a line of 1101119 bytes"}},
		},
		{
			// Seen on Linux with 4 KiB pages: an argument of 131071
			// bytes reaches the program, one of 131072 gives E2BIG.
			name: "longest argument Linux takes",
			spec: "- name: arg\n  exec: [/bin/echo, " + x(131071) + "]\n",
		},
		{
			name: "argument Linux refuses",
			spec: "- name: arg\n  exec: [/bin/echo, " + x(131072) + "]\n",
			want: []longLineDiag{{hooks.Warning, "5:21", "hooks[0].exec[1]", "the argument is 131072 bytes; Linux refuses to start a program"}},
		},
		{
			name: "longest variable Linux takes",
			spec: "- name: e\n  exec: [/bin/true]\n  env:\n    A: " + x(131069) + "\n",
		},
		{
			name: "variable Linux refuses",
			spec: "- name: e\n  exec: [/bin/true]\n  env:\n    A: " + x(131070) + "\n",
			want: []longLineDiag{{hooks.Warning, "7:8", "hooks[0].env.A", "A=... is 131072 bytes; Linux refuses to start a program"}},
		},
		{
			name: "pre command",
			spec: "- name: p\n  exec: [/bin/true]\n  pre:\n  - [/bin/echo, a, " + x(2<<20) + "]\n",
			want: []longLineDiag{{hooks.Error, "7:20", "hooks[0].pre[0][2]", "this makes ExecStartPre= a line of"}},
		},
		{
			name: "step script",
			spec: "- name: s\n  steps:\n  - name: one\n    sh: |\n      " + x(2<<20) + "\n",
			want: []longLineDiag{{hooks.Error, "7:9", "hooks[0].steps[0].sh", "this makes ExecStart= a line of"}},
		},
		{
			name: "environment value",
			spec: "- name: e\n  exec: [/bin/true]\n  env:\n    BIG: " + x(2<<20) + "\n",
			want: []longLineDiag{{hooks.Error, "7:10", "hooks[0].env.BIG", "this makes Environment= a line of"}},
		},
		{
			name: "environment value too long to hand to a program",
			spec: "- name: e\n  exec: [/bin/true]\n  env:\n    BIG: " + x(200<<10) + "\n",
			want: []longLineDiag{{hooks.Warning, "7:10", "hooks[0].env.BIG", "BIG=... is 204804 bytes; Linux refuses to start a program"}},
		},
		{
			name: "description",
			spec: "- name: d\n  exec: [/bin/true]\n  description: " + x(2<<20) + "\n",
			want: []longLineDiag{{hooks.Error, "6:16", "hooks[0].description", "this makes Description= a line of"}},
		},
		{
			name: "directive",
			spec: "- name: d\n  exec: [/bin/true]\n  directives:\n    Service: [\"Environment=A=" + x(2<<20) + "\"]\n",
			want: []longLineDiag{{hooks.Error, "7:15", "hooks[0].directives.Service[0]", "this makes Environment= a line of"}},
		},
		{
			// Joined, the continuation is as long as systemd takes one,
			// but written out it is one line that systemd refuses.
			name: "manifest body continued to LONG_LINE_MAX",
			spec: "- name: m\n  manifest: |\n    Type=oneshot\n    ExecStart=/bin/echo " + x(1<<19) + " \\\n    " + x(units.MaxJoinedLen-len("ExecStart=/bin/echo ")-(1<<19)-2) + "\n",
			want: []longLineDiag{{hooks.Error, "7:5", "hooks[0].manifest", "this makes ExecStart= a line of 1048576 bytes"}},
		},
		{
			name: "raw manifest line",
			spec: "- name: r.service\n  useRawManifest: true\n  manifest: |\n    [Service]\n    ExecStart=/bin/echo " + x(2<<20) + "\n",
			want: []longLineDiag{{hooks.Error, "8:5", "hooks[0].manifest", "not a valid unit file: the line is 2097172 bytes long; systemd refuses a line of 1048576 bytes or more"}},
		},
		{
			name: "drop-in continued past LONG_LINE_MAX",
			spec: "- name: docker.service\n  dropins:\n  - name: big.conf\n    contents: |\n      [Service]\n      Environment=A=" + x(1<<19) + "\\\n      " + x(1<<19) + "\n",
			want: []longLineDiag{{hooks.Error, "10:7", "hooks[0].dropins[0].contents", "not a valid unit file: the line continued from line 2 is 1048591 bytes long when joined"}},
		},
	}
}

// TestLongLines checks that validation refuses what would make a unit
// line longer than systemd reads (it would not load the unit, and every
// apply would fail with LimitsExceeded), at the spec value that made the
// line long, with a hint; and warns about a command argument or variable
// that systemd loads but Linux refuses to hand to a program. The inputs
// are made here: a 5 MB spec has no place in testdata.
func TestLongLines(t *testing.T) {
	for _, tc := range longLineCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := compile.Build("t.yaml", []byte(header+tc.spec), compile.Options{})
			if len(diags) != len(tc.want) {
				t.Fatalf("%d diagnostics, want %d:\n%s", len(diags), len(tc.want), short(diags))
			}
			for i, w := range tc.want {
				d := diags[i]
				if d.Severity != w.sev || fmt.Sprintf("%d:%d", d.Pos.Line, d.Pos.Column) != w.pos || d.Path != w.path ||
					!strings.Contains(d.Message, w.msg) || d.Hint != units.LongLineHint {
					t.Errorf("got\n%s\nwant %s at %s, %s: ...%s..., with the hint %q", short(diags[i:i+1]), w.sev, w.pos, w.path, w.msg, units.LongLineHint)
				}
			}
		})
	}
}

// short formats diagnostics with long messages cut, for failures.
func short(ds hooks.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		s := d.String()
		if len(s) > 400 {
			s = s[:400] + "..."
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}
