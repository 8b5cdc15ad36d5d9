// Package units is hostprov's model of systemd unit files.
//
// It parses unit files exactly as systemd 252's configuration parser reads
// them (comments, backslash continuations, repeated keys and empty resets),
// keeps sections and entries in order with the comments that precede them,
// and writes them back in one canonical form: the same model always gives
// the same bytes, and Canonical(Parse(Canonical(x))) equals Canonical(x).
// The canonical order never changes what systemd loads: the rule, and why
// it holds, is written at the top of order.go.
//
// It also holds the small pieces of systemd's own rules that a unit
// generator must get exactly right: unit names and their validation, path
// escaping as systemd-escape --path does it, quoting of Exec*= command lines
// and Environment= assignments so that systemd splits them back into exactly
// the intended words, and the directive vocabulary derived from systemd's own
// table (see directives_gen.go).
//
// The package never touches the file system or systemd itself.
package units

//go:generate go run ../../internal/gen/directives
