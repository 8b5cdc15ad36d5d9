package units

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/hosttools"
)

// TestInteractionClassesMatchSystemd reads the directive table of the
// installed systemd (systemd --dump-configuration-items: every section's
// keys with the kind of value its parser takes) and checks the classes
// that systemd's own parser kinds define: every CONDITION key of [Unit] is
// in the Condition or Assert class, every SOCKET key of [Socket] in the
// Listen class, every TIMER key of [Timer] in the timer class, and every
// key of a class is one systemd reads in that section.
func TestInteractionClassesMatchSystemd(t *testing.T) {
	out, err := exec.Command("/usr/lib/systemd/systemd", "--dump-configuration-items").Output()
	if err != nil {
		hosttools.Unavailable(t, "systemd --dump-configuration-items: %v", err)
	}
	kinds := map[string]string{} // "Section.Key" -> kind
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
		case strings.Contains(line, "="):
			k, v, _ := strings.Cut(line, "=")
			kind, _, _ := strings.Cut(v, " ")
			kinds[section+"."+k] = kind
		}
	}
	if len(kinds) < 500 {
		t.Fatalf("read only %d directives from systemd", len(kinds))
	}
	want := map[string]map[string]string{
		SectionUnit:   {"CONDITION": ""}, // Condition or Assert, by prefix
		SectionSocket: {"SOCKET": "Listen"},
		SectionTimer:  {"TIMER": "OnActiveSec"},
	}
	for full, kind := range kinds {
		sec, key, _ := strings.Cut(full, ".")
		class, ok := want[sec][kind]
		if !ok {
			continue
		}
		if class == "" {
			class = "Condition"
			if strings.HasPrefix(key, "Assert") {
				class = "Assert"
			}
		}
		if got := classOf[full]; got != class {
			t.Errorf("%s (%s) is in class %q, want %q", full, kind, got, class)
		}
	}
	for full, class := range classOf {
		if _, ok := kinds[full]; !ok {
			t.Errorf("class %s: systemd does not read %s", class, full)
		}
	}
}
