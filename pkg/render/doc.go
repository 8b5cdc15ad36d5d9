// Package render writes the units and storage that package compile builds
// from a hook spec as outputs: a directory of unit files, a plain listing,
// instance user data (Ignition, Butane, cloud-init), and merges a user's own Ignition, Butane or cloud-init
// config into them. It builds nothing itself: every output is written from
// the same []compile.Unit, so a unit's bytes are the same in all of them.
//
// The kops output is its own package, kopshooks, below this directory.
package render
