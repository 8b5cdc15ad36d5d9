package units_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/pkg/units"
)

// TestCheckExecAgreesWithSystemd loads a service for each Exec*= value of
// the CheckExec table and checks that systemd loads exactly those that
// CheckExec accepts.
func TestCheckExecAgreesWithSystemd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := systemdtest.Start(t)
	for i, c := range units.CheckExecCases {
		unit := fmt.Sprintf("[Service]\nType=oneshot\nExecStart=/bin/true\nExecStartPost=%s\n", c.Value)
		if err := r.WriteUnit(fmt.Sprintf("hp-exec%02d.service", i), []byte(unit)); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range units.CheckExecCases {
		p, err := r.Conn.GetUnitPropertiesContext(ctx, fmt.Sprintf("hp-exec%02d.service", i))
		if err != nil {
			t.Fatal(err)
		}
		loads := p["LoadState"] == "loaded"
		if loads != c.Loads || units.UnitLoads(units.CheckExec(c.Value)) != loads {
			t.Errorf("ExecStartPost=%s: systemd's load state is %v; the table says loads=%v, CheckExec says %v", c.Value, p["LoadState"], c.Loads, units.CheckExec(c.Value))
		}
	}
}
