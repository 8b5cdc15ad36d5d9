// Package killpoint marks the steps of hostprov at which a crash is worth
// testing: each creation, write, sync, rename and removal of a file, each
// directory made, each call to systemd, and each run of systemd-sysusers. A normal build compiles At to
// nothing. A build with the tag killpoints makes the process kill itself
// with SIGKILL, as the kernel kills a process that runs out of memory or a
// machine loses power, just before the Nth step of one kind, as
// HOSTPROV_KILLPOINT=KIND:N says ("rename:3"): crash tests then reach every
// such step in turn, deterministically, which random kills cannot promise.
package killpoint

// Env names the environment variable that says where to die: KIND:N.
const Env = "HOSTPROV_KILLPOINT"
