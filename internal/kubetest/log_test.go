package kubetest

import (
	"fmt"
	"slices"
	"testing"
)

// logTB records what is logged to it.
type logTB struct {
	testing.TB
	lines []string
}

func (l *logTB) Log(args ...any) { l.lines = append(l.lines, fmt.Sprint(args...)) }

// Each write is a line of the test's log after the prefix, without its
// newline; after Stop, nothing is.
func TestLogWriter(t *testing.T) {
	tb := &logTB{TB: t}
	w := NewLogWriter(tb, "agent: ")
	for _, s := range []string{"level=INFO msg=applied\n", "level=WARN msg=late\n"} {
		if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
			t.Errorf("Write(%q) = %d, %v", s, n, err)
		}
	}
	w.Stop()
	if n, err := w.Write([]byte("level=INFO msg=stopped\n")); n != 23 || err != nil {
		t.Errorf("Write after Stop = %d, %v; want all of it taken, and dropped", n, err)
	}
	if want := []string{"agent: level=INFO msg=applied", "agent: level=WARN msg=late"}; !slices.Equal(tb.lines, want) {
		t.Errorf("logged %q, want %q", tb.lines, want)
	}
	if w.Prefix() != "agent: " {
		t.Errorf("Prefix() = %q", w.Prefix())
	}
}
