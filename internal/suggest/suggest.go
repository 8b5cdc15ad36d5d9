// Package suggest finds what a mistyped name was meant to be, for the "did
// you mean" hints of every diagnostic: spec fields, kops fields and roles,
// systemd sections and directives.
package suggest

import "strings"

// Closest returns the entry of known that s was most likely meant to be,
// or "" when none is close. Case, "-", "_" and spaces are ignored first,
// so that "wanted_by" finds wantedBy and "OneShot" finds oneshot;
// otherwise the closest entry within a few edits (a transposition counts
// as one; more edits are allowed for longer names) wins, the earlier one
// on a tie.
func Closest(s string, known []string) string {
	norm := func(x string) string {
		return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(x))
	}
	for _, k := range known {
		if norm(k) == norm(s) {
			return k
		}
	}
	best, bestDist := "", -1
	for _, k := range known {
		limit := 2
		switch {
		case len(k) <= 4:
			limit = 1
		case len(k) >= 10:
			limit = 3
		}
		if dist := Distance(strings.ToLower(s), strings.ToLower(k)); dist <= limit && (bestDist < 0 || dist < bestDist) {
			best, bestDist = k, dist
		}
	}
	return best
}

// Distance is the optimal string alignment distance between a and b, in
// runes: insertions, deletions, substitutions and swaps of adjacent
// characters each count as one.
func Distance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// Names are short; very long input is not a typo of any of them.
	if len(x) > 64 || len(y) > 64 {
		return len(x) + len(y)
	}
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
