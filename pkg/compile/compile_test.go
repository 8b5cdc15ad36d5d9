package compile_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/units"
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
			_, diags := compile.Build("t.yaml", []byte(header+tc.spec), compile.Options{})
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
	_, diags := compile.Build("t.yaml", []byte(header+"- name: good\n  exec: [/bin/true]\n- name: bad/name\n  exec: [/bin/true]\n"), compile.Options{})
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
		_, diags := compile.Build("t.yaml", []byte(header+spec), compile.Options{})
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
		if _, diags := compile.Build("t.yaml", []byte(header+fixed), compile.Options{}); diags.HasErrors(false) {
			t.Errorf("with the hinted name:\n%s\n%v", fixed, diags)
		}
	}
}

// TestEntryPlaces checks every diagnostic, exactly and in order, of units
// whose entries come from many places at once (structured fields, a
// non-raw manifest, directives, a raw manifest, drop-ins): the position of
// an entry is looked up only when a problem is reported at it, and must be
// the one its origin gives.
func TestEntryPlaces(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{
			name: "generated",
			spec: `- name: a
  type: oneshot
  exec: [/bin/true]
  pre: [[/bin/mkdir, -p, /var/lib/a]]
  env: {A: "1"}
  after: [network-online.target]
  manifest: |
    Nice=5
    ExecStartPost=/bin/echo %z
    StandOutput=journal
    ExecStopPost=-/bin/echo "open
  directives:
    Unit: [ConditionPathExists=/a, Foo=1]
    Service: [ExecStop=+!/bin/x, ExecReload=-/bin/echo %y]
    X-Private: [A=1]
    Servce: [Nice=5]
`,
			want: []string{"t.yaml:12:5: error: hooks[0].manifest: ExecStartPost=/bin/echo %z: %z is not a specifier systemd knows (write %%z for a literal %z); systemd refuses to load the unit", "t.yaml:13:5: warning: hooks[0].manifest: systemd does not know StandOutput= in [Service] and ignores it\n\thint: did you mean \"StandardOutput\"?", "t.yaml:14:5: warning: hooks[0].manifest: ExecStopPost=-/bin/echo \"open: unbalanced quoting in \"\\\"open\"; close every quote and do not end a quoted word with a backslash; because of its \"-\" prefix systemd ignores this command instead of refusing the unit\n\thint: fix the command, or remove the line", "t.yaml:16:36: warning: hooks[0].directives.Unit[1]: systemd does not know Foo= in [Unit] and ignores it", "t.yaml:17:15: error: hooks[0].directives.Service[0]: ExecStop=+!/bin/x: the prefixes \"+\" and \"!\" cannot be combined: \"+\" runs the command with full privileges, \"!\" with only the user switch lifted; systemd refuses to load the unit", "t.yaml:19:14: warning: hooks[0].directives.Servce[0]: systemd does not know section [Servce] and ignores it\n\thint: name private sections X-Something"},
		},
		{
			name: "conflicts",
			spec: `- name: a
  type: oneshot
  user: nobody
  exec: [/bin/true]
  manifest: |
    Nice=5
    User=root
  directives:
    Service: [Type=simple]
`,
			want: []string{"t.yaml:10:5: error: hooks[0].manifest: User= is set by hooks[0].user already; systemd would use only one of them\n\thint: set it in one place: remove this line or hooks[0].user", "t.yaml:12:15: error: hooks[0].directives.Service[0]: Type= is set by hooks[0].type already; systemd would use only one of them\n\thint: set it in one place: remove this line or hooks[0].type"},
		},
		{
			name: "raw and drop-ins",
			spec: `- name: b.service
  useRawManifest: true
  manifest: |
    [Unit]
    Description=b
    Wnats=c.service
    [Service]
    ExecStart=/bin/true
    ExecStartPre=+!/bin/x
    [Install]
    WantedBy=multi-user.target
- name: docker.service
  dropins:
  - name: a.conf
    contents: |
      [Service]
      Environmnet=A=1
      ExecStartPost=/bin/echo %z
  - name: b.conf
    contents: "[Srvice]\nA=1\n"
`,
			want: []string{"t.yaml:9:5: warning: hooks[0].manifest: systemd does not know Wnats= in [Unit] and ignores it\n\thint: did you mean \"Wants\"?", "t.yaml:12:5: error: hooks[0].manifest: ExecStartPre=+!/bin/x: the prefixes \"+\" and \"!\" cannot be combined: \"+\" runs the command with full privileges, \"!\" with only the user switch lifted; systemd refuses to load the unit", "t.yaml:20:7: warning: hooks[1].dropins[0].contents: systemd does not know Environmnet= in [Service] and ignores it\n\thint: did you mean \"Environment\"?", "t.yaml:21:7: error: hooks[1].dropins[0].contents: ExecStartPost=/bin/echo %z: %z is not a specifier systemd knows (write %%z for a literal %z); systemd refuses to load the unit", "t.yaml:23:15: warning: hooks[1].dropins[1].contents: systemd does not know section [Srvice] and ignores it\n\thint: name private sections X-Something"},
		},
		{
			name: "long lines",
			spec: "- name: c\n  exec: [/bin/echo, a, " + long + "]\n- name: d\n  env: {A: " + long + "}\n  exec: [/bin/true]\n",
			want: []string{"t.yaml:5:24: error: hooks[0].exec[2]: this makes ExecStart= a line of 1048598 bytes; systemd refuses a unit file line of 1048576 bytes or more (LONG_LINE_MAX), and the unit would not load\n\thint: move the long text into a file on the machine and pass its path instead: a script for a command to run, a file the program reads for data", "t.yaml:7:12: error: hooks[1].env.A: this makes Environment= a line of 1048592 bytes; systemd refuses a unit file line of 1048576 bytes or more (LONG_LINE_MAX), and the unit would not load\n\thint: move the long text into a file on the machine and pass its path instead: a script for a command to run, a file the program reads for data"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := compile.Build("t.yaml", []byte(header+tc.spec), compile.Options{})
			var got []string
			for _, d := range diags {
				got = append(got, d.String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestManyRefusedHooks checks that a spec in which every hook has an
// error gets each error once, at its own hook, and that telling which
// hooks the parser refused looks at one refused path per hook: it once
// scanned every refused path for every hook, which made validation
// quadratic in the number of hooks (minutes for 40000 hooks with an
// error each). The work is counted, not timed.
func TestManyRefusedHooks(t *testing.T) {
	for _, n := range []int{10, 500, 2000} {
		t.Run(fmt.Sprintf("hooks=%d", n), func(t *testing.T) {
			us, diags, examined := compile.BuildExamined("many.yaml", errorSpec(n))
			if len(us) != 0 {
				t.Errorf("%d units from a spec with errors", len(us))
			}
			if examined > n {
				t.Errorf("examined %d refused paths for %d hooks, want at most one per hook", examined, n)
			}
			if len(diags) != n {
				t.Fatalf("%d diagnostics for %d hooks with an error each:\n%v", len(diags), n, diags.Error())
			}
			for i, d := range diags {
				// Each hook of errorSpec is 6 lines, after the 3-line
				// header; exec is its fourth line.
				want := hooks.Diagnostic{
					Severity: hooks.Error,
					Pos:      hooks.Position{File: "many.yaml", Line: 3 + 6*i + 4, Column: 9},
					Path:     fmt.Sprintf("hooks[%d].exec", i),
					Message:  "exec must be a list of arguments, not a string",
					Hint:     fmt.Sprintf(`write exec: ["/usr/local/bin/prepare", "--id", "%d"], one item per argument`, i),
				}
				if d != want {
					t.Fatalf("diagnostic %d is\n%v\nwant\n%v", i, d, want)
				}
			}
		})
	}
}

// TestExactBytes: with exactBytes, a raw manifest and every drop-in are
// the unit's bytes as written (carriage returns, no final newline, extra
// newlines); without it, they have LF line endings and one final newline.
// Every output takes a unit's bytes from here (TestSameBytes and the
// exact-bytes goldens show each carries them).
func TestExactBytes(t *testing.T) {
	manifest := "[Service]\r\nExecStart=/bin/true\r\n[Install]\r\nWantedBy=multi-user.target"
	dropin := "[Service]\nEnvironment=A=1\n\n\n"
	for _, exact := range []bool{false, true} {
		spec := fmt.Sprintf("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a.service\n  useRawManifest: true\n  exactBytes: %v\n  manifest: %q\n  dropins:\n  - name: x.conf\n    contents: %q\n",
			exact, manifest, dropin)
		r, diags := compile.Build("exact.yaml", []byte(spec), compile.Options{})
		us := r.Units
		if diags.HasErrors(false) || len(us) != 1 || len(us[0].Dropins) != 1 {
			t.Fatalf("exactBytes: %v: %s", exact, diags.Error())
		}
		wantM, wantD := manifest, dropin
		if !exact {
			wantM, wantD = string(units.NormalizeRaw([]byte(manifest))), "[Service]\nEnvironment=A=1\n"
		}
		if got := string(us[0].Contents); got != wantM {
			t.Errorf("exactBytes: %v: unit %q, want %q", exact, got, wantM)
		}
		if got := string(us[0].Dropins[0].Contents); got != wantD {
			t.Errorf("exactBytes: %v: drop-in %q, want %q", exact, got, wantD)
		}
	}
}
