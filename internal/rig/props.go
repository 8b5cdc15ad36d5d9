package rig

import (
	"context"
	"fmt"

	sddbus "github.com/coreos/go-systemd/v22/dbus"
)

// execCommand is one element of a service's ExecStart property, D-Bus type
// (sasbttttuii): the binary's path, its argv (argv[0] included), whether
// failure is ignored ("-" prefix), when the last run started and exited
// (realtime and monotonic, in µs), its pid, and how it ended (a CLD_* code
// and an exit status or signal). godbus fills the fields in this order.
type execCommand struct {
	Path           string
	Argv           []string
	IgnoreErrors   bool
	StartRealtime  uint64
	StartMonotonic uint64
	ExitRealtime   uint64
	ExitMonotonic  uint64
	PID            uint32
	Code           int32
	Status         int32
}

// ExecStartArgv returns the argv of every ExecStart= command of a service,
// in order, as systemd parsed them from the unit file: quotes removed,
// argv[0] included. It proves what systemd will actually execute, which a
// look at the unit's text cannot.
func ExecStartArgv(ctx context.Context, conn *sddbus.Conn, unit string) ([][]string, error) {
	prop, err := conn.GetServicePropertyContext(ctx, unit, "ExecStart")
	if err != nil {
		return nil, fmt.Errorf("%s: ExecStart: %w", unit, err)
	}
	var cmds []execCommand
	if err := prop.Value.Store(&cmds); err != nil {
		return nil, fmt.Errorf("%s: ExecStart: decode %s: %w", unit, prop.Value.Signature(), err)
	}
	argvs := make([][]string, len(cmds))
	for i, c := range cmds {
		argvs[i] = c.Argv
	}
	return argvs, nil
}

// EnvironmentOf returns a service's Environment property: its Environment=
// assignments as systemd parsed them ("KEY=value", quotes removed, in order).
// EnvironmentFile= contents are not included; systemd reads those only when
// the service starts.
func EnvironmentOf(ctx context.Context, conn *sddbus.Conn, unit string) ([]string, error) {
	prop, err := conn.GetServicePropertyContext(ctx, unit, "Environment")
	if err != nil {
		return nil, fmt.Errorf("%s: Environment: %w", unit, err)
	}
	var env []string
	if err := prop.Value.Store(&env); err != nil {
		return nil, fmt.Errorf("%s: Environment: decode %s: %w", unit, prop.Value.Signature(), err)
	}
	return env, nil
}
