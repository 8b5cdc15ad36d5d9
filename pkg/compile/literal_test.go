package compile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
)

// TestLiteralWarnings checks the warnings about text hostprov passes as
// written where the author probably meant systemd to read it: exact
// position, path, message and hint.
func TestLiteralWarnings(t *testing.T) {
	const specMsg = "%[1]s looks like a systemd specifier, but the hook does not set specifiers, so %[1]s is kept as text and systemd does not replace it"
	const specHint = "set specifiers: true to let systemd expand %[1]s (then write %%%[1]s for a literal %[1]s), or specifiers: false to keep every %% as written"
	for _, tc := range []struct {
		name string
		spec string // after the header; line 4 is the first hook
		want []string
	}{
		{
			name: "instance specifier in a template",
			spec: "- name: agent@.service\n  enabled: false\n  exec: [/usr/bin/agent, --instance=%i, 100%, \"%%n\"]\n",
			want: []string{"t.yaml:6:37: warning: hooks[0].exec[1]: " + fmt.Sprintf(specMsg, "%i") + "\n\thint: " + fmt.Sprintf(specHint, "%i")},
		},
		{
			name: "specifiers in a template's description, env and script",
			spec: "- name: agent@.service\n  enabled: false\n  description: agent %I\n  env: {A: x%n}\n  steps:\n  - name: s\n    sh: |\n      echo one\n      echo two %H\n",
			want: []string{
				"t.yaml:6:22: warning: hooks[0].description: " + fmt.Sprintf(specMsg, "%I") + "\n\thint: " + fmt.Sprintf(specHint, "%I"),
				"t.yaml:7:13: warning: hooks[0].env.A: " + fmt.Sprintf(specMsg, "%n") + "\n\thint: " + fmt.Sprintf(specHint, "%n"),
				"t.yaml:12:16: warning: hooks[0].steps[0].sh: " + fmt.Sprintf(specMsg, "%H") + "\n\thint: " + fmt.Sprintf(specHint, "%H"),
			},
		},
		{
			name: "specifiers set either way",
			spec: "- name: a@.service\n  enabled: false\n  specifiers: false\n  exec: [/bin/echo, '%i']\n- name: b@.service\n  enabled: false\n  specifiers: true\n  exec: [/bin/echo, '%i']\n",
		},
		{
			// A date format in a plain service is not a specifier.
			name: "not a template",
			spec: "- name: a\n  exec: [/bin/date, +%H:%M]\n",
		},
		{
			name: "expandEnv word that names no variable",
			spec: "- name: a\n  expandEnv: true\n  exec: [/bin/echo, $FOO-bar, $, $-, $1, '${FOO}-bar', $$FOO-bar, $FOO]\n",
			want: []string{`t.yaml:6:21: warning: hooks[0].exec[1]: "$FOO-bar" is passed as written: systemd would read it as the variable "FOO-bar", which cannot exist, and drop the argument` +
				"\n\thint: write \"${FOO}-bar\" for the value of FOO followed by \"-bar\", or \"$$FOO-bar\" to say the text is meant"},
		},
		{
			name: "expandEnv word in a step and a pre command",
			spec: "- name: a\n  expandEnv: true\n  pre:\n  - [/bin/echo, $A.b]\n  exec: [/bin/true]\n- name: c\n  expandEnv: true\n  steps:\n  - name: s\n    run: [/bin/echo, $X/y]\n  - name: t\n    sh: $X/y\n",
			want: []string{
				`t.yaml:7:17: warning: hooks[0].pre[0][1]: "$A.b" is passed as written`,
				`t.yaml:13:22: warning: hooks[1].steps[0].run[1]: "$X/y" is passed as written`,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := compile.Build("t.yaml", []byte(header+tc.spec), compile.Options{})
			var got []string
			for _, d := range diags {
				got = append(got, d.String())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d diagnostics, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) || strings.Contains(w, "hint:") && got[i] != w {
					t.Errorf("diagnostic %d:\n got %s\nwant %s", i, got[i], w)
				}
			}
		})
	}
}
