package kubetest

import (
	"strings"
	"sync"
	"testing"
)

// LogWriter sends what a component run against the cluster logs (the
// agent, the controller) to the test's log, a line a write, each with a
// prefix, until Stop. A test's log may not be written once the test has
// ended, and a component's goroutines may log until they are stopped, so
// the test stops the writer once it stopped the component.
type LogWriter struct {
	mu     sync.Mutex
	t      testing.TB
	prefix string
	done   bool
}

// NewLogWriter is a LogWriter to t's log, each line after prefix.
func NewLogWriter(t testing.TB, prefix string) *LogWriter {
	return &LogWriter{t: t, prefix: prefix}
}

// Prefix is what each line of the writer begins with: the component.
func (w *LogWriter) Prefix() string { return w.prefix }

func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(w.prefix + strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// Stop drops what is written from now on.
func (w *LogWriter) Stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
