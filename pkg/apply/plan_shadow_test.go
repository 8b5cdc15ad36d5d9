package apply_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// nodeFile places a file (or, with link set, a symbolic link to data) at
// the node path p of n's root, making its directories.
func (n *node) nodeFile(p, data string, link bool) {
	n.t.Helper()
	full := filepath.Join(n.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		n.t.Fatal(err)
	}
	var err error
	if link {
		err = os.Symlink(data, full)
	} else {
		err = os.WriteFile(full, []byte(data), 0o644)
	}
	if err != nil {
		n.t.Fatal(err)
	}
}

const vendorUnit = "[Unit]\nDescription=the node's own\n\n[Service]\nExecStart=/usr/bin/vendor\n"

// shadowCase is a unit of the node that a hook's unit would shadow.
type shadowCase struct {
	name string
	// setup places the node's unit; hook is the spec.
	setup func(n *node)
	hook  string
	unit  string
	// at is what the conflict must name.
	at string
}

// shadowCases are the places of systemd's unit search path, and the links,
// through which the node has a unit of a name.
var shadowCases = []shadowCase{{
	name:  "vendor unit in /usr/lib",
	setup: func(n *node) { n.nodeFile("/usr/lib/systemd/system/systemd-journald.service", vendorUnit, false) },
	hook:  "- name: systemd-journald.service\n  exec: [/bin/sleep, infinity]\n",
	unit:  "systemd-journald.service",
	at:    "/usr/lib/systemd/system/systemd-journald.service",
}, {
	name: "vendor unit in /lib, a relative link to usr/lib",
	setup: func(n *node) {
		n.nodeFile("/lib", "usr/lib", true)
		n.nodeFile("/usr/lib/systemd/system/kubelet.service", vendorUnit, false)
	},
	hook: "- name: kubelet\n  exec: [/bin/sleep, infinity]\n",
	unit: "kubelet.service",
	at:   "/usr/lib/systemd/system/kubelet.service",
}, {
	// Under --root an absolute link is the node's: taken from
	// its root, not this machine's.
	name: "vendor unit in a /lib that is not merged, behind an absolute link",
	setup: func(n *node) {
		n.nodeFile("/real/lib/systemd/system/ssh.service", vendorUnit, false)
		n.nodeFile("/lib", "/real/lib", true)
	},
	hook: "- name: ssh\n  exec: [/bin/sleep, infinity]\n",
	unit: "ssh.service",
	at:   "/lib/systemd/system/ssh.service",
}, {
	name:  "local unit in /usr/local/lib",
	setup: func(n *node) { n.nodeFile("/usr/local/lib/systemd/system/containerd.service", vendorUnit, false) },
	hook:  "- name: containerd\n  exec: [/bin/sleep, infinity]\n",
	unit:  "containerd.service",
	at:    "/usr/local/lib/systemd/system/containerd.service",
}, {
	name: "generated unit",
	setup: func(n *node) {
		n.nodeFile("/run/systemd/generator/data.mount", "[Mount]\nWhat=/dev/vdb\nWhere=/data\n", false)
	},
	hook: "- name: data.mount\n  useRawName: true\n  useRawManifest: true\n  manifest: |\n    [Mount]\n    What=/dev/vdc\n    Where=/data\n",
	unit: "data.mount",
	at:   "/run/systemd/generator/data.mount",
}, {
	name:  "transient unit",
	setup: func(n *node) { n.nodeFile("/run/systemd/transient/run-job.service", vendorUnit, false) },
	hook:  "- name: run-job\n  exec: [/bin/sleep, infinity]\n",
	unit:  "run-job.service",
	at:    "/run/systemd/transient/run-job.service",
}, {
	name:  "template of an instance",
	setup: func(n *node) { n.nodeFile("/usr/lib/systemd/system/getty@.service", vendorUnit, false) },
	hook:  "- name: getty@tty9\n  exec: [/bin/sleep, infinity]\n",
	unit:  "getty@tty9.service",
	at:    "/usr/lib/systemd/system/getty@.service",
}, {
	// The template's file in the unit directory is the node's
	// too: an instance file would override it for this instance.
	name: "template in the unit directory, another instance enabled",
	setup: func(n *node) {
		n.nodeFile("/etc/systemd/system/multi-user.target.wants/worker@a.service", "/etc/systemd/system/worker@.service", true)
		n.nodeFile("/etc/systemd/system/worker@.service", vendorUnit, false)
	},
	hook: "- name: worker@b\n  exec: [/bin/sleep, infinity]\n",
	unit: "worker@b.service",
	at:   "/etc/systemd/system/worker@.service",
}, {
	name: "vendor alias",
	setup: func(n *node) {
		n.nodeFile("/usr/lib/systemd/system/dbus-org.freedesktop.login1.service", "systemd-logind.service", true)
	},
	hook: "- name: dbus-org.freedesktop.login1\n  exec: [/bin/sleep, infinity]\n",
	unit: "dbus-org.freedesktop.login1.service",
	at:   "/usr/lib/systemd/system/dbus-org.freedesktop.login1.service",
}, {
	// An alias in /etc (Alias=, or systemctl link) is the
	// node's unit too, not a stray link --adopt may replace.
	name: "alias in the unit directory",
	setup: func(n *node) {
		n.nodeFile("/lib/systemd/system/ssh.service", vendorUnit, false)
		n.nodeFile("/etc/systemd/system/sshd.service", "/lib/systemd/system/ssh.service", true)
	},
	hook: "- name: sshd\n  exec: [/bin/sleep, infinity]\n",
	unit: "sshd.service",
	at:   "/etc/systemd/system/sshd.service",
}, {
	name: "enabled by a wants link",
	setup: func(n *node) {
		n.nodeFile("/etc/systemd/system/multi-user.target.wants/app.service", "/opt/app/app.service", true)
	},
	hook: "- name: app\n  exec: [/bin/sleep, infinity]\n",
	unit: "app.service",
	at:   "/etc/systemd/system/multi-user.target.wants/app.service",
}, {
	// An override in /etc of a vendor unit is the node's unit as
	// much as the vendor's: --adopt does not take it over.
	name: "an override in /etc of a vendor unit",
	setup: func(n *node) {
		n.nodeFile("/usr/lib/systemd/system/sshd.service", vendorUnit, false)
		n.nodeFile("/etc/systemd/system/sshd.service", vendorUnit, false)
	},
	hook: "- name: sshd\n  exec: [/bin/sleep, infinity]\n",
	unit: "sshd.service",
	at:   "/usr/lib/systemd/system/sshd.service",
}}

// A hook whose unit file would take the name of a unit the node has
// anywhere in systemd's unit search path is a conflict that names the
// node's unit and the drop-in route, with or without --adopt; nothing is
// written and systemd is not touched.
func TestShadowingANodeUnitIsAConflict(t *testing.T) {
	for _, tc := range shadowCases {
		t.Run(tc.name, func(t *testing.T) {
			checkShadowConflict(t, tc, false)
			checkShadowConflict(t, tc, true)
		})
	}
}

// checkShadowConflict plans and applies tc's hook over tc's node, with or
// without --adopt: a conflict that names the node's unit and the drop-in
// route, and nothing of the node changed.
func checkShadowConflict(t *testing.T, tc shadowCase, withAdopt bool) {
	n := newNode(t)
	tc.setup(n)
	before := tree(t, n.root)
	var mods []func(*apply.Options)
	if withAdopt {
		mods = append(mods, adopt)
	}
	p := n.plan(tc.hook, mods...)
	var msgs []string
	found := false
	for _, c := range p.Conflicts {
		msgs = append(msgs, c.String())
		if c.Unit == tc.unit && strings.Contains(c.Message, tc.at) && strings.Contains(c.Message, "dropins") {
			found = true
		}
	}
	if !found {
		t.Fatalf("adopt %v: conflicts %q; want one of %s that names %s and the drop-in route", withAdopt, msgs, tc.unit, tc.at)
	}
	_, calls, err := n.apply(tc.hook, mods...)
	if err == nil {
		t.Fatalf("adopt %v: apply over the node's %s succeeded", withAdopt, tc.unit)
	}
	checkCalls(t, calls)
	if after := tree(t, n.root); after != before {
		t.Errorf("adopt %v: the node's files changed:\nbefore:\n%s\nafter:\n%s", withAdopt, before, after)
	}
}

// What the check leaves alone: a unit hostprov owns (its own file, also
// once a package installs one of that name), drop-ins and a mask on a
// unit of the node, and a file in /etc alone (still --adopt's).
func TestShadowCheckLeavesOwnUnitsDropinsAndMasks(t *testing.T) {
	n := newNode(t)
	n.mustApply("- name: kubelet\n  exec: [/bin/sleep, infinity]\n")
	n.nodeFile("/usr/lib/systemd/system/kubelet.service", vendorUnit, false)
	if p := n.plan("- name: kubelet\n  exec: [/bin/sleep, '1000']\n"); len(p.Conflicts) != 0 {
		t.Errorf("changing a unit hostprov owns: conflicts %v", p.Conflicts)
	}

	n.nodeFile("/usr/lib/systemd/system/docker.service", vendorUnit, false)
	n.nodeFile("/usr/lib/systemd/system/cups.service", vendorUnit, false)
	spec := "- name: kubelet\n  exec: [/bin/sleep, infinity]\n" +
		"- name: docker\n  dropins:\n  - name: 10-proxy.conf\n    contents: \"[Service]\\nEnvironment=HTTP_PROXY=http://a\\n\"\n" +
		"- name: cups\n  mask: true\n"
	if p := n.plan(spec); len(p.Conflicts) != 0 {
		t.Errorf("drop-ins and a mask on the node's units: conflicts %v", p.Conflicts)
	}

	// An instance of a template the same plan installs.
	tmpl := "- name: w@.service\n  specifiers: true\n  exec: [/bin/echo, \"%i\"]\n- name: w@one\n  exec: [/bin/sleep, infinity]\n"
	if p := n.plan(tmpl); len(p.Conflicts) != 0 {
		t.Errorf("an instance of the spec's own template: conflicts %v", p.Conflicts)
	}

	n.nodeFile("/etc/systemd/system/local.service", vendorUnit, false)
	p := n.plan("- name: local\n  exec: [/bin/sleep, infinity]\n")
	if len(p.Conflicts) != 1 || p.Conflicts[0].Fix == nil || p.Conflicts[0].Fix.Flag != "--adopt" {
		t.Errorf("a file in /etc alone: conflicts %v; want the one --adopt resolves", p.Conflicts)
	}
	if p := n.plan("- name: local\n  exec: [/bin/sleep, infinity]\n", adopt); len(p.Conflicts) != 0 {
		t.Errorf("a file in /etc alone, --adopt: conflicts %v", p.Conflicts)
	}
}

// tree lists every path below root with its link target or bytes.
func tree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			b.WriteString(rel + " -> " + target + "\n")
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			b.WriteString(rel + ": " + string(data) + "\n")
		default:
			b.WriteString(rel + "/\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}
