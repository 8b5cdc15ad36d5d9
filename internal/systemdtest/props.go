package systemdtest

import (
	"context"

	sddbus "github.com/coreos/go-systemd/v22/dbus"

	"github.com/hostprov/hostprov/internal/sdbus"
)

// ExecStartArgv returns the argv of every ExecStart= command of a service,
// in order, as systemd parsed them from the unit file: quotes removed,
// argv[0] included. It proves what systemd will actually execute, which a
// look at the unit's text cannot.
func ExecStartArgv(ctx context.Context, conn *sddbus.Conn, unit string) ([][]string, error) {
	cmds, err := sdbus.ExecStart(ctx, conn, unit)
	if err != nil {
		return nil, err
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
	return sdbus.ServiceProperty[[]string](ctx, conn, unit, "Environment")
}
