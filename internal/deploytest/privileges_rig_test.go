package deploytest_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/internal/systemdtest"
	"github.com/hostprov/hostprov/internal/testbin"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// asAgent runs a command as the agent's container does (deploy/agent.yaml):
// in a mount namespace of its own where the node's "/" is bound
// recursively, read-write, at /host, and everything else is read-only
// (readOnlyRootFilesystem), /dev and /proc as a container runtime leaves
// them; as uid and gid 0, with no supplementary group, the manifest's
// three capabilities of a file's owner and no other (effective,
// permitted and bounding; none inheritable or ambient, so an exec cannot
// gain another), and no_new_privs (allowPrivilegeEscalation: false).
var asAgent = []string{"unshare", "--mount", "--propagation", "private", "sh", "-ec", `
mount --rbind / /host
for m in / /run /run/lock /usr/local /dev/shm; do mount -o remount,bind,ro "$m"; done
exec setpriv --reuid=0 --regid=0 --clear-groups --inh-caps=-all --ambient-caps=-all --bounding-set=-all,+chown,+dac_override,+fowner --no-new-privs -- "$@"
`, "sh"}

// privHash is a crypt(3) hash (openssl passwd -6) for the test's user.
const privHash = "$6$hostprovtest$AmKhFLXrNyLI80o/DRjMX/vW3zY3mj6d9JrhyaGfXAUHl62u6dUmatWvlLbTwXpUj09vRofhDZFjCjlEzQDc/0"

// TestAgentPrivileges backs deploy/agent.yaml's claim that the agent needs
// uid 0, CAP_CHOWN, CAP_DAC_OVERRIDE and CAP_FOWNER, and no writable file
// system but the node's at /host: hostprov agent, run so with the manifest's arguments in a real
// systemd's mount namespace (and the test's network, to reach a real API
// server), applies a HostHooks with a unit, a file in /etc, a directory
// and a user with a password hash, all owned by that user, and reports it
// Succeeded; the same as any other uid is refused by systemd.
func TestAgentPrivileges(t *testing.T) {
	r := systemdtest.Start(t)
	c := kubetest.Start(t)
	c.InstallCRDs(t, filepath.Join(dir, "crds"))
	cl := c.Client(t)
	bin := testbin.Hostprov(t, "kube") // as the image builds it: the agent's build
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := r.Install(bin, "/opt/hostprov"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(r.Root, "host"), 0o755); err != nil {
		t.Fatal(err)
	}
	checkConfined(ctx, t, r)

	const node = "node-p"
	if err := cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}); err != nil {
		t.Fatal(err)
	}
	uid := int64(2042)
	conf := "listen = 8080\n"
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "priv"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{{Name: "priv-service", Exec: []string{"/bin/sleep", "infinity"}, User: "app",
			Users:       []v1alpha1.User{{Name: "app", UID: &uid, Home: "/var/lib/app", PasswordHash: privHash}},
			Directories: []v1alpha1.Directory{{Path: "/var/lib/app", Mode: "0700", User: "app", Group: "app"}},
			Files:       []v1alpha1.File{{Path: "/etc/app/app.conf", Contents: &conf, Mode: "0640", User: "app", Group: "app"}},
		}}}}
	if err := cl.Create(ctx, hh); err != nil {
		t.Fatal(err)
	}
	nh := &v1alpha1.NodeHooks{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.NodeHooksName(hh.Name, node), Labels: map[string]string{
			v1alpha1.LabelNode: v1alpha1.LabelValue(node), v1alpha1.LabelHostHooks: v1alpha1.LabelValue(hh.Name)}},
		Spec: v1alpha1.NodeHooksSpec{NodeName: node, HostHooks: hh.Name, HooksHash: v1alpha1.HooksHash(hh.Spec.Hooks)}}
	if err := cl.Create(ctx, nh); err != nil {
		t.Fatal(err)
	}

	exited, stop := startAgentInRig(ctx, t, r, c, node)
	defer stop()

	var got v1alpha1.NodeHooks
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(nh), &got); err != nil {
			return false, err
		}
		select {
		case <-exited:
			return false, fmt.Errorf("hostprov agent ended")
		default:
		}
		return got.Status.Phase == v1alpha1.NodeSucceeded || got.Status.Phase == v1alpha1.NodeFailed, nil
	})
	if err != nil || got.Status.Phase != v1alpha1.NodeSucceeded {
		t.Fatalf("NodeHooks %s: %v; status %+v", got.Status.Phase, err, got.Status)
	}
	checkPrivApplied(ctx, t, r, uid, conf)
	checkNonRootRefused(ctx, t, r)
}

// checkConfined checks that a command run asAgent in the rig r has the
// manifest's capabilities and no others, and no writable file system but
// the node's at /host.
func checkConfined(ctx context.Context, t *testing.T, r *systemdtest.Rig) {
	t.Helper()
	run := func(args ...string) (string, error) {
		return r.Run(ctx, append(append([]string{}, asAgent...), args...)...)
	}
	status, err := run("grep", "^Cap", "/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	// CAP_CHOWN (0), CAP_DAC_OVERRIDE (1) and CAP_FOWNER (3).
	want := map[string]string{"CapInh:": "0", "CapPrm:": "b", "CapEff:": "b", "CapBnd:": "b", "CapAmb:": "0"}
	for _, l := range strings.Split(strings.TrimSpace(status), "\n") {
		if f := strings.Fields(l); len(f) != 2 || strings.TrimLeft(f[1], "0") != strings.TrimLeft(want[f[0]], "0") {
			t.Fatalf("the command has other capabilities than the manifest's: %s", status)
		}
	}
	for _, p := range []string{"/probe", "/tmp/probe", "/run/probe", "/var/lib/probe"} {
		if out, err := run("sh", "-c", ": > "+p); err == nil || !strings.Contains(err.Error(), "Read-only file system") {
			t.Fatalf("writing %s as the agent: %v %s; want a read-only file system", p, err, out)
		}
	}
}

// startAgentInRig starts hostprov agent for node in the rig r's mount and
// pid namespaces, as the DaemonSet runs it and asAgent confines it, with a
// kubeconfig for c. It returns a channel closed when the agent ended, and
// a function that stops it and logs its output.
func startAgentInRig(ctx context.Context, t *testing.T, r *systemdtest.Rig, c *kubetest.Cluster, node string) (<-chan struct{}, func()) {
	t.Helper()
	// The agent with the DaemonSet's arguments, a kubeconfig for the
	// service account's, and no servers of its own (the rig's network is
	// the test's).
	_, objs := load(t)
	ds := decode[appsv1.DaemonSet](t, objs, "DaemonSet", "hostprov-agent")
	kubeconfig, err := os.ReadFile(c.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.Root, "kubeconfig"), kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"/opt/hostprov"}
	for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
		args = append(args, strings.ReplaceAll(a, "$(NODE_NAME)", node))
	}
	args = append(args, "--kubeconfig=/kubeconfig", "--metrics-addr=0", "--health-addr=0")
	// The rig's mount and pid namespaces, its root and working directory,
	// but not its network: the API server listens on the test's.
	cmd := exec.CommandContext(ctx, "nsenter", append(append([]string{"-t", fmt.Sprint(r.PID), "-m", "-p", "-r", "-w", "--"}, asAgent...), args...)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	var stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	return exited, func() {
		// SIGTERM to the agent, not to nsenter: nsenter waits for its
		// child in the rig's pid namespace and reaps it, where a child
		// it left would stay a zombie that keeps the rig from powering
		// off.
		signalGroup(cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		t.Logf("hostprov agent, %q:\n%s", args, stderr.String())
	}
}

// checkPrivApplied checks what the agent applied in the rig r: the unit
// active and enabled, the file (with contents conf) and the directory
// owned by the user app of uid, and app's password hash in /etc/shadow.
func checkPrivApplied(ctx context.Context, t *testing.T, r *systemdtest.Rig, uid int64, conf string) {
	t.Helper()
	p, err := r.Conn.GetUnitPropertiesContext(ctx, "priv-service.service")
	if err != nil {
		t.Fatal(err)
	}
	if p["ActiveState"] != "active" || p["UnitFileState"] != "enabled" {
		t.Errorf("priv-service.service is %v and %v, want active and enabled", p["ActiveState"], p["UnitFileState"])
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{"etc/app/app.conf", 0o640}, {"var/lib/app", 0o700 | os.ModeDir}} {
		fi, err := os.Stat(filepath.Join(r.Root, f.path))
		if err != nil {
			t.Errorf("/%s: %v", f.path, err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); fi.Mode()&(os.ModeDir|os.ModePerm) != f.mode || st.Uid != uint32(uid) || st.Gid != uint32(uid) {
			t.Errorf("/%s: %v, owned by %d:%d; want %v, owned by app", f.path, fi.Mode(), st.Uid, st.Gid, f.mode)
		}
	}
	if data, err := os.ReadFile(filepath.Join(r.Root, "etc/app/app.conf")); err != nil || string(data) != conf {
		t.Errorf("/etc/app/app.conf: %q, %v", data, err)
	}
	if shadow, err := os.ReadFile(filepath.Join(r.Root, "etc/shadow")); err != nil || !bytes.Contains(shadow, []byte("app:"+privHash+":")) {
		t.Errorf("the hash is not app's password in the node's /etc/shadow (%v):\n%s", err, shadow)
	}
}

// checkNonRootRefused: root is needed: systemd's private socket refuses
// any other uid (and the files are root's), so the agent cannot run as
// the image's non-root user.
func checkNonRootRefused(ctx context.Context, t *testing.T, r *systemdtest.Rig) {
	t.Helper()
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
	if err := os.WriteFile(filepath.Join(r.Root, "spec.yaml"), []byte("apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: nonroot\n  exec: [/bin/sleep, infinity]\n"), 0o644); err != nil {
		t.Fatal(err)
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

// signalGroup sends sig to the processes of the process group pgid (one
// the test made) but its leader.
func signalGroup(pgid int, sig syscall.Signal) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		data, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		i := bytes.LastIndexByte(data, ')')
		f := strings.Fields(string(data[i+1:]))
		var pid int
		if _, err := fmt.Sscan(filepath.Base(filepath.Dir(st)), &pid); err != nil || len(f) < 3 || pid == pgid {
			continue
		}
		if f[2] == fmt.Sprint(pgid) {
			syscall.Kill(pid, sig)
		}
	}
}

// syncBuffer collects a process's output while the test may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
