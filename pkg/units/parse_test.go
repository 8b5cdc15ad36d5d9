package units

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	long := strings.Repeat("x", 100*1024)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"simple", "[Unit]\nDescription=Hello\n", []string{"Unit/Description=Hello"}},
		{"whitespace around key and value", "[Service]\n  ExecStart =  /bin/true  \n", []string{"Service/ExecStart=/bin/true"}},
		{"inner key space kept", "[Service]\nFoo Bar=1\n", []string{"Service/Foo Bar=1"}},
		{"no trailing newline", "[Unit]\nA=1", []string{"Unit/A=1"}},
		{"CRLF", "[Unit]\r\nA=1\r\nB=2\r\n", []string{"Unit/A=1", "Unit/B=2"}},
		{"lone CR", "[Unit]\rA=1\rB=2\r", []string{"Unit/A=1", "Unit/B=2"}},
		{"LFCR is one line end", "[Unit]\n\rA=1\n\r", []string{"Unit/A=1"}},
		{"BOM", "\xef\xbb\xbf[Unit]\nA=1\n", []string{"Unit/A=1"}},
		{"BOM before comment", "\xef\xbb\xbf# c\n[Unit]\nA=1\n", []string{"Unit/A=1"}},
		{"hash and semicolon comments", "# a\n; b\n[Unit]\n  # c\nA=1\n\t; d\n", []string{"Unit/A=1"}},
		{"hash inside value is not a comment", "[Unit]\nDescription=a # b\n", []string{"Unit/Description=a # b"}},
		{"empty value is kept", "[Service]\nExecStart=\nExecStart=/bin/b\n", []string{"Service/ExecStart=", "Service/ExecStart=/bin/b"}},
		{"repeated keys keep order", "[Unit]\nAfter=b\nAfter=a\nAfter=c\n", []string{"Unit/After=b", "Unit/After=a", "Unit/After=c"}},
		{"value with equals", "[Service]\nEnvironment=A=B=C\n", []string{"Service/Environment=A=B=C"}},
		{"continuation", "[Service]\nExecStart=/bin/a \\\n  --b \\\n  --c\n", []string{"Service/ExecStart=/bin/a    --b    --c"}},
		{"continuation without space", "[Service]\nExecStart=/bin/a\\\n--b\n", []string{"Service/ExecStart=/bin/a --b"}},
		{"comment inside continuation is skipped", "[Service]\nExecStart=/bin/a \\\n# note\n  b\n", []string{"Service/ExecStart=/bin/a    b"}},
		{"blank line ends continuation", "[Service]\nExecStart=/bin/a \\\n\nType=simple\n", []string{"Service/ExecStart=/bin/a", "Service/Type=simple"}},
		{"escaped backslash does not continue", "[Service]\nA=x\\\\\nB=y\n", []string{"Service/A=x\\\\", "Service/B=y"}},
		{"three backslashes continue", "[Service]\nA=x\\\\\\\nB=y\n", []string{"Service/A=x\\\\ B=y"}},
		{"continuation at EOF", "[Service]\nA=x \\", []string{"Service/A=x"}},
		{"continued key", "[Service]\nExec\\\nStart=/bin/x\n", []string{"Service/Exec Start=/bin/x"}},
		{"backslash then space is no continuation", "[Service]\nA=x\\ \nB=y\n", []string{"Service/A=x\\", "Service/B=y"}},
		{"repeated sections", "[Unit]\nA=1\n[Service]\nB=2\n[Unit]\nC=3\n", []string{"Unit/A=1", "Service/B=2", "Unit/C=3"}},
		{"X- section and key", "[X-Foo]\nBar=1\n[Unit]\nX-Y=2\n", []string{"X-Foo/Bar=1", "Unit/X-Y=2"}},
		{"empty section", "[Unit]\n[Service]\nA=1\n", []string{"Service/A=1"}},
		{"UTF-8", "[Unit]\nDescription=Grüße 🤠\n", []string{"Unit/Description=Grüße 🤠"}},
		{"100 KB line", "[Service]\nExecStart=/bin/echo " + long + "\n", []string{"Service/ExecStart=/bin/echo " + long}},
		{"only comments", "# a\n# b\n", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, kv(f)); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseModel(t *testing.T) {
	in := "# head 1\n; head 2\n\n[Unit]\n# about A\nA=1\n\n# before Service\n[Service]\nExecStart=/bin/a \\\n  # inside\n  b\n# tail\n"
	f, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &File{
		Header: []string{"# head 1", "; head 2"},
		Sections: []*Section{
			{Name: "Unit", Line: 4, Entries: []*Entry{{Key: "A", Value: "1", Line: 6, Comments: []string{"# about A"}}}},
			{Name: "Service", Line: 9, Comments: []string{"# before Service"}, Entries: []*Entry{
				{Key: "ExecStart", Value: "/bin/a    b", Line: 10, Comments: []string{"# inside"}},
			}},
		},
		Trailer: []string{"# tail"},
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("model (-want +got):\n%s", diff)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		line, col int
		msg       string // substring
	}{
		{"outside section", "# c\nA=1\n", 2, 1, "outside of any section"},
		{"missing equals", "[Unit]\nDescription\n", 2, 1, "missing '='"},
		{"missing equals indented", "[Unit]\n  Description\n", 2, 3, "missing '='"},
		{"missing key", "[Unit]\n=x\n", 2, 1, "missing key name"},
		{"bad header", "[Unit]\nA=1\n[Service\n", 3, 1, "invalid section header"},
		{"header with trailing comment", "[Unit] # x\n", 1, 1, "must end with ']'"},
		{"quote in header", "[Un\"it]\n", 1, 4, "section header"},
		{"invalid UTF-8", "[Unit]\nDescription=a\xffb\n", 2, 14, "not valid UTF-8"},
		{"NUL", "[Unit]\nA=a\x00b\n", 2, 4, "NUL"},
		{"line number after continuation", "[Unit]\nA=1 \\\n 2\nB\n", 4, 1, "missing '='"},
		{"error at continued line start", "[Unit]\nA \\\nB\n", 2, 1, "missing '='"},
		{"too long", "[Unit]\nA=" + strings.Repeat("x", MaxLineLen-1) + "\n", 2, MaxLineLen + 1, "a line of 1048576 bytes or more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error = %v, want *ParseError", err)
			}
			if pe.Line != tt.line || pe.Column != tt.col || !strings.Contains(pe.Msg, tt.msg) {
				t.Errorf("got %d:%d %q, want %d:%d containing %q", pe.Line, pe.Column, pe.Msg, tt.line, tt.col, tt.msg)
			}
			if !strings.HasPrefix(pe.Error(), "line ") {
				t.Errorf("Error() = %q", pe.Error())
			}
		})
	}
}

// realistic is a typical hand-written service, used by benchmarks and the
// fuzz seeds.
const realistic = `# /etc/systemd/system/kubelet.service
[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target
After=network-online.target

[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# This is a file that the user can use for overrides of the kubelet args.
EnvironmentFile=-/etc/default/kubelet
ExecStart=
ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS \
  $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
ExecStartPre=-/sbin/modprobe overlay
Restart=always
StartLimitInterval=0
RestartSec=10
LimitNOFILE=infinity

[Install]
WantedBy=multi-user.target
`

func BenchmarkParse(b *testing.B) {
	data := []byte(realistic)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLineLimits checks Parse at systemd's limits, as systemd 252 was seen
// to load (systemd-analyze verify) or refuse ("No buffer space available")
// units built the same way: a line of LONG_LINE_MAX (1 MiB) bytes is
// refused, one byte less is read; a line joined from continuations may be
// LONG_LINE_MAX bytes long, not one more.
func TestLineLimits(t *testing.T) {
	const prefix = "ExecStart=/bin/echo "
	line := func(n int) string { return prefix + strings.Repeat("x", n-len(prefix)) }
	joined := func(n int) string {
		// Two lines whose join (the backslash becomes a space) is n bytes.
		a := prefix + strings.Repeat("x", (n-len(prefix))/2) + "\\"
		return a + "\n" + strings.Repeat("y", n-len(a))
	}
	for _, tt := range []struct {
		name string
		text string
		ok   bool
		line int
		msg  string
	}{
		{"longest line", line(MaxLineLen), true, 0, ""},
		{"line of LONG_LINE_MAX", line(MaxLineLen + 1), false, 2, "the line is 1048576 bytes long; systemd refuses a line of 1048576 bytes or more"},
		{"comment of LONG_LINE_MAX", "# " + strings.Repeat("c", MaxLineLen-1), false, 2, "the line is 1048576 bytes long"},
		{"longest join", joined(MaxJoinedLen), true, 0, ""},
		{"join past LONG_LINE_MAX", joined(MaxJoinedLen + 1), false, 3, "the line continued from line 2 is 1048577 bytes long when joined; systemd refuses one of more than 1048576 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("[Service]\n" + tt.text + "\n"))
			if tt.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.msg) || pe.Hint != LongLineHint {
				t.Errorf("got line %d: %s (hint %q), want line %d: ...%s... with LongLineHint", pe.Line, pe.Msg, pe.Hint, tt.line, tt.msg)
			}
		})
	}
}

// TestCorpusContinuation pins the 23-continuation kube-apiserver ExecStart:
// joined into one line, it must split into the same 24 words systemd sees.
func TestCorpusContinuation(t *testing.T) {
	path := filepath.Join(corpusDir, "k8s-the-hard-way", "kube-apiserver.service")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("corpus file not present: %v", err)
	}
	f, err := Parse(stripProvenance(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	vs := f.Values(SectionService, "ExecStart")
	if len(vs) != 1 {
		t.Fatalf("ExecStart values: %q", vs)
	}
	argv, err := SplitExec(vs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(argv) != 24 {
		t.Errorf("got %d words, want 24: %q", len(argv), argv)
	}
	g, err := Parse(f.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	argv2, err := SplitExec(g.Values(SectionService, "ExecStart")[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(argv, argv2); diff != "" {
		t.Errorf("canonical form splits differently:\n%s", diff)
	}
}

// parseByLine is Parse as it was before it read the lines out of one copy
// of the text: each line converted to a string of its own. Parse must
// give the same File.
func parseByLine(data []byte) (*File, error) {
	p := parser{f: &File{}}
	bomSeen := false
	lineNum := 0
	for len(data) > 0 {
		var line []byte
		line, data = nextLineBytes(data)
		lineNum++
		if i := bytes.IndexByte(line, 0); i >= 0 {
			return nil, &ParseError{Line: lineNum, Column: i + 1, Msg: "the line contains a NUL byte; unit files are text, so remove it"}
		}
		if len(line) > MaxLineLen {
			return nil, &ParseError{Line: lineNum, Column: MaxLineLen + 1, Msg: fmt.Sprintf("the line is %d bytes long; systemd refuses a line of %d bytes or more, and the unit would not load", len(line), longLineMax), Hint: LongLineHint}
		}
		if !bomSeen && bytes.HasPrefix(line, []byte(bom)) {
			line = line[len(bom):]
			bomSeen = true
		}
		// systemd skips comment lines before it looks at continuations, so
		// a comment inside a continued entry neither ends nor extends it.
		if t := bytes.TrimLeft(line, whitespace); len(t) > 0 && (t[0] == '#' || t[0] == ';') {
			p.comment(string(t))
			continue
		}
		if p.cont != nil {
			if len(p.cont)+len(line) > MaxJoinedLen {
				return nil, &ParseError{Line: lineNum, Column: 1, Msg: fmt.Sprintf("the line continued from line %d is %d bytes long when joined; systemd refuses one of more than %d bytes, and the unit would not load", p.contLine, len(p.cont)+len(line), MaxJoinedLen), Hint: LongLineHint}
			}
			p.cont = append(p.cont, line...)
		}
		// The escape state before the new part is always clear (the joined
		// text ends in a space), so checking the new line alone suffices.
		if endsEscaped(line) {
			if p.cont == nil {
				p.cont = append([]byte(nil), line...)
				p.contLine = lineNum
			}
			// systemd replaces the continuation backslash with a space.
			p.cont[len(p.cont)-1] = ' '
			continue
		}
		text, start := string(line), lineNum
		if p.cont != nil {
			text, start = string(p.cont), p.contLine
			p.cont = nil
		}
		if err := p.line(text, start); err != nil {
			return nil, err
		}
	}
	if p.cont != nil {
		// systemd parses a continuation left open at the end of the file.
		if err := p.line(string(p.cont), p.contLine); err != nil {
			return nil, err
		}
	}
	if len(p.f.Sections) == 0 {
		// Without sections every comment is "before the first section".
		p.f.Header = append(p.f.Header, p.pending...)
	} else {
		p.f.Trailer = append(p.f.Trailer, p.pending...)
	}
	return p.f, nil
}

func nextLineBytes(data []byte) (line, rest []byte) {
	i := bytes.IndexAny(data, "\r\n")
	if i < 0 {
		return data, nil
	}
	line, rest = data[:i], data[i+1:]
	if len(rest) > 0 && (rest[0] == '\r' || rest[0] == '\n') && rest[0] != data[i] {
		rest = rest[1:]
	}
	return line, rest
}

func checkParseByLine(t *testing.T, data []byte) {
	t.Helper()
	f, err := Parse(data)
	want, werr := parseByLine(data)
	if fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Fatalf("Parse(%q): error %v, want %v", data, err, werr)
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Fatalf("Parse(%q) (-want +got):\n%s", data, diff)
	}
}

func TestParseByLine(t *testing.T) {
	for _, seed := range append(append([]string{realistic}, scanSeeds...), canonicalSeeds...) {
		checkParseByLine(t, []byte(seed))
	}
}

func FuzzParseByLine(f *testing.F) {
	for _, seed := range append(append([]string{realistic}, canonicalSeeds...), scanSeeds[:len(scanSeeds)-2]...) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkParseByLine(t, data)
	})
}
