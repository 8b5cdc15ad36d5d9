package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stream is what go test -json printed for a run of two packages, in the
// order go test interleaves them: a pass, a failure in a subtest, a skip
// of each kind and the packages' result lines.
var stream = []event{
	{Action: "start", Package: "p/a"},
	{Action: "run", Package: "p/a", Test: "TestOK"},
	{Action: "output", Package: "p/a", Test: "TestOK", Output: "=== RUN   TestOK\n"},
	{Action: "run", Package: "p/b", Test: "TestRig"},
	{Action: "output", Package: "p/b", Test: "TestRig", Output: "=== RUN   TestRig\n"},
	{Action: "output", Package: "p/a", Test: "TestOK", Output: "--- PASS: TestOK (0.00s)\n"},
	{Action: "pass", Package: "p/a", Test: "TestOK"},
	{Action: "output", Package: "p/b", Test: "TestRig", Output: "    rig.go:12: skipped: rig: cannot boot systemd here: not root\n"},
	{Action: "output", Package: "p/b", Test: "TestRig", Output: "--- SKIP: TestRig (0.00s)\n"},
	{Action: "skip", Package: "p/b", Test: "TestRig"},
	{Action: "run", Package: "p/b", Test: "TestCorpus"},
	{Action: "output", Package: "p/b", Test: "TestCorpus", Output: "    corpus_test.go:30: the shared corpus (../../../shared/corpus/units) is not present\n"},
	{Action: "skip", Package: "p/b", Test: "TestCorpus"},
	{Action: "run", Package: "p/a", Test: "TestBad"},
	{Action: "output", Package: "p/a", Test: "TestBad", Output: "=== RUN   TestBad\n"},
	{Action: "run", Package: "p/a", Test: "TestBad/sub"},
	{Action: "output", Package: "p/a", Test: "TestBad/sub", Output: "=== RUN   TestBad/sub\n"},
	{Action: "output", Package: "p/a", Test: "TestBad/sub", Output: "    a_test.go:9: got 1, want 2\n"},
	{Action: "output", Package: "p/a", Test: "TestBad/sub", Output: "    --- FAIL: TestBad/sub (0.00s)\n"},
	{Action: "fail", Package: "p/a", Test: "TestBad/sub"},
	{Action: "output", Package: "p/a", Test: "TestBad", Output: "--- FAIL: TestBad (0.00s)\n"},
	{Action: "fail", Package: "p/a", Test: "TestBad"},
	{Action: "output", Package: "p/a", Output: "FAIL\n"},
	{Action: "output", Package: "p/a", Output: "FAIL\tp/a\t0.01s\n"},
	{Action: "fail", Package: "p/a"},
	{Action: "run", Package: "p/b", Test: "TestShort"},
	{Action: "output", Package: "p/b", Test: "TestShort", Output: "    x_test.go:3: builds hostprov; skipped with -short\n"},
	{Action: "skip", Package: "p/b", Test: "TestShort"},
	{Action: "output", Package: "p/b", Output: "PASS\n"},
	{Action: "output", Package: "p/b", Output: "ok  \tp/b\t0.02s\n"},
	{Action: "pass", Package: "p/b"},
	{Action: "build-output", ImportPath: "p/c [p/c.test]", Output: "p/c/c.go:3:1: syntax error\n"},
}

func TestSummary(t *testing.T) {
	var out strings.Builder
	s := &summary{out: &out, buf: map[string][]string{}, failedTests: map[string]bool{}}
	for _, e := range stream {
		// Through JSON, as the events arrive.
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back event
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		s.handle(back)
	}
	path := filepath.Join(t.TempDir(), "skipped.txt")
	if err := s.closing(path); err != nil {
		t.Fatal(err)
	}
	want := "    a_test.go:9: got 1, want 2\n" +
		"    --- FAIL: TestBad/sub (0.00s)\n" +
		"--- FAIL: TestBad (0.00s)\n" +
		"FAIL\n" +
		"FAIL\tp/a\t0.01s\n" +
		"ok  \tp/b\t0.02s\n" +
		"p/c/c.go:3:1: syntax error\n" +
		"skipped: 1 need root, a real systemd or a tool (as root: .ci/setup && make test); " +
		"1 need the real-world corpus in ../shared/corpus beside the repository; 1 other; " +
		"each with its reason in " + path + "\n" +
		"tests: 1 passed, 2 failed, 3 skipped\n"
	if got := out.String(); got != want {
		t.Errorf("printed\n%s\nwant\n%s", got, want)
	}
	skipped, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wantSkipped := "p/b TestCorpus: the shared corpus (../../../shared/corpus/units) is not present\n" +
		"p/b TestRig: skipped: rig: cannot boot systemd here: not root\n" +
		"p/b TestShort: builds hostprov; skipped with -short\n"
	if string(skipped) != wantSkipped {
		t.Errorf("skipped.txt:\n%s\nwant\n%s", skipped, wantSkipped)
	}
}

// TestSummaryNothingSkipped: no skip line, only the counts.
func TestSummaryNothingSkipped(t *testing.T) {
	var out strings.Builder
	s := &summary{out: &out, buf: map[string][]string{}, failedTests: map[string]bool{}}
	s.handle(event{Action: "pass", Package: "p", Test: "TestA"})
	if err := s.closing(""); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "tests: 1 passed, 0 failed, 0 skipped\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
