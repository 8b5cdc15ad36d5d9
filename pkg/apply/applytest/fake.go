// Package applytest has a recording fake of apply.Systemd, for tests of
// apply's logic here and in the packages that drive it.
package applytest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/hostprov/hostprov/pkg/apply"
)

// Call is one call made to a Fake: the method (lower case: "enable",
// "start", "reload", ...) and the units it named.
type Call struct {
	Method string
	Units  []string
}

func (c Call) String() string {
	if len(c.Units) == 0 {
		return c.Method
	}
	return c.Method + " " + strings.Join(c.Units, " ")
}

// Fake records every call and keeps a small model of systemd: which units
// are enabled, masked and active. It is safe for concurrent use.
type Fake struct {
	mu      sync.Mutex
	calls   []Call
	enabled map[string]bool
	masked  map[string]bool
	active  map[string]bool
	failed  map[string]bool
	// fail maps "method unit" (or "method" for reload) to the error that
	// call returns.
	fail map[string]error
	// UnitDir, when set, makes Disable refuse a unit without a file (or
	// link) there, as systemd refuses to disable a unit it cannot find:
	// its disable reads the [Install] section of the file it undoes.
	UnitDir string
}

// New returns a Fake with nothing enabled, masked or active.
func New() *Fake {
	return &Fake{enabled: map[string]bool{}, masked: map[string]bool{}, active: map[string]bool{},
		failed: map[string]bool{}, fail: map[string]error{}}
}

var (
	_ apply.Systemd = (*Fake)(nil)
	_ apply.Queuer  = (*Fake)(nil)
)

// FailOn makes the call method (lower case) for unit ("" for reload)
// return err; a nil err clears it. A failing start leaves the unit failed
// with result exit-code, status 1.
func (f *Fake) FailOn(method, unit string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := strings.TrimSpace(method + " " + unit)
	if err == nil {
		delete(f.fail, key)
	} else {
		f.fail[key] = err
	}
}

// Calls returns the calls made since the last Reset, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Log returns the calls as strings ("enable a.service b.service").
func (f *Fake) Log() []string {
	var out []string
	for _, c := range f.Calls() {
		out = append(out, c.String())
	}
	return out
}

// Count returns how many calls of method were made, and for batch calls
// (enable, disable, mask, unmask) how many units they named.
func (f *Fake) Count(method string) int {
	n := 0
	for _, c := range f.Calls() {
		if c.Method != method {
			continue
		}
		if len(c.Units) > 1 {
			n += len(c.Units)
		} else {
			n++
		}
	}
	return n
}

// Reset forgets the calls, not the model.
func (f *Fake) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// Enabled, Masked and Active report the model's view of a unit.
func (f *Fake) Enabled(unit string) bool { f.mu.Lock(); defer f.mu.Unlock(); return f.enabled[unit] }
func (f *Fake) Masked(unit string) bool  { f.mu.Lock(); defer f.mu.Unlock(); return f.masked[unit] }
func (f *Fake) Active(unit string) bool  { f.mu.Lock(); defer f.mu.Unlock(); return f.active[unit] }

// SetActive puts a unit in the running state, as if something else had
// started it.
func (f *Fake) SetActive(unit string, on bool) { f.mu.Lock(); defer f.mu.Unlock(); f.active[unit] = on }

// State lists the model: "enabled a.service", "active a.service", ...
// sorted, for comparisons.
func (f *Fake) State() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range []struct {
		name string
		set  map[string]bool
	}{{"enabled", f.enabled}, {"masked", f.masked}, {"active", f.active}} {
		for u, on := range m.set {
			if on {
				out = append(out, m.name+" "+u)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (f *Fake) record(method string, units ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Method: method, Units: units})
	for _, u := range units {
		if err := f.fail[method+" "+u]; err != nil {
			return err
		}
	}
	if len(units) == 0 {
		return f.fail[method]
	}
	return nil
}

// recordLinks records a call of method on names and, unless it is to
// fail, turns them on or off in set (enabled or masked) as links does.
func (f *Fake) recordLinks(method string, set map[string]bool, on bool, typ string, names []string) ([]apply.LinkChange, error) {
	if err := f.record(method, names...); err != nil {
		return nil, err
	}
	return f.links(set, on, typ, names), nil
}

// links turns names on or off in set, and returns a link change of type
// typ for each that was not so already.
func (f *Fake) links(set map[string]bool, on bool, typ string, names []string) []apply.LinkChange {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ch []apply.LinkChange
	for _, n := range names {
		if set[n] != on {
			set[n] = on
			ch = append(ch, apply.LinkChange{Type: typ, Path: "/etc/systemd/system/" + n})
		}
	}
	return ch
}

func (f *Fake) Reload(ctx context.Context) error { return f.record("reload") }

func (f *Fake) Enable(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	return f.recordLinks("enable", f.enabled, true, "symlink", names)
}

func (f *Fake) Disable(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	if err := f.record("disable", names...); err != nil {
		return nil, err
	}
	if f.UnitDir != "" {
		for _, n := range names {
			if _, err := os.Lstat(filepath.Join(f.UnitDir, n)); err != nil {
				return nil, fmt.Errorf("disable %s: no such unit: unit file %s does not exist", n, n)
			}
		}
	}
	return f.links(f.enabled, false, "unlink", names), nil
}

func (f *Fake) Mask(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	return f.recordLinks("mask", f.masked, true, "symlink", names)
}

func (f *Fake) Unmask(ctx context.Context, names []string) ([]apply.LinkChange, error) {
	return f.recordLinks("unmask", f.masked, false, "unlink", names)
}

func (f *Fake) run(method, name string, on bool) error {
	err := f.record(method, name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		if on {
			f.active[name], f.failed[name] = false, true
		}
		return err
	}
	if on && f.masked[name] {
		return fmt.Errorf("unit %s is masked", name)
	}
	f.active[name], f.failed[name] = on, false
	return nil
}

func (f *Fake) Start(ctx context.Context, name string) error   { return f.run("start", name, true) }
func (f *Fake) Restart(ctx context.Context, name string) error { return f.run("restart", name, true) }
func (f *Fake) Stop(ctx context.Context, name string) error    { return f.run("stop", name, false) }

// Queue records a start or restart at once, as systemd queues the job, and
// returns its result from wait.
func (f *Fake) Queue(ctx context.Context, kind apply.ActionKind, name string) (func() error, error) {
	var err error
	switch kind {
	case apply.ActStart:
		err = f.Start(ctx, name)
	case apply.ActRestart:
		err = f.Restart(ctx, name)
	default:
		return nil, fmt.Errorf("applytest: cannot queue a %s job", kind)
	}
	return func() error { return err }, nil
}

// Status reports the model; it is not recorded as a call.
func (f *Fake) Status(ctx context.Context, name string) (apply.UnitStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := apply.UnitStatus{Name: name, LoadState: "loaded", ActiveState: "inactive", SubState: "dead", Result: "success", UnitFileState: "disabled"}
	if f.active[name] {
		st.ActiveState, st.SubState = "active", "running"
	}
	if f.failed[name] {
		st.ActiveState, st.SubState, st.Result, st.ExecMainCode, st.ExecMainStatus = "failed", "failed", "exit-code", 1, 1
	}
	if f.enabled[name] {
		st.UnitFileState = "enabled"
	}
	if f.masked[name] {
		st.LoadState, st.UnitFileState = "masked", "masked"
	}
	return st, nil
}
