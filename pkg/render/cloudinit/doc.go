// Package cloudinit is the cloud-init output: hostprov's units and storage
// as one #cloud-config document (--format cloud-init), written by
// write_files and started by runcmd, optionally wrapped as a MIME message
// (MIME), and merged with a cloud-config of the user's own (Merge).
//
// What it shares with the other outputs (the unit files of a spec, where a
// merged entry was made, the YAML helpers of the merges) is in package
// [github.com/hostprov/hostprov/pkg/render]; it imports no other output.
package cloudinit
