package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostprov/hostprov/pkg/apply"
)

// TestDropinDirSwapRace swaps a drop-in directory with a symbolic link to
// a directory outside the unit directory (renameat2 RENAME_EXCHANGE, as
// fast as it can) while applies write, change and remove drop-ins in it.
// An apply may fail, or find the link and refuse, but nothing may ever be
// written into, or removed from, the directory outside. It runs a bounded
// number of applies, so its time is bounded too.
func TestDropinDirSwapRace(t *testing.T) {
	n := newNode(t)
	outside := filepath.Join(n.root, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	// The names the applies write and remove, there already: a removal
	// through the link would take them.
	for _, name := range []string{"10-a.conf", "20-b.conf", "victim"} {
		if err := os.WriteFile(filepath.Join(outside, name), []byte("outside\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := files(t, outside)

	specs := []string{`
- name: svc
  exec: [/bin/true]
  dropins:
  - name: 10-a.conf
    contents: "[Service]\nEnvironment=A=1\n"
`, `
- name: svc
  exec: [/bin/true]
  dropins:
  - name: 10-a.conf
    contents: "[Service]\nEnvironment=A=2\n"
  - name: 20-b.conf
    contents: "[Service]\nEnvironment=B=2\n"
`}
	n.mustApply(specs[0])
	dropins := n.unitPath("svc.service.d")
	swap := n.unitPath("swap")
	if err := os.Symlink(outside, swap); err != nil {
		t.Fatal(err)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	var swaps atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, dropins, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("renameat2: %v", err)
				return
			}
			swaps.Add(1)
		}
	}()
	const applies = 600
	failed := 0
	for i := range applies {
		us := spec(t, specs[i%2])
		opts := n.opts
		st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
		if err != nil {
			t.Fatal(err)
		}
		p, err := apply.NewPlan(context.Background(), us, st, opts)
		if err != nil {
			failed++
			continue
		}
		if _, err := apply.Execute(context.Background(), p, n.sd, nil); err != nil {
			failed++
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d applies, %d of them failed or refused, %d swaps", applies, failed, swaps.Load())
	if got := files(t, outside); !equalMaps(got, before) {
		t.Errorf("the directory outside changed: %v, was %v", got, before)
	}
	entries, _ := os.ReadDir(outside)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"10-a.conf", "20-b.conf", "victim"}) {
		t.Errorf("the directory outside holds %v", names)
	}
	if swaps.Load() < applies {
		t.Errorf("only %d swaps during %d applies: the race was hardly run", swaps.Load(), applies)
	}
}

// TestStateRecordsInodes: the state records, for every file hostprov
// wrote, the inode of the very file; a re-apply that only re-reads keeps
// them, and a rewrite records the new file's.
func TestStateRecordsInodes(t *testing.T) {
	n := newNode(t)
	n.mustApply("- name: a\n  exec: [/bin/true]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=X=1\\n\"\n")
	check := func(when string) {
		t.Helper()
		for _, u := range n.state().Units {
			for _, f := range u.Files {
				var st syscall.Stat_t
				if err := syscall.Stat(n.unitPath(f.Path), &st); err != nil {
					t.Fatal(err)
				}
				if f.Inode == 0 || f.Inode != st.Ino || f.Next != "" || f.NextInode != 0 {
					t.Errorf("%s: %s recorded with inode %d (next %q, %d), the file's is %d", when, f.Path, f.Inode, f.Next, f.NextInode, st.Ino)
				}
			}
		}
	}
	check("after the first apply")
	n.mustApply("- name: a\n  exec: [/bin/true]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=X=1\\n\"\n")
	check("after an unchanged re-apply")
	n.mustApply("- name: a\n  exec: [/bin/false]\n  dropins:\n  - name: 10-x.conf\n    contents: \"[Service]\\nEnvironment=X=2\\n\"\n")
	check("after a change")
}
