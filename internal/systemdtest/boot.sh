# boot.sh: the first process of a rig's fresh namespaces. It builds the rig's
# mount table, then execs systemd, which thereby becomes PID 1 of the new PID
# namespace. rig.Start runs it with /bin/sh and this environment:
#   RIG_ROOT      the rig's "/" (a directory of the host)
#   RIG_UNITS     the curated unit directory shown as /usr/lib/systemd/system
#   RIG_EMPTY     an empty directory, shown over the host's generator dirs
#   RIG_USRLOCAL  a writable directory shown as /usr/local
#   RIG_CONSOLE   the pty that becomes /dev/console
# Every mount happens in the rig's own mount namespace and vanishes with it.
set -eu
R=$RIG_ROOT

# A fresh mount namespace inherits the host's propagation: on a systemd host
# "/" is shared, and every mount below would appear on the host too. Cut that
# first, and recursively.
mount --make-rprivate /

# chroot needs no mount point, but systemd checks that "/" is one.
mount --bind "$R" "$R"

# The host's /usr, read-only: the rig runs the host's systemd and tools
# without being able to change them.
mount --bind /usr "$R/usr"
mount -o remount,bind,ro "$R/usr"
mount --bind "$RIG_USRLOCAL" "$R/usr/local"

# Only the curated units exist, and none of the host's generators, shutdown
# hooks or environment generators run: nothing of the host starts, ever.
mount --bind "$RIG_UNITS" "$R/usr/lib/systemd/system"
for d in system-generators system-environment-generators system-shutdown; do
	if [ -d "$R/usr/lib/systemd/$d" ]; then
		mount --bind "$RIG_EMPTY" "$R/usr/lib/systemd/$d"
	fi
done

# A /proc of the new PID namespace; its host-wide knobs stay read-only.
mount -t proc -o nosuid,nodev,noexec proc "$R/proc"
for p in sys sysrq-trigger; do
	if [ -e "$R/proc/$p" ]; then
		mount --bind "$R/proc/$p" "$R/proc/$p"
		mount -o remount,bind,ro "$R/proc/$p"
	fi
done
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$R/sys"
# Mounted from inside the new cgroup namespace, cgroup2 shows the rig's own
# cgroup as its root: systemd manages that subtree and nothing else. This
# works on hybrid hosts too, where the host has cgroup2 only at
# /sys/fs/cgroup/unified: the rig always gets a pure cgroup2 layout.
mount -t cgroup2 -o nosuid,nodev,noexec cgroup2 "$R/sys/fs/cgroup"

# A minimal /dev, as container managers make it.
mount -t tmpfs -o mode=755,nosuid,size=4m tmpfs "$R/dev"
mknod -m 666 "$R/dev/null" c 1 3
mknod -m 666 "$R/dev/zero" c 1 5
mknod -m 666 "$R/dev/full" c 1 7
mknod -m 666 "$R/dev/random" c 1 8
mknod -m 666 "$R/dev/urandom" c 1 9
mknod -m 666 "$R/dev/tty" c 5 0
mkdir "$R/dev/pts" "$R/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"
ln -s /proc/self/fd/2 "$R/dev/stderr"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$R/dev/shm"
# systemd writes its log to /dev/console only when that is a terminal.
touch "$R/dev/console"
mount --bind "$RIG_CONSOLE" "$R/dev/console"

# /run must already be a mount point, or systemd mounts a fresh tmpfs over
# it and the host loses sight of the sockets the rig creates there. A bind
# of the directory onto itself keeps it visible from the host at $R/run.
mount --bind "$R/run" "$R/run"

# container= tells systemd it runs in a container (no hardware, no reboot(2)
# of the machine); env -i keeps the test's environment out of the rig.
exec chroot "$R" /usr/bin/env -i container=hostprov-rig TERM=dumb \
	/usr/lib/systemd/systemd --log-level=info --show-status=no
