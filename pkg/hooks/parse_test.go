package hooks

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hostprov/hostprov/internal/benchspec"
	"github.com/hostprov/hostprov/internal/yamlnode"
)

// header is the first three lines of a spec; hooks start on line 4.
const header = "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n"

// want describes one expected diagnostic: its exact position ("line:col"),
// its exact path, and fragments of its message and hint.
type want struct {
	pos  string
	path string
	msg  string
	hint string
	sev  Severity
}

func warning(pos, path, msg, hint string) want { return want{pos, path, msg, hint, Warning} }

// diagCase is a spec and the diagnostics that parsing it gives, in order.
type diagCase struct {
	name string
	src  string
	want []want
}

// checkParse parses the spec of each case and checks its diagnostics.
func checkParse(t *testing.T, cases []diagCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, got := Parse("hooks.yaml", []byte(tt.src))
			checkDiags(t, got, tt.want)
		})
	}
}

// TestParseDocumentDiagnostics: the document as a whole, and the keys of
// its mappings.
func TestParseDocumentDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
		// The document as a whole.
		{"empty file", "", []want{{"0:0", "", "empty spec", "apiVersion: hostprov/v1alpha1", Error}}},
		{"only comments", "# nothing yet\n", []want{{"0:0", "", "empty spec", "kind: Hooks", Error}}},
		{"only a document marker", "---\n", []want{{"0:0", "", "empty spec", "hooks:", Error}}},
		{"top level is a list", "- name: a\n", []want{{"1:1", "", "not a list", "apiVersion: hostprov/v1alpha1", Error}}},
		{"second document", header + "- name: a\n  exec: [/bin/true]\n---\nkind: Hooks\n",
			[]want{{"6:1", "", "second document", "put every hook in the one hooks: list", Error}}},
		{"syntax error", "apiVersion: x\n kind: y\n", []want{{"2:2", "", "not valid YAML: this line is indented more than the key on line 1", "indent this key by 0 spaces", Error}}},
		// yaml.v3 says "line 4" for this list: the line of the "[",
		// counted from 0 (see yamlnode.Syntax for more cases).
		{"unclosed flow list", header + "- name: a\n  exec: [/bin/true\n  user: root\n", []want{{"5:9", "",
			`not valid YAML: the list that starts here with "[" is not closed: yaml.v3 gave up on line 6`, `end the list with "]"`, Error}}},
		{"unclosed quote", header + "- name: a\n  exec: [/bin/echo]\n  env: {A: \"x}\n", []want{{"6:12", "",
			`not valid YAML: the string that starts here with " is not closed`, `end the string with "`, Error}}},
		{"tab indentation", header + "- name: a\n\texec: [/bin/true]\n", []want{{"5:1", "", "not valid YAML", "replace the tabs", Error}}},
		// yaml.v3's reader refuses these without any line: each is
		// placed at the character, counted in characters.
		{"NUL in a value", header + "- name: a\n  exec: [/bin/echo, \"caf\u00e9\", x\x00y]\n", []want{{"5:30", "",
			"not valid YAML: the control character U+0000", `remove the character, or write it as an escape in a double-quoted string: "\0"`, Error}}},
		{"C1 control in a value", header + "- name: a\n  description: caf\u00e9 \u0093quoted\u0094\n  exec: [/bin/true]\n", []want{{"5:21", "",
			"not valid YAML: the C1 control character U+0093", `write it as an escape in a double-quoted string: "\x93"; a C1 control in a text is often a Windows-1252 quote`, Error}}},
		{"C1 control in a block scalar", header + "- name: a\n  exec: [/bin/true]\n  manifest: |\n    Type=oneshot\n    User=r\u0080t\n", []want{{"8:11", "",
			"not valid YAML: the C1 control character U+0080", `"\x80"`, Error}}},
		{"invalid UTF-8 in a value", header + "- name: a\n  exec: [/bin/echo, caf\xe9]\n", []want{{"5:24", "",
			"not UTF-8 text: byte 0xe9 at offset 82", "convert the file (iconv -t UTF-8)", Error}}},
		{"unknown anchor", header + "- name: a\n  exec: *cmd\n", []want{{"5:9", "", "unknown anchor 'cmd'", "define the anchor &cmd", Error}}},
		{"no apiVersion", "kind: Hooks\nhooks: []\n", []want{
			{"1:1", "apiVersion", "no apiVersion", "add apiVersion: hostprov/v1alpha1", Error},
			warning("2:8", "hooks", "no hooks", "add hooks"),
		}},
		{"other apiVersion", "apiVersion: hostprov/v1\nkind: Hooks\nhooks: []\n", []want{
			{"1:13", "apiVersion", `"hostprov/v1" is not supported: this hostprov reads hostprov/v1alpha1`, "write apiVersion: hostprov/v1alpha1", Error},
			warning("3:8", "hooks", "no hooks", ""),
		}},
		{"other kind", "apiVersion: hostprov/v1alpha1\nkind: Cluster\nhooks: []\n", []want{
			{"2:7", "kind", `kind "Cluster" is not a hook spec`, "write kind: Hooks", Error},
			warning("3:8", "hooks", "no hooks", ""),
		}},
		{"no kind", "apiVersion: hostprov/v1alpha1\nhooks: []\n", []want{
			{"1:1", "kind", "no kind", "add kind: Hooks", Error},
			warning("2:8", "hooks", "no hooks", ""),
		}},
		{"no hooks field", "apiVersion: hostprov/v1alpha1\nkind: Hooks\n", []want{{"1:1", "hooks", "no hooks field", "hooks: []", Error}}},
		{"hooks without value", header, []want{{"3:1", "hooks", "hooks has no value", "hooks: []", Error}}},
		{"hooks is a mapping", header + "  name: a\n", []want{{"4:3", "hooks", "must be a list of hooks, not a mapping", "- name:", Error}}},
		{"unknown top-level field", header + "- name: a\n  exec: [/bin/true]\nhook: []\n",
			[]want{{"6:1", "hook", `unknown field "hook" in a spec`, "did you mean hooks?", Error}}},
		{"hook field at top level", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nuseRawManifest: true\nhooks: []\n", []want{
			{"3:1", "useRawManifest", "useRawManifest is a field of a hook, not of the spec", "move it under an entry of hooks:", Error},
			warning("4:8", "hooks", "no hooks", ""),
		}},
		{"spec field in a hook", header + "- name: a\n  exec: [/bin/true]\n  kind: Hooks\n",
			[]want{{"6:3", "hooks[0].kind", "kind is a field of the spec, not of a hook", "top level", Error}}},
		{"hook is not a mapping", header + "- a.service\n", []want{{"4:3", "hooks[0]", "a hook must be a mapping of fields, not a string", "- name: my-hook", Error}}},

		// Keys.
		{"duplicate top-level key", "apiVersion: hostprov/v1alpha1\nkind: Hooks\nkind: Hooks\nhooks: []\n", []want{
			{"3:1", "kind", "kind is given twice", "the first kind is on line 2", Error},
			warning("4:8", "hooks", "no hooks", ""),
		}},
		{"duplicate hook field", header + "- name: a\n  exec: [/bin/true]\n  exec: [/bin/false]\n",
			[]want{{"6:3", "hooks[0].exec", "exec is given twice", "the first exec is on line 5", Error}}},
		{"duplicate env key", header + "- name: a\n  exec: [/bin/true]\n  env:\n    A: 1\n    A: 2\n",
			[]want{{"8:5", "hooks[0].env.A", "env.A is given twice", "line 7", Error}}},
		{"merge key", header + "- name: a\n  exec: [/bin/true]\n  env:\n    <<: {A: 1}\n",
			[]want{{"7:5", "hooks[0].env", "merge keys (<<) are not supported", "anchor (&name) and an alias (*name)", Error}}},
		{"key that is a list", header + "- name: a\n  exec: [/bin/true]\n  [x]: 1\n",
			[]want{{"6:3", "hooks[0]", "a key must be a name, not a list", "plain name", Error}}},
		{"typo in a hook field", header + "- name: a\n  exce: [/bin/true]\n", []want{
			{"5:3", "hooks[0].exce", `unknown field "exce" in a hook`, "did you mean exec?", Error},
		}},
		{"snake case field", header + "- name: a\n  exec: [/bin/true]\n  wanted_by: [multi-user.target]\n",
			[]want{{"6:3", "hooks[0].wanted_by", `unknown field "wanted_by"`, "did you mean wantedBy?", Error}}},
		{"field unlike any", header + "- name: a\n  exec: [/bin/true]\n  colour: red\n",
			[]want{{"6:3", "hooks[0].colour", `unknown field "colour"`, "the fields of a hook are name, description", Error}}},
		{"kops disabled", header + "- name: a\n  disabled: true\n  exec: [/bin/true]\n",
			[]want{{"5:3", "hooks[0].disabled", "kops hook field", "enabled: false", Error}}},
		{"kops execContainer", header + "- name: a\n  exec: [/bin/true]\n  execContainer: {image: busybox}\n",
			[]want{{"6:3", "hooks[0].execContainer", "kops hook field", "podman", Error}}},
	})
}

// TestParseTypeDiagnostics: values of the wrong type, enumerations and
// time spans.
func TestParseTypeDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
		// Types.
		{"exec as a string", header + "- name: a\n  exec: /bin/echo hi\n",
			[]want{{"5:9", "hooks[0].exec", "exec must be a list of arguments, not a string", `exec: ["/bin/echo", "hi"], one item per argument`, Error}}},
		{"exec empty", header + "- name: a\n  exec: []\n",
			[]want{{"5:9", "hooks[0].exec", "exec is an empty command", `["/usr/bin/true"]`, Error}}},
		{"exec without value", header + "- name: a\n  exec:\n",
			[]want{{"5:3", "hooks[0].exec", "exec has no value", `exec: ["/usr/bin/true"]`, Error}}},
		{"exec with an empty program", header + "- name: a\n  exec: ['', x]\n",
			[]want{{"5:10", "hooks[0].exec[0]", "the program of exec is empty", "/usr/bin/true", Error}}},
		{"exec item is a list", header + "- name: a\n  exec: [/bin/echo, [x]]\n",
			[]want{{"5:21", "hooks[0].exec[1]", "exec[1] must be a string, not a list", "single value", Error}}},
		{"exec as a mapping", header + "- name: a\n  exec: {a: b}\n",
			[]want{{"5:9", "hooks[0].exec", "exec must be a list, not a mapping", `exec: ["/usr/bin/true"]`, Error}}},
		{"yes for a boolean", header + "- name: a\n  exec: [/bin/true]\n  enabled: yes\n",
			[]want{{"6:12", "hooks[0].enabled", `enabled: "yes" is not a boolean in YAML 1.2`, "use true or false", Error}}},
		{"off for a boolean", header + "- name: a\n  exec: [/bin/true]\n  expandEnv: off\n",
			[]want{{"6:14", "hooks[0].expandEnv", `"off" is not a boolean`, "use true or false", Error}}},
		{"quoted boolean", header + "- name: a\n  exec: [/bin/true]\n  enabled: \"false\"\n",
			[]want{{"6:12", "hooks[0].enabled", `not the string "false"`, "remove the quotes: enabled: false", Error}}},
		{"number for a boolean", header + "- name: a\n  exec: [/bin/true]\n  remainAfterExit: 1\n",
			[]want{{"6:20", "hooks[0].remainAfterExit", "must be true or false, not 1", "use true or false", Error}}},
		{"boolean without value", header + "- name: a\n  mask: ~\n",
			[]want{{"5:3", "hooks[0].mask", "mask has no value", "mask: true or mask: false", Error}}},
		{"list for a string", header + "- name: a\n  exec: [/bin/true]\n  description: [a, b]\n",
			[]want{{"6:16", "hooks[0].description", "description must be a string, not a list", "single value", Error}}},
		{"string without value", header + "- name: a\n  exec: [/bin/true]\n  user:\n",
			[]want{{"6:3", "hooks[0].user", "user has no value", `""`, Error}}},
		{"application tag", header + "- name: a\n  exec: [/bin/true]\n  user: !vault root\n",
			[]want{{"6:9", "hooks[0].user", "tag !vault", "remove the tag", Error}}},
		{"string for a list", header + "- name: a\n  exec: [/bin/true]\n  before: swap1.swap\n",
			[]want{{"6:11", "hooks[0].before", "before must be a list, not a string", `before: ["swap1.swap"]`, Error}}},
		{"wantedBy without value", header + "- name: a\n  exec: [/bin/true]\n  wantedBy:\n",
			[]want{{"6:3", "hooks[0].wantedBy", "wantedBy has no value", "wantedBy: [] for no WantedBy=", Error}}},
		{"numbers and booleans as text", header + "- name: a\n  exec: [/bin/true, 1, 2.5, true]\n  restartSec: 5\n  user: 0\n  restart: no\n  env: {DEBUG: true, N: 0x10}\n  wantedBy: []\n", nil},

		// Enumerations and time spans.
		{"type typo", header + "- name: a\n  exec: [/bin/true]\n  type: oneshott\n",
			[]want{{"6:9", "hooks[0].type", `"oneshott" is not a service type`, "did you mean oneshot?", Error}}},
		{"type case", header + "- name: a\n  exec: [/bin/true]\n  type: OneShot\n",
			[]want{{"6:9", "hooks[0].type", `"OneShot"`, "did you mean oneshot?", Error}}},
		{"type unlike any", header + "- name: a\n  exec: [/bin/true]\n  type: daemon\n",
			[]want{{"6:9", "hooks[0].type", "not a service type", "use one of simple, exec, forking, oneshot, dbus, notify, notify-reload, idle", Error}}},
		{"restart typo", header + "- name: a\n  exec: [/bin/true]\n  restart: on_failure\n",
			[]want{{"6:12", "hooks[0].restart", `"on_failure" is not a restart policy`, "did you mean on-failure?", Error}}},
		{"disruption misspelt", header + "- name: a\n  exec: [/bin/true]\n  disruption: drain\n",
			[]want{{"6:15", "hooks[0].disruption", `"drain" is not a disruption`, "did you mean Drain?", Error}}},
		{"restart false", header + "- name: a\n  exec: [/bin/true]\n  restart: false\n",
			[]want{{"6:12", "hooks[0].restart", `"false" is not a restart policy`, "use one of no, always", Error}}},
		{"time spans", header + "- name: a\n  exec: [/bin/true]\n  restartSec: 500ms\n  timeoutStartSec: 1min 30s\n  timeoutStopSec: infinity\n", nil},
		{"more time spans", header + "- name: a\n  exec: [/bin/true]\n  restartSec: 1.5\n  timeoutStartSec: 2h5min\n  timeoutStopSec: 1 week\n", nil},
		{"bad time span", header + "- name: a\n  exec: [/bin/true]\n  restartSec: 5x\n  timeoutStopSec: -1\n  timeoutStartSec: \"\"\n", []want{
			{"6:15", "hooks[0].restartSec", `restartSec: "5x" is not a systemd time span`, `"1min 30s"`, Error},
			{"7:19", "hooks[0].timeoutStopSec", `"-1" is not a systemd time span`, "infinity", Error},
			{"8:20", "hooks[0].timeoutStartSec", `"" is not a systemd time span`, "number of seconds", Error},
		}},

		// deviceTimeout: a time span, only on a .mount or .swap that is not masked.
		{"device timeout", header + "- name: mnt-lun.mount\n  deviceTimeout: 10min\n  manifest: |\n    What=/dev/sdb\n    Where=/mnt/lun\n", nil},
		{"device timeout of a swap", header + "- name: dev-sdc.swap\n  deviceTimeout: infinity\n  manifest: What=/dev/sdc\n", nil},
		{"device timeout not a span", header + "- name: mnt-lun.mount\n  deviceTimeout: 10 minutes later\n  manifest: What=/dev/sdb\n",
			[]want{{"5:18", "hooks[0].deviceTimeout", `deviceTimeout: "10 minutes later" is not a systemd time span`, `"1min 30s"`, Error}}},
		{"device timeout of a service", header + "- name: a\n  exec: [/bin/true]\n  deviceTimeout: 5min\n",
			[]want{{"6:18", "hooks[0].deviceTimeout", "deviceTimeout is only for .mount and .swap hooks; a is a service", "on the .mount or .swap hook", Error}}},
		{"device timeout of a timer", header + "- name: a.timer\n  manifest: OnBootSec=1min\n  deviceTimeout: 5min\n",
			[]want{{"6:18", "hooks[0].deviceTimeout", "a.timer is a timer", "or drop it", Error}}},
		{"device timeout of a mask", header + "- name: mnt-lun.mount\n  mask: true\n  deviceTimeout: 5min\n",
			[]want{{"6:18", "hooks[0].deviceTimeout", "a masked unit never waits for its device", "drop mask: true", Error}}},
	})
}

// TestParseValueDiagnostics: the values of env, directives, pre and dropins.
func TestParseValueDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
		// env.
		{"env name", header + "- name: a\n  exec: [/bin/true]\n  env: {1A: x, B-C: y, _ok: z}\n", []want{
			{"6:9", "hooks[0].env.1A", `"1A" is not a valid environment variable name`, "starts with a letter or _", Error},
			{"6:16", "hooks[0].env.B-C", `"B-C" is not a valid`, "only letters, digits and _", Error},
		}},
		{"env value missing", header + "- name: a\n  exec: [/bin/true]\n  env:\n    A:\n",
			[]want{{"7:5", "hooks[0].env.A", "env.A has no value", `A: ""`, Error}}},
		{"env value is a list", header + "- name: a\n  exec: [/bin/true]\n  env:\n    A: [x]\n",
			[]want{{"7:8", "hooks[0].env.A", "env.A must be a string, not a list", "", Error}}},
		{"env is a list", header + "- name: a\n  exec: [/bin/true]\n  env: [A=1]\n",
			[]want{{"6:8", "hooks[0].env", "env must be a mapping of names to values, not a list", "env: {NAME: value}", Error}}},

		// directives.
		{"directive without =", header + "- name: a\n  exec: [/bin/true]\n  directives:\n    Unit: [After]\n",
			[]want{{"7:12", "hooks[0].directives.Unit[0]", `"After" is not a Key=Value entry`, "write Key=Value", Error}}},
		{"directive without key", header + "- name: a\n  exec: [/bin/true]\n  directives:\n    Unit: [\"=x\"]\n",
			[]want{{"7:12", "hooks[0].directives.Unit[0]", "no key before =", "write Key=Value", Error}}},
		{"directive with spaces", header + "- name: a\n  exec: [/bin/true]\n  directives:\n    Unit:\n    - After=x.service\n    - Before = y.service\n",
			[]want{{"9:7", "hooks[0].directives.Unit[1]", `"Before " is not a valid directive key`, "no space before =", Error}}},
		{"directive reset", header + "- name: a\n  exec: [/bin/true]\n  directives:\n    Service: [ExecStart=, \"ExecStart=/bin/x\"]\n", nil},
		{"section in brackets", header + "- name: a\n  exec: [/bin/true]\n  directives:\n    '[Unit]': [After=x]\n",
			[]want{{"7:5", "hooks[0].directives.[Unit]", "has brackets", "without brackets: Unit", Error}}},
		{"empty section name", header + "- name: a\n  exec: [/bin/true]\n  directives:\n    '': [After=x]\n",
			[]want{{"7:5", "hooks[0].directives.", "section name is empty", "Unit, Service or Install", Error}}},
		{"section is a string", header + "- name: a\n  exec: [/bin/true]\n  directives:\n    Unit: After=x\n",
			[]want{{"7:11", "hooks[0].directives.Unit", "directives.Unit must be a list, not a string", `Unit: ["After=x"]`, Error}}},
		{"directives is a list", header + "- name: a\n  exec: [/bin/true]\n  directives: [After=x]\n",
			[]want{{"6:15", "hooks[0].directives", "must be a mapping of sections to lists", "directives: {Unit:", Error}}},

		// pre.
		{"pre flat", header + "- name: a\n  exec: [/bin/true]\n  pre: [/bin/mkdir, -p, /x]\n",
			[]want{{"6:8", "hooks[0].pre", "pre must be a list of commands, each a list of arguments", `pre: [["/bin/mkdir", "-p", "/x"]]`, Error}}},
		{"pre mixed", header + "- name: a\n  exec: [/bin/true]\n  pre:\n  - [/bin/a]\n  - /bin/b c\n  - []\n", []want{
			{"8:5", "hooks[0].pre[1]", "pre[1] must be a list of arguments, not a string", `pre[1]: ["/bin/b", "c"]`, Error},
			{"9:5", "hooks[0].pre[2]", "pre[2] is an empty command", "", Error},
		}},
		{"pre is a string", header + "- name: a\n  exec: [/bin/true]\n  pre: /bin/a\n",
			[]want{{"6:8", "hooks[0].pre", "pre must be a list of commands, not a string", `pre: [["/usr/bin/mkdir"`, Error}}},

		// dropins.
		{"dropins", header + "- name: kubelet.service\n  dropins:\n  - name: 10-a.conf\n    contents: |\n      [Service]\n      Nice=5\n  - {name: 10-a.conf, contents: x}\n  - {name: a/b.conf, contents: x}\n  - {name: .hidden.conf, contents: x}\n  - {name: '..', contents: x}\n  - {name: limits, contents: x}\n  - {name: '', contents: x}\n", []want{
			{"10:12", "hooks[0].dropins[1].name", `already a drop-in named "10-a.conf"`, "the first is on line 6", Error},
			{"11:12", "hooks[0].dropins[2].name", `"a/b.conf" contains /`, "file name inside the unit's .d directory", Error},
			{"12:12", "hooks[0].dropins[3].name", "starts with a dot", "hidden", Error},
			{"13:12", "hooks[0].dropins[4].name", `".." starts with a dot`, "10-limits.conf", Error},
			{"14:12", "hooks[0].dropins[5].name", `"limits" does not end in .conf`, "call it limits.conf", Error},
			{"15:12", "hooks[0].dropins[6].name", "name is empty", ".conf", Error},
		}},
		{"dropin fields", header + "- name: kubelet.service\n  dropins:\n  - name: 10-a.conf\n    content: x\n  - contents: x\n  - x.conf\n", []want{
			{"6:5", "hooks[0].dropins[0].contents", "the drop-in has no contents", "contents: |", Error},
			{"7:5", "hooks[0].dropins[0].content", `unknown field "content" in a drop-in`, "did you mean contents?", Error},
			{"8:5", "hooks[0].dropins[1].name", "the drop-in has no name", "10-limits.conf", Error},
			{"9:5", "hooks[0].dropins[2]", "a drop-in must be a mapping of name and contents, not a string", "- name: 10-limits.conf", Error},
		}},
		{"dropins is a mapping", header + "- name: kubelet.service\n  dropins: {name: a.conf}\n",
			[]want{{"5:12", "hooks[0].dropins", "dropins must be a list, not a mapping", "- name: 10-limits.conf", Error}}},
	})
}

// TestParseHookDiagnostics: names, control characters, raw manifests,
// masks and empty hooks.
func TestParseHookDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
		// Names.
		{"no name", header + "- exec: [/bin/true]\n", []want{{"4:3", "hooks[0].name", "the hook has no name", "name: create-swapfile", Error}}},
		{"empty name", header + "- name: ''\n  exec: [/bin/true]\n", []want{{"4:9", "hooks[0].name", "name is empty", "create-swapfile", Error}}},
		{"name is a path", header + "- name: /etc/systemd/system/a.service\n  exec: [/bin/true]\n",
			[]want{{"4:9", "hooks[0].name", "looks like a path", "a hook name is a unit name, not a path", Error}}},
		{"name with dots", header + "- name: a..service\n  exec: [/bin/true]\n- name: .\n  exec: [/bin/true]\n", []want{
			{"4:9", "hooks[0].name", `"a..service" looks like a path`, "not a path", Error},
			{"6:9", "hooks[1].name", `"." looks like a path`, "not a path", Error},
		}},
		{"duplicate hook names", header + "- name: a\n  exec: [/bin/true]\n- name: b\n  exec: [/bin/true]\n- name: a\n  exec: [/bin/true]\n",
			[]want{{"8:9", "hooks[2].name", `already a hook named "a"`, "the first is on line 4", Error}}},
		{"name is a list", header + "- name: [a]\n  exec: [/bin/true]\n", []want{{"4:9", "hooks[0].name", "name must be a string, not a list", "", Error}}},

		// Control characters in values that reach a unit line.
		{"newline in description", header + "- name: a\n  exec: [/bin/true]\n  description: \"a\\nExecStartPre=/bin/evil\"\n",
			[]want{{"6:16", "hooks[0].description", `contains the control character "\n"`, "would inject a new line into the unit", Error}}},
		{"block scalar in a one-line field", header + "- name: a\n  exec: [/bin/true]\n  description: |\n    text\n",
			[]want{{"6:16", "hooks[0].description", `"\n"`, "use |- or a plain value", Error}}},
		{"folded with strip is one line", header + "- name: a\n  exec: [/bin/true]\n  description: >-\n    one\n    line\n", nil},
		{"control characters everywhere", header + "- name: a\n  exec: [\"/bin/tr\\tue\", \"a\\tb\"]\n  env: {A: \"x\\0\"}\n  directives:\n    Unit: [\"After=a\\rb\"]\n    \"X\\x7f\": [After=b]\n  wants: [\"a\\x1b.service\"]\n", []want{
			{"5:10", "hooks[0].exec[0]", `exec[0] contains the control character "\t"`, "corrupt the unit line", Error},
			{"6:12", "hooks[0].env.A", `"\x00"`, "corrupt the unit line", Error},
			{"8:12", "hooks[0].directives.Unit[0]", `"\r"`, "inject a new line", Error},
			{"9:5", "hooks[0].directives.X\x7f", `"\x7f"`, "corrupt the unit line", Error},
			{"10:11", "hooks[0].wants[0]", `"\x1b"`, "", Error},
		}},
		// systemd passes C escapes inside quotes to the program as the
		// characters they stand for, and QuoteExec writes them so.
		{"exec arguments may hold control characters", header + "- name: a\n  exec: [/bin/printf, \"a\\nb\\tc\\x01\"]\n  pre: [[/bin/echo, \"x\\ry\"]]\n", nil},
		{"manifest may hold line breaks and tabs", header + "- name: a\n  manifest: \"ExecStart=/bin/true\\n\\tx\\n\"\n", nil},

		// Raw manifests.
		{"raw manifest with generated fields", header + "- name: a.service\n  useRawManifest: true\n  manifest: |\n    [Service]\n    ExecStart=/bin/true\n  exec: [/bin/true]\n  env: {A: b}\n  wantedBy: []\n  description: x\n", []want{
			{"9:9", "hooks[0].exec", "exec is not used with useRawManifest", "put this into the manifest, or drop useRawManifest", Error},
			{"10:8", "hooks[0].env", "env is not used with useRawManifest", "a raw manifest is used as written", Error},
			{"11:13", "hooks[0].wantedBy", "wantedBy is not used with useRawManifest", "drop useRawManifest", Error},
			{"12:16", "hooks[0].description", "description is not used", "drop useRawManifest", Error},
		}},
		{"raw manifest missing", header + "- name: a.service\n  useRawManifest: true\n",
			[]want{{"5:19", "hooks[0].useRawManifest", "useRawManifest is set, but the hook has no manifest", "manifest: |", Error}}},
		{"exactBytes without raw manifest or drop-ins", header + "- name: a\n  exec: [/bin/true]\n  exactBytes: true\n",
			[]want{{"6:15", "hooks[0].exactBytes", "exactBytes keeps the bytes of a raw manifest and of drop-ins, and the hook has neither", "drop exactBytes, or set useRawManifest: true", Error}}},
		{"exactBytes not a boolean", header + "- name: a.service\n  useRawManifest: true\n  exactBytes: sure\n  manifest: \"[Service]\\r\\nExecStart=/bin/true\"\n",
			[]want{{"6:15", "hooks[0].exactBytes", `exactBytes must be true or false, not "sure"`, "use true or false", Error}}},
		{"raw manifest empty", header + "- name: a.service\n  useRawManifest: true\n  manifest: \"  \"\n",
			[]want{{"5:19", "hooks[0].useRawManifest", "has no manifest", "drop useRawManifest", Error}}},
		{"section header without raw", header + "- name: a\n  manifest: |\n    Type=oneshot\n    [Service]\n    ExecStart=/bin/true\n",
			[]want{{"7:5", "hooks[0].manifest", "manifest line 2 is the section header [Service]", "set useRawManifest: true", Error}}},
		{"section header in a folded manifest", header + "- name: x.timer\n  manifest: >\n    OnBootSec=5\n    x\n\n    [Timer]\n",
			[]want{{"9:5", "hooks[0].manifest", "manifest line 2 is the section header [Timer]", "useRawManifest: true", Error}}},
		{"kops-style manifest body", header + "- name: a\n  manifest: |\n    Type=oneshot\n    ExecStart=/bin/true\n", nil},

		// Masks and empty hooks.
		{"masked body", header + "- name: a\n  mask: true\n  exec: [/bin/true]\n  manifest: Type=oneshot\n", []want{
			{"6:9", "hooks[0].exec", "a masked unit never runs, so its exec is never used", "drop mask: true", Error},
			{"7:13", "hooks[0].manifest", "its manifest is never used", "drop manifest", Error},
		}},
		{"mask only", header + "- name: systemd-resolved.service\n  mask: true\n", nil},
		{"name only", header + "- name: a\n",
			[]want{{"4:3", "hooks[0]", "hook a has no manifest, exec, directives or dropins", "mask: true", Error}}},
		{"target of unit fields only", header + "- name: node-ready.target\n  description: Ready\n  wants: [a.service]\n  after: [a.service]\n", nil},
		{"name only, enabled", header + "- name: systemd-timesyncd.service\n  enabled: true\n", nil},
		{"empty body", header + "- name: a\n  manifest: \"\"\n  directives: {}\n  dropins: []\n",
			[]want{{"4:3", "hooks[0]", "hook a has no manifest, exec, directives or dropins", "", Error}}},
		{"name only, disabled", header + "- name: a\n  enabled: false\n", nil},
		{"dropins only", header + "- name: kubelet.service\n  dropins: [{name: 10-a.conf, contents: \"[Service]\\nNice=5\\n\"}]\n", nil},
	})
}

// TestParseHookFieldsDiagnostics: fields that a unit type or another field
// makes wrong, anchors, and every problem at once.
func TestParseHookFieldsDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
		// Service fields on other unit types.
		{"service fields on a timer", header + "- name: x.timer\n  manifest: OnBootSec=5min\n  exec: [/bin/true]\n  user: root\n", []want{
			{"6:9", "hooks[0].exec", "exec is a service field; x.timer is a timer", "move exec to a .service hook", Error},
			{"7:9", "hooks[0].user", "user is a service field; x.timer is a timer", "timer's own settings under directives", Error},
		}},
		{"service fields on a swap", header + "- name: y.swap\n  manifest: What=/swap1\n  env: {A: b}\n",
			[]want{{"6:8", "hooks[0].env", "env is a service field; y.swap is a swap", "", Error}}},
		{"raw mount reports once", header + "- name: z.mount\n  useRawManifest: true\n  manifest: \"[Mount]\\nWhat=/dev/x\\nWhere=/z\\n\"\n  exec: [/bin/true]\n",
			[]want{{"7:9", "hooks[0].exec", "exec is not used with useRawManifest", "", Error}}},
		{"dotted service name", header + "- name: my.app\n  exec: [/bin/true]\n  user: app\n", nil},

		// Anchors and aliases.
		{"shared env through an alias", header + "- name: a\n  exec: [/bin/true]\n  env: &common {A: b}\n- name: b\n  exec: [/bin/true]\n  env: *common\n", nil},
		{"alias to a bad value", header + "- name: a\n  exec: &cmd /bin/true\n- name: b\n  exec: *cmd\n", []want{
			{"5:9", "hooks[0].exec", "exec must be a list of arguments, not a string", `["/bin/true"]`, Error},
			{"7:9", "hooks[1].exec", "exec must be a list of arguments, not a string", `["/bin/true"]`, Error},
		}},
		{"alias to a bad env name", header + "- name: a\n  exec: [/bin/true]\n  env: &e {A-B: x}\n- name: b\n  exec: [/bin/true]\n  env: *e\n", []want{
			{"6:12", "hooks[0].env.A-B", "not a valid environment variable name", "", Error},
			{"6:12", "hooks[1].env.A-B", "not a valid environment variable name", "", Error},
		}},

		// Every problem is reported, not the first.
		{"many problems at once", header + "- name: a/b\n  exce: [/bin/true]\n  enabled: on\n- name: c\n  exec: /bin/c\n  type: oneshott\n", []want{
			{"4:9", "hooks[0].name", "looks like a path", "", Error},
			{"5:3", "hooks[0].exce", "unknown field", "did you mean exec?", Error},
			{"6:12", "hooks[0].enabled", `"on" is not a boolean`, "", Error},
			{"8:9", "hooks[1].exec", "not a string", "", Error},
			{"9:9", "hooks[1].type", "oneshott", "did you mean oneshot?", Error},
		}},
	})
}

// checkDiags compares diagnostics with what is wanted, in order.
func checkDiags(t *testing.T, got Diagnostics, want []want) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = fmt.Sprintf("%d:%d", g.Pos.Line, g.Pos.Column) == w.pos && g.Pos.File == "hooks.yaml" &&
			g.Path == w.path && g.Severity == w.sev &&
			strings.Contains(g.Message, w.msg) && strings.Contains(g.Hint, w.hint)
	}
	if ok {
		return
	}
	var b strings.Builder
	for _, g := range got {
		fmt.Fprintf(&b, "\t%d:%d %s [%s] %s\n\t\thint: %s\n", g.Pos.Line, g.Pos.Column, g.Severity, g.Path, g.Message, g.Hint)
	}
	t.Errorf("got %d diagnostics:\n%swant %d:\n%s", len(got), b.String(), len(want), fmtWants(want))
}

func fmtWants(ws []want) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "\t%s %s [%s] …%s…\n\t\thint: …%s…\n", w.pos, w.sev, w.path, w.msg, w.hint)
	}
	return b.String()
}

func TestParseValidSpec(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, diags := Parse("valid.yaml", data)
	if len(diags) != 0 {
		t.Fatalf("unexpected diagnostics:\n%v", diags)
	}
	no, yes := false, true
	env := map[string]string{"PATH": "/usr/sbin:/usr/bin", "DEBUG": "true", "RETRIES": "3"}
	want := &Spec{
		APIVersion: specAPIVersion,
		Kind:       specKind,
		File:       "valid.yaml",
		Hooks: []Hook{
			{
				Name:        "create-swapfile",
				Description: "Create a 1 GiB swap file",
				Exec:        []string{"/usr/bin/fallocate", "-l", "1G", "/swap1"},
				Pre: [][]string{
					{"/usr/bin/mkdir", "-p", "/var/lib/swap"},
					{"/bin/sh", "-c", "echo $HOME"},
				},
				Type:             "oneshot",
				RemainAfterExit:  &yes,
				ExpandEnv:        true,
				Env:              env,
				EnvironmentFile:  "/etc/default/swap",
				WorkingDirectory: "/var/lib/swap",
				User:             "0",
				Group:            "root",
				Restart:          "on-failure",
				RestartSec:       "5",
				TimeoutStartSec:  "1min 30s",
				TimeoutStopSec:   "infinity",
				Requires:         []string{"local-fs.target"},
				Wants:            []string{"network-online.target"},
				After:            []string{"local-fs.target", "network-online.target"},
				Before:           []string{"swap1.swap"},
				WantedBy:         []string{},
				Directives: map[string][]string{
					"Unit":    {"ConditionPathExists=!/swap1", "RequiresMountsFor=/"},
					"Service": {"ExecStart=", "Nice=5"},
				},
			},
			{
				Name:           "swap1.swap",
				UseRawName:     true,
				UseRawManifest: true,
				Enabled:        &no,
				Manifest:       "[Unit]\nDescription=Swap file\n\n[Swap]\nWhat=/swap1\n",
			},
			{
				Name:    "kubelet.service",
				Dropins: []Dropin{{Name: "10-env.conf", Contents: "[Service]\nEnvironment=A=b\n"}},
			},
			{
				Name:     "agent",
				Exec:     []string{"/usr/local/bin/agent", "--config=/etc/agent.yaml"},
				Env:      env,
				Manifest: "LimitNOFILE=65536\n",
				WantedBy: []string{"multi-user.target"},
			},
			{Name: "systemd-resolved.service", Mask: true},
			{Name: "old-agent", Enabled: &no},
		},
	}
	// EquateEmpty is not used: a nil and an empty WantedBy mean different
	// things, and the comparison must see it.
	if diff := cmp.Diff(want, spec, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	if spec.Hooks[1].WantedBy != nil || spec.Hooks[0].WantedBy == nil {
		t.Errorf("WantedBy: missing must be nil and [] must be empty, got %#v and %#v", spec.Hooks[1].WantedBy, spec.Hooks[0].WantedBy)
	}
	if spec.Hooks[1].IsEnabled() || !spec.Hooks[0].IsEnabled() {
		t.Errorf("IsEnabled: want false for enabled: false and true when not given")
	}
}

// TestParseKeepsHookIndexes checks that Hooks[i] stays the entry written as
// hooks[i] when an earlier entry is not a hook at all, since render names
// hooks by index.
func TestParseKeepsHookIndexes(t *testing.T) {
	spec, diags := Parse("hooks.yaml", []byte(header+"- just a string\n- name: b\n  exec: [/bin/true]\n"))
	if !diags.HasErrors(false) {
		t.Fatalf("want an error for hooks[0]")
	}
	if len(spec.Hooks) != 2 || spec.Hooks[0].Name != "" || spec.Hooks[1].Name != "b" {
		t.Fatalf("Hooks = %+v, want a zero hook then b", spec.Hooks)
	}
	if got := spec.Where("hooks[1].name"); got.Line != 5 {
		t.Errorf(`Where("hooks[1].name") = %v, want line 5`, got)
	}
}

// TestParseReturnsWhatItCould checks the contract that a mapping gives a
// Spec holding every field that decoded, even next to errors, so that
// render can report its own problems too.
func TestParseReturnsWhatItCould(t *testing.T) {
	spec, diags := Parse("hooks.yaml", []byte("apiVersion: v0\nkind: Hooks\nhooks:\n- name: a\n  exec: /bin/true\n  user: app\n  type: nope\n"))
	if spec == nil || !diags.HasErrors(false) {
		t.Fatalf("want a spec and errors, got %v, %v", spec, diags)
	}
	h := spec.Hooks[0]
	if spec.APIVersion != "v0" || h.Name != "a" || h.User != "app" || h.Type != "nope" || h.Exec != nil {
		t.Errorf("got %+v", spec)
	}
	for _, src := range []string{"", "- a\n", "a: [\n", "just text\n"} {
		if spec, _ := Parse("x", []byte(src)); spec != nil {
			t.Errorf("Parse(%q) returned a spec; want nil for a document that is not a mapping", src)
		}
	}
}

func TestParseWarningsAndStrict(t *testing.T) {
	_, diags := Parse("hooks.yaml", []byte(header[:len(header)-1]+" []\n"))
	if diags.HasErrors(false) || !diags.HasErrors(true) {
		t.Errorf("hooks: [] must be a warning only, got %v", diags)
	}
}

func TestParseDiagnosticsSorted(t *testing.T) {
	src := header + "- name: a\n  exec: /x\n  user: [u]\n- name: a\n  type: x\n  colour: red\n"
	_, diags := Parse("hooks.yaml", []byte(src))
	for i := 1; i < len(diags); i++ {
		a, b := diags[i-1].Pos, diags[i].Pos
		if a.Line > b.Line || a.Line == b.Line && a.Column > b.Column {
			t.Errorf("diagnostics not sorted: %v before %v", a, b)
		}
	}
	if len(diags) < 4 {
		t.Errorf("want at least 4 diagnostics, got %v", diags)
	}
}

// checkFastPath parses data by the fast parser's path and by yaml.v3's
// and requires the same Spec (hooks, positions, texts) and the same
// diagnostics.
func checkFastPath(t *testing.T, name string, data []byte) {
	t.Helper()
	fast, fdiags := Parse("f.yaml", data)
	defer func(old bool) { fastParse = old }(fastParse)
	fastParse = false
	slow, sdiags := Parse("f.yaml", data)
	if !reflect.DeepEqual(fdiags, sdiags) {
		t.Fatalf("%s: the fast path reports\n%v\nyaml.v3's\n%v", name, fdiags.Error(), sdiags.Error())
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("%s: the fast path decodes another Spec than yaml.v3's path", name)
	}
}

// repoSpecs are the files of every spec of the repository, good and bad.
func repoSpecs(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, glob := range []string{"../../testdata/golden/*.yaml", "../../testdata/golden/*/*.yaml", "../../testdata/bad/*.yaml",
		"../../examples/*/*.yaml", "testdata/*.yaml"} {
		f, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	if len(files) < 50 {
		t.Fatalf("only %d specs found", len(files))
	}
	return files
}

// TestFastPath holds the decoding of what the fast parser reads (each hook
// as it is read) to the decoding of yaml.v3's tree, on every spec of the
// repository, good and bad, and on the benchmark's spec.
func TestFastPath(t *testing.T) {
	for _, f := range repoSpecs(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkFastPath(t, f, data)
	}
	checkFastPath(t, "benchspec", benchspec.Spec(50))
	// The fast parser gives up after it has given two hooks away (a
	// multi-line plain scalar, a mapping in a value): what was decoded of
	// them must not show.
	for _, late := range []string{"    continued\n", "  user: a: b\n"} {
		data := []byte(header + "- name: a\n  exec: [/bin/true]\n- name: a\n  exec: [/bin/false]\n- name: c\n  description: x\n" + late)
		if _, ok := yamlnode.Fast(data); ok {
			t.Fatalf("the fast parser reads %q, which this test needs it to give up on", data)
		}
		checkFastPath(t, "late fallback", data)
	}
}
