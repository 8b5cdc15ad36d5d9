// Command testsummary runs go test and prints what go test prints, then
// says in two lines what the run skipped and why, and how many tests
// passed, failed and were skipped.
//
// make test runs the suite through it. Tests that need root, a real
// systemd or a tool that .ci/setup installs skip on a developer's machine
// (and fail under CI=true); go test's own output hides those skips unless
// run with -v, so a green run on a laptop could pass for a full one. The
// closing lines make the difference visible, with the command that runs
// the skipped tests too, and every skipped test and its reason is written
// to a file (-skipped) for whoever wants the detail.
//
// Usage:
//
//	testsummary [-skipped FILE] [go test flags] packages
//
// It runs go test -json with the arguments, prints each package's result
// line as it comes, the output of every failed test and every build
// error, and exits with go test's exit code.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail (Go 1.24)
}

// skip is one skipped test and the reason it gave.
type skip struct {
	pkg, test, reason string
}

// kind sorts a skip into what it takes to run it.
func (s skip) kind() string {
	switch {
	case strings.Contains(s.reason, "corpus"):
		return "corpus"
	case strings.Contains(s.reason, "skipped: "), strings.Contains(s.reason, "not root"),
		strings.Contains(s.reason, "needs root"), strings.Contains(s.reason, "not installed"):
		// "skipped: " is how hosttools.Unavailable words every skip that
		// CI=true turns into a failure: root, systemd, a tool.
		return "setup"
	default:
		return "other"
	}
}

type summary struct {
	out            io.Writer
	passed, failed int
	skips          []skip
	buf            map[string][]string // output of a running test, by package and name
	failedTests    map[string]bool
}

func key(pkg, test string) string { return pkg + "\x00" + test }

func (s *summary) handle(e event) {
	if e.Action == "build-output" {
		fmt.Fprint(s.out, e.Output)
		return
	}
	if e.Test == "" {
		// Package level: go test's result line ("ok  \tpkg\t1.2s",
		// "FAIL\tpkg\t...", "?   \tpkg\t[no test files]"), and what a
		// test binary printed outside any test (a panic, a timeout).
		if e.Action == "output" && e.Output != "PASS\n" {
			fmt.Fprint(s.out, e.Output)
		}
		return
	}
	k := key(e.Package, e.Test)
	switch e.Action {
	case "output":
		if s.failedTests[k] {
			fmt.Fprint(s.out, e.Output)
			return
		}
		s.buf[k] = append(s.buf[k], e.Output)
	case "pass":
		s.passed++
		delete(s.buf, k)
	case "skip":
		s.skips = append(s.skips, skip{e.Package, e.Test, reason(s.buf[k])})
		delete(s.buf, k)
	case "fail":
		s.failed++
		s.failedTests[k] = true
		for _, l := range s.buf[k] {
			// go test -json runs the tests verbosely; go test alone
			// does not print the === RUN, PAUSE and CONT lines.
			if !strings.HasPrefix(l, "=== ") {
				fmt.Fprint(s.out, l)
			}
		}
		delete(s.buf, k)
	}
}

// reason is what a skipped test said, without go test's own lines.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		// "file_test.go:12: message": keep the message.
		if i := strings.Index(t, ": "); i > 0 && strings.Contains(t[:i], ".go:") {
			t = t[i+2:]
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " / ")
}

// closing prints the skip line (when something was skipped) and the count
// line, and writes every skip with its reason to path.
func (s *summary) closing(path string) error {
	if len(s.skips) > 0 {
		n := map[string]int{}
		for _, k := range s.skips {
			n[k.kind()]++
		}
		var parts []string
		if c := n["setup"]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d need root, a real systemd or a tool (as root: .ci/setup && make test)", c))
		}
		if c := n["corpus"]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d need the real-world corpus in ../shared/corpus beside the repository", c))
		}
		if c := n["other"]; c > 0 {
			parts = append(parts, fmt.Sprintf("%d other", c))
		}
		line := "skipped: " + strings.Join(parts, "; ")
		if path != "" {
			if err := writeSkips(path, s.skips); err != nil {
				return err
			}
			line += "; each with its reason in " + path
		}
		fmt.Fprintln(s.out, line)
	}
	fmt.Fprintf(s.out, "tests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, len(s.skips))
	return nil
}

func writeSkips(path string, skips []skip) error {
	sort.Slice(skips, func(i, j int) bool {
		if skips[i].pkg != skips[j].pkg {
			return skips[i].pkg < skips[j].pkg
		}
		return skips[i].test < skips[j].test
	})
	var b strings.Builder
	for _, k := range skips {
		fmt.Fprintf(&b, "%s %s: %s\n", k.pkg, k.test, k.reason)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// run runs go test -json args, streaming its events through s; it returns
// go test's exit code.
func run(s *summary, args []string) (int, error) {
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// Not an event (go test prints some errors on stdout as text).
			fmt.Fprintln(s.out, sc.Text())
			continue
		}
		s.handle(e)
	}
	if err := sc.Err(); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, err
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

func main() {
	args := os.Args[1:]
	skipped := ""
	if len(args) >= 2 && args[0] == "-skipped" {
		skipped, args = args[1], args[2:]
	}
	s := &summary{out: os.Stdout, buf: map[string][]string{}, failedTests: map[string]bool{}}
	code, err := run(s, args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if err := s.closing(skipped); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if code == 0 && s.failed > 0 {
		code = 1
	}
	os.Exit(code)
}
