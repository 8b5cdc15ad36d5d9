package hooks

import (
	"regexp"
	"testing"
)

// The regular expressions that isEnvName and isDirectiveKey check without.
var (
	envNameRE      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	directiveKeyRE = regexp.MustCompile(`^[A-Za-z0-9-]+$`)
)

func checkNames(t *testing.T, s string) {
	t.Helper()
	if got, want := isEnvName(s), envNameRE.MatchString(s); got != want {
		t.Errorf("isEnvName(%q) = %v, the expression says %v", s, got, want)
	}
	if got, want := isDirectiveKey(s), directiveKeyRE.MatchString(s); got != want {
		t.Errorf("isDirectiveKey(%q) = %v, the expression says %v", s, got, want)
	}
}

func TestNames(t *testing.T) {
	for _, s := range []string{"", "A", "_", "9", "-", "a-b", "A_B", "_9", "9a", "PATH", "ExecStart", "Exec Start", " A", "A ",
		"é", "a\n", "a\x00", "\xff", "Z", "z", "[", "`", "{", "@", "/", ":", "A-", "-A", "a.b"} {
		checkNames(t, s)
	}
}

func FuzzNames(f *testing.F) {
	f.Add("PATH")
	f.Add("After-x")
	f.Fuzz(checkNames)
}
