// Package render is what the outputs have in common and what callers of
// more than one output need: the unit files of a spec (Files, from
// internal/unitfiles), a config of the user's to merge into an output
// (MergeFile, CheckMerge) and an output option that cannot be met
// (OptionError). It writes no output itself, and links no Butane or
// Ignition library.
//
// Every output is a room of its own below this directory, written from the
// same []compile.Unit, so that a unit's bytes are the same in all of them:
// ignition (an Ignition config), butane (a Butane config), cloudinit
// (cloud-init user data), kopshooks (kops hooks), listing (the plain
// listing) and unitdir (a directory of unit files). No output imports
// another. What some of them share and is no public API is internal:
// internal/ignconfig is the Ignition config that both the Ignition and the
// Butane output are made from and check a user's config against, and
// internal/usermerge the merging of a user's YAML config that Butane and
// cloud-init share.
package render
