package suggest

import (
	"fmt"
	"strings"
	"testing"
)

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

// TestDistanceMatrix checks Distance, which keeps three rows, against the
// whole matrix of the optimal string alignment distance, on every pair of
// short strings over a small alphabet, where swaps and repeats abound.
func TestDistanceMatrix(t *testing.T) {
	var words []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		words = append(words, prefix)
		if n == 0 {
			return
		}
		for _, c := range []string{"a", "b", "ü"} {
			gen(prefix+c, n-1)
		}
	}
	gen("", 4)
	for _, a := range words {
		for _, b := range words {
			if got, want := Distance(a, b), matrixDistance(a, b); got != want {
				t.Fatalf("Distance(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
	long := strings.Repeat("x", 65)
	if got := Distance(long, "xy"); got != 67 {
		t.Errorf("Distance of a 65-rune string and a 2-rune one = %d, want their lengths added, 67", got)
	}
}

// matrixDistance is the optimal string alignment distance computed with
// the whole matrix, as the textbook writes it.
func matrixDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// TestClosestAllocates checks that Closest allocates nothing, however
// long the list: it runs for every unknown name of a spec against
// hundreds of directives, and once built a replacer for every entry.
func TestClosestAllocates(t *testing.T) {
	var known []string
	for i := 0; i < 300; i++ {
		known = append(known, fmt.Sprintf("Directive_%dName", i))
	}
	for _, s := range []string{"DirectiveX", "directive_17name", strings.Repeat("ü", 100)} {
		if n := testing.AllocsPerRun(20, func() { Closest(s, known) }); n != 0 {
			t.Errorf("Closest(%.20q, 300 names) allocates %v times, want none", s, n)
		}
	}
	if got := Closest("directive-17-name", known); got != "Directive_17Name" {
		t.Errorf("Closest ignoring case and separators = %q, want Directive_17Name", got)
	}
}
