//go:build vmtest

package vmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// imageVersion is part of the cache key: change it when the way the image
// is built changes in a way the key below does not see.
const imageVersion = "1"

// suite and mirror are where the guest comes from.
const (
	suite  = "bookworm"
	mirror = "http://deb.debian.org/debian"
)

// guestPackages is what the base image has on top of Debian's apt variant
// (Essential packages and apt), without recommends: a kernel and an
// initramfs to boot, systemd, cloud-init, the user-space iSCSI target tgt
// that serves the test's LUN on 127.0.0.1, python3 (cloud-init's download
// script), the CA store, and the tools the hooks and the checks run.
// open-iscsi is not here: the iSCSI hook installs it at boot from the
// test's local repository.
var guestPackages = []string{
	"linux-image-amd64", "initramfs-tools", "zstd",
	"systemd-sysv", "udev", "dbus",
	"cloud-init", "python3", "ca-certificates",
	"tgt",
	"e2fsprogs", "util-linux", "mount", "procps", "iproute2", "kmod",
}

// repoPackages is what the guest's local apt repository serves: the iSCSI
// example's install step, and what it depends on that the image lacks.
var repoPackages = []string{"open-iscsi"}

// hostName is the name the guest knows the host's loopback server by
// (its /etc/hosts), on the one address qemu forwards.
const (
	hostAddr = "10.0.2.100"
	repoHost = "repo.hostprov.test"
	fileHost = "files.hostprov.test"
)

// setupHooks run before any package is installed: they make the initramfs
// small (the modules a virtio disk with ext4 needs, zstd), which is faster
// to build and to boot under emulation than Debian's "most".
var setupHooks = []string{
	`mkdir -p "$1/etc/initramfs-tools/conf.d"`,
	`printf 'MODULES=list\nCOMPRESS=zstd\n' > "$1/etc/initramfs-tools/conf.d/vmtest"`,
	`printf 'virtio_pci\nvirtio_blk\nvirtio_net\next4\n' > "$1/etc/initramfs-tools/modules"`,
}

// customizeHooks run in the finished tree: the repository's packages are
// downloaded with the tree's own apt (so they are the versions its
// indexes have, and exactly what it lacks) into $REPO, then the guest is
// configured to boot fast on a serial console and to reach nothing but the
// host's loopback server.
var customizeHooks = []string{
	`chroot "$1" apt-get clean`,
	`chroot "$1" apt-get install --download-only -y -q --no-install-recommends ` + strings.Join(repoPackages, " "),
	`cp "$1"/var/cache/apt/archives/*.deb "$REPO"/`,
	`rm -f "$1"/var/cache/apt/archives/*.deb`,
	`cd "$REPO" && dpkg-scanpackages -m . > Packages && gzip -9kn Packages`,
	// apt: the local repository only.
	`rm -rf "$1"/etc/apt/sources.list.d/* "$1"/var/lib/apt/lists/*`,
	`echo "deb [trusted=yes] http://` + repoHost + `/ ./" > "$1/etc/apt/sources.list"`,
	`echo 'Acquire::Retries "5";' > "$1/etc/apt/apt.conf.d/80vmtest"`,
	`: > "$1/var/log/apt/history.log"; : > "$1/var/log/dpkg.log"; rm -f "$1"/var/log/apt/term.log`,
	`echo vmtest > "$1/etc/hostname"`,
	`printf '127.0.0.1 localhost\n127.0.1.1 vmtest\n` + hostAddr + ` ` + repoHost + ` ` + fileHost + `\n' > "$1/etc/hosts"`,
	`echo '/dev/vda / ext4 defaults,errors=remount-ro 0 1' > "$1/etc/fstab"`,
	`chroot "$1" passwd -d root`,
	`: > "$1/etc/machine-id"`,
	// The network: DHCP on the one interface by systemd-networkd, which
	// orders network-online.target after it is up.
	`mkdir -p "$1/etc/systemd/network"`,
	`printf '[Match]\nName=eth0\n\n[Network]\nDHCP=ipv4\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n' > "$1/etc/systemd/network/80-vmtest.network"`,
	`chroot "$1" systemctl enable systemd-networkd.service systemd-networkd-wait-online.service`,
	// cloud-init: NoCloud only, the network is systemd-networkd's, and no
	// SSH host keys (no SSH server), no system locale set (the image has
	// no locales to set, and update-locale fails without them).
	`printf 'datasource_list: [NoCloud, None]\nnetwork: {config: disabled}\nssh_genkeytypes: []\nlocale: false\n' > "$1/etc/cloud/cloud.cfg.d/90-vmtest.cfg"`,
	// The guest boots the kernel and initramfs the host gives qemu, so an
	// initramfs rebuilt inside it (open-iscsi's install triggers one) is
	// never used: minutes of emulated compression for nothing. dpkg
	// skips its fsyncs: a crashed guest is booted afresh anyway.
	`sed -i 's/^update_initramfs=.*/update_initramfs=no/' "$1/etc/initramfs-tools/update-initramfs.conf"`,
	`echo force-unsafe-io > "$1/etc/dpkg/dpkg.cfg.d/vmtest-unsafe-io"`,
	// Nothing that runs on a timer or scrubs disks during the test.
	`chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer`,
	// The target: tgt serves the file /var/lib/vmtest/lun.img as LUN 1
	// of one target, to the guest itself only.
	`mkdir -p "$1/etc/tgt/conf.d"`,
	// open-iscsi (installed at boot) logs out of every session at
	// shutdown: after tgt has stopped, the logout waits 90 s for a target
	// that is gone. Ordered after tgt, it is stopped first.
	`mkdir -p "$1/etc/systemd/system/open-iscsi.service.d"`,
	`printf '[Unit]\nAfter=tgt.service\n' > "$1/etc/systemd/system/open-iscsi.service.d/50-vmtest-after-tgt.conf"`,
	`printf '<target iqn.2026-12.test.hostprov:lun>\n    backing-store /var/lib/vmtest/lun.img\n    initiator-address 127.0.0.1\n</target>\n' > "$1/etc/tgt/conf.d/vmtest.conf"`,
}

// dpkgExcludes keep documentation, manual pages and translations out of
// the image: less to unpack, and a smaller image to copy for each boot.
var dpkgExcludes = []string{
	"path-exclude=/usr/share/doc/*", "path-include=/usr/share/doc/*/copyright",
	"path-exclude=/usr/share/man/*", "path-exclude=/usr/share/info/*",
	"path-exclude=/usr/share/locale/*", "path-include=/usr/share/locale/locale.alias",
	"path-exclude=/usr/share/lintian/*",
}

// imageKey is the hash of everything that goes into the base image.
func imageKey() string {
	h := sha256.New()
	fmt.Fprintf(h, "version %s\nsuite %s\nmirror %s\n", imageVersion, suite, mirror)
	for _, l := range [][]string{guestPackages, repoPackages, setupHooks, customizeHooks, dpkgExcludes} {
		fmt.Fprintf(h, "%q\n", l)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// cacheDir is where built images are kept: $VMTEST_CACHE, or
// $XDG_CACHE_HOME/hostprov/vmtest, or ~/.cache/hostprov/vmtest.
func cacheDir() (string, error) {
	if d := os.Getenv("VMTEST_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "hostprov", "vmtest"), nil
}

// baseImage is a built base image: the guest's tree as a tar file and
// the directory of the local apt repository.
type baseImage struct {
	Tar  string
	Repo string
}

// buildBase returns the cached base image for the current key, building it
// first when it is not there. built is false when the cache had it.
// A half-built image is never used: the directory is renamed into place
// only when complete.
func buildBase(ctx context.Context, logf func(string, ...any)) (img baseImage, built bool, err error) {
	dir, err := cacheDir()
	if err != nil {
		return img, false, err
	}
	final := filepath.Join(dir, "debian-"+suite+"-"+imageKey())
	img = baseImage{Tar: filepath.Join(final, "rootfs.tar"), Repo: filepath.Join(final, "repo")}
	if _, err := os.Stat(img.Tar); err == nil {
		return img, false, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return img, false, err
	}
	tmp, err := os.MkdirTemp(dir, "building-")
	if err != nil {
		return img, false, err
	}
	defer os.RemoveAll(tmp)
	repo := filepath.Join(tmp, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		return img, false, err
	}
	args := []string{"--mode=root", "--variant=apt", "--format=tar",
		"--include=" + strings.Join(guestPackages, ","),
		"--aptopt=APT::Install-Recommends \"false\""}
	for _, x := range dpkgExcludes {
		args = append(args, "--dpkgopt="+x)
	}
	for _, hk := range setupHooks {
		args = append(args, "--setup-hook="+hk)
	}
	for _, hk := range customizeHooks {
		args = append(args, "--customize-hook="+hk)
	}
	args = append(args, suite, filepath.Join(tmp, "rootfs.tar"), mirror)
	logf("building the guest image with mmdebstrap (cache %s)", final)
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	cmd.Env = append(os.Environ(), "REPO="+repo)
	log, err := os.Create(filepath.Join(dir, "build.log"))
	if err != nil {
		return img, false, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return img, false, fmt.Errorf("mmdebstrap: %v (its output is in %s)", err, log.Name())
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another run built the same image meanwhile: use its.
		if _, serr := os.Stat(img.Tar); serr == nil {
			return img, true, nil
		}
		return img, false, err
	}
	return img, true, nil
}
