package compile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// header opens a spec; the tests write its hooks after it.
const header = "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n"

// diagnosticCases are specs (after the header; line 4 is the first hook)
// with what their diagnostics must contain.
var diagnosticCases = []struct {
	name string
	spec string
	want []string
}{
	{
		name: "raw name without type",
		spec: "- name: swap1\n  useRawName: true\n  exec: [/bin/true]\n",
		want: []string{`t.yaml:4:9: error: hooks[0].name: `, `hint: with useRawName the name must end in a unit type, such as "swap1.service"`},
	},
	{
		name: "invalid characters",
		spec: "- name: bad name\n  exec: [/bin/true]\n",
		want: []string{`t.yaml:4:9: error: hooks[0].name: `},
	},
	{
		name: "too long",
		spec: "- name: " + strings.Repeat("a", 250) + "\n  exec: [/bin/true]\n",
		want: []string{`t.yaml:4:9: error: hooks[0].name: `},
	},
	{
		name: "swap named after another path",
		spec: "- name: swap.swap\n  useRawManifest: true\n  manifest: |\n    [Swap]\n    What=/swap1\n    [Install]\n    WantedBy=swap.target\n",
		want: []string{`t.yaml:4:9: error: hooks[0].name: systemd requires a swap unit to be named after its What= path /swap1, but it is named swap.swap`,
			`hint: name the hook "swap1.swap"`},
	},
	{
		name: "mount named after another path",
		spec: "- name: data.mount\n  directives:\n    Mount: [What=/dev/vdb, Where=/srv/my data]\n",
		want: []string{`t.yaml:4:9: error: hooks[0].name: systemd requires a mount unit to be named after its Where= path /srv/my data, but it is named data.mount`,
			`hint: name the hook "srv-my\x20data.mount"`},
	},
	{
		name: "raw manifest that does not parse",
		spec: "- name: a\n  useRawManifest: true\n  manifest: |\n    [Service]\n    ExecStart=/bin/true\n    no equals sign\n",
		want: []string{`t.yaml:9:5: error: hooks[0].manifest: not a valid unit file: `},
	},
	{
		name: "drop-in that does not parse",
		spec: "- name: docker\n  dropins:\n  - name: a.conf\n    contents: |\n      ExecStart=/bin/true\n",
		want: []string{`t.yaml:8:7: error: hooks[0].dropins[0].contents: not a valid unit file: `},
	},
	{
		name: "unknown directive with suggestion",
		spec: "- name: a\n  exec: [/bin/true]\n  directives:\n    Service: [ExecStrat=/bin/false]\n",
		want: []string{`t.yaml:7:15: warning: hooks[0].directives.Service[0]: systemd does not know ExecStrat= in [Service] and ignores it`, `did you mean "ExecStart"?`},
	},
	{
		name: "directive in the wrong section",
		spec: "- name: a\n  exec: [/bin/true]\n  directives:\n    Service: [WantedBy=multi-user.target]\n",
		want: []string{`t.yaml:7:15: warning: hooks[0].directives.Service[0]: systemd does not know WantedBy= in [Service]`, `"WantedBy" belongs in [Install]`},
	},
	{
		name: "unknown directive in a raw manifest",
		spec: "- name: a\n  useRawManifest: true\n  manifest: |\n    [Service]\n    ExecStart=/bin/true\n    StandOutput=journal\n    [Install]\n    WantedBy=multi-user.target\n",
		want: []string{`t.yaml:9:5: warning: hooks[0].manifest: systemd does not know StandOutput= in [Service]`},
	},
	{
		name: "unknown section",
		spec: "- name: a\n  exec: [/bin/true]\n  directives:\n    Servce: [Nice=5]\n",
		want: []string{`t.yaml:7:14: warning: hooks[0].directives.Servce[0]: systemd does not know section [Servce]`},
	},
	{
		name: "enabled raw unit without install",
		spec: "- name: a\n  useRawManifest: true\n  manifest: \"[Service]\\nExecStart=/bin/true\\n\"\n",
		want: []string{`t.yaml:6:13: warning: hooks[0].manifest: a.service is enabled but has no [Install] section`},
	},
	{
		name: "enabled template without default instance",
		spec: "- name: w@.service\n  useRawName: true\n  exec: [/bin/true]\n",
		want: []string{`warning: hooks[0]`, `w@.service is a template: it cannot be enabled without an instance`},
	},
	{
		name: "service without a command",
		spec: "- name: a\n  description: nothing to run\n",
		want: []string{`t.yaml:4:3: error: hooks[0]: the service has no command to run`},
	},
	{
		name: "two ExecStart without oneshot",
		spec: "- name: a\n  exec: [/bin/true]\n  directives:\n    Service: [ExecStart=/bin/false]\n",
		want: []string{`error: hooks[0]: the service has 2 ExecStart= commands`},
	},
	{
		name: "oneshot with Restart=always",
		spec: "- name: a\n  type: oneshot\n  restart: always\n  exec: [/bin/true]\n",
		want: []string{`t.yaml:6:12: error: hooks[0].restart: Restart=always is not allowed for Type=oneshot`},
	},
	{
		name: "structured field set again as directive",
		spec: "- name: a\n  type: oneshot\n  exec: [/bin/true]\n  directives:\n    Service: [Type=simple]\n",
		want: []string{`t.yaml:8:15: error: hooks[0].directives.Service[0]: Type= is set by hooks[0].type already`},
	},
	{
		name: "structured field set again in manifest",
		spec: "- name: a\n  user: nobody\n  manifest: |\n    ExecStart=/bin/true\n    User=root\n",
		want: []string{`t.yaml:8:5: error: hooks[0].manifest: User= is set by hooks[0].user already`},
	},
	{
		name: "dependency without type",
		spec: "- name: a\n  exec: [/bin/true]\n  after: [network-online]\n",
		want: []string{`t.yaml:6:11: error: hooks[0].after[0]: `, `did you mean "network-online.service"?`},
	},
	{
		name: "two hooks render the same unit",
		spec: "- name: a\n  exec: [/bin/true]\n- name: a.service\n  exec: [/bin/true]\n",
		want: []string{`t.yaml:6:9: error: hooks[1].name: two hooks render the same unit a.service`, `hint: hooks[0] (line 4)`},
	},
	{
		name: "manifest for a target",
		spec: "- name: x.target\n  manifest: \"Wants=a.service\\n\"\n",
		want: []string{`error: hooks[0].manifest: a target unit has no section of its own`},
	},
}

// TestDiagnostics checks the problems that only the unit model can find,
// each at its exact place in the spec, with its message and hint.
func TestDiagnostics(t *testing.T) {
	for _, tc := range diagnosticCases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := compile.Build("t.yaml", []byte(header+tc.spec))
			got := diags.Error()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("diagnostics lack %q; got:\n%s", w, got)
				}
			}
			for _, d := range diags {
				if d.Pos.Line < 1 {
					t.Errorf("diagnostic without a line: %v", d)
				}
			}
		})
	}
}

// TestNothingWhenInvalid checks that a spec with an error gives no units to
// write: the caller must refuse it as a whole.
func TestNothingWhenInvalid(t *testing.T) {
	_, diags := compile.Build("t.yaml", []byte(header+"- name: good\n  exec: [/bin/true]\n- name: bad/name\n  exec: [/bin/true]\n"))
	if !diags.HasErrors(false) {
		t.Fatal("a hook name with / must be an error")
	}
	var errs int
	for _, d := range diags {
		if d.Severity == hooks.Error {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("want exactly one error, got:\n%s", diags.Error())
	}
}

// TestPathUnitNameHint checks the whole hint for a swap or mount unit
// named after another path: the name it gives ends in the unit type, so
// it is kept as written, and useRawName is not needed.
func TestPathUnitNameHint(t *testing.T) {
	for spec, want := range map[string]string{
		"- name: swap.swap\n  useRawManifest: true\n  manifest: |\n    [Swap]\n    What=/swap1\n    [Install]\n    WantedBy=swap.target\n": `name the hook "swap1.swap" (systemd-escape --path --suffix=swap '/swap1')`,
		"- name: data.mount\n  directives:\n    Mount: [What=/dev/vdb, Where=/srv/my data]\n":                                              `name the hook "srv-my\x20data.mount" (systemd-escape --path --suffix=mount '/srv/my data')`,
	} {
		_, diags := compile.Build("t.yaml", []byte(header+spec))
		var hints []string
		for _, d := range diags {
			if d.Path == "hooks[0].name" {
				hints = append(hints, d.Hint)
			}
		}
		if len(hints) != 1 || hints[0] != want {
			t.Errorf("hints of hooks[0].name = %q, want [%q]\n%v", hints, want, diags)
		}
		// The hinted name renders without a name problem.
		fixed := strings.Replace(spec, spec[len("- name: "):strings.IndexByte(spec, '\n')], want[len(`name the hook "`):strings.Index(want, `" (`)], 1)
		if _, diags := compile.Build("t.yaml", []byte(header+fixed)); diags.HasErrors(false) {
			t.Errorf("with the hinted name:\n%s\n%v", fixed, diags)
		}
	}
}

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
			_, diags := compile.Build("t.yaml", []byte(header+tc.spec))
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
