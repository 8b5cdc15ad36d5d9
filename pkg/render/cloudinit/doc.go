// Package cloudinit is the cloud-init output: hostprov's units and storage
// as one #cloud-config document (--format cloud-init), written by
// write_files and started by runcmd, optionally wrapped as a MIME message
// (MIME), and merged with a cloud-config of the user's own (Merge).
//
// What it shares with the other outputs is below it: the unit files of a
// spec in internal/unitfiles, and the merging of a user's YAML config that
// it shares with the Butane output (where a merged entry was made, the
// YAML helpers of the merge) in internal/usermerge, which links no Butane
// or Ignition library. It imports no other output.
package cloudinit
