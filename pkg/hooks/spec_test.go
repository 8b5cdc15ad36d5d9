package hooks

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseValidSpec(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, diags := Parse("valid.yaml", data)
	if len(diags) != 0 {
		t.Fatalf("unexpected diagnostics:\n%v", diags)
	}
	no, yes := false, true
	env := map[string]string{"PATH": "/usr/sbin:/usr/bin", "DEBUG": "true", "RETRIES": "3"}
	want := &Spec{
		APIVersion: APIVersion,
		Kind:       Kind,
		File:       "valid.yaml",
		Hooks: []Hook{
			{
				Name:        "create-swapfile",
				Description: "Create a 1 GiB swap file",
				Exec:        []string{"/usr/bin/fallocate", "-l", "1G", "/swap1"},
				Pre: [][]string{
					{"/usr/bin/mkdir", "-p", "/var/lib/swap"},
					{"/bin/sh", "-c", "echo $HOME"},
				},
				Type:             "oneshot",
				RemainAfterExit:  &yes,
				ExpandEnv:        true,
				Env:              env,
				EnvironmentFile:  "/etc/default/swap",
				WorkingDirectory: "/var/lib/swap",
				User:             "0",
				Group:            "root",
				Restart:          "on-failure",
				RestartSec:       "5",
				TimeoutStartSec:  "1min 30s",
				TimeoutStopSec:   "infinity",
				Requires:         []string{"local-fs.target"},
				Wants:            []string{"network-online.target"},
				After:            []string{"local-fs.target", "network-online.target"},
				Before:           []string{"swap1.swap"},
				WantedBy:         []string{},
				Directives: map[string][]string{
					"Unit":    {"ConditionPathExists=!/swap1", "RequiresMountsFor=/"},
					"Service": {"ExecStart=", "Nice=5"},
				},
			},
			{
				Name:           "swap1.swap",
				UseRawName:     true,
				UseRawManifest: true,
				Enabled:        &no,
				Manifest:       "[Unit]\nDescription=Swap file\n\n[Swap]\nWhat=/swap1\n",
			},
			{
				Name:    "kubelet.service",
				Dropins: []Dropin{{Name: "10-env.conf", Contents: "[Service]\nEnvironment=A=b\n"}},
			},
			{
				Name:     "agent",
				Exec:     []string{"/usr/local/bin/agent", "--config=/etc/agent.yaml"},
				Env:      env,
				Manifest: "LimitNOFILE=65536\n",
				WantedBy: []string{"multi-user.target"},
			},
			{Name: "systemd-resolved.service", Mask: true},
			{Name: "old-agent", Enabled: &no},
		},
	}
	// EquateEmpty is not used: a nil and an empty WantedBy mean different
	// things, and the comparison must see it.
	if diff := cmp.Diff(want, spec, cmpopts.IgnoreUnexported(Spec{})); diff != "" {
		t.Errorf("Parse mismatch (-want +got):\n%s", diff)
	}
	if spec.Hooks[1].WantedBy != nil || spec.Hooks[0].WantedBy == nil {
		t.Errorf("WantedBy: missing must be nil and [] must be empty, got %#v and %#v", spec.Hooks[1].WantedBy, spec.Hooks[0].WantedBy)
	}
	if spec.Hooks[1].IsEnabled() || !spec.Hooks[0].IsEnabled() {
		t.Errorf("IsEnabled: want false for enabled: false and true when not given")
	}
}

// TestParseKeepsHookIndexes checks that Hooks[i] stays the entry written as
// hooks[i] when an earlier entry is not a hook at all, since render names
// hooks by index.
func TestParseKeepsHookIndexes(t *testing.T) {
	spec, diags := Parse("hooks.yaml", []byte(header+"- just a string\n- name: b\n  exec: [/bin/true]\n"))
	if !diags.HasErrors(false) {
		t.Fatalf("want an error for hooks[0]")
	}
	if len(spec.Hooks) != 2 || spec.Hooks[0].Name != "" || spec.Hooks[1].Name != "b" {
		t.Fatalf("Hooks = %+v, want a zero hook then b", spec.Hooks)
	}
	if got := spec.Where("hooks[1].name"); got.Line != 5 {
		t.Errorf(`Where("hooks[1].name") = %v, want line 5`, got)
	}
}

// TestParseReturnsWhatItCould checks the contract that a mapping gives a
// Spec holding every field that decoded, even next to errors, so that
// render can report its own problems too.
func TestParseReturnsWhatItCould(t *testing.T) {
	spec, diags := Parse("hooks.yaml", []byte("apiVersion: v0\nkind: Hooks\nhooks:\n- name: a\n  exec: /bin/true\n  user: app\n  type: nope\n"))
	if spec == nil || !diags.HasErrors(false) {
		t.Fatalf("want a spec and errors, got %v, %v", spec, diags)
	}
	h := spec.Hooks[0]
	if spec.APIVersion != "v0" || h.Name != "a" || h.User != "app" || h.Type != "nope" || h.Exec != nil {
		t.Errorf("got %+v", spec)
	}
	for _, src := range []string{"", "- a\n", "a: [\n", "just text\n"} {
		if spec, _ := Parse("x", []byte(src)); spec != nil {
			t.Errorf("Parse(%q) returned a spec; want nil for a document that is not a mapping", src)
		}
	}
}

func TestParseWarningsAndStrict(t *testing.T) {
	_, diags := Parse("hooks.yaml", []byte(header[:len(header)-1]+" []\n"))
	if diags.HasErrors(false) || !diags.HasErrors(true) {
		t.Errorf("hooks: [] must be a warning only, got %v", diags)
	}
}

func TestParseDiagnosticsSorted(t *testing.T) {
	src := header + "- name: a\n  exec: /x\n  user: [u]\n- name: a\n  type: x\n  colour: red\n"
	_, diags := Parse("hooks.yaml", []byte(src))
	for i := 1; i < len(diags); i++ {
		a, b := diags[i-1].Pos, diags[i].Pos
		if a.Line > b.Line || a.Line == b.Line && a.Column > b.Column {
			t.Errorf("diagnostics not sorted: %v before %v", a, b)
		}
	}
	if len(diags) < 4 {
		t.Errorf("want at least 4 diagnostics, got %v", diags)
	}
}
