#!/bin/sh
# Writes node_metrics.prom for node exporter's textfile collector: the inode
# use of each mount in MOUNTS, and when it last ran. The file is replaced
# whole (written beside it, then renamed), so that node exporter never reads
# half of it.
set -eu
. "${1:-/etc/node-metrics/collect.conf}"
out="$TEXTFILE_DIR/node_metrics.prom"
tmp="$out.$$"
trap 'rm -f "$tmp"' EXIT
{
	echo '# HELP node_metrics_inodes_used_ratio Inodes in use on a mount, as a fraction.'
	echo '# TYPE node_metrics_inodes_used_ratio gauge'
	for m in $MOUNTS; do
		df -P -i "$m" | awk -v m="$m" 'NR == 2 && $2 > 0 { printf "node_metrics_inodes_used_ratio{mountpoint=\"%s\"} %.4f\n", m, $3 / $2 }'
	done
	echo '# HELP node_metrics_last_run_timestamp_seconds When the collector last ran.'
	echo '# TYPE node_metrics_last_run_timestamp_seconds gauge'
	echo "node_metrics_last_run_timestamp_seconds $(date +%s)"
} >"$tmp"
mv "$tmp" "$out"
trap - EXIT
