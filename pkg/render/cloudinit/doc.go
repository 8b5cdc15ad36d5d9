// Package cloudinit is the cloud-init output: hostprov's units and storage
// as one #cloud-config document (--format cloud-init), written by
// write_files and started by runcmd, optionally wrapped as a MIME message
// (MIME), and merged with a cloud-config of the user's own (Merge).
//
// What it shares with the other outputs is below it: the unit files of a
// spec in internal/unitfiles, and where a merged entry was made and the
// YAML helpers of the merges in package
// [github.com/hostprov/hostprov/pkg/render], which (for now) links
// Butane's and Ignition's libraries too. It imports no other output.
package cloudinit
