package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
)

// rigHash is a crypt(3) hash (openssl passwd -6) for the test's user.
const rigHash = "$6$hostprovtest$AmKhFLXrNyLI80o/DRjMX/vW3zY3mj6d9JrhyaGfXAUHl62u6dUmatWvlLbTwXpUj09vRofhDZFjCjlEzQDc/0"

// A HostHooks with what a spec can carry besides units: a file in /etc,
// and a user with a password, made on the node by the node's own
// systemd-sysusers and chpasswd, which its systemd runs (DialNode, as in
// the agent's pod, whose image has neither).
func TestRigAgentFilesAndAccounts(t *testing.T) {
	t.Parallel()
	k := newRigCluster(t)
	opts := apply.Options{Root: k.r.Root}
	k.connect = func(ctx context.Context) (*Systemd, error) { return DialNode(ctx, k.r.Socket, opts) }
	// The pod sees the node's /usr through its recursive bind of the
	// node's "/"; the rig's /usr is a mount of its own namespace, which
	// its Root seen from here lacks. Show the agent the programs the
	// rig's systemd runs, at the same paths, so that it finds them where
	// the pod would.
	for _, tool := range []string{"/usr/bin/systemd-sysusers", "/usr/sbin/chpasswd"} {
		data, err := os.ReadFile(tool)
		if err != nil {
			t.Fatalf("the test needs the host's %s: %v", tool, err)
		}
		dst := filepath.Join(k.r.Root, tool)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	uid := int64(2042)
	conf := "listen = 8080\n"
	hh := &v1alpha1.HostHooks{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: v1alpha1.HostHooksSpec{
		Hooks: []v1alpha1.Hook{{Name: "app", Exec: []string{"/bin/sleep", "infinity"}, User: "app",
			Users: []v1alpha1.User{{Name: "app", UID: &uid, Home: "/var/lib/app", PasswordHash: rigHash}},
			Files: []v1alpha1.File{{Path: "/etc/app/app.conf", Contents: &conf, Mode: "0640", Group: "app"}},
		}}}}
	nh := k.approve(hh)
	k.startAgent()
	k.waitFor(nh.Name, "Succeeded", func(nh *v1alpha1.NodeHooks) bool { return nh.Status.Phase == v1alpha1.NodeSucceeded })

	if got, err := os.ReadFile(filepath.Join(k.r.Root, "etc/app/app.conf")); err != nil || string(got) != conf {
		t.Errorf("the rig's /etc/app/app.conf: %q, %v", got, err)
	}
	passwd, _ := os.ReadFile(filepath.Join(k.r.Root, "etc/passwd"))
	if !strings.Contains(string(passwd), "\napp:x:2042:") && !strings.HasPrefix(string(passwd), "app:x:2042:") {
		t.Errorf("no user app with uid 2042 in the rig's /etc/passwd:\n%s", passwd)
	}
	shadow, _ := os.ReadFile(filepath.Join(k.r.Root, "etc/shadow"))
	if !strings.Contains(string(shadow), "app:"+rigHash+":") {
		t.Errorf("the hash is not app's password in the rig's /etc/shadow:\n%s", shadow)
	}
	// The user exists for the node's systemd too: the hook runs as app.
	if st := k.unitStatus("app.service"); st.ActiveState != "active" {
		t.Errorf("app.service is %s", st.ActiveState)
	}
	// Run by the rig's systemd, as the node's programs: its journal has
	// them, and never the hash.
	journal, err := k.r.Run(t.Context(), "journalctl", "--no-pager", "-o", "cat")
	if err != nil {
		t.Fatal(err)
	}
	for _, ran := range []string{"hostprov: /usr/bin/systemd-sysusers /etc/sysusers.d/hostprov-hosthooks.app.conf", "hostprov: /usr/sbin/chpasswd -e"} {
		if !strings.Contains(journal, ran) {
			t.Errorf("the rig's systemd did not run %q:\n%s", ran, journal)
		}
	}
	if strings.Contains(journal, rigHash) || strings.Contains(journal, "hostprovtest") {
		t.Errorf("the hash is in the rig's journal")
	}
	// Nothing of the runs is left: no unit, no file with the hash.
	if left, _ := filepath.Glob(filepath.Join(k.r.Root, "var/lib/hostprov/.hostprov-tool-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
