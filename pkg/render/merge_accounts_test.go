package render_test

import (
	"encoding/json"
	"strings"
	"testing"

	butaneconfig "github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/ignition"
)

// mergeAccountsSpec makes a user and a group with ids, as a service's hook
// does.
const mergeAccountsSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: app
  exec: [/bin/echo, hello]
  users:
  - name: app
    uid: 1500
    home: /var/lib/app
  groups:
  - name: ops
    gid: 3000
`

// accountMerges are MergeIgnition, MergeButane and MergeCloudInit of the
// accounts spec, by output format.
func accountMerges(t *testing.T) map[string]func(...render.MergeFile) ([]byte, hooks.Diagnostics, error) {
	t.Helper()
	r, diags := compile.Build("spec.yaml", []byte(mergeAccountsSpec), compile.Options{})
	if len(diags) > 0 {
		t.Fatalf("the spec must build without a diagnostic:\n%s", diags.Error())
	}
	us, st := r.Units, r.Storage
	return map[string]func(...render.MergeFile) ([]byte, hooks.Diagnostics, error){
		"ignition": func(fs ...render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeIgnition(us, ignition.Options{Storage: st}, fs)
		},
		"butane": func(fs ...render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeButane(us, butane.Options{Storage: st}, fs)
		},
		"cloud-init": func(fs ...render.MergeFile) ([]byte, hooks.Diagnostics, error) {
			return mergeCloudInit(us, cloudinit.Options{Storage: st}, fs)
		},
	}
}

// TestMergeAccountClashes: a user or group that a --merge file makes too,
// with another id or home, is an error at the file's entry that names the
// spec's, for every output; nothing is merged. Ignition's merge would
// have let the file's uid win, Butane refused the duplicate at a line of
// the merged output, and cloud-init would have got the user twice.
func TestMergeAccountClashes(t *testing.T) {
	merges := accountMerges(t)
	ign := render.MergeFile{Name: "mine.ign", Data: []byte(`{"ignition": {"version": "3.4.0"},
 "passwd": {"users": [{"name": "core"}, {"name": "app", "uid": 1600, "homeDir": "/srv/app"}],
  "groups": [{"name": "ops", "gid": 3001}]}}
`)}
	bu := render.MergeFile{Name: "mine.bu", Data: []byte(`variant: fcos
version: 1.5.0
passwd:
  users:
    - name: app
      uid: 1600
      home_dir: /srv/app
  groups:
    - name: ops
      gid: 3001
`)}
	ci := render.MergeFile{Name: "mine.yml", Data: []byte(`#cloud-config
users:
  - default
  - name: app
    uid: 1600
    homedir: /var/lib/app
`)}
	const (
		user  = "user app is made by hostprov's spec too, at spec.yaml:7:5 (hooks[0], app), with another "
		group = "group ops is made by hostprov's spec too, at spec.yaml:11:5 (hooks[0], app), with another gid"
		hint  = "\n\thint: an account is the same on the whole machine: drop it from your config or from the spec, or give both the same "
	)
	buWant := "mine.bu:5:7: error: passwd.users[0]: " + user + "home_dir, uid" + hint + "home_dir, uid\n" +
		"mine.bu:9:7: error: passwd.groups[0]: " + group + hint + "gid"
	for _, c := range []struct {
		format string
		file   render.MergeFile
		want   string
	}{
		{"ignition", ign, "mine.ign:2:41: error: passwd.users[1]: " + user + "homeDir, uid" + hint + "homeDir, uid\n" +
			"mine.ign:3:14: error: passwd.groups[0]: " + group + hint + "gid"},
		{"ignition", bu, buWant},
		{"butane", bu, buWant},
		{"cloud-init", ci, "mine.yml:4:5: error: users[1]: " + user + "uid" + hint + "uid"},
	} {
		t.Run(c.format+"/"+c.file.Name, func(t *testing.T) {
			out, diags, err := merges[c.format](c.file)
			if err != nil {
				t.Fatal(err)
			}
			if out != nil {
				t.Errorf("merged despite the clash:\n%s", out)
			}
			if got := diags.Error(); got != c.want {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

// TestMergeAccountsAgree: an account both make with no field both set to
// other values is one account with the fields of both, in every output;
// cloud-init's users: starts with default once, and a group both name is
// listed once.
func TestMergeAccountsAgree(t *testing.T) {
	merges := accountMerges(t)
	bu := render.MergeFile{Name: "mine.bu", Data: []byte(`variant: fcos
version: 1.5.0
passwd:
  users:
    - name: app
      uid: 1500
      ssh_authorized_keys: [ssh-ed25519 AAAA]
    - name: core
  groups:
    - name: ops
`)}
	ign, diags, err := merges["ignition"](bu)
	noDiags(t, "MergeIgnition", diags, err)
	var cfg struct {
		Passwd struct {
			Users  []map[string]any `json:"users"`
			Groups []map[string]any `json:"groups"`
		} `json:"passwd"`
	}
	if err := json.Unmarshal(ign, &cfg); err != nil {
		t.Fatal(err)
	}
	wantUsers := []map[string]any{
		{"name": "app", "uid": 1500.0, "homeDir": "/var/lib/app", "sshAuthorizedKeys": []any{"ssh-ed25519 AAAA"}},
		{"name": "core"},
	}
	if d := cmp.Diff(wantUsers, cfg.Passwd.Users); d != "" {
		t.Errorf("Ignition's users (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]map[string]any{{"name": "ops", "gid": 3000.0}}, cfg.Passwd.Groups); d != "" {
		t.Errorf("Ignition's groups (-want +got):\n%s", d)
	}

	// The Butane output has each account once (Butane refuses a name
	// twice), and translates to the same Ignition config.
	out, diags, err := merges["butane"](bu)
	noDiags(t, "MergeButane", diags, err)
	fromButane, rpt, err := butaneconfig.TranslateBytes(out, common.TranslateBytesOptions{})
	if err != nil || rpt.IsFatal() {
		t.Fatalf("Butane: %v\n%s\n%s", err, rpt, out)
	}
	if d := cmp.Diff(jsonData(t, ign), jsonData(t, fromButane)); d != "" {
		t.Errorf("Butane's translation differs from the merged Ignition config (-ignition +butane):\n%s\n%s", d, out)
	}

	ci := render.MergeFile{Name: "mine.yml", Data: []byte(`#cloud-config
users:
  - default
  - name: app
    uid: 1500
    ssh_authorized_keys: [ssh-ed25519 AAAA]
  - bob
groups:
  - ops
  - admins: [bob]
`)}
	out, diags, err = merges["cloud-init"](ci)
	noDiags(t, "MergeCloudInit", diags, err)
	var doc struct {
		Users  []any `yaml:"users"`
		Groups []any `yaml:"groups"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	wantCI := []any{"default",
		map[string]any{"name": "app", "uid": 1500, "homedir": "/var/lib/app", "ssh_authorized_keys": []any{"ssh-ed25519 AAAA"}},
		"bob"}
	if d := cmp.Diff(wantCI, doc.Users); d != "" {
		t.Errorf("cloud-init's users (-want +got):\n%s\n%s", d, out)
	}
	// ops is made by bootcmd, with its gid: only the group with members
	// stays.
	if d := cmp.Diff([]any{map[string]any{"admins": []any{"bob"}}}, doc.Groups); d != "" {
		t.Errorf("cloud-init's groups (-want +got):\n%s\n%s", d, out)
	}
	if n := strings.Count(string(out), "groupadd --gid 3000 ops"); n != 1 {
		t.Errorf("ops is made %d times:\n%s", n, out)
	}
}
