package deploytest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/rig"
	"github.com/hostprov/hostprov/internal/testbin"
)

// asAgent runs a command as the agent's container does (deploy/agent.yaml):
// in a mount namespace of its own where everything is read-only
// (readOnlyRootFilesystem) but the three host paths it mounts, and /dev
// and /proc as a container runtime leaves them; as uid and gid 0, with no
// supplementary group, no capability at all (none effective, permitted,
// inheritable or ambient, and an empty bounding set, so an exec cannot
// regain any), and no_new_privs (allowPrivilegeEscalation: false).
var asAgent = []string{"unshare", "--mount", "--propagation", "private", "sh", "-ec", `
for d in /etc/systemd/system /var/lib/hostprov /run/systemd; do mkdir -p "$d"; mount --bind "$d" "$d"; done
for m in / /run /run/lock /usr/local /dev/shm; do mount -o remount,bind,ro "$m"; done
exec setpriv --reuid=0 --regid=0 --clear-groups --inh-caps=-all --ambient-caps=-all --bounding-set=-all --no-new-privs -- "$@"
`, "sh"}

// TestAgentPrivileges backs deploy/agent.yaml's claim that the agent needs
// uid 0, no capability and no writable file system but its three host
// paths: in a real systemd, hostprov run so applies a spec (writes units, state and stamps,
// enables, starts, restarts through systemd's private socket, one hook a
// command hook), reports its status and removes it; the same as any other
// uid is refused by systemd.
func TestAgentPrivileges(t *testing.T) {
	r := rig.Start(t)
	bin := testbin.Hostprov(t, "kube") // as the image builds it: the agent's build
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.Install(bin, "/opt/hostprov"); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		return r.Run(ctx, append(append([]string{}, asAgent...), args...)...)
	}

	status, err := run("grep", "^Cap", "/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(status), "\n") {
		if f := strings.Fields(l); len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Fatalf("the command still has capabilities: %s", status)
		}
	}

	for _, p := range []string{"/probe", "/tmp/probe", "/run/probe", "/var/lib/probe"} {
		if out, err := run("sh", "-c", ": > "+p); err == nil || !strings.Contains(err.Error(), "Read-only file system") {
			t.Fatalf("writing %s as the agent: %v %s; want a read-only file system", p, err, out)
		}
	}

	spec := func(version string) string {
		return `apiVersion: hostprov/v1alpha1
kind: Hooks
metadata:
  name: agent-privileges
hooks:
- name: priv-service
  exec: [/bin/sleep, infinity]
  env: {VERSION: "` + version + `"}
- name: priv-steps
  when: Always
  steps:
  - name: first
    run: [/bin/true]
  - name: second
    sh: echo ` + version + `
`
	}
	for _, version := range []string{"1", "2"} {
		if err := os.WriteFile(filepath.Join(r.Root, "spec.yaml"), []byte(spec(version)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := run("/opt/hostprov", "apply", "-f", "/spec.yaml"); err != nil {
			t.Fatalf("apply of version %s without capabilities: %v\n%s", version, err, out)
		}
		for _, u := range []string{"priv-service.service", "priv-steps.service"} {
			p, err := r.Conn.GetUnitPropertiesContext(ctx, u)
			if err != nil {
				t.Fatal(err)
			}
			if p["ActiveState"] != "active" || p["UnitFileState"] != "enabled" {
				t.Errorf("version %s: %s is %v and %v, want active and enabled", version, u, p["ActiveState"], p["UnitFileState"])
			}
		}
	}
	env, err := rig.EnvironmentOf(ctx, r.Conn, "priv-service.service")
	if err != nil || strings.Join(env, " ") != "VERSION=2" {
		t.Errorf("priv-service.service has environment %q (%v), want VERSION=2: not restarted with the change", env, err)
	}
	if out, err := run("/opt/hostprov", "status", "--set", "agent-privileges"); err != nil || !strings.Contains(out, "priv-service.service") {
		t.Errorf("status without capabilities: %v, want priv-service.service in\n%s", err, out)
	}
	if out, err := run("/opt/hostprov", "remove", "--all"); err != nil {
		t.Errorf("remove without capabilities: %v\n%s", err, out)
	}
	if _, err := os.Lstat(filepath.Join(r.UnitDir, "priv-service.service")); !os.IsNotExist(err) {
		t.Errorf("priv-service.service still there after remove: %v", err)
	}

	// Root is needed: systemd's private socket refuses any other uid
	// (and the files are root's), so the agent cannot run as the image's
	// non-root user.
	// It gets directories of its own to write, so that only systemd can
	// refuse it.
	for _, d := range []string{"nonroot/units", "nonroot/state"} {
		p := filepath.Join(r.Root, d)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, 65532, 65532); err != nil {
			t.Fatal(err)
		}
	}
	out, err := r.Run(ctx, "setpriv", "--reuid=65532", "--regid=65532", "--clear-groups", "--",
		"/opt/hostprov", "apply", "-f", "/spec.yaml", "--unit-dir", "/nonroot/units", "--state-dir", "/nonroot/state")
	if err == nil {
		t.Errorf("apply as uid 65532 succeeded:\n%s", out)
	} else if !strings.Contains(err.Error(), "/run/systemd/private") {
		t.Errorf("apply as uid 65532: %v; want systemd's socket refusing it", err)
	} else {
		t.Logf("as uid 65532: %v", err)
	}
}
