package apply

import (
	"fmt"
	"os"
)

// Permissions finds what would let another user change what hostprov
// installs as root: a unit directory, state directory or state file that
// is writable by its group or by everyone. Another user who can write
// there can plant a unit that systemd runs as root, or rewrite the state
// to make hostprov delete or take over files. They are warnings, shown
// by plan and status; hostprov does not change the modes itself.
func Permissions(opts Options) []Problem {
	var ps []Problem
	for _, c := range []struct{ path, node, what string }{
		{opts.UnitDirPath(), opts.unitDir(), "unit directory"},
		{opts.StateDirPath(), opts.stateDir(), "state directory"},
		{StatePath(opts.StateDirPath()), StatePath(opts.stateDir()), "state file"},
	} {
		fi, err := os.Stat(c.path)
		if err != nil {
			continue // missing: other checks say so where it matters
		}
		if m := fi.Mode().Perm(); m&0o022 != 0 {
			who := "its group"
			if m&0o002 != 0 {
				who = "everyone"
			}
			ps = append(ps, Problem{Path: c.node, Message: fmt.Sprintf(
				"the %s is writable by %s (mode %04o): another user could change what hostprov installs as root; run chmod go-w %s",
				c.what, who, m, c.node)})
		}
	}
	return ps
}
