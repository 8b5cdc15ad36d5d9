package units

import (
	"sort"
	"testing"
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
	if got := ClosestDirective("Service", "Restrat"); got != "Restart" {
		t.Errorf("ClosestDirective = %q", got)
	}
	if got := SuggestSection("service"); got != "did you mean [Service]?" {
		t.Errorf("SuggestSection = %q", got)
	}
	if got := SuggestSection("Network"); got != "" {
		t.Errorf("SuggestSection(Network) = %q", got)
	}
}
