package hooks_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/pkg/hooks"
)

func ptr[T any](v T) *T { return &v }

// TestEncodeRoundTrip: what Encode writes, Parse reads back as the same
// hooks, without a diagnostic, and encoding those again gives the same
// bytes. The hooks set every field Encode writes, with values YAML would
// read as something else when written plain (a number, a boolean, a
// leading space, a colon, a text without its final newline).
func TestEncodeRoundTrip(t *testing.T) {
	hs := []hooks.Hook{
		{
			Name: "app", Description: "yes: it is", Enabled: ptr(false), Requires: []string{"a.service"}, Wants: []string{"b.service"},
			Before: []string{"c.target"}, After: []string{"network-online.target"}, WantedBy: []string{},
			Type: "oneshot", Exec: []string{"/bin/echo", "true", "1", " x", "a: b"}, Pre: [][]string{{"/bin/true"}, {"/bin/echo", "#no"}},
			ExpandEnv: true, Specifiers: true, RemainAfterExit: ptr(true), Env: map[string]string{"B": "2", "A": "yes"},
			EnvironmentFile: "/etc/app.env", WorkingDirectory: "/var/lib/app", User: "app", Group: "app",
			Restart: "on-failure", RestartSec: "5s", TimeoutStartSec: "1min", TimeoutStopSec: "10s",
			StateDirectory: "app", LogsDirectory: "app", ConfigurationDirectory: "app",
			Directives: map[string][]string{"Unit": {"StartLimitBurst=3"}, "Service": {"Nice=5", "Nice="}},
			Dropins:    []hooks.Dropin{{Name: "10-a.conf", Contents: "[Service]\nNice=1\n"}},
		},
		{Name: "steps", Steps: []hooks.Step{{Name: "one", Run: []string{"/bin/true"}}, {Name: "two", Sh: "echo a\necho b\n"}}, When: hooks.WhenAlways, Disruption: hooks.DisruptionReboot},
		{Name: "raw.service", UseRawName: true, UseRawManifest: true,
			Manifest: "[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"},
		{Name: "noeol.service", UseRawName: true, UseRawManifest: true, Manifest: "[Service]\nExecStart=/bin/true"},
		{Name: "crlf.service", UseRawName: true, UseRawManifest: true, ExactBytes: true, Manifest: "[Service]\r\nExecStart=/bin/true\r\n\r\n",
			Dropins: []hooks.Dropin{{Name: "a.conf", Contents: "[Service]\r\nNice=1"}}},
		{Name: "m.timer", Mask: true},
		{Name: "mnt-lun.mount", Manifest: "What=/dev/sdb\nWhere=/mnt/lun", DeviceTimeout: "10min"},
		{Name: "getty@tty1.service", UseRawName: true, Dropins: []hooks.Dropin{{Name: "a.conf", Contents: "[Service]\nTTYVTDisallocate=no\n"}}},
		{Name: "files",
			Files: []hooks.File{
				{Path: "/etc/a", Contents: ptr("line\n"), Mode: ptr(uint32(0o600)), User: "app", Group: "1000", Overwrite: true},
				{Path: "/etc/b", Contents: ptr(""), Mode: ptr(uint32(0o7777))},
				{Path: "/etc/b0", Contents: ptr("x"), Mode: ptr(uint32(0))},
				{Path: "/etc/c", Contents: ptr("0644")},
				{Path: "/etc/d", Local: "d.conf"},
				{Path: "/opt/e", Source: "https://example.com/e", Hash: "sha256-a0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"},
			},
			Directories: []hooks.Directory{{Path: "/var/lib/x", Mode: ptr(uint32(0o750)), User: "0", Group: "app"}, {Path: "/var/y"}},
			Links:       []hooks.Link{{Path: "/etc/l", Target: "a"}, {Path: "/etc/h", Target: "/etc/a", Hard: true}},
			Users:       []hooks.User{{Name: "app", UID: ptr(uint32(1000)), System: true, Home: "/var/lib/app", Shell: "/bin/sh", Groups: []string{"wheel", "adm"}}, {Name: "core"}},
			Groups:      []hooks.Group{{Name: "app", GID: ptr(uint32(1000)), System: true}, {Name: "other"}},
		},
	}
	out, err := hooks.Encode("set-1", hs)
	if err != nil {
		t.Fatal(err)
	}
	spec, diags := hooks.Parse("spec.yaml", out)
	if len(diags) > 0 {
		t.Fatalf("Parse of Encode's output: %s\n%s", diags.Error(), out)
	}
	if spec.Name != "set-1" {
		t.Errorf("metadata.name %q, want set-1", spec.Name)
	}
	if d := cmp.Diff(hs, spec.Hooks); d != "" {
		t.Errorf("Parse(Encode(hooks)) differs (-encoded +parsed):\n%s\n%s", d, out)
	}
	again, err := hooks.Encode(spec.Name, spec.Hooks)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(out) {
		t.Errorf("encoding the parsed hooks gives other bytes:\n%s\nwant:\n%s", again, out)
	}
}
