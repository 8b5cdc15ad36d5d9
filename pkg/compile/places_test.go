package compile_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
)

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
			_, diags := compile.Build("t.yaml", []byte(header+tc.spec))
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
