package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// BenchmarkReapplyUnchanged measures what a re-apply of the inputs of the
// last apply costs on 1,000 units, without systemd (it calls none): the
// state read, the plan from the state and the unit files, and Execute,
// which finds nothing to do. read-files is reading the same files, for
// comparison; BenchmarkApplyRig measures the same against a real systemd.
func BenchmarkReapplyUnchanged(b *testing.B) {
	n := newNode(b)
	us := rigRender(b, benchSpec(benchUnits, -1, ""))
	opts := n.opts
	opts.Inputs = "bench"
	st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))
	if err != nil {
		b.Fatal(err)
	}
	p, err := apply.NewPlan(context.Background(), us, st, opts)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("reapply", func(b *testing.B) {
		for b.Loop() {
			st, err := apply.LoadState(apply.StatePath(opts.StateDirPath()))
			if err != nil {
				b.Fatal(err)
			}
			p, ok, err := apply.NewPlanFromState(context.Background(), st, opts)
			if err != nil || !ok {
				b.Fatalf("no plan from the state: %v", err)
			}
			res, err := apply.Execute(context.Background(), p, n.sd, nil)
			if err != nil {
				b.Fatal(err)
			}
			if c := res.Counts; c.Unchanged != benchUnits || c.StateSaves != 0 {
				b.Fatalf("counts %+v", c)
			}
		}
	})
	b.Run("read-files", func(b *testing.B) {
		for b.Loop() {
			for _, u := range us {
				if _, err := os.ReadFile(filepath.Join(opts.UnitDirPath(), u.Name)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
