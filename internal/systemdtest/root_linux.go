package systemdtest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// curatedUnits are the host's unit files the rig may see: the standard
// targets that units name in Wants=, After= and WantedBy=, what systemd
// needs to power off, and journald so that journalctl works. Everything else
// of the host stays hidden; with the host's whole unit directory, starting
// any unit with default dependencies would pull in sysinit.target's host
// services.
var curatedUnits = []string{
	"basic.target", "sysinit.target", "local-fs.target", "local-fs-pre.target",
	"swap.target", "sockets.target", "timers.target", "paths.target", "slices.target",
	"network.target", "network-online.target", "network-pre.target",
	"multi-user.target", "graphical.target", "getty.target", "rescue.target", "emergency.target",
	"remote-fs.target", "remote-fs-pre.target", "nss-lookup.target", "nss-user-lookup.target",
	"time-sync.target", "shutdown.target", "umount.target", "final.target",
	"halt.target", "poweroff.target", "reboot.target", "exit.target", "ctrl-alt-del.target",
	"systemd-halt.service", "systemd-poweroff.service", "systemd-reboot.service", "systemd-exit.service",
	"systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket",
	"systemd-journald-audit.socket",
}

// rigUnits are the rig's own units, written next to the curated ones and
// not into the administrator's directory, which tests own.
//
// A client outside the rig's PID namespace cannot use /run/systemd/private:
// systemd refuses it during authentication, because the peer's pid (from
// SO_PEERCRED) does not translate into the rig's namespace. So a relay
// inside the rig, systemd-socket-proxyd started by socket activation,
// listens on relaySocket and forwards to the private socket; the host
// reaches relaySocket through the rig's /run.
var rigUnits = map[string]string{
	"hostprov-rig.target": `[Unit]
Description=hostprov test rig: the default target, which starts nothing but the relay
AllowIsolate=yes
`,
	"hostprov-rig-bus.socket": `[Unit]
Description=hostprov test rig: relay to systemd's private socket
DefaultDependencies=no

[Socket]
ListenStream=` + relaySocket + `
SocketMode=0600
`,
	"hostprov-rig-bus.service": `[Unit]
Description=hostprov test rig: relay to systemd's private socket
DefaultDependencies=no

[Service]
ExecStart=` + proxydBinary + ` /run/systemd/private
`,
}

// makeRoot creates the rig's "/": its own /etc with just enough users and
// groups, its own /var and /run, and mount points for the rest.
func makeRoot(root string) error {
	for _, d := range []string{
		"usr", "etc/systemd/system", "run", "var/lib", "var/log", "var/tmp", "var/cache",
		"proc", "sys", "dev", "root", "mnt", "srv", "opt", "home", "tmp",
	} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	for _, d := range []string{"tmp", "var/tmp"} {
		if err := os.Chmod(filepath.Join(root, d), 0o1777|fs.ModeSticky); err != nil {
			return err
		}
	}
	links := map[string]string{
		"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64",
		"var/run": "../run",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			return err
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"etc/group":  "root:x:0:\nsystemd-journal:x:999:\nnogroup:x:65534:\n",
		// systemd sets the UTS namespace's host name from it.
		"etc/hostname": "hostprov-rig\n",
		// Empty: systemd makes up a transient machine id at boot.
		"etc/machine-id": "",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// makeUnits creates the directory shown as the rig's /usr/lib/systemd/system:
// the curated host units, the rig's own, and the links that boot it.
func makeUnits(dir string) error {
	for _, d := range []string{"sockets.target.wants", "sysinit.target.wants", "hostprov-rig.target.wants"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	for _, name := range curatedUnits {
		if err := copyUnit(filepath.Join("/usr/lib/systemd/system", name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	for name, data := range rigUnits {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	links := map[string]string{
		"default.target": "hostprov-rig.target",
		"hostprov-rig.target.wants/hostprov-rig-bus.socket":    "../hostprov-rig-bus.socket",
		"sockets.target.wants/systemd-journald.socket":         "../systemd-journald.socket",
		"sockets.target.wants/systemd-journald-dev-log.socket": "../systemd-journald-dev-log.socket",
		"sysinit.target.wants/systemd-journald.service":        "../systemd-journald.service",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// copyUnit copies one unit file, keeping a symbolic link a link (aliases
// such as ctrl-alt-del.target -> reboot.target). A unit this host's systemd
// does not ship is left out: the set covers several systemd versions.
func copyUnit(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}
