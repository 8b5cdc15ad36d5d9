// Package suggest finds what a mistyped name was meant to be, for the "did
// you mean" hints of every diagnostic: spec fields, kops fields and roles,
// systemd sections and directives.
package suggest

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Closest returns the entry of known that s was most likely meant to be,
// or "" when none is close. Case, "-", "_" and spaces are ignored first,
// so that "wanted_by" finds wantedBy and "OneShot" finds oneshot;
// otherwise the closest entry within a few edits (a transposition counts
// as one; more edits are allowed for longer names) wins, the earlier one
// on a tie.
//
// It allocates nothing: it runs for every unknown name of a spec, against
// lists of hundreds of systemd directives, and building a replacer and a
// distance matrix per entry made a spec with an unknown field in each of
// its hooks cost gigabytes.
func Closest(s string, known []string) string {
	for _, k := range known {
		if sameLoose(k, s) {
			return k
		}
	}
	var sbuf, kbuf [maxRunes]rune
	x, xn := lowerRunes(sbuf[:0], s)
	best, bestDist := "", -1
	for _, k := range known {
		limit := 2
		switch {
		case len(k) <= 4:
			limit = 1
		case len(k) >= 10:
			limit = 3
		}
		y, yn := lowerRunes(kbuf[:0], k)
		dist := xn + yn
		if xn <= maxRunes && yn <= maxRunes {
			dist = osa(x, y)
		}
		if dist <= limit && (bestDist < 0 || dist < bestDist) {
			best, bestDist = k, dist
		}
	}
	return best
}

// sameLoose reports whether a and b are the same name when case, "-", "_"
// and spaces are ignored.
func sameLoose(a, b string) bool {
	for {
		a, b = strings.TrimLeft(a, "-_ "), strings.TrimLeft(b, "-_ ")
		if a == "" || b == "" {
			return a == b
		}
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if unicode.ToLower(ra) != unicode.ToLower(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
}

// maxRunes is the longest name Distance compares: names are short, and
// very long input is not a typo of any of them.
const maxRunes = 64

// lowerRunes appends the runes of s, in lower case, to buf when s has at
// most maxRunes of them, and returns them with the number of runes of s.
func lowerRunes(buf []rune, s string) ([]rune, int) {
	n := utf8.RuneCountInString(s)
	if n > maxRunes {
		return buf, n
	}
	for _, r := range s {
		buf = append(buf, unicode.ToLower(r))
	}
	return buf, n
}

// Distance is the optimal string alignment distance between a and b, in
// runes: insertions, deletions, substitutions and swaps of adjacent
// characters each count as one. Past maxRunes runes in either, it is the
// sum of their lengths.
func Distance(a, b string) int {
	var abuf, bbuf [maxRunes]rune
	x, xn := runes(abuf[:0], a)
	y, yn := runes(bbuf[:0], b)
	if xn > maxRunes || yn > maxRunes {
		return xn + yn
	}
	return osa(x, y)
}

// runes is lowerRunes without the change of case.
func runes(buf []rune, s string) ([]rune, int) {
	n := utf8.RuneCountInString(s)
	if n > maxRunes {
		return buf, n
	}
	for _, r := range s {
		buf = append(buf, r)
	}
	return buf, n
}

// osa is the optimal string alignment distance of x and y, which have at
// most maxRunes runes each. It keeps three rows of the distance matrix,
// the last two and the one being filled, on the stack.
func osa(x, y []rune) int {
	var rows [3][maxRunes + 1]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(y); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
