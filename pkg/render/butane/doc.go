// Package butane is the Butane output: hostprov's units, storage and
// accounts as a Butane config (--format butane) of the fcos or flatcar
// variant (Render), which Butane translates to exactly the config of the
// Ignition output, and a user's own Butane configs merged into it (Merge).
//
// It is made from the same Ignition config as the Ignition output,
// internal/ignconfig, rather than from that output, and merges a user's
// YAML by the rule it shares with cloud-init, internal/usermerge. It
// imports no other output.
package butane
