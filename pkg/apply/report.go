package apply

import (
	"context"
	"time"
)

// UnitReport is what status says of one owned unit: systemd's view of it
// and whether its files still have the bytes hostprov wrote.
type UnitReport struct {
	Unit string `json:"unit"`
	Hook string `json:"hook,omitempty"`
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
	Incomplete bool   `json:"incomplete,omitempty"`
	Error      string `json:"error,omitempty"`
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
	dir := opts.UnitDirPath()
	out := []UnitReport{}
	for _, u := range st.Units {
		r := UnitReport{Unit: u.Name, Hook: u.Hook, StatusOf: u.Name, Files: []FileReport{}, Incomplete: u.Incomplete}
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
		}
		out = append(out, r)
	}
	return out, nil
}
