package examples_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/cli"
)

// kopsGoldenHeader is the line before each unit of the golden's kops
// nodeup section (pkg/kops's TestExampleRenderings writes it).
var kopsGoldenHeader = regexp.MustCompile(`^# (\S+) \((enable, start|stop, disable)(; no file)?\)$`)

// TestKopsReadmeRender runs the commands of the kops example's README, as
// written there, from the example's directory, and checks that each prints
// what its comment says: the canonical units are the golden's canonical
// section byte for byte, and the units of --compat kops are the golden's
// units of what kops nodeup writes, each under its name.
func TestKopsReadmeRender(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("kops", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Render the hooks you have\n")
	if !ok {
		t.Fatal("kops/README.md has no section Render the hooks you have")
	}
	_, block, ok := strings.Cut(section, "```\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatal("the README's Render section has no code block")
	}
	t.Chdir("kops")
	commands := 0
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		command, comment, _ := strings.Cut(line, "#")
		comment = strings.TrimSpace(comment)
		args := strings.Fields(command)
		if len(args) < 2 || args[0] != "hostprov" || args[1] != "render" {
			t.Fatalf("README line %q is no hostprov render command", line)
		}
		ig := ""
		for i, a := range args {
			if a == "--instance-group" && i+1 < len(args) {
				ig = args[i+1]
			}
		}
		golden, err := os.ReadFile(filepath.Join("..", "..", "testdata", "golden", "kops", "example."+ig+".txt"))
		if err != nil {
			t.Fatalf("README line %q: %v", line, err)
		}
		compat, canonical, ok := strings.Cut(string(golden), "## canonical: what hostprov renders\n\n")
		if !ok {
			t.Fatalf("the golden of %s has no canonical section", ig)
		}
		var stdout, stderr bytes.Buffer
		if code := cli.Run(args[1:], nil, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
			t.Fatalf("%s: exit %d\n%s", command, code, stderr.String())
		}
		out := stdout.String()
		commands++
		switch comment {
		case "canonical units":
			if out != canonical {
				t.Errorf("%s prints\n%s\nwant the canonical units of testdata/golden/kops/example.%s.txt:\n%s", command, out, ig, canonical)
			}
		case "what kops nodeup writes":
			units := kopsGoldenUnits(t, compat)
			if len(units) == 0 {
				t.Fatalf("the golden of %s has no kops nodeup unit", ig)
			}
			for name, contents := range units {
				if !strings.Contains(out, "# "+name+"\n"+contents) {
					t.Errorf("%s does not print %s as kops nodeup writes it:\n%s\ngot:\n%s", command, name, contents, out)
				}
			}
		default:
			t.Errorf("README line %q: no check for what %q promises", line, comment)
		}
	}
	if commands != 2 {
		t.Errorf("the README's Render section has %d commands, want the two this test checks", commands)
	}
}

// kopsGoldenUnits returns the files of the golden's kops nodeup section
// by unit name; a unit kops writes no file for has none.
func kopsGoldenUnits(t *testing.T, section string) map[string]string {
	t.Helper()
	units := map[string]string{}
	name, noFile := "", false
	var contents strings.Builder
	flush := func() {
		if name != "" && !noFile {
			units[name] = strings.TrimSuffix(contents.String(), "\n")
		}
		contents.Reset()
	}
	for _, line := range strings.SplitAfter(section, "\n") {
		if m := kopsGoldenHeader.FindStringSubmatch(strings.TrimSuffix(line, "\n")); m != nil {
			flush()
			name, noFile = m[1], m[3] != ""
			continue
		}
		if name != "" {
			contents.WriteString(line)
		}
	}
	flush()
	return units
}
