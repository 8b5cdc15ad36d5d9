package apply

import (
	"context"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/hostprov/hostprov/pkg/compile"
)

// UnitReport is what status says of one owned unit: systemd's view of it
// and whether its files still have the bytes hostprov wrote.
type UnitReport struct {
	// Unit is empty in the report of a hook that places files but has
	// no unit, and in that of a spec set's sysusers.d file (which has no
	// Hook either): only Set, Hook, Files and Drift are set then.
	Unit string `json:"unit"`
	Hook string `json:"hook,omitempty"`
	// Set is the spec set that owns the unit ("" for one recorded before
	// spec sets).
	Set string `json:"set,omitempty"`
	// StatusOf is the unit whose state is shown: the unit, or a
	// template's DefaultInstance.
	StatusOf         string       `json:"statusOf"`
	LoadState        string       `json:"loadState"`
	ActiveState      string       `json:"activeState"`
	SubState         string       `json:"subState"`
	Result           string       `json:"result,omitempty"`
	ExecMainCode     int32        `json:"execMainCode,omitempty"`
	ExecMainStatus   int32        `json:"execMainStatus,omitempty"`
	UnitFileState    string       `json:"unitFileState"`
	NeedDaemonReload bool         `json:"needDaemonReload"`
	ActiveEnter      *time.Time   `json:"activeEnter,omitempty"`
	InactiveEnter    *time.Time   `json:"inactiveEnter,omitempty"`
	Files            []FileReport `json:"files"`
	// Drift is set when a file is not what hostprov wrote.
	Drift bool `json:"drift"`
	// Incomplete is set when the last apply did not finish this unit.
	Incomplete bool `json:"incomplete,omitempty"`
	// Retry is set when the unit failed to start at the last apply, which
	// finished: the next apply starts it again.
	Retry bool   `json:"retry,omitempty"`
	Error string `json:"error,omitempty"`
	// Phase and Steps are set for command hooks (units made of steps):
	// pending, running, succeeded, failed or skipped, and each step's
	// outcome. Journal holds the last lines of a failed unit's last run.
	Phase   string       `json:"phase,omitempty"`
	Steps   []StepReport `json:"steps,omitempty"`
	Journal []string     `json:"journal,omitempty"`
	// StepsNote says why the steps' outcomes are unknown, when they are.
	StepsNote string `json:"stepsNote,omitempty"`
	// Stamp is the stamp of a command hook that runs once (when: Once),
	// as the node sees it, and SucceededAt when it was written: when the
	// hook's steps last succeeded. SucceededAt is nil while there is no
	// stamp.
	Stamp       string     `json:"stamp,omitempty"`
	SucceededAt *time.Time `json:"succeededAt,omitempty"`
}

// Failed tells whether r shows a unit that failed: systemd says so, a
// step of a command hook failed, systemd could not load the unit, or
// systemd knows nothing of it (--root, where it cannot be asked) and its
// start failed at the last apply. A unit systemd could not be asked about
// (Error) is not known to have failed.
func (r UnitReport) Failed() bool {
	switch {
	case r.ActiveState == "failed", r.Phase == PhaseFailed:
		return true
	case r.LoadState == "error", r.LoadState == "bad-setting":
		return true
	}
	return r.ActiveState == "" && r.Retry && r.Error == ""
}

// Phases of a command hook.
const (
	PhasePending   = "pending"   // not run since boot (or never: when: Never)
	PhaseRunning   = "running"   // a step is running
	PhaseSucceeded = "succeeded" // every step succeeded
	PhaseFailed    = "failed"    // a step failed; the steps after it did not run
	PhaseSkipped   = "skipped"   // its condition does not hold: it ran once already (see SucceededAt)
)

// StepReport is how one step of a command hook last ran.
type StepReport struct {
	Name string `json:"name"`
	// State is succeeded, failed, running or "not run".
	State string `json:"state"`
	// ExitCode is the step's exit status when it exited, and Signal the
	// signal that ended it otherwise; Reason says which: "exited",
	// "killed by signal", "dumped core" or "timed out".
	ExitCode *int32     `json:"exitCode,omitempty"`
	Signal   *int32     `json:"signal,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Start    *time.Time `json:"start,omitempty"`
	End      *time.Time `json:"end,omitempty"`
}

// commandHook fills the phase and the steps of a command hook: steps are
// named by the comments of its unit file and take their outcome, in order,
// from the status systemd keeps of each ExecStart= command, or, for a hook
// that runs once and has run, from its stamp (r.SucceededAt).
func (r *UnitReport) commandHook(steps []string, s UnitStatus) {
	switch {
	case s.ActiveState == "activating" || s.ActiveState == "reloading":
		r.Phase = PhaseRunning
	case s.ActiveState == "failed" || s.Result != "" && s.Result != "success":
		r.Phase = PhaseFailed
	case s.ActiveState == "active":
		r.Phase = PhaseSucceeded
	case r.SucceededAt != nil:
		// Its stamp is there, so systemd skips it: at boot, or when
		// started by hand. systemd 252 then reports ConditionResult=no
		// with no ConditionTimestamp, as for a unit never started, and
		// drops what it knew of the run that wrote the stamp.
		r.Phase = PhaseSkipped
	case !s.ConditionResult && !s.ConditionTimestamp.IsZero():
		r.Phase = PhaseSkipped
	default:
		r.Phase = PhasePending
	}
	fromStamp := r.Phase == PhaseSkipped && r.SucceededAt != nil
	r.Journal = s.Journal
	last := -1 // the last step that started
	for i := range steps {
		if i < len(s.Exec) && !s.Exec[i].Start.IsZero() {
			last = i
		}
	}
	// systemd (252) keeps each command's result only until its next
	// daemon-reload, which a package install, a step's own systemctl
	// enable or another apply may have made since. What is lost is
	// inferred where the order of the steps tells it: the steps before
	// one that ran all succeeded, and so did every step of a hook that
	// succeeded.
	inferred := last
	if r.Phase == PhaseSucceeded {
		inferred = len(steps)
	}
	if last < 0 && r.Phase == PhaseFailed {
		for _, name := range steps {
			r.Steps = append(r.Steps, StepReport{Name: name, State: "unknown"})
		}
		r.StepsNote = fmt.Sprintf("systemd was reloaded since the hook ran and keeps no per-step results across a reload; "+
			"the hook's result is %s, and its failing step %s", s.Result, exitPhrase(s.ExecMainCode, s.ExecMainStatus))
		return
	}
	for i, name := range steps {
		sr := StepReport{Name: name, State: "not run"}
		switch noRun := i >= len(s.Exec) || s.Exec[i].Start.IsZero(); {
		case fromStamp && noRun:
			sr.State, sr.Reason = "succeeded", "stamp"
			r.StepsNote = fmt.Sprintf("the hook runs once: its steps all succeeded at %s, when it wrote its stamp %s, "+
				"and systemd skips it while the stamp exists; systemd keeps no per-step results of that run: "+
				"steps marked stamp are known from the stamp", r.SucceededAt.Local().Format("2006-01-02 15:04:05 MST"), r.Stamp)
		case i < inferred && noRun:
			sr.State, sr.Reason = "succeeded", "inferred"
			r.StepsNote = "systemd was reloaded while or after the hook ran and keeps no per-step results across a reload: " +
				"steps marked inferred succeeded, since a later step ran or the hook succeeded"
		}
		if i < len(s.Exec) && !s.Exec[i].Start.IsZero() {
			e := s.Exec[i]
			start := e.Start
			sr.Start = &start
			switch {
			case e.Exit.IsZero():
				sr.State = "running"
			case e.Code == CLDExited:
				code := e.Status
				sr.ExitCode, sr.Reason = &code, "exited"
				sr.State = "succeeded"
				if code != 0 {
					sr.State = "failed"
				}
			default:
				sig := e.Status
				sr.Signal, sr.State, sr.Reason = &sig, "failed", "killed by signal"
				if e.Code == CLDDumped {
					sr.Reason = "dumped core"
				}
			}
			if !e.Exit.IsZero() {
				end := e.Exit
				sr.End = &end
			}
			if i == last && s.Result == "timeout" {
				// systemd killed it when TimeoutStartSec= ran out.
				sr.State, sr.Reason = "failed", "timed out"
			}
		}
		r.Steps = append(r.Steps, sr)
	}
}

// FileReport is one owned file: "ok", "drift" (other bytes, or a link),
// or "missing".
type FileReport struct {
	Path  string `json:"path"`
	State string `json:"state"`
	// SHA256 is the hash recorded in the state.
	SHA256 string `json:"sha256"`
}

// Report asks systemd about every unit in the state and compares their
// files with the hashes recorded. A unit systemd cannot tell about gets
// its error in UnitReport.Error; the error returned is for files that
// cannot be read.
func Report(ctx context.Context, sd Systemd, st *State, opts Options) ([]UnitReport, error) {
	dir, err := openUnitDir(opts)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	out := []UnitReport{}
	for _, u := range st.Units {
		r := UnitReport{Unit: u.Name, Hook: u.Hook, Set: u.Set, StatusOf: u.Name, Files: []FileReport{}, Incomplete: u.Incomplete,
			Retry: u.Failed}
		var content []byte
		for _, f := range u.Files {
			cur, err := readDisk(dir, f.Path)
			if err != nil {
				return nil, err
			}
			fr := FileReport{Path: opts.nodePath(f.Path), SHA256: orDefault(f.SHA256, f.Next), State: "ok"}
			switch {
			case !cur.exists:
				fr.State = "missing"
			case cur.isLink || !f.owns(cur.hash):
				fr.State = "drift"
			}
			if fr.State != "ok" {
				r.Drift = true
			}
			if f.Path == u.Name {
				content = cur.data
			}
			r.Files = append(r.Files, fr)
		}
		if n := runName(u.Name, content); n != "" {
			r.StatusOf = n
		}
		s, err := sd.Status(ctx, r.StatusOf)
		if err != nil {
			r.Error = err.Error()
		} else {
			r.LoadState, r.ActiveState, r.SubState, r.Result = s.LoadState, s.ActiveState, s.SubState, s.Result
			r.ExecMainCode, r.ExecMainStatus = s.ExecMainCode, s.ExecMainStatus
			r.UnitFileState, r.NeedDaemonReload = s.UnitFileState, s.NeedDaemonReload
			if !s.ActiveEnter.IsZero() {
				t := s.ActiveEnter
				r.ActiveEnter = &t
			}
			if !s.InactiveEnter.IsZero() {
				t := s.InactiveEnter
				r.InactiveEnter = &t
			}
			if steps := compile.StepNames(content); len(steps) > 0 {
				r.Stamp, r.SucceededAt = opts.stampTime(content)
				r.commandHook(steps, s)
			}
		}
		out = append(out, r)
	}
	return reportPaths(out, st, opts)
}

// reportPaths adds the files, directories and links of each hook to the
// report of the hook's first unit, so that their drift shows and counts as
// the unit files' does. A hook without a unit gets a report of its own,
// with no Unit and no systemd state, and so does a spec set's sysusers.d
// file (no Hook either). The parents hostprov made are not reported.
func reportPaths(out []UnitReport, st *State, opts Options) ([]UnitReport, error) {
	if len(st.Paths) == 0 {
		return out, nil
	}
	n := newNodeFS(opts)
	for _, sp := range st.Paths {
		if sp.Parent {
			continue
		}
		i := slices.IndexFunc(out, func(r UnitReport) bool {
			return r.Hook == sp.Hook && r.Set == sp.Set && (r.Unit != "" || sp.Hook == "")
		})
		if i < 0 || sp.Hook == "" && out[i].Unit != "" {
			out = append(out, UnitReport{Hook: sp.Hook, Set: sp.Set, Files: []FileReport{}})
			i = len(out) - 1
		}
		fr := FileReport{Path: sp.Path, SHA256: orDefault(sp.SHA256, sp.Next), State: "ok"}
		w, err := n.walk(sp.Path)
		if err != nil {
			return nil, err
		}
		var cur onDisk
		if w.dir != nil {
			cur, err = look(w.dir, path.Base(sp.Path))
			w.dir.Close()
			if err != nil {
				return nil, err
			}
		}
		switch {
		case w.bad != "":
			fr.State = "drift"
		case !cur.exists:
			fr.State = "missing"
		case sp.Kind == KindFile && (!cur.isFile() || !sp.owns(cur.hash)),
			sp.Kind == KindDirectory && !cur.isDir(),
			sp.Kind == KindLink && !sp.Hard && (!cur.isLink() || cur.link != sp.Target),
			sp.Kind == KindLink && sp.Hard && cur.st.Ino != sp.Inode:
			fr.State = "drift"
		}
		if fr.State != "ok" {
			out[i].Drift = true
		}
		out[i].Files = append(out[i].Files, fr)
	}
	return out, nil
}

// exitPhrase says how a process ended, from its CLD_* code and status.
func exitPhrase(code, status int32) string {
	switch code {
	case CLDExited:
		return fmt.Sprintf("exited with %d", status)
	case CLDKilled:
		return fmt.Sprintf("was killed by signal %d", status)
	case CLDDumped:
		return fmt.Sprintf("dumped core on signal %d", status)
	}
	return "ended in an unknown way"
}
