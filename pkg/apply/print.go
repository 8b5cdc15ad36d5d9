package apply

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rogpeppe/go-internal/diff"
)

// WriteText prints the plan for a person: a unified diff of every file
// written or removed, the systemd actions one per line in the order they
// run, the warnings and conflicts, and the summary line.
func (p *Plan) WriteText(w io.Writer) error {
	var b bytes.Buffer
	for _, f := range p.Files {
		if !f.changes() {
			continue
		}
		if f.Stamp {
			// An empty file, whose diff would say nothing.
			fmt.Fprintf(&b, "remove %s (%s)\n\n", f.Path, f.Reason)
			continue
		}
		if f.Kind != "" {
			if head := f.pathHeader(); head != "" {
				b.WriteString(head)
				if f.Kind != KindFile || f.Op == OpRemove && f.Old == nil || f.Op != OpRemove && f.Source != "" ||
					f.Op == OpChange && bytes.Equal(f.Old, f.New) {
					b.WriteByte('\n')
					continue // nothing a diff would show
				}
			}
		}
		if f.OldLink != "" {
			fmt.Fprintf(&b, "# %s is a symbolic link to %s\n", f.Path, f.OldLink)
		}
		if f.Drift {
			fmt.Fprintf(&b, "# %s was edited since hostprov wrote it\n", f.Path)
		}
		var d []byte
		switch f.Op {
		case OpAdd:
			d = diff.Diff("/dev/null", nil, f.Path, f.New)
		case OpChange:
			d = diff.Diff(f.Path, f.Old, f.Path, f.New)
		case OpRemove:
			d = diff.Diff(f.Path, f.Old, "/dev/null", nil)
		}
		if d == nil {
			// Empty files, or a link replaced by an empty file: the
			// diff has no lines to show, so say what happens.
			fmt.Fprintf(&b, "%s %s (empty)\n", f.Op, f.Path)
		}
		b.Write(d)
		b.WriteByte('\n')
	}
	if accs := p.changedAccounts(); len(accs) > 0 {
		b.WriteString("Accounts (made by systemd-sysusers, never removed):\n")
		tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
		for _, a := range accs {
			notes := []string{}
			if a.Hook != "" {
				notes = append(notes, "hook "+a.Hook)
			}
			notes = append(notes, a.Reason)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t(%s)\n", a.Op, a.Kind, a.Name, strings.Join(notes, ", "))
		}
		tw.Flush()
		b.WriteByte('\n')
	}
	if len(p.Actions) > 0 {
		b.WriteString("Actions:\n")
		tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
		for _, a := range p.Actions {
			unit := a.Unit
			if a.Kind == ActReload {
				unit = "systemd"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.Kind, unit, a.Reason)
		}
		tw.Flush()
		b.WriteByte('\n')
	}
	if len(p.Warnings) > 0 {
		b.WriteString("Warnings:\n")
		for _, w := range p.Warnings {
			fmt.Fprintf(&b, "  %s\n", w)
		}
		b.WriteByte('\n')
	}
	if len(p.Conflicts) > 0 {
		b.WriteString("Conflicts (apply refuses this plan):\n")
		for _, c := range p.Conflicts {
			fmt.Fprintf(&b, "  %s\n", c)
		}
		b.WriteByte('\n')
	}
	b.WriteString(p.Summary() + "\n")
	_, err := w.Write(b.Bytes())
	return err
}

// pathHeader is the line that says what the plan does to a file, directory
// or link a hook places: its kind, mode and owner, a link's target, a
// download's source.
func (f *FileChange) pathHeader() string {
	var notes []string
	if f.Hook != "" {
		notes = append(notes, "hook "+f.Hook)
	}
	if f.Op != OpRemove {
		if f.Mode != "" {
			notes = append(notes, "mode "+f.Mode)
		}
		if f.Owner != "" {
			notes = append(notes, "owner "+f.Owner)
		}
		if f.Source != "" {
			notes = append(notes, "from "+f.Source)
		}
	}
	if f.Reason != "" {
		notes = append(notes, f.Reason)
	}
	what := f.Path
	if f.Kind == KindLink && f.Target != "" {
		what += " -> " + f.Target
	}
	return fmt.Sprintf("# %s %s %s (%s)\n", f.Op, f.Kind, what, strings.Join(notes, ", "))
}

// PlanJSON is the plan as tools read it (hostprov plan -o json).
type PlanJSON struct {
	FormatVersion int          `json:"formatVersion"`
	Units         []UnitChange `json:"units"`
	Files         []FileChange `json:"files"`
	Actions       []Action     `json:"actions"`
	Warnings      []Problem    `json:"warnings"`
	Conflicts     []Problem    `json:"conflicts"`
	// Accounts are the users and groups the plan creates or changes.
	Accounts []AccountChange `json:"accounts,omitempty"`
	Summary  PlanSummary     `json:"summary"`
}

// PlanSummary counts units, as the text summary line does.
type PlanSummary struct {
	Add     int  `json:"add"`
	Change  int  `json:"change"`
	Remove  int  `json:"remove"`
	Changes bool `json:"changes"`
}

// JSON returns the plan's JSON form. Files that do not change are left
// out, as in the text form.
func (p *Plan) JSON() PlanJSON {
	a, c, r := p.Counts()
	j := PlanJSON{FormatVersion: 1, Units: []UnitChange{}, Files: []FileChange{}, Actions: p.Actions,
		Warnings: p.Warnings, Conflicts: p.Conflicts, Accounts: p.changedAccounts(), Summary: PlanSummary{a, c, r, a+c+r > 0}}
	for _, u := range p.Units {
		if u.Change != "none" {
			j.Units = append(j.Units, u)
		}
	}
	for _, f := range p.Files {
		if f.Op != OpUnchanged {
			j.Files = append(j.Files, f)
		}
	}
	if j.Warnings == nil {
		j.Warnings = []Problem{}
	}
	if j.Conflicts == nil {
		j.Conflicts = []Problem{}
	}
	return j
}

// MarshalJSON encodes the plan as PlanJSON.
func (p *Plan) MarshalJSON() ([]byte, error) { return json.Marshal(p.JSON()) }

// changedAccounts are the accounts the plan creates or changes, or leaves
// out although they are missing.
func (p *Plan) changedAccounts() []AccountChange {
	var out []AccountChange
	for _, a := range p.Accounts {
		if a.Op != OpUnchanged {
			out = append(out, a)
		}
	}
	return out
}
