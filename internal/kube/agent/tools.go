package agent

import (
	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/pkg/apply"
)

// nodeTools is how the agent runs the node's systemd-sysusers and chpasswd
// for the users and groups of its HostHooks: as transient services of the
// node's systemd, passing data through the state directory of opts (the
// node's, seen below opts.Root). The agent's image has neither program,
// and its container no capability to run the node's in a chroot; run by
// the node's systemd they are the node's own, with its libraries, NSS and
// PAM, as hostprov apply on the node runs them.
func nodeTools(m *sdbus.Manager, opts apply.Options) apply.Tools {
	stateDir := opts.StateDir
	if stateDir == "" {
		stateDir = apply.DefaultStateDir
	}
	return m.HostTools(stateDir, opts.StateDirPath())
}

// planOptions are apply's options for a plan of this sync: the agent's,
// with the node's tools of the current connection to systemd.
func (n *node) planOptions() apply.Options {
	opts := n.opts
	if n.tools != nil {
		opts.Tools = n.tools
	}
	return opts
}
