package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/internal/testbin"
)

func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"no build info", "", nil,
			"(devel) (no revision recorded: build with make build, or go build -buildvcs=auto, in a git clone)"},
		{"go run", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"(devel) (no revision recorded: build with make build, or go build -buildvcs=auto, in a git clone)"},
		{"pseudo-version from git", "", &debug.BuildInfo{
			Main:     debug.Module{Version: "v0.0.0-20261201113329-4819510f96b7"},
			Settings: vcs("vcs", "git", "vcs.revision", "4819510f96b7091cb554a91ab705df945ffee233", "vcs.time", "2026-12-01T11:33:29Z", "vcs.modified", "false"),
		}, "v0.0.0-20261201113329-4819510f96b7 (revision 4819510f96b7, committed 2026-12-01T11:33:29Z)"},
		{"uncommitted changes", "", &debug.BuildInfo{
			Main:     debug.Module{Version: "v0.0.0-20261201113329-4819510f96b7+dirty"},
			Settings: vcs("vcs.revision", "4819510f96b7091cb554a91ab705df945ffee233", "vcs.modified", "true"),
		}, "v0.0.0-20261201113329-4819510f96b7+dirty (revision 4819510f96b7 with uncommitted changes)"},
		{"stamped release", "v1.2.3", &debug.BuildInfo{
			Main:     debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "abc", "vcs.time", "2026-01-02T03:04:05Z"),
		}, "v1.2.3 (revision abc, committed 2026-01-02T03:04:05Z)"},
		{"stamped release from an archive", "0.1.0", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"0.1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(tc.stamped, tc.bi); got != tc.want {
				t.Errorf("versionOf = %q\nwant        %q", got, tc.want)
			}
		})
	}
}

// TestVersionOfBuild builds hostprov as make build does and checks that
// both spellings of the version print the commit it was built from.
func TestVersionOfBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hostprov; skipped with -short")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but this is not a git clone with git installed: %v", err)
		}
		t.Skipf("not a git clone, or no git: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "hostprov")
	ctx, cancel := context.WithTimeout(t.Context(), testbin.BuildLimit)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-buildvcs=auto", "-o", bin, "../../cmd/hostprov")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want := "revision " + strings.TrimSpace(string(head))[:12]
	var lines []string
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("hostprov %s: %v", arg, err)
		}
		line := strings.TrimSpace(string(out))
		if !strings.HasPrefix(line, "hostprov v") || !strings.Contains(line, want) {
			t.Errorf("hostprov %s = %q, want a module version and %q", arg, line, want)
		}
		lines = append(lines, line)
	}
	if lines[0] != lines[1] {
		t.Errorf("hostprov version and hostprov --version differ:\n%s\n%s", lines[0], lines[1])
	}
}
