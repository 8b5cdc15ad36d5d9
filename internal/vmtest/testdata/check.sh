#!/bin/bash
# The checks inside the guest, run by vmtest-check.service at every boot once
# the boot's jobs are done. Each check writes one line to the second serial
# port (the host reads it):
#   VMTEST <boot> PASS <name>
#   VMTEST <boot> FAIL <name>: <what was seen>
# and the run ends with "VMTEST <boot> DONE"; then the guest powers off (the
# host starts it again for the second boot).
#
# What to expect is in /var/lib/vmtest: route (cloud-init or node), units
# (NAME STATE-AT-BOOT-1 STATE-AT-BOOT-2 per line) and expected/ (the unit
# files hostprov renders, by their path under /etc/systemd/system).
set -u
export LC_ALL=C SYSTEMD_PAGER= SYSTEMD_COLORS=0
V=/var/lib/vmtest
route=$(cat $V/route)
boots=$(( $(cat $V/boots 2>/dev/null || echo 0) + 1 ))
echo $boots > $V/boots
sync
out=/dev/ttyS1
say() { echo "VMTEST $boots $*" > $out; echo "VMTEST $boots $*"; }
pass() { say "PASS $1"; }
fail() { local n=$1; shift; say "FAIL $n: $(echo "$*" | tr '\n' ' ' | cut -c1-600)"; }
# check NAME COMMAND...: PASS when COMMAND exits 0, else FAIL with its output.
check() {
	local n=$1 o; shift
	if o=$("$@" 2>&1); then pass "$n"; else fail "$n" "$o"; fi
}

# Wait for the boot to settle: no job queued (cloud-init's hooks are started
# without waiting, hostprov apply's are waited for), at most 40 minutes.
settle() {
	local i
	for i in $(seq 2400); do
		if [ "$route" = cloud-init ] && ! cloud-init status 2>/dev/null | grep -q 'status: \(done\|error\|disabled\)'; then
			sleep 1; continue
		fi
		[ -z "$(systemctl list-jobs --no-legend 2>/dev/null)" ] && return 0
		sleep 1
	done
	return 1
}
check settle settle
say "INFO uptime $(cut -d' ' -f1 /proc/uptime)s"

boot_time=$(date -d "$(uptime -s)" +%s)

# The state of a unit as the units file says it: active, inactive, failed,
# skipped (its condition was false) or absent (no unit file).
unit_state() {
	local u=$1 load active cond checked
	load=$(systemctl show -P LoadState "$u")
	active=$(systemctl show -P ActiveState "$u")
	cond=$(systemctl show -P ConditionResult "$u")
	# ConditionResult is "no" too for a unit never started (a failed
	# dependency): skipped only when its conditions were checked.
	checked=$(systemctl show -P ConditionTimestampMonotonic "$u")
	if [ "$load" = not-found ]; then echo absent
	elif [ "$active" = inactive ] && [ "$cond" = no ] && [ "${checked:-0}" != 0 ]; then echo skipped
	else echo "$active"; fi
}
states_ok() {
	local bad= u s1 s2 want got
	while read -r u s1 s2; do
		[ -z "$u" ] && continue
		if [ "$boots" = 1 ]; then want=$s1; else want=$s2; fi
		got=$(unit_state "$u")
		[ "$got" = "$want" ] || bad="$bad $u is $got, not $want;"
	done < $V/units
	[ -z "$bad" ] || { echo "$bad"; return 1; }
}
no_failed() {
	local f u s1 s2 bad=
	f=$(systemctl --failed --plain --no-legend | awk '{print $1}')
	while read -r u s1 s2; do
		[ "$s1" = failed ] && continue
		echo "$f" | grep -qxF "$u" && bad="$bad $u"
	done < $V/units
	[ -z "$bad" ] || { echo "failed:$bad (systemctl --failed: $f)"; return 1; }
}
files_equal() {
	local bad= f
	while IFS= read -r f; do
		cmp -s "$V/expected/$f" "/etc/systemd/system/$f" || bad="$bad $f"
	done < <(cd $V/expected && find . -type f | sed 's#^\./##' | sort)
	[ -z "$bad" ] || { echo "differ from render:$bad"; return 1; }
}
swap_on() { swapon --show=NAME --noheadings | grep -x /swap1 && systemctl is-active swap1.swap; }
lun_mounted() {
	systemctl is-active mnt-lun.mount && findmnt -n -o SOURCE,TARGET /mnt/lun &&
		iscsiadm -m session | grep iqn.2026-12.test.hostprov:lun
}
lun_write() { echo "boot1 $(cat /etc/machine-id)" > /mnt/lun/boot1.tmp && sync && mv /mnt/lun/boot1.tmp /mnt/lun/boot1 && sync && cat /mnt/lun/boot1; }
lun_kept() { [ "$(cat /mnt/lun/boot1)" = "boot1 $(cat /etc/machine-id)" ] || { cat /mnt/lun/boot1; return 1; }; }
# A when: Once hook at the second boot: skipped, its stamp from before this boot.
once_skipped() {
	local u=$1 stamp
	[ "$(unit_state "$u")" = skipped ] || { echo "$u ran: $(systemctl status "$u")"; return 1; }
	stamp=$(systemctl cat "$u" | sed -n 's/^ConditionPathExists=!\(\/var\/lib\/hostprov\/stamps\/.*\)/\1/p')
	[ -n "$stamp" ] && [ -e "$stamp" ] || { echo "no stamp $stamp"; return 1; }
	[ "$(stat -c %Y "$stamp")" -lt "$boot_time" ] || { echo "stamp $stamp is from this boot"; return 1; }
}
# open-iscsi installed, from the local repository: the guest has no other
# source, and its index lists the package.
iscsi_from_repo() {
	dpkg-query -W -f='${Status} ${Version}\n' open-iscsi | grep 'install ok installed' &&
		grep -x 'Package: open-iscsi' /var/lib/apt/lists/repo.hostprov.test_._Packages &&
		[ "$(grep -v '^#' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | grep -c .)" = 1 ]
}
# hostprov status: exit 0, and a row for each unit the spec sets installed.
status_ok() {
	local out rc u
	out=$(hostprov status 2>&1); rc=$?
	echo "$out"
	[ $rc = 0 ] || { echo "exit $rc"; return 1; }
	for u in $(awk '$2 != "absent" {print $1}' $V/units); do
		echo "$out" | grep -q "^$u " || echo "$out" | grep -q " $u " || { echo "no row for $u"; return 1; }
	done
	# The phase of each when: Once command hook after the reboot: skipped,
	# by its stamp.
	for u in $(awk '$3 == "skipped" && $1 != "create-swapfile.service" {print $1}' $V/units); do
		echo "$out" | grep -q "^$u: skipped" || { echo "$u is not shown skipped"; return 1; }
	done
}
app_ok() {
	local pid
	systemctl is-active vmtest-app.service || return 1
	pid=$(systemctl show -P MainPID vmtest-app.service)
	[ "$(ps -o user= -p "$pid")" = vmtest-app ] || { ps -o user=,args= -p "$pid"; return 1; }
	[ "$(cat /var/lib/vmtest-app/whoami)" = vmtest-app ] &&
		grep -qx 'greeting=hello from the spec' /var/lib/vmtest-app/config-seen &&
		[ "$(stat -c '%a %U %G' /etc/vmtest-app/app.conf)" = "640 root vmtest-app" ] ||
		{ stat -c '%a %U %G' /etc/vmtest-app/app.conf; cat /var/lib/vmtest-app/*; return 1; }
}
fetch_ok() {
	[ "$(stat -c '%a' /usr/local/bin/vmtest-tool)" = 755 ] && [ "$(cat /run/vmtest-tool)" = "fetched over https" ] &&
		[ "$(systemctl show -P Result fetched-tool.service)" = success ]
}
# The failed download: no file, its hook failed (cloud-init) or left out
# (node: apply installs no part of a hook whose download failed), and the
# boot went on.
fetch_fail_ok() {
	[ ! -e /usr/local/bin/vmtest-missing ] || { echo "/usr/local/bin/vmtest-missing exists"; return 1; }
	case $route in
	cloud-init)
		# The hook's unit is written but neither enabled nor started, and
		# runcmd's last command names the hook.
		[ "$(systemctl is-enabled missing-tool.service)" = disabled ] ||
			{ echo "missing-tool.service is $(systemctl is-enabled missing-tool.service), not disabled"; return 1; }
		[ "$(systemctl show -P ExecMainStartTimestampMonotonic missing-tool.service)" = 0 ] ||
			{ echo "missing-tool.service was started"; return 1; }
		grep -m1 'these hooks were neither enabled nor started: missing-tool' /var/log/cloud-init-output.log ||
			{ echo "runcmd did not name the held hook"; tail -20 /var/log/cloud-init-output.log; return 1; } ;;
	node) journalctl -b -o cat -u hostprov-apply.service | grep -m1 'failed download /usr/local/bin/vmtest-missing' ||
		{ journalctl -b -o cat -u hostprov-apply.service | tail -20; return 1; } ;;
	esac
	[ "$(systemctl is-system-running)" != maintenance ] && systemctl is-active multi-user.target
}

if [ "$route" = cloud-init ]; then
	check cloud-init-datasource python3 -c '
import json, sys
ds = json.load(open("/run/cloud-init/result.json"))["v1"]["datasource"]
print(ds)
if not ds or not ds.startswith("DataSourceNoCloud"):
    sys.exit("datasource %r, not NoCloud" % ds)'
	check cloud-init-errors python3 -c '
import json, subprocess, sys
s = json.loads(subprocess.run(["cloud-init", "status", "--format", "json"], capture_output=True, text=True).stdout)
errs = s.get("errors", [])
# The failed download of fetchfail.yaml fails runcmd at the first boot, and
# nothing else does: cloud-init reports it as the one error, of its
# scripts_user module. runcmd runs once, so the second boot has none.
want = 1 if sys.argv[1] == "1" else 0
other = [e for e in errs if "scripts_user" not in str(e) and "runcmd" not in str(e)]
if s.get("status") not in ("done", "error") or len(errs) != want or other:
    sys.exit("status %s, errors %s: want %d, of runcmd, whose download fails" % (s.get("status"), errs, want))' "$boots"
	check cloud-init-schema cloud-init schema --system
else
	check package-installed sh -c 'dpkg-query -W -f="\${Status} \${Version}" hostprov | grep "^install ok installed"'
	check apply-ran sh -c 'systemctl show -P ExecMainStartTimestampMonotonic hostprov-apply.service | grep -v "^0$"'
fi
check unit-files-as-rendered files_equal
check swap-active swap_on
if [ "$boots" = 1 ]; then
	check iscsi-installed-from-local-repo iscsi_from_repo
	check iscsi-initiator-name grep -E '^InitiatorName=iqn\.' /etc/iscsi/initiatorname.iscsi
	check iscsid-active systemctl is-active iscsid.service
	check lun-mounted lun_mounted
	check lun-writable lun_write
	check app-as-its-user app_ok
	check fetch-https fetch_ok
	check fetch-failure-fails-its-hook-only fetch_fail_ok
	check apt-ran-once sh -c '[ "$(grep -c ^Start-Date /var/log/apt/history.log)" = 1 ]'
else
	check iscsid-active systemctl is-active iscsid.service
	check lun-mounted-again lun_mounted
	check lun-kept-first-boot-data lun_kept
	for u in $(awk '$3 == "skipped" && $1 != "create-swapfile.service" {print $1}' $V/units); do
		check "once-skipped-$u" once_skipped "$u"
	done
	check no-apt-again sh -c '[ "$(grep -c ^Start-Date /var/log/apt/history.log)" = 1 ] || cat /var/log/apt/history.log'
	check app-as-its-user app_ok
	check fetch-https fetch_ok
	if [ "$route" = node ]; then
		check hostprov-status status_ok
		say "INFO hostprov status: $(hostprov status 2>&1 | tr -s ' ' | tr '\n' '|' | cut -c1-1500)"
	fi
fi
check unit-states states_ok
check none-failed no_failed
say "INFO failed units: $(systemctl --failed --plain --no-legend | awk '{print $1}' | tr '\n' ' ')"
say DONE
sync
# The host boots the guest again for the second boot: a power cycle, not
# a warm reset, which under emulation sometimes left the second boot's
# kernel stuck clearing pages for minutes (soft lockups) on a loaded host.
systemctl poweroff
