package hooks

import "regexp"

// isEnvName reports whether s is an environment variable name:
// ^[A-Za-z_][A-Za-z0-9_]*$, checked without a regular expression, which
// cost more than the rest of decoding an env map.
func isEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isDirectiveKey reports whether s is a directive key: ^[A-Za-z0-9-]+$.
func isDirectiveKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// stepNameRE keeps step names plain: they are shown in status output and
// written in the unit as comments.
var stepNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
