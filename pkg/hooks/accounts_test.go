package hooks

import (
	"strings"
	"testing"
)

func TestParseAccountsDiagnostics(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{"valid", svc + "  users:\n" +
			"    - {name: app, uid: 1500, system: true, home: /var/lib/app, shell: /usr/sbin/nologin, groups: [app, wheel]}\n" +
			"    - {name: _svc-1}\n" +
			"  groups: [{name: app, gid: 1500, system: true}, {name: wheel}]\n" +
			"- name: b\n  users: [{name: app, uid: 1500}, {name: _svc-1, uid: 0}]\n", nil},
		{"accounts only", header + "- name: accounts\n  groups: [{name: ops}]\n", nil},

		{"no name", svc + "  users: [{uid: 1}]\n",
			[]want{{"6:11", "hooks[0].users[0].name", "the user has no name", "name: myapp", Error}}},
		{"starts with a digit", svc + "  users: [{name: 1app}]\n",
			[]want{{"6:18", "hooks[0].users[0].name", `user name "1app" is not valid: it starts with "1"`, "starts with a letter or _", Error}}},
		{"a number", svc + "  groups: [{name: \"100\"}]\n",
			[]want{{"6:19", "hooks[0].groups[0].name", `group name "100" is not valid`, "write the id as uid: or gid:", Error}}},
		{"dot", svc + "  users: [{name: a.b}]\n",
			[]want{{"6:18", "hooks[0].users[0].name", `it has the character "."`, "", Error}}},
		{"too long", svc + "  users: [{name: " + strings.Repeat("a", 32) + "}]\n",
			[]want{{"6:18", "hooks[0].users[0].name", "it has 32 characters, more than 31", "", Error}}},
		{"member of a bad group", svc + "  users: [{name: a, groups: [ok, b@d]}]\n",
			[]want{{"6:34", "hooks[0].users[0].groups[1]", `group name "b@d" is not valid`, "", Error}}},
		{"member twice", svc + "  users: [{name: a, groups: [x, x]}]\n",
			[]want{{"6:33", "hooks[0].users[0].groups[1]", `group "x" is listed twice`, "", Error}}},
		{"groups not a list", svc + "  users: [{name: a, groups: wheel}]\n",
			[]want{{"6:29", "hooks[0].users[0].groups", "groups must be a list of names", "groups: [wheel, docker]", Error}}},
		{"uid out of range", svc + "  users: [{name: a, uid: 4294967295}]\n",
			[]want{{"6:26", "hooks[0].users[0].uid", "uid 4294967295 is out of range", "4294967294", Error}}},
		{"uid 65535", svc + "  users: [{name: a, uid: 65535}]\n",
			[]want{{"6:26", "hooks[0].users[0].uid", "65535 is not a valid id", "16-bit", Error}}},
		{"uid negative", svc + "  users: [{name: a, uid: -1}]\n",
			[]want{{"6:26", "hooks[0].users[0].uid", `"-1" is not a decimal number`, "", Error}}},
		{"gid a list", svc + "  groups: [{name: a, gid: [1]}]\n",
			[]want{{"6:27", "hooks[0].groups[0].gid", "gid must be a number, not a list", "", Error}}},
		{"home relative", svc + "  users: [{name: a, home: home/a}]\n",
			[]want{{"6:27", "hooks[0].users[0].home", `"home/a" is not absolute`, "/home/a", Error}}},
		{"unknown field", svc + "  users: [{name: a, homedir: /home/a}]\n",
			[]want{{"6:21", "hooks[0].users[0].homedir", `unknown field "homedir" in a user entry`, "Butane and cloud-init call it home_dir and homedir: write home:", Error}}},
		{"system not a boolean", svc + "  groups: [{name: a, system: yes}]\n",
			[]want{{"6:30", "hooks[0].groups[0].system", "not a boolean", "", Error}}},

		// One name, two ids: reported at both entries, in any hooks.
		{"user with two uids", svc + "  users: [{name: app, uid: 1500}]\n- name: b\n  users: [{name: app, uid: 1501}]\n",
			[]want{
				{"6:28", "hooks[0].users[0].uid", "user app has uid 1500 here and 1501 at hooks[1].users[0]", "(line 8)", Error},
				{"8:28", "hooks[1].users[0].uid", "user app has uid 1501 here and 1500 at hooks[0].users[0]", "(line 6)", Error},
			}},
		{"group with two gids in one hook", svc + "  groups: [{name: g, gid: 1}, {name: g, gid: 2}]\n",
			[]want{
				{"6:27", "hooks[0].groups[0].gid", "group g has gid 1 here and 2 at hooks[0].groups[1]", "", Error},
				{"6:46", "hooks[0].groups[1].gid", "group g has gid 2 here and 1 at hooks[0].groups[0]", "", Error},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := Parse("hooks.yaml", []byte(tt.src))
			checkDiags(t, got, tt.want)
		})
	}
}

func TestAccountNameProblem(t *testing.T) {
	for _, ok := range []string{"a", "_a", "A-b_9", strings.Repeat("x", 31)} {
		if p := AccountNameProblem(ok); p != "" {
			t.Errorf("%q: %s, want valid", ok, p)
		}
	}
	for _, bad := range []string{"", "-a", "9a", "a b", "a:b", "a.b", "a$", "ä", strings.Repeat("x", 32)} {
		if AccountNameProblem(bad) == "" {
			t.Errorf("%q is valid, want a problem", bad)
		}
	}
}
