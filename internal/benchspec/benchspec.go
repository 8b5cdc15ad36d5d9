// Package benchspec writes the hook spec the benchmarks measure, so that
// the figures of pkg/compile, pkg/render, internal/cli and
// internal/cmd/benchbutane can be read side by side.
package benchspec

import (
	"fmt"
	"strings"
)

// Spec is a spec of n hooks of the kinds people write: generated
// services with arguments and environment, and raw manifests.
func Spec(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n")
	for i := 0; i < n; i++ {
		if i%4 == 3 {
			fmt.Fprintf(&b, `- name: raw-%d.service
  useRawManifest: true
  manifest: |
    [Unit]
    Description=Raw hook %d
    After=network-online.target

    [Service]
    Type=oneshot
    ExecStart=/bin/sh -c 'echo raw %d'

    [Install]
    WantedBy=multi-user.target
`, i, i, i)
			continue
		}
		fmt.Fprintf(&b, `- name: hook-%d
  description: Hook number %d
  type: oneshot
  remainAfterExit: true
  exec: [/usr/local/bin/prepare, --id, "%d", --label, "a b $c 100%%"]
  pre: [[/bin/mkdir, -p, /var/lib/hook-%d]]
  env: {HOOK_ID: "%d", MODE: production}
  after: [network-online.target]
  wants: [network-online.target]
  directives:
    Unit: ["ConditionPathExists=!/var/lib/hook-%d/done"]
`, i, i, i, i, i, i)
	}
	return []byte(b.String())
}
