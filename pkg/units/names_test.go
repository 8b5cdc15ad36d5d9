package units

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestType(t *testing.T) {
	tests := map[string]string{
		"a.service": "service", "var-vm-swapfile1.swap": "swap", "a.b.mount": "mount", "x@y.timer": "timer",
		"swap1.swap.service": "service", "a": "", "a.conf": "", "a.Service": "", "": "",
	}
	for in, want := range tests {
		if got := Type(in); got != want {
			t.Errorf("Type(%q) = %q, want %q", in, got, want)
		}
	}
	if TypeSection("service") != SectionService || TypeSection("target") != "" || TypeSection("device") != "" {
		t.Error("TypeSection")
	}
	for typ, want := range map[string]string{"service": "multi-user.target", "swap": "swap.target", "mount": "local-fs.target",
		"automount": "local-fs.target", "timer": "timers.target", "socket": "sockets.target", "path": "paths.target",
		"target": "multi-user.target", "slice": "", "scope": "", "device": ""} {
		if got := DefaultTarget(typ); got != want {
			t.Errorf("DefaultTarget(%q) = %q, want %q", typ, got, want)
		}
	}
	for _, typ := range unitTypes {
		if TypeSection(typ) != "" && !KnownSection(TypeSection(typ)) {
			t.Errorf("type %s has unknown section %s", typ, TypeSection(typ))
		}
	}
}

func TestValidateName(t *testing.T) {
	valid := []string{
		"a.service", "foo.swap", "var-vm-swapfile1.swap", "dev-disk-by\\x2dlabel-swap.swap", "foo@.service",
		"foo@bar.service", "getty@tty1.service", "serial-getty@ttyS0.service", "a@b@c.service", "a.b.c.target",
		"systemd-fsck@dev-disk-by\\x2dpartlabel-var.service", "-.mount", "-.slice", "a:b_c.socket", "x.device",
		"foo.automount", "foo.path", "foo.timer", "foo.scope", "A1.service", strings.Repeat("a", 247) + ".service",
	}
	for _, n := range valid {
		if err := ValidateName(n); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", n, err)
		}
	}
	invalid := map[string]string{
		"":                                    "empty",
		"foo":                                 "no unit type suffix",
		"foo.conf":                            "no unit type suffix",
		"foo.Service":                         "no unit type suffix",
		".service":                            "nothing before",
		"@.service":                           "starts with '@'",
		"@foo.service":                        "starts with '@'",
		"a b.service":                         `"a\x20b.service"`,
		"a/b.service":                         `a-b.service`,
		"/var/vm.swap":                        `var-vm.swap`,
		"ä.service":                           `"\xc3\xa4.service"`,
		"a%i.service":                         "contains",
		"swap1.swap.":                         "no unit type suffix",
		"a\x00.service":                       "contains",
		strings.Repeat("a", 248) + ".service": "at most 255",
	}
	for n, want := range invalid {
		err := ValidateName(n)
		if err == nil {
			t.Errorf("ValidateName(%q) = nil, want error", n)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("ValidateName(%q) = %q, want it to mention %q", n, err, want)
		}
	}
}

// escapePaths are compared with the real systemd-escape --path.
var escapePaths = []string{
	"/", "//", "/foo", "/foo/", "//foo//bar/", "/foo/./bar", "/var/vm/swapfile1", "/var/lib/docker",
	"/mnt/my disk", "/a-b", "/a--b", "/-", "/.dot", "/a/.hidden", "/ä", "/x\\y", "/a:b_c.d", "/tab\there",
	"/dev/disk/by-partlabel/var", "/dev/disk/by-uuid/0b5c-4f1e", "/srv/%i", "/a$b", "/a'b\"c", "/a@b",
	"/a+b", "/a=b", "/a,b", "/a~b", "/a.b.", "/.", "/a/.", "/a/b/c/d/e/f", "/ü/ß", "/a*b?[c]", "foo/bar", "./foo",
	// Devices that a deviceTimeout names the unit of: an iSCSI LUN by path.
	"/dev/disk/by-path/ip-10.0.0.1:3260-iscsi-iqn.2024-01.test:lun-lun-1", "/dev//disk/by-id/./wwn-0x5000c500a1b2c3d4",
}

func TestEscapePathSystemd(t *testing.T) {
	bin, err := exec.LookPath("systemd-escape")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-escape is required when CI=true")
		}
		t.Skip("systemd-escape not installed; install systemd to compare EscapePath with it")
	}
	for _, p := range escapePaths {
		out, err := exec.Command(bin, "--path", "--", p).Output()
		if err != nil {
			t.Errorf("systemd-escape --path %q: %v", p, err)
			continue
		}
		want := strings.TrimSuffix(string(out), "\n")
		if got := EscapePath(p); got != want {
			t.Errorf("EscapePath(%q) = %q, systemd-escape says %q", p, got, want)
		}
	}
}

func TestEscapePath(t *testing.T) {
	tests := map[string]string{
		"/": "-", "": "-", "/var/vm/swapfile1": "var-vm-swapfile1", "/a-b": `a\x2db`, "/.dot": `\x2edot`,
		"/mnt/my disk": `mnt-my\x20disk`, "/foo/../bar": "", "..": "",
	}
	for in, want := range tests {
		if got := EscapePath(in); got != want {
			t.Errorf("EscapePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPathUnitName(t *testing.T) {
	got, err := PathUnitName("/var/vm/swapfile1", "swap")
	if err != nil || got != "var-vm-swapfile1.swap" {
		t.Errorf("PathUnitName = %q, %v", got, err)
	}
	got, err = PathUnitName("/", "mount")
	if err != nil || got != "-.mount" {
		t.Errorf("PathUnitName(/) = %q, %v", got, err)
	}
	for _, bad := range [][2]string{{"var/x", "mount"}, {"/a/../b", "mount"}, {"/a", "swp"}, {"/" + strings.Repeat("a", 300), "mount"}} {
		if _, err := PathUnitName(bad[0], bad[1]); err == nil {
			t.Errorf("PathUnitName(%q, %q) = nil error", bad[0], bad[1])
		}
	}
}

func TestEscapeSpecifiers(t *testing.T) {
	if got := EscapeSpecifiers("100% %i %%"); got != "100%% %%i %%%%" {
		t.Errorf("got %q", got)
	}
}
