// Package ignition is the Ignition output: hostprov's units, storage and
// accounts as an Ignition config (--format ignition) of any spec version
// from 3.0.0 to 3.5.0 (Render), and a user's own Ignition or Butane
// configs merged into it by Ignition's own merge (Merge).
//
// The config itself, and the checks of a user's config against it, are
// internal/ignconfig, which the Butane output is made from too; this
// package writes it as JSON. It imports no other output.
package ignition
