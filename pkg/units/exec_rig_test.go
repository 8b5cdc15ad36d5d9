package units_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/units"
)

// TestSplitExecCommandsAgreesWithSystemd loads each value of the CheckExec
// table that CheckExec accepts as an ExecStart= of a oneshot service and
// checks that systemd runs exactly the commands, with exactly the
// arguments, that SplitExecCommands reads from it: a lone ";" ends a
// command, "\;" is an argument. Values with '$' or specifiers are left
// out, as systemd reports their arguments before it expands them.
func TestSplitExecCommandsAgreesWithSystemd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var values []string
	for _, c := range units.CheckExecCases {
		if c.Value != "" && units.CheckExec(c.Value) == nil && !strings.ContainsAny(c.Value, "$%") {
			values = append(values, c.Value)
		}
	}
	r := systemdtest.Start(t)
	for i, v := range values {
		if err := r.WriteUnit(fmt.Sprintf("hp-split%02d.service", i), []byte("[Service]\nType=oneshot\nExecStart="+v+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	multi := 0
	for i, v := range values {
		got, err := systemdtest.ExecStartArgv(ctx, r.Conn, fmt.Sprintf("hp-split%02d.service", i))
		if err != nil {
			t.Fatal(err)
		}
		cmds, err := units.SplitExecCommands(v)
		if err != nil {
			t.Errorf("ExecStart=%s: SplitExecCommands: %v", v, err)
			continue
		}
		if len(cmds) > 1 {
			multi++
		}
		// systemd's argv has no prefixes, and with "@" no program:
		// the word after it is argv[0].
		var want [][]string
		for _, argv := range cmds {
			p := strings.TrimLeft(argv[0], "-@:+!")
			if strings.Contains(argv[0][:len(argv[0])-len(p)], "@") {
				want = append(want, argv[1:])
				continue
			}
			want = append(want, append([]string{p}, argv[1:]...))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ExecStart=%s: systemd runs %q, SplitExecCommands reads %q", v, got, want)
		}
	}
	if multi < 3 {
		t.Fatalf("only %d values with several commands compared", multi)
	}
}
