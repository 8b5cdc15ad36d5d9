package hooks

import (
	"strings"
	"testing"
)

func TestParseAccountsDiagnostics(t *testing.T) {
	checkParse(t, []diagCase{
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
		{"primary group and no home", svc + "  users: [{name: a, primaryGroup: users, noCreateHome: true}]\n", nil},
		{"primary group not a name", svc + "  users: [{name: a, primaryGroup: \"100\"}]\n",
			[]want{{"6:35", "hooks[0].users[0].primaryGroup", `group name "100" is not valid`, "give the group with that gid a name in groups:", Error}}},
		{"noCreateHome not a boolean", svc + "  users: [{name: a, noCreateHome: no}]\n",
			[]want{{"6:35", "hooks[0].users[0].noCreateHome", "not a boolean", "", Error}}},

		// Keys and password hashes.
		{"keys and a hash", svc + "  users:\n    - name: a\n      sshAuthorizedKeys:\n        - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop\n" +
			"        - 'from=\"10.0.0.0/8\",no-pty ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTY='\n" +
			"      passwordHash: $y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7\n" +
			"    - {name: b, passwordHash: \"!\"}\n", nil},
		{"not a key", svc + "  users: [{name: a, sshAuthorizedKeys: [hunter2]}]\n",
			[]want{{"6:41", "hooks[0].users[0].sshAuthorizedKeys[0]", "this is not an SSH public key", "the line of the key's .pub file", Error}}},
		{"a private key", svc + "  users: [{name: a, sshAuthorizedKeys: [\"-----BEGIN OPENSSH PRIVATE KEY-----\"]}]\n",
			[]want{{"6:41", "hooks[0].users[0].sshAuthorizedKeys[0]", "this is a private key, not a public one", "never put a private key in a spec", Error}}},
		{"a key without its blob", svc + "  users: [{name: a, sshAuthorizedKeys: [ssh-rsa]}]\n",
			[]want{{"6:41", "hooks[0].users[0].sshAuthorizedKeys[0]", "the key's type ssh-rsa is not followed by its base64 blob", "", Error}}},
		{"a key twice", svc + "  users: [{name: a, sshAuthorizedKeys: [ssh-rsa AAAA, ssh-rsa AAAA]}]\n",
			[]want{{"6:55", "hooks[0].users[0].sshAuthorizedKeys[1]", "this key is listed twice", "", Error}}},
		{"keys not a list", svc + "  users: [{name: a, sshAuthorizedKeys: ssh-rsa AAAA}]\n",
			[]want{{"6:40", "hooks[0].users[0].sshAuthorizedKeys", "must be a list", "", Error}}},
		{"a clear-text password", svc + "  users: [{name: a, passwordHash: Sommer2026}]\n",
			[]want{{"6:35", "hooks[0].users[0].passwordHash", "it looks like a clear-text password, which is not shown here", "mkpasswd -m yescrypt", Error}}},
		{"an empty password", svc + "  users: [{name: a, passwordHash: \"\"}]\n",
			[]want{{"6:35", "hooks[0].users[0].passwordHash", "would let anyone log in without a password", "", Error}}},
		{"a hash with a colon", svc + "  users: [{name: a, passwordHash: \"$6$salt$ab:cd\"}]\n",
			[]want{{"6:35", "hooks[0].users[0].passwordHash", "is not a crypt(3) hash", "", Error}}},

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
	})
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

// A password given in clear text by mistake is in no diagnostic.
func TestClearTextPasswordNotShown(t *testing.T) {
	_, diags := Parse("hooks.yaml", []byte(svc+"  users: [{name: a, passwordHash: Sommer2026}]\n"))
	if !diags.HasErrors(false) {
		t.Fatal("a clear-text password was accepted")
	}
	for _, d := range diags {
		if strings.Contains(d.Message+d.Hint, "Sommer2026") {
			t.Errorf("the password is in a diagnostic: %s", d.Message+" "+d.Hint)
		}
	}
}
