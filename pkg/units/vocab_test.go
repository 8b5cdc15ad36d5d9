package units

import (
	"sort"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/suggest"
)

func TestKnownDirective(t *testing.T) {
	known := [][2]string{
		{"Service", "ExecStart"}, {"Unit", "Description"}, {"Install", "WantedBy"}, {"Install", "UpheldBy"},
		{"Swap", "What"}, {"Mount", "Where"}, {"Timer", "OnCalendar"}, {"Socket", "ListenStream"},
		{"Service", "StartLimitBurst"}, {"Service", "X-Anything"}, {"X-Mine", "Whatever"}, {"Path", "PathExists"},
	}
	for _, k := range known {
		if !KnownDirective(k[0], k[1]) {
			t.Errorf("KnownDirective(%q, %q) = false", k[0], k[1])
		}
	}
	unknown := [][2]string{{"Service", "StandOutput"}, {"Unit", "WantedBy"}, {"Service", "execstart"}, {"Unit", "Author"}, {"Bogus", "ExecStart"}}
	for _, k := range unknown {
		if KnownDirective(k[0], k[1]) {
			t.Errorf("KnownDirective(%q, %q) = true", k[0], k[1])
		}
	}
	if !sort.StringsAreSorted(knownDirectives) {
		t.Error("knownDirectives is not sorted; regenerate with go generate")
	}
	for _, s := range []string{"Unit", "Service", "Install", "X-Foo", "Scope"} {
		if !KnownSection(s) {
			t.Errorf("KnownSection(%q) = false", s)
		}
	}
	for _, s := range []string{"service", "Services", "", "Network"} {
		if KnownSection(s) {
			t.Errorf("KnownSection(%q) = true", s)
		}
	}
}

func TestSuggestDirective(t *testing.T) {
	tests := []struct{ section, key, want string }{
		{"Service", "ExecStrat", `did you mean "ExecStart"?`},
		{"Service", "execstart", `did you mean "ExecStart"?`},
		{"Service", "StandOutput", `did you mean "StandardOutput"?`},
		{"Unit", "WantedBy", `"WantedBy" belongs in [Install]`},
		{"Service", "wantedby", `"WantedBy" belongs in [Install]`},
		{"Service", "OnCalendar", `"OnCalendar" belongs in [Timer]`},
		{"Unit", "User", `"User" belongs in [Service], [Socket], [Mount] or [Swap]`},
		{"Service", "ExecStart", ""},
		{"Unit", "Author", ""},
		{"Service", "X-Foo", ""},
	}
	for _, tt := range tests {
		if got := SuggestDirective(tt.section, tt.key); got != tt.want {
			t.Errorf("SuggestDirective(%q, %q) = %q, want %q", tt.section, tt.key, got, tt.want)
		}
	}
	if got := closestDirective("Service", "Restrat"); got != "Restart" {
		t.Errorf("closestDirective = %q", got)
	}
}

// TestClosestDirectiveFull checks closestDirective, which skips keys whose
// length alone puts them too far, against comparing every key, for a
// typo of each kind in every known key of a few sections.
func TestClosestDirectiveFull(t *testing.T) {
	for _, d := range knownDirectives {
		for i := 0; i < len(d); i++ {
			if d[i] >= 0x80 {
				t.Fatalf("known directive %q is not ASCII; closestDirective's length bound counts bytes", d)
			}
		}
	}
	full := func(section, key string) string {
		if KnownDirective(section, key) {
			return ""
		}
		keys := sectionKeys(section)
		for _, k := range keys {
			if strings.EqualFold(k, key) {
				return k
			}
		}
		best, bestDist := "", max(2, len(key)/3)+1
		for _, k := range keys {
			if d := suggest.Distance(strings.ToLower(key), strings.ToLower(k)); d < bestDist {
				best, bestDist = k, d
			}
		}
		return best
	}
	checked := 0
	for _, section := range []string{"Unit", "Service", "Install", "Timer"} {
		for _, k := range sectionKeys(section) {
			typos := []string{k[1:], k[:len(k)-1], k + "s", "X" + k, strings.ToLower(k), k[:len(k)/2], k + k, "Ünï" + k}
			if len(k) > 3 {
				typos = append(typos, k[:1]+k[2:1+len(k)/2]+k[1:2]+k[1+len(k)/2:], k[:2]+k[3:])
			}
			for _, typo := range typos {
				checked++
				if got, want := closestDirective(section, typo), full(section, typo); got != want {
					t.Errorf("closestDirective(%q, %q) = %q, want %q", section, typo, got, want)
				}
			}
		}
	}
	if checked < 1000 {
		t.Errorf("only %d typos checked", checked)
	}
}

// TestSuggestDirectiveAllocates checks that a suggestion allocates only
// for its result, whatever the number of known keys: it is made for every
// unknown key of a spec, and once listed and lowered every key of every
// section for each.
func TestSuggestDirectiveAllocates(t *testing.T) {
	for _, key := range []string{"ExecStrat", "wantedby", "Author"} {
		if n := testing.AllocsPerRun(20, func() { SuggestDirective("Service", key) }); n > 6 {
			t.Errorf("SuggestDirective(Service, %q) allocates %v times, want at most 6", key, n)
		}
	}
}

// TestKnownDirectiveIndex holds KnownDirective to a search of the whole
// table, for every known directive and for keys and sections close to
// them.
func TestKnownDirectiveIndex(t *testing.T) {
	inTable := func(section, key string) bool {
		if strings.HasPrefix(key, "X-") || strings.HasPrefix(section, "X-") {
			return true
		}
		full := section + "." + key
		i := sort.SearchStrings(knownDirectives, full)
		return i < len(knownDirectives) && knownDirectives[i] == full
	}
	sections := append([]string{"", "X-Foo", "Services", "Servic", "unit"}, knownSections...)
	for _, d := range knownDirectives {
		sect, key, _ := strings.Cut(d, ".")
		keys := []string{key, key[:len(key)-1], key + "x", strings.ToLower(key), strings.ToUpper(key[:1]) + key[1:] + "A", "", "." + key, "X-" + key}
		for _, s := range append(sections, sect) {
			for _, k := range keys {
				if got, want := KnownDirective(s, k), inTable(s, k); got != want {
					t.Errorf("KnownDirective(%q, %q) = %v, want %v", s, k, got, want)
				}
			}
		}
	}
}
