package apply_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const rigAccountsSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: exporter
  user: exporter
  group: metrics
  exec: [/bin/sh, -c, 'id -un > /var/lib/exporter/whoami; id -gn >> /var/lib/exporter/whoami; cat /etc/exporter/token >> /var/lib/exporter/whoami; exec sleep infinity']
  users: [{name: exporter, home: /var/lib/exporter}]
  groups: [{name: metrics, gid: 3100}]
  files: [{path: /etc/exporter/token, contents: "secret\n", mode: 0440, user: exporter, group: metrics}]
  directories: [{path: /var/lib/exporter, mode: 0750, user: exporter, group: metrics}]
`

// TestRigAccounts applies, on a real systemd, a service that runs as a user
// and group the same apply creates, reading a file only they may read and
// writing into a directory they own: systemd-sysusers makes them (in the
// rig's /etc) before the files are given to them and before the service
// starts. Pruning takes the sysusers.d file and the files, and leaves the
// accounts.
func TestRigAccounts(t *testing.T) {
	needSysusers(t)
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	read := func(p string) string {
		data, _ := os.ReadFile(filepath.Join(n.r.Root, p))
		return string(data)
	}
	_, res := n.applyStorage(ctx, rigAccountsSpec)
	for _, want := range []string{"created group metrics (new)", "created user exporter (new, with an id systemd-sysusers picks"} {
		if !strings.Contains(eventsText(res), want) {
			t.Errorf("events lack %q:\n%s", want, eventsText(res))
		}
	}
	waitFor(t, func() bool { return read("var/lib/exporter/whoami") == "exporter\nmetrics\nsecret\n" },
		"the service to run as exporter:metrics and read its token")
	var uid int
	for _, line := range strings.Split(read("etc/passwd"), "\n") {
		if f := strings.Split(line, ":"); len(f) > 5 && f[0] == "exporter" {
			uid, _ = strconv.Atoi(f[2])
			if f[5] != "/var/lib/exporter" {
				t.Errorf("exporter's home: %q", f[5])
			}
		}
	}
	if uid <= 0 || uid >= 1000 {
		t.Fatalf("exporter's uid is %d, want a system user's:\n%s", uid, read("etc/passwd"))
	}
	n2 := &node{t: t, root: n.r.Root}
	if u, g := n2.owner("/etc/exporter/token"); u != uid || g != 3100 {
		t.Errorf("token owned by %d:%d, want %d:3100", u, g, uid)
	}
	if u, g := n2.owner("/var/lib/exporter"); u != uid || g != 3100 {
		t.Errorf("directory owned by %d:%d, want %d:3100", u, g, uid)
	}

	// The hook without its accounts and files: the sysusers.d file and the
	// token go, the accounts stay.
	n.applyStorage(ctx, "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: exporter\n  exec: [/bin/sleep, infinity]\n")
	for _, gone := range []string{"etc/sysusers.d/hostprov.conf", "etc/exporter/token"} {
		if _, err := os.Lstat(filepath.Join(n.r.Root, gone)); err == nil {
			t.Errorf("%s not pruned", gone)
		}
	}
	if !strings.Contains(read("etc/passwd"), "\nexporter:") || !strings.Contains(read("etc/group"), "\nmetrics:x:3100:") {
		t.Errorf("pruning removed the accounts:\n%s\n%s", read("etc/passwd"), read("etc/group"))
	}
}
