package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"wantedBy", "exec", "environmentFile", "oneshot", "type"}
	for in, want := range map[string]string{
		"wanted_by":      "wantedBy",
		"WANTEDBY":       "wantedBy",
		"exce":           "exec",
		"enviromentFile": "environmentFile",
		"OneShot":        "oneshot",
		"typo":           "type",
		"kubelet":        "",
		"":               "",
	} {
		if got := Closest(in, known); got != want {
			t.Errorf("Closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3}, {"ü", "u", 1}, {"", "abc", 3}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
