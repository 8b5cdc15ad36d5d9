package units

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hostprov/hostprov/internal/suggest"
)

// knownSections are the sections systemd reads in unit files; the order is
// the one used in messages.
var knownSections = []string{SectionUnit, SectionService, SectionSocket, SectionMount, SectionAutomount,
	SectionSwap, SectionTimer, SectionPath, SectionSlice, SectionScope, SectionInstall}

// KnownSection reports whether systemd reads a section of this name in unit
// files. Sections starting with "X-" are extensions that systemd ignores on
// purpose, so they count as known.
func KnownSection(name string) bool {
	if strings.HasPrefix(name, "X-") {
		return true
	}
	for _, s := range knownSections {
		if s == name {
			return true
		}
	}
	return false
}

// KnownDirective reports whether systemd knows key in section (see
// directives_gen.go for the systemd version the list comes from). Keys
// starting with "X-" are extensions and always known, as are keys of "X-"
// sections.
func KnownDirective(section, key string) bool {
	if strings.HasPrefix(key, "X-") || strings.HasPrefix(section, "X-") {
		return true
	}
	if key == "" {
		return false
	}
	r := sectionRank(section)
	if r == otherRank {
		return false
	}
	spans := &directiveIndex()[r]
	// The keys of section starting with key's first byte, sorted.
	sp := spans[key[0]]
	lo, hi, skip := int(sp.lo), int(sp.hi), len(section)+1
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch k := knownDirectives[m][skip:]; {
		case k == key:
			return true
		case k < key:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

// span is a range of indexes into knownDirectives.
type span struct{ lo, hi uint16 }

// directiveIndex gives, for each section with known keys (by its
// sectionRank) and each first byte of a key, where in knownDirectives the
// keys of that section starting with that byte are, so that KnownDirective
// compares a key with a handful of keys of its own section instead of
// searching the whole table. Building it is one pass over the table, done
// on first use.
var directiveIndex = sync.OnceValue(func() *[otherRank + 2][256]span {
	var idx [otherRank + 2][256]span
	for i, d := range knownDirectives {
		sect, key, _ := strings.Cut(d, ".")
		r := sectionRank(sect)
		if r == otherRank || key == "" {
			panic("units: known directive " + d + " is not in a section of its own rank")
		}
		sp := &idx[r][key[0]]
		if sp.hi == 0 {
			sp.lo = uint16(i)
		}
		sp.hi = uint16(i + 1)
	}
	return &idx
})

// sectionVocab is what the suggestions need of the known keys of one
// section: the keys, sorted, and the same keys in lower case.
type sectionVocab struct {
	keys, lower []string
}

// vocab holds the sectionVocab of every section with known keys. It is
// built once: suggestions are made for every unknown key of a spec, and
// listing and lowering the keys for each one made a spec of many hooks
// with an unknown directive each cost gigabytes.
var vocab = sync.OnceValue(func() map[string]sectionVocab {
	m := map[string]sectionVocab{}
	for _, d := range knownDirectives {
		sect, key, _ := strings.Cut(d, ".")
		v := m[sect]
		v.keys = append(v.keys, key)
		v.lower = append(v.lower, strings.ToLower(key))
		m[sect] = v
	}
	return m
})

// sectionKeys returns the known keys of a section, sorted. The slice is
// shared: callers must not change it.
func sectionKeys(section string) []string {
	return vocab()[section].keys
}

// closestDirective returns the known key of section closest to key: one
// that differs only in letter case, or else the one at the smallest edit
// distance if that distance is small for the key's length (at most 2, or a
// third of its length). It returns "" when nothing is close or key is known.
func closestDirective(section, key string) string {
	if KnownDirective(section, key) {
		return ""
	}
	v := vocab()[section]
	for _, k := range v.keys {
		if strings.EqualFold(k, key) {
			return k
		}
	}
	best, bestDist := "", max(2, len(key)/3)+1
	lower := strings.ToLower(key)
	n := utf8.RuneCountInString(lower)
	for i, k := range v.keys {
		// The distance is at least the difference in length (known keys
		// are ASCII): a key that cannot come closer is not compared.
		if d := n - len(v.lower[i]); d >= bestDist || -d >= bestDist {
			continue
		}
		// Keys are sorted, so on a tie the bytewise-first one wins.
		if d := suggest.Distance(lower, v.lower[i]); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// SuggestDirective returns a short hint for a key that section does not
// know, meant to follow a warning such as `unknown key "ExecStrat" in
// [Service]`:
//
//   - when a key of this section differs only in letter case:
//     `did you mean "ExecStart"?`;
//   - when the key (in any letter case) belongs to other sections:
//     `"WantedBy" belongs in [Install]` (all such sections are listed);
//   - otherwise, when a key of this section is close (see
//     closestDirective): `did you mean "ExecStart"?`;
//   - otherwise "", as it is for known keys.
func SuggestDirective(section, key string) string {
	if KnownDirective(section, key) {
		return ""
	}
	closest := closestDirective(section, key)
	if closest != "" && strings.EqualFold(closest, key) {
		return fmt.Sprintf("did you mean %q?", closest)
	}
	var homes []string
	name := key
	for _, s := range knownSections {
		if s == section {
			continue
		}
		for _, k := range sectionKeys(s) {
			if strings.EqualFold(k, key) {
				homes = append(homes, "["+s+"]")
				name = k
				break
			}
		}
	}
	if len(homes) > 0 {
		return fmt.Sprintf("%q belongs in %s", name, joinOr(homes))
	}
	if closest != "" {
		return fmt.Sprintf("did you mean %q?", closest)
	}
	return ""
}

func joinOr(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
