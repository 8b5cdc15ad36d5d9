package sdbus

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// journalLines is how many of a failed unit's last journal lines a
// JobError quotes.
const journalLines = 10

// JobError is a start, restart or stop whose job ended with a result other
// than "done", with what systemd says about the unit afterwards. It matches
// ErrJobFailed under errors.Is.
type JobError struct {
	Op   string // start, restart, stop
	Unit string
	// JobResult is the job's: failed, dependency, timeout, canceled,
	// skipped.
	JobResult string
	// ActiveState and Result are the unit's after the job; ExecMainCode
	// (a CLD_* code) and ExecMainStatus say how a service's main process
	// ended. Zero when they could not be read.
	ActiveState    string
	Result         string
	ExecMainCode   int32
	ExecMainStatus int32
	// Journal holds the unit's last journal lines from this run, oldest
	// first; JournalErr says why there are none when they could not be
	// read.
	Journal    []string
	JournalErr error
}

func (e *JobError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %s", e.Op, e.Unit, jobResultText(e.JobResult))
	if e.ActiveState != "" {
		fmt.Fprintf(&b, "; the unit is %s", e.ActiveState)
	}
	if e.Result != "" {
		fmt.Fprintf(&b, " with result %q", e.Result)
	}
	if how := mainProcessText(e.ExecMainCode, e.ExecMainStatus); how != "" {
		fmt.Fprintf(&b, ", its main process %s", how)
	}
	switch {
	case len(e.Journal) > 0:
		fmt.Fprintf(&b, "; its last journal lines:")
		for _, l := range e.Journal {
			b.WriteString("\n    ")
			b.WriteString(l)
		}
	case e.JournalErr != nil:
		fmt.Fprintf(&b, " (its journal could not be read: %v; see journalctl -u %s)", e.JournalErr, e.Unit)
	default:
		fmt.Fprintf(&b, " (it logged nothing; see journalctl -u %s)", e.Unit)
	}
	return b.String()
}

// Unwrap makes a JobError match ErrJobFailed.
func (e *JobError) Unwrap() error { return ErrJobFailed }

// jobResultText says what a job result means.
func jobResultText(result string) string {
	switch result {
	case "failed":
		return "the job failed"
	case "dependency":
		return "a unit it requires failed, so the job was not run (job result \"dependency\")"
	case "timeout":
		return "the job timed out"
	case "canceled":
		return "the job was canceled before it finished (another job replaced it?)"
	case "skipped":
		return "the job was skipped: it did not apply to the unit's state"
	case "unsupported":
		return "systemd does not support this unit's type here (no swap, and only some mounts, in a container) (job result \"unsupported\")"
	case "assert":
		return "an Assert...= setting of the unit failed, so it was not started (job result \"assert\")"
	case "invalid":
		return "the job does not apply to this unit (job result \"invalid\")"
	case "once":
		return "the unit may run only once and has run already (job result \"once\")"
	}
	return fmt.Sprintf("the job ended with result %q", result)
}

// mainProcessText says how a main process ended, from the CLD_* code of
// waitid(2) and the status; "" when it did not run.
func mainProcessText(code, status int32) string {
	switch code {
	case 1: // CLD_EXITED
		return fmt.Sprintf("exited with status %d", status)
	case 2: // CLD_KILLED
		return fmt.Sprintf("was killed by signal %d (%v)", status, syscall.Signal(status))
	case 3: // CLD_DUMPED
		return fmt.Sprintf("dumped core on signal %d (%v)", status, syscall.Signal(status))
	}
	return ""
}

// jobError gathers what systemd knows about a unit whose job, asked for at
// the time asked, did not end "done". Reading is best effort, within one
// call deadline: the job's result is the error; what cannot be read is left
// out.
func (m *Manager) jobError(ctx context.Context, op, name, result string, asked time.Time) error {
	e := &JobError{Op: op, Unit: name, JobResult: result}
	var invocation string
	_ = m.call(ctx, "read the status of", []string{name}, m.CallTimeout, func(ctx context.Context) error {
		if props, err := m.conn.GetUnitPropertiesContext(ctx, name); err == nil {
			e.ActiveState, _ = props["ActiveState"].(string)
			if id, ok := props["InvocationID"].([]byte); ok {
				invocation = hex.EncodeToString(id)
			}
		}
		if iface := typeInterface(name); iface != "" {
			if p, err := m.conn.GetUnitTypePropertyContext(ctx, name, iface, "Result"); err == nil {
				e.Result, _ = p.Value.Value().(string)
			}
			if iface == "Service" {
				if p, err := m.conn.GetServicePropertyContext(ctx, name, "ExecMainCode"); err == nil {
					e.ExecMainCode, _ = p.Value.Value().(int32)
				}
				if p, err := m.conn.GetServicePropertyContext(ctx, name, "ExecMainStatus"); err == nil {
					e.ExecMainStatus, _ = p.Value.Value().(int32)
				}
			}
		}
		return nil
	})
	e.Journal, e.JournalErr = m.journal(ctx, name, asked, invocation)
	return e
}

// journal reads the last lines a unit logged in the run whose job was asked
// for at the time since, and whose invocation id (hex) is invocation,
// through journalctl.
//
// Both filters are needed, as the rig shows. journald stamps an entry with
// the time it received it, and a run's output can arrive after the job that
// ran it has ended: a restart right after a start then finds the first
// run's last lines after its own request. Those carry the first run's
// invocation id, unless the process exited before journald could read its
// cgroup: then they have none, so the time filter keeps them out. An entry
// without an id is kept otherwise: it is this run's output, or, rarely, the
// last line of a run that ended within milliseconds of this request and
// reached journald after it.
//
// journalctl, not go-systemd's sdjournal: sdjournal loads libsystemd with
// dlopen through cgo, and nothing else in hostprov needs cgo (CGO_ENABLED=0
// builds it into one static binary for any node). The journal matters only
// when a job has already failed, so a process call there costs nothing on
// the path that counts; where journalctl is missing or fails, the error
// says so and points at journalctl -u. The request's time comes from
// this machine's clock, as the journal's does: the private socket is local.
func (m *Manager) journal(ctx context.Context, unit string, since time.Time, invocation string) ([]string, error) {
	if m.RunJournalctl == nil {
		return nil, errors.New("no journal reader")
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	us := since.UnixMicro()
	args := []string{"--no-pager", "--quiet", "-u", unit, fmt.Sprintf("--since=@%d.%06d", us/1e6, us%1e6),
		"-n", fmt.Sprint(4 * journalLines), "-o", "json", "--all", "--output-fields=MESSAGE,INVOCATION_ID,_SYSTEMD_INVOCATION_ID"}
	// journald writes a service's output asynchronously: --sync waits
	// until what it has received is in the journal. It needs privileges;
	// without them a last line may be missing, nothing worse.
	_, _ = m.RunJournalctl(ctx, "--sync")
	out, err := m.RunJournalctl(ctx, args...)
	if err != nil {
		return nil, err
	}
	var lines []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var entry struct {
			Message     json.RawMessage `json:"MESSAGE"`
			Invocation  string          `json:"INVOCATION_ID"`
			SInvocation string          `json:"_SYSTEMD_INVOCATION_ID"`
		}
		if err := dec.Decode(&entry); err == io.EOF {
			break
		} else if err != nil {
			return lines, fmt.Errorf("journalctl -o json: %w", err)
		}
		if id := entry.Invocation + entry.SInvocation; id != "" && invocation != "" &&
			entry.Invocation != invocation && entry.SInvocation != invocation {
			continue
		}
		lines = append(lines, printable(journalMessage(entry.Message)))
	}
	if len(lines) > journalLines {
		lines = lines[len(lines)-journalLines:]
	}
	return lines, nil
}

// printable keeps a quoted journal line on one line of the error: control
// characters other than tab become U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, s)
}

// journalMessage decodes a MESSAGE of journalctl's JSON output: a string,
// or an array of bytes when it is not valid UTF-8 or holds control
// characters.
func journalMessage(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b []byte
	var nums []int
	if json.Unmarshal(raw, &nums) == nil {
		for _, n := range nums {
			b = append(b, byte(n))
		}
		return strings.ToValidUTF8(strings.TrimRight(string(b), "\n"), "\uFFFD")
	}
	return ""
}

// runJournalctl runs this machine's journalctl.
func runJournalctl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "journalctl", args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=", "LANG=C.UTF-8"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("journalctl: %w: %s", err, msg)
		}
		return nil, fmt.Errorf("journalctl: %w", err)
	}
	return out, nil
}
