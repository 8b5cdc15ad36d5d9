package apply

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/journal"
)

// Event is one entry of the action log: something apply did (or skipped)
// to a file or a unit.
type Event struct {
	// Action is what happened: wrote, unchanged, removed, kept, created
	// (a user or group), reloaded, enabled, disabled, masked, unmasked,
	// started, restarted, stopped, skipped or failed.
	Action string `json:"action"`
	// Op is the planned action a skipped or failed event is about
	// ("start", "reload", ...).
	Op   string `json:"op,omitempty"`
	Unit string `json:"unit,omitempty"`
	// Path is the file's path on the node, for file events.
	Path string `json:"path,omitempty"`
	// Account is the user or group of a created event ("user metrics").
	Account string `json:"account,omitempty"`
	// Hook is the hook a failed download is of (see OpDownload).
	Hook   string `json:"hook,omitempty"`
	Reason string `json:"reason,omitempty"`
	// SHA256 is the hash of the file's content after the event.
	SHA256 string `json:"sha256,omitempty"`
	// Links are the symlinks an enable, disable, mask or unmask made or
	// removed.
	Links []LinkChange `json:"links,omitempty"`
	// Error is what went wrong, as a person reads it; Err is the error
	// itself, for a caller that tells causes apart with errors.Is (a
	// unit that ran and failed, or systemd refusing the call).
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// Event actions.
const (
	EvWrote     = "wrote"
	EvUnchanged = "unchanged"
	EvRemoved   = "removed"
	EvKept      = "kept"
	EvCreated   = "created"
	EvChanged   = "changed"
	EvReloaded  = "reloaded"
	EvEnabled   = "enabled"
	EvDisabled  = "disabled"
	EvMasked    = "masked"
	EvUnmasked  = "unmasked"
	EvStarted   = "started"
	EvRestarted = "restarted"
	EvStopped   = "stopped"
	EvSkipped   = "skipped"
	EvFailed    = "failed"
)

// Text is the event as a person reads it, without the "hostprov: " prefix:
// "wrote create-swapfile.service (new, sha256:1a2b3c4d5e6f)".
func (e Event) Text() string {
	var b strings.Builder
	b.WriteString(e.Action)
	if e.Op != "" {
		b.WriteString(" " + e.Op)
	}
	what := e.Path
	if e.Account != "" {
		what = e.Account
	}
	if what == "" {
		what = e.Unit
	}
	if e.Action == EvReloaded || e.Op == string(ActReload) {
		what = "systemd"
	}
	if what != "" {
		b.WriteString(" " + what)
	}
	var notes []string
	if e.Reason != "" {
		notes = append(notes, e.Reason)
	}
	if e.SHA256 != "" {
		notes = append(notes, "sha256:"+short(e.SHA256))
	}
	if len(notes) > 0 {
		b.WriteString(" (" + strings.Join(notes, ", ") + ")")
	}
	if e.Error != "" {
		b.WriteString(": " + e.Error)
	}
	return b.String()
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// Logger receives the action log.
type Logger interface {
	Log(Event)
}

// LoggerFunc makes a function a Logger.
type LoggerFunc func(Event)

func (f LoggerFunc) Log(e Event) { f(e) }

// TextLogger writes each event as a line "hostprov: EVENT" to w. A call
// that fails for several units (an enable of a batch) is one event per
// unit with the same error; the error is written with the first, and the
// others say "the same error as above".
func TextLogger(w io.Writer) Logger {
	var (
		mu      sync.Mutex
		lastErr string
	)
	return LoggerFunc(func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		line := e.Text()
		switch {
		case e.Action != EvFailed:
			lastErr = ""
		case e.Error != "" && e.Error == lastErr:
			e.Error = ""
			line = e.Text() + ": the same error as above"
		default:
			lastErr = e.Error
		}
		fmt.Fprintln(w, "hostprov: "+line)
	})
}

// JournalLogger sends each event to the systemd journal with structured
// fields (HOSTPROV_ACTION, HOSTPROV_UNIT, HOSTPROV_PATH, HOSTPROV_SHA256,
// HOSTPROV_REASON), so that `journalctl HOSTPROV_UNIT=a.service` finds what
// hostprov did to a unit. Unchanged files are not sent. It returns nil when there is no journal
// (journal.Enabled is false).
func JournalLogger() Logger {
	if !journal.Enabled() {
		return nil
	}
	return LoggerFunc(func(e Event) {
		pri := journal.PriInfo
		switch e.Action {
		case EvFailed:
			pri = journal.PriErr
		case EvKept:
			pri = journal.PriWarning
		case EvUnchanged:
			// Every file of every re-apply: stderr has them; the
			// journal keeps what changed.
			return
		}
		vars := map[string]string{"SYSLOG_IDENTIFIER": "hostprov", "HOSTPROV_ACTION": e.Action}
		for k, v := range map[string]string{"HOSTPROV_UNIT": e.Unit, "HOSTPROV_PATH": e.Path,
			"HOSTPROV_SHA256": e.SHA256, "HOSTPROV_REASON": e.Reason, "HOSTPROV_ERROR": e.Error} {
			if v != "" {
				vars[k] = v
			}
		}
		journal.Send(e.Text(), pri, vars) // the log is best effort: stderr has it too
	})
}

// MultiLogger sends every event to each non-nil logger.
func MultiLogger(ls ...Logger) Logger {
	var all []Logger
	for _, l := range ls {
		if l != nil {
			all = append(all, l)
		}
	}
	return LoggerFunc(func(e Event) {
		for _, l := range all {
			l.Log(e)
		}
	})
}

// Counts are how many times each thing happened in an apply: the numbers
// tests and benchmarks check ("a re-apply makes zero writes and zero
// reloads").
type Counts struct {
	Writes     int `json:"writes"`
	Unchanged  int `json:"unchanged"`
	Removes    int `json:"removes"`
	Kept       int `json:"kept"`
	Reloads    int `json:"reloads"`
	Enables    int `json:"enables"`
	Disables   int `json:"disables"`
	Masks      int `json:"masks"`
	Unmasks    int `json:"unmasks"`
	Starts     int `json:"starts"`
	Restarts   int `json:"restarts"`
	Stops      int `json:"stops"`
	Skipped    int `json:"skipped"`
	Failed     int `json:"failed"`
	StateSaves int `json:"stateSaves"`
}

func (c *Counts) count(action string) {
	switch action {
	case EvWrote:
		c.Writes++
	case EvUnchanged:
		c.Unchanged++
	case EvRemoved:
		c.Removes++
	case EvKept:
		c.Kept++
	case EvReloaded:
		c.Reloads++
	case EvEnabled:
		c.Enables++
	case EvDisabled:
		c.Disables++
	case EvMasked:
		c.Masks++
	case EvUnmasked:
		c.Unmasks++
	case EvStarted:
		c.Starts++
	case EvRestarted:
		c.Restarts++
	case EvStopped:
		c.Stops++
	case EvSkipped:
		c.Skipped++
	case EvFailed:
		c.Failed++
	}
}
