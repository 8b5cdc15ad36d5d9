package importer_test

import (
	"encoding/json"
	"strings"
	"testing"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/importer"
	"github.com/hostprov/hostprov/pkg/render"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
)

// TestRoundTripExact: what a hook spec cannot say as the config says it
// is not changed on the way through the spec; import, then render with
// the leftovers merged, gives the config as data (roundTrip, with no
// change the warnings could excuse), and the warning that says what
// happened is at its place in the config.
func TestRoundTripExact(t *testing.T) {
	for _, c := range []struct {
		name, data string
		// warning is the first line of the warning import must give.
		warning string
		// check looks at the spec import wrote.
		check func(t *testing.T, res *importer.Result)
	}{{
		// A unit with [Install] entries and no enabled: Ignition leaves
		// it to the system's presets, which no hook can say. It stays
		// as written, drop-ins and all, in the leftovers; it was once
		// imported with enabled: false, which disables it.
		name: "presets.bu",
		data: "variant: fcos\nversion: 1.5.0\nsystemd:\n  units:\n    - name: a.service\n      contents: |\n        [Service]\n        ExecStart=/bin/true\n        [Install]\n        WantedBy=multi-user.target\n" +
			"      dropins:\n        - name: x.conf\n          contents: |\n            [Service]\n            Environment=A=1\n" +
			"    - name: b.service\n      enabled: false\n      contents: |\n        [Service]\n        ExecStart=/bin/true\n        [Install]\n        WantedBy=multi-user.target\n",
		warning: "presets.bu:5:13: warning: systemd.units[0]: to the leftovers: the config neither enables nor disables a.service, which Ignition leaves to the system's presets; a hook is enabled or disabled, so the unit stays as written",
		check: func(t *testing.T, res *importer.Result) {
			if len(res.Hooks) != 1 || res.Hooks[0].Name != "b.service" {
				t.Errorf("hooks: want only b.service, which the config disables:\n%s", res.Spec)
			}
		},
	}, {
		// A user and a group of its name, without primaryGroup: in the
		// spec, the group would become the user's primaryGroup in
		// every output. The group goes to the leftovers, its gid with
		// it; the user stays in the spec.
		name: "own-group.ign",
		data: "{\"ignition\": {\"version\": \"3.4.0\"},\n \"passwd\": {\n  \"users\": [{\"name\": \"app\", \"uid\": 1000}, {\"name\": \"web\", \"primaryGroup\": \"web\"}],\n" +
			"  \"groups\": [{\"name\": \"app\", \"gid\": 1000}, {\"name\": \"web\"}, {\"name\": \"ops\"}]}}\n",
		warning: "own-group.ign:4:23: warning: passwd.groups[0]: to the leftovers: the group app is named as a user the config creates without a primaryGroup: in the spec, hostprov would make it that user's primary group, which the config does not say; without it, the user gets a group of its own name",
		check: func(t *testing.T, res *importer.Result) {
			var users, groups []string
			for _, h := range res.Hooks {
				for _, u := range h.Users {
					users = append(users, u.Name+":"+u.PrimaryGroup)
				}
				for _, g := range h.Groups {
					groups = append(groups, g.Name)
				}
			}
			if strings.Join(users, ",") != "app:,web:web" || strings.Join(groups, ",") != "web,ops" {
				t.Errorf("users %v, groups %v; want app without primaryGroup, web with its own, and the groups web and ops:\n%s", users, groups, res.Spec)
			}
		},
	}, {
		// A unit file with carriage returns and a drop-in without a
		// final newline: hostprov would write both with line feeds and
		// one final newline; exactBytes keeps them as written.
		name: "newlines.ign",
		data: "{\"ignition\": {\"version\": \"3.2.0\"},\n \"systemd\": {\"units\": [\n  {\"name\": \"a.service\", \"enabled\": true, \"contents\": \"[Service]\\r\\nExecStart=/bin/true\\r\\n[Install]\\r\\nWantedBy=multi-user.target\\r\\n\",\n" +
			"   \"dropins\": [{\"name\": \"x.conf\", \"contents\": \"[Service]\\nEnvironment=A=1\"}]},\n" +
			"  {\"name\": \"b.service\", \"dropins\": [{\"name\": \"y.conf\", \"contents\": \"[Unit]\\nDescription=b\\n\\n\\n\"}]}]}}\n",
		warning: "newlines.ign:3:54: warning: systemd.units[0].contents: the unit file has carriage returns, which hostprov would write with line feeds and one final newline; kept byte for byte with exactBytes: true on its hook",
		check: func(t *testing.T, res *importer.Result) {
			if len(res.Hooks) != 2 || !res.Hooks[0].ExactBytes || !res.Hooks[1].ExactBytes ||
				!strings.Contains(res.Hooks[0].Manifest, "\r\n") || res.Hooks[0].Dropins[0].Contents != "[Service]\nEnvironment=A=1" ||
				res.Hooks[1].Dropins[0].Contents != "[Unit]\nDescription=b\n\n\n" {
				t.Errorf("want both hooks with exactBytes and their texts as written:\n%s", res.Spec)
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			in := importer.Input{Name: c.name, Data: []byte(c.data), Dir: t.TempDir()}
			original := []byte(c.data)
			if strings.HasSuffix(c.name, ".bu") {
				original = translate(t, original)
			}
			got, want, res, diags := roundTrip(t, in, original)
			if res == nil {
				t.Fatal(diags.Error())
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("import, render --merge of the leftovers differs from the config (-config +rendered):\n%s\nspec:\n%s\nleftovers:\n%s", d, res.Spec, res.Rest)
			}
			if !hasWarning(diags, c.warning) {
				t.Errorf("no warning %q:\n%s", c.warning, diags.Error())
			}
			c.check(t, res)
		})
	}
}

// hasWarning reports whether a diagnostic's first line is line.
func hasWarning(diags hooks.Diagnostics, line string) bool {
	for _, d := range diags {
		if strings.SplitN(d.String(), "\n", 2)[0] == line {
			return true
		}
	}
	return false
}

// translate is the Ignition config Butane makes of a Butane config.
func translate(t *testing.T, bu []byte) []byte {
	t.Helper()
	ign, rpt, err := butane.TranslateBytes(bu, butanecommon.TranslateBytesOptions{})
	if err != nil || rpt.IsFatal() {
		t.Fatalf("Butane does not translate the config: %v %s", err, rpt)
	}
	return ign
}

// TestCloudConfigOwnGroup: a cloud-config's group named as one of its
// users without primary_group goes to the leftovers, so that the spec
// does not make it the user's primary_group (it once did, without a
// word); import, render --format cloud-init --merge of the leftovers is
// the cloud-config as cloud-init reads both.
func TestCloudConfigOwnGroup(t *testing.T) {
	py := hosttools.CloudInitPython(t)
	data := "#cloud-config\ngroups:\n  - app\n  - ops: [root]\n    web:\nusers:\n  - name: app\n    uid: 1000\n  - name: web\n  - name: db\n    primary_group: ops\n"
	res, diags := importer.Import(importer.Input{Name: "own.cfg", Data: []byte(data)})
	if res == nil {
		t.Fatal(diags.Error())
	}
	for _, w := range []string{
		"own.cfg:3:5: warning: groups[0]: to the leftovers: the group app is named as a user the cloud-config creates without a primary_group: in the spec, hostprov would make it that user's primary group, which the cloud-config does not say; without it, the user gets a group of its own name",
		"own.cfg:5:5: warning: groups[1]: to the leftovers: the group web is named as a user the cloud-config creates without a primary_group: in the spec, hostprov would make it that user's primary group, which the cloud-config does not say; without it, the user gets a group of its own name",
	} {
		if !hasWarning(diags, w) {
			t.Errorf("no warning %q:\n%s", w, diags.Error())
		}
	}
	r, bad := compile.Build(res.Name+".yaml", res.Spec, compile.Options{Locals: res.Locals})
	if bad.HasErrors(false) {
		t.Fatal(bad.Error())
	}
	own, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	out, mdiags, err := cloudinit.Merge(own, r.Units, cloudinit.Options{Storage: r.Storage}, []render.MergeFile{{Name: "leftovers", Data: res.Rest}})
	if err != nil || mdiags.HasErrors(false) {
		t.Fatalf("render --merge of the leftovers: %v\n%s\nleftovers:\n%s", err, mdiags.Error(), res.Rest)
	}
	in, _ := json.Marshal([]string{data, string(out)})
	var both []map[string]any
	if err := json.Unmarshal(hosttools.RunPython(t, py, pyCloudConfig, in), &both); err != nil {
		t.Fatal(err)
	}
	delete(both[1]["users"].(map[string]any), "default")
	if d := cmp.Diff(both[0], both[1]); d != "" {
		t.Errorf("import, render --merge of the leftovers differs from the cloud-config as cloud-init reads both (-original +rendered):\n%s\nspec:\n%s\nleftovers:\n%s\nrendered:\n%s", d, res.Spec, res.Rest, out)
	}
}
