// Package apply installs rendered units on a node: it computes a plan (the
// files to write or remove and the systemd actions that follow), prints it,
// and carries it out with atomic writes and a single daemon-reload, touching
// only the files it owns.
//
// The flow is the same for every caller:
//
//	unlock, err := apply.Lock(ctx, opts.StateDirPath(), noWait, waiting)  // one apply at a time
//	st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))     // what hostprov owns
//	p, err := apply.NewPlan(ctx, units, st, opts)                          // reads, never writes
//	p.WriteText(os.Stdout)                                                 // diff, actions, summary
//	res, err := apply.Execute(ctx, p, systemd, logger)                     // files, links, reload, starts
//
// Systemd is the narrow interface over systemd that Execute acts through:
// the D-Bus implementation talks to a running manager, Offline makes the
// links systemctl --root would make, and applytest.Fake records calls for
// tests. The state file is the only record of ownership; see State and
// Execute for how it stays true to the disk through a crash.
//
// The package's files are three rooms. The planner (plan_*.go) is pure: it
// learns what the node has only through nodeView, whose methods read, so a
// plan never writes and its tests plan against a node in memory; node*.go
// read the node on this machine for it. The executor (exec_*.go) carries a
// plan out through Systemd and the file system. The state (state*.go) is
// the record both of them share.
package apply
