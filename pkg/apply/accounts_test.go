package apply_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// needSysusers skips a test that runs the real systemd-sysusers where it
// is missing, unless CI=true.
func needSysusers(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("systemd-sysusers"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("systemd-sysusers is needed (CI=true: this test must run; .ci/setup installs systemd): %v", err)
		}
		t.Skipf("systemd-sysusers not installed: %v", err)
	}
}

// accountID is the id of name in the node's /etc/passwd (or /etc/group),
// or -1.
func (n *node) accountID(file, name string) int {
	n.t.Helper()
	data, err := os.ReadFile(n.at(file))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 3 && f[0] == name {
			id, _ := strconv.Atoi(f[2])
			return id
		}
	}
	return -1
}

const accountsSpec = `- name: metrics
  exec: [/usr/bin/metrics]
  user: metrics
  users: [{name: metrics, home: /var/lib/metrics, groups: [adm]}]
  groups: [{name: scrapers, gid: 4242}]
  files: [{path: /etc/metrics/config, contents: "port = 9100\n", mode: 0640, user: metrics, group: scrapers}]
  directories: [{path: /var/lib/metrics, user: metrics, group: metrics}]
`

// A hook's users and groups are made by systemd-sysusers from a sysusers.d
// file of the set, before the files they own are placed; the file is
// hostprov's like any other, and the accounts stay when it is pruned.
func TestAccountsLifecycle(t *testing.T) {
	needSysusers(t)
	n := newNode(t)
	n.writeNode("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
	n.writeNode("/etc/group", "root:x:0:\nadm:x:4:\n")

	p, err := n.planStorage(accountsSpec)
	if err != nil {
		t.Fatal(err)
	}
	checkAccountsPlanText(t, p)
	if len(p.Conflicts) > 0 {
		t.Fatalf("conflicts: %v", p.Conflicts)
	}
	if _, _, err := n.applyStorage(accountsSpec); err != nil {
		t.Fatal(err)
	}
	uid, gid := n.accountID("/etc/passwd", "metrics"), n.accountID("/etc/group", "metrics")
	if uid <= 0 || uid >= 1000 || gid <= 0 {
		t.Fatalf("metrics: uid %d, gid %d; want a system user and its group", uid, gid)
	}
	if g := n.accountID("/etc/group", "scrapers"); g != 4242 {
		t.Errorf("scrapers has gid %d, want 4242", g)
	}
	if !strings.Contains(n.readNode("/etc/group"), "adm:x:4:metrics") {
		t.Errorf("metrics is not a member of adm:\n%s", n.readNode("/etc/group"))
	}
	if u, g := n.owner("/etc/metrics/config"); u != uid || g != 4242 {
		t.Errorf("/etc/metrics/config is owned by %d:%d, want %d:4242", u, g, uid)
	}
	if u, g := n.owner("/var/lib/metrics"); u != uid || g != gid {
		t.Errorf("/var/lib/metrics is owned by %d:%d, want %d:%d", u, g, uid, gid)
	}

	// Again: nothing to do, and systemd-sysusers does not run.
	defer apply.SetSysusers("false")()
	p, err = n.planStorage(accountsSpec)
	if err != nil {
		t.Fatal(err)
	}
	if p.HasChanges() {
		var b strings.Builder
		p.WriteText(&b)
		t.Fatalf("re-plan has changes:\n%s", b.String())
	}
	if _, _, err := n.applyStorage(accountsSpec); err != nil {
		t.Fatalf("re-apply ran systemd-sysusers: %v", err)
	}

	// A user removed on the node is made again from the same file; a
	// failing systemd-sysusers stops the apply before the files it owns.

	n.writeNode("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
	n.writeNode("/etc/metrics/config", "port = 1\n")
	os.Chown(n.at("/etc/metrics/config"), uid, 4242)
	p, err = n.planStorage(accountsSpec)
	if err != nil {
		t.Fatal(err)
	}
	if c := p.JSON().Accounts; len(c) != 1 || c[0].Name != "metrics" || c[0].Op != apply.OpAdd {
		t.Errorf("plan's accounts: %+v, want metrics to add", c)
	}
	if _, _, err := n.applyStorage(accountsSpec, force); err == nil || !strings.Contains(err.Error(), "systemd-sysusers") {
		t.Fatalf("apply with a failing systemd-sysusers: %v", err)
	}
	if got := n.readNode("/etc/metrics/config"); got != "port = 1\n" {
		t.Errorf("a file of the user was written before the user was made: %q", got)
	}
	apply.SetSysusers("systemd-sysusers")
	if _, _, err := n.applyStorage(accountsSpec, force); err != nil {
		t.Fatal(err)
	}
	if n.accountID("/etc/passwd", "metrics") <= 0 || n.readNode("/etc/metrics/config") != "port = 9100\n" {
		t.Errorf("the user was not made again, or the file not written:\n%s", n.readNode("/etc/passwd"))
	}

	// Gone from the spec: the sysusers.d file is pruned, the accounts
	// stay (files may still be theirs).
	n.mustApplyStorage("")
	if !n.gone("/etc/sysusers.d/hostprov.conf") || !n.gone("/etc/metrics/config") {
		t.Errorf("the sysusers.d file or the config was not pruned")
	}
	if n.accountID("/etc/passwd", "metrics") <= 0 || n.accountID("/etc/group", "scrapers") != 4242 {
		t.Errorf("pruning removed accounts:\n%s", n.readNode("/etc/passwd"))
	}
}

// checkAccountsPlanText checks the plan of accountsSpec on a node without
// its accounts, as hostprov plan prints it.
func checkAccountsPlanText(t *testing.T, p *apply.Plan) {
	t.Helper()
	var b strings.Builder
	p.WriteText(&b)
	for _, want := range []string{
		"+++ /etc/sysusers.d/hostprov.conf",
		"+g scrapers 4242\n",
		"+u metrics - - /var/lib/metrics -\n",
		"+m metrics adm\n",
		"# add file /etc/metrics/config (hook metrics, mode 0640, owner metrics(new):4242, new)",
		"Accounts (made by systemd-sysusers, never removed):",
		"add  group  scrapers  (hook metrics, new)",
		"add  user   metrics   (hook metrics, new, with an id systemd-sysusers picks from the system range: give it a uid for another)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
}

// A user's primaryGroup is its group in the sysusers.d line
// ("-:GROUPNAME"), which systemd-sysusers gives the user instead of a
// group of its name; noCreateHome says nothing to systemd-sysusers, which
// makes no home anyway.
func TestAccountsPrimaryGroup(t *testing.T) {
	needSysusers(t)
	n := newNode(t)
	n.writeNode("/etc/passwd", "root:x:0:0:root:/root:/bin/sh\n")
	n.writeNode("/etc/group", "root:x:0:\n")
	const spec = `- name: web
  exec: [/usr/bin/web]
  users: [{name: web, primaryGroup: www, noCreateHome: true}, {name: db, primaryGroup: db}]
  groups: [{name: www, gid: 4243}]
`
	p, err := n.planStorage(spec)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p.WriteText(&b)
	for _, want := range []string{"+g www 4243\n", "+u web -:www - - -\n", "+u db - - - -\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
	if _, _, err := n.applyStorage(spec); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(n.readNode("/etc/passwd"), "\n") {
		if f := strings.Split(line, ":"); len(f) > 3 && f[0] == "web" && f[3] != "4243" {
			t.Errorf("web's primary group is %s, want 4243 (www):\n%s", f[3], line)
		}
	}
	if n.accountID("/etc/group", "web") != -1 {
		t.Errorf("systemd-sysusers made a group web, which primaryGroup: www says the user has not:\n%s", n.readNode("/etc/group"))
	}
	if _, err := os.Lstat(n.at("/home/web")); err == nil {
		t.Errorf("a home /home/web was made")
	}
}
