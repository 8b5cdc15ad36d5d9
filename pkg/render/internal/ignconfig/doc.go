// Package ignconfig is the Ignition config that both the Ignition and the
// Butane output are made from, so that Butane translates the one to
// exactly the other: what Ignition is told of each unit (Units), storage:
// and passwd: as Ignition's JSON (Storage, Passwd), and the spec versions
// hostprov emits with their parsers (Specs, Versions, Parse).
//
// It also reads a user's --merge file, an Ignition or a Butane config, as
// an Ignition config (UserConfig) and checks it against hostprov's: a
// unit, a path or an account both make differently is a clash at the
// user's entry (CheckUnitClashes, CheckStorageClashes,
// CheckAccountClashes). Both outputs merge by those rules, each in its own
// format, so they live here rather than in either output: neither output
// imports the other.
package ignconfig
