package importer_test

import (
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/importer"
)

// TestBadInput: a config import cannot read is refused with an error at
// its place (file:line:col where the input says it) and a hint, and no
// spec: every error of the input at once where the reader finds several.
func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		name, data string
		// want are the first lines of the errors, in order.
		want []string
	}{
		{"syntax.ign", `{"ignition": {"version": "3.3.0"},}`,
			[]string{`syntax.ign:1:35: error: Ignition: invalid character '}' looking for beginning of object key string`}},
		{"old.ign", `{"ignition": {"version": "2.2.0"}}`,
			[]string{`old.ign:1:26: error: ignition.version: Ignition spec version 2.2.0: hostprov imports Ignition 3.0.0 to 3.6.0`}},
		{"new.ign", "{\n  \"ignition\": {\"version\": \"3.7.0\"}\n}",
			[]string{`new.ign:2:27: error: ignition.version: Ignition spec version 3.7.0: hostprov imports Ignition 3.0.0 to 3.6.0`}},
		{"relative.ign", "{\n  \"ignition\": {\"version\": \"3.2.0\"},\n  \"storage\": {\"files\": [{\"path\": \"etc/x\"}]}\n}",
			[]string{`relative.ign:3:34: error: storage.files[0].path: Ignition: path not absolute`}},
		{"tabs.ign", "{\n\t\"ignition\": {\"version\": \"3.2.0\"},\n\t\"storage\": {\"files\": [{\"path\": \"etc/x\"}]}\n}",
			[]string{`tabs.ign:3:33: error: storage.files[0].path: Ignition: path not absolute`}},
		{"unit.ign", "{\n  \"ignition\": {\"version\": \"3.3.0\"},\n  \"systemd\": {\"units\": [{\"name\": \"bad.service\", \"contents\": \"[Service\\nExecStart=/bin/true\\n\"}]}\n}",
			[]string{`unit.ign:3:61: error: systemd.units[0].contents: Ignition: invalid unit content: unable to find end of section`}},
		{"version.bu", "variant: fcos\nversion: 9.0.0\n",
			[]string{`version.bu:2:10: error: version: Butane cannot translate this config: No translator exists for variant fcos with version 9.0.0`}},
		{"type.bu", "variant: fcos\nversion: 1.5.0\nsystemd:\n  units:\n    - name: a.service\n      contents: [1, 2]\n",
			[]string{`type.bu:6: error: Butane cannot read this config: yaml: unmarshal errors: line 6: cannot unmarshal !!seq into string`}},
		{"path.bu", "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n    - path: relative\n",
			[]string{`path.bu:5:13: error: storage.files[0].path: Butane: path not absolute`}},
		{"cc.yaml", "#cloud-config\nwrite_files:\n  - path: /etc/a\n    encoding: rot13\n    content: x\n  - path: /etc/b\n    permissions: \"0999\"\n    content: y\n",
			[]string{`cc.yaml:3:5: error: write_files[0].encoding: unknown encoding "rot13"`,
				`cc.yaml:7:18: error: write_files[1].permissions: permissions "0999" is not an octal mode`}},
		{"yaml.cfg", "#cloud-config\nwrite_files: [\n",
			[]string{`yaml.cfg:2: error: not valid YAML: yaml: line 2: did not find expected node content`}},
		{"list.cfg", "#cloud-config\nwrite_files: {path: /etc/a}\n",
			[]string{`list.cfg:2:14: error: write_files: write_files must be a list, not a mapping`}},
		{"kops.yaml", "apiVersion: kops.k8s.io/v1alpha2\nkind: Cluster\nmetadata:\n  name: c\nspec:\n  hooks:\n  - name: x\n    manifst: |\n      Type=oneshot\n",
			[]string{`kops.yaml:8:5: error: spec.hooks[0].manifst: unknown field "manifst" in a hook; kops drops it without a word`}},
		// A Butane config that is not YAML is told where, as Butane
		// itself does, not taken for a config of no known kind.
		{"pubkey.bu", "variant: fcos\nversion: 1.5.0\npasswd:\n  users:\n    - name: core\n      ssh_authorized_keys:\n        - %%SSH_PUBKEY%%\n",
			[]string{`pubkey.bu:7:11: error: the file is not valid YAML: "%" cannot start a value (yaml: found character that cannot start any token)`}},
		{"indent.bu", "variant: fcos\nversion: 1.5.0\nsystemd:\n  units:\n    - name: a.service\n      enabled: true\n     contents: x\n",
			[]string{`indent.bu:7:6: error: the file is not valid YAML: this line is inside the list that starts on line 5, but is not an item of it (yaml: did not find expected '-' indicator)`}},
		{"other.yaml", "hello: world\n",
			[]string{`other.yaml:1:1: error: not a config hostprov imports: neither an Ignition config (a JSON object), a Butane config (variant: and version:), a cloud-config (#cloud-config on the first line) nor a kops Cluster or InstanceGroup`}},
		{"", "",
			[]string{`<stdin>: error: not a config hostprov imports: neither an Ignition config (a JSON object), a Butane config (variant: and version:), a cloud-config (#cloud-config on the first line) nor a kops Cluster or InstanceGroup`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, diags := importer.Import(importer.Input{Name: c.name, Data: []byte(c.data), Dir: t.TempDir()})
			if res != nil {
				t.Fatalf("import gave a spec for a bad config:\n%s", res.Spec)
			}
			var got []string
			for _, d := range diags {
				if d.Severity != hooks.Error {
					continue
				}
				if d.Hint == "" {
					t.Errorf("no hint: %s", d)
				}
				got = append(got, strings.SplitN(d.String(), "\n", 2)[0])
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestWarningPlaces: warnings are at the place of what they are about in
// the file as written: in JSON indented with tabs too, and in a Butane
// config whose list entries Butane's output has in another order.
func TestWarningPlaces(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       []string
	}{
		{"tabs.ign", "{\n\t\"ignition\": {\"version\": \"3.3.0\"},\n\t\"kernelArguments\": {\"shouldExist\": [\"quiet\"]}\n}\n",
			[]string{"tabs.ign:3:2: warning: kernelArguments: to the leftovers: the kernel arguments, which hostprov has no equivalent of"}},
		{"owner.ign", "{\n  \"ignition\": {\"version\": \"3.2.0\"},\n  \"storage\": {\"directories\": [\n    {\"path\": \"/srv\", \"mode\": 4095},\n    {\"path\": \"/srv/x\", \"group\": {\"name\": \"web team\"}}\n  ]}\n}\n",
			[]string{`owner.ign:5:24: warning: storage.directories[1]: to the leftovers: /srv/x: the group "web team" is not one a hook spec can name: a name starts with a letter or _ and has only letters, digits, _, . and -`}},
		{"owner.cfg", "#cloud-config\nwrite_files:\n  - path: /etc/a\n    owner: 'web team:root'\n    content: x\n",
			[]string{`owner.cfg:4:12: warning: write_files[0]: to the leftovers: /etc/a: the owner "web team" is not one a hook spec can name: a name starts with a letter or _ and has only letters, digits, _, . and -`}},
		// What Ignition accepts and hostprov's own checks refuse is kept
		// out, at its place, with hostprov's reason and hint.
		{"refused.ign", "{\"ignition\": {\"version\": \"3.2.0\"},\n \"passwd\": {\"users\": [{\"name\": \"a\", \"homeDir\": \"relative/home\"}, {\"name\": \"b\"}]},\n \"storage\": {\"files\": [{\"path\": \"/etc/b\", \"contents\": {\"source\": \"data:,y\"}}],\n  \"links\": [{\"path\": \"/etc/b/c\", \"target\": \"/x\"}]}}\n",
			[]string{
				`refused.ign:2:23: warning: passwd.users[0]: to the leftovers: hostprov refuses it: home "relative/home" is not absolute`,
				`refused.ign:4:13: warning: storage.links[0]: to the leftovers: hostprov refuses it: /etc/b/c is under /etc/b, which is the file at hooks[0].files[0] (line 8)`,
			}},
		// A user or group is kept out, at its entry, when systemd-sysusers
		// would refuse its name or the config deletes it.
		{"accounts.ign", "{\"ignition\": {\"version\": \"3.4.0\"},\n \"passwd\": {\"users\": [{\"name\": \"1bad\"}, {\"name\": \"old\", \"shouldExist\": false}],\n  \"groups\": [{\"name\": \"1bad\"}, {\"name\": \"old\", \"shouldExist\": false}]}}\n",
			[]string{
				`accounts.ign:2:32: warning: passwd.users[0]: to the leftovers: the user name "1bad" is not one systemd-sysusers accepts: it starts with "1"`,
				`accounts.ign:2:72: warning: passwd.users[1]: to the leftovers: the user old is to be deleted, which hostprov does not do`,
				`accounts.ign:3:23: warning: passwd.groups[0]: to the leftovers: the group name "1bad" is not one systemd-sysusers accepts: it starts with "1"`,
				`accounts.ign:3:63: warning: passwd.groups[1]: to the leftovers: the group old is to be deleted, which hostprov does not do`,
			}},
		// Butane lists a unit it makes for a file system's
		// with_mount_unit before the units written: the warning about
		// b.service is still at b.service.
		{"order.bu", "variant: fcos\nversion: 1.5.0\nstorage:\n  filesystems:\n    - device: /dev/vdb\n      path: /var/data\n      format: xfs\n      with_mount_unit: true\nsystemd:\n  units:\n    - name: b.service\n      contents: |\n        [Service]\n        ExecStart=/bin/true\n        [Install]\n        WantedBy=multi-user.target\n",
			[]string{
				"order.bu:5:7: warning: storage.filesystems[0]: to the leftovers: a file system, which hostprov has no equivalent of",
				// The mount unit is Butane's, made of the file system's
				// with_mount_unit: at the file system, not at the units
				// written (its path is the Ignition config's, as every
				// warning's).
				"order.bu:5:7: warning: systemd.units[0].contents: the unit file does not end with a newline, which hostprov would write with line feeds and one final newline; kept byte for byte with exactBytes: true on its hook",
				"order.bu:11:13: warning: systemd.units[1]: to the leftovers: the config neither enables nor disables b.service, which Ignition leaves to the system's presets; a hook is enabled or disabled, so the unit stays as written",
			}},
		// A swap unit of with_mount_unit is named after the device, and
		// a unit the config writes itself is at its own entry.
		{"swap.bu", "variant: fcos\nversion: 1.5.0\nsystemd:\n  units:\n    - name: a.service\n      enabled: true\n      contents: \"[Service]\\nExecStart=/bin/true\\n[Install]\\nWantedBy=multi-user.target\"\nstorage:\n  filesystems:\n    - device: /dev/disk/by-partlabel/swap\n      format: swap\n      with_mount_unit: true\n",
			[]string{
				"swap.bu:7:17: warning: systemd.units[1].contents: the unit file does not end with a newline, which hostprov would write with line feeds and one final newline; kept byte for byte with exactBytes: true on its hook",
				"swap.bu:10:7: warning: storage.filesystems[0]: to the leftovers: a file system, which hostprov has no equivalent of",
				"swap.bu:10:7: warning: systemd.units[0].contents: the unit file does not end with a newline, which hostprov would write with line feeds and one final newline; kept byte for byte with exactBytes: true on its hook",
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, diags := importer.Import(importer.Input{Name: c.name, Data: []byte(c.data), Dir: t.TempDir()})
			if res == nil {
				t.Fatalf("import refused the config:\n%s", diags.Error())
			}
			var got []string
			for _, d := range diags {
				if !strings.Contains(d.Message, "Butane: ") && !strings.Contains(d.Message, "Ignition: ") {
					got = append(got, strings.SplitN(d.String(), "\n", 2)[0])
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// An Ignition 3.6.0 config, which the Ignition module knows only as
// 3.6.0-experimental, is read as that: the spec renders to 3.5.0, and a
// warning at the version says so.
func TestIgnitionAhead(t *testing.T) {
	res, diags := importer.Import(importer.Input{Name: "ahead.ign",
		Data: []byte(`{"ignition": {"version": "3.6.0"}, "systemd": {"units": [{"name": "a.service", "mask": true}]}}`)})
	if res == nil || res.IgnitionVersion != "3.5.0" || len(res.Hooks) != 1 || !res.Hooks[0].Mask {
		t.Fatalf("got %+v\n%s", res, diags.Error())
	}
	if len(diags) != 1 || diags[0].Severity != hooks.Warning || diags[0].Pos.Line != 1 || diags[0].Pos.Column != 26 ||
		!strings.Contains(diags[0].Message, "the spec renders to Ignition 3.5.0 at most") {
		t.Errorf("diagnostics:\n%s", diags.Error())
	}
}

// TestNoCreateHome: noCreateHome (Ignition) and no_create_home
// (cloud-config), and primaryGroup (primary_group), are fields of the
// spec's user, imported without a word; false is what every output does
// anyway, as are noUserGroup and noLogInit false.
func TestNoCreateHome(t *testing.T) {
	for _, c := range []struct {
		name, data   string
		noCreateHome bool
		primaryGroup string
	}{
		{"false.ign", `{"ignition": {"version": "3.3.0"}, "passwd": {"users": [{"name": "a", "noCreateHome": false, "noUserGroup": false, "noLogInit": false}]}}`, false, ""},
		{"true.ign", `{"ignition": {"version": "3.3.0"}, "passwd": {"users": [{"name": "a", "noCreateHome": true, "primaryGroup": "users"}]}}`, true, "users"},
		{"false.cfg", "#cloud-config\nusers:\n  - name: a\n    no_create_home: false\n    lock_passwd: true\n", false, ""},
		{"true.cfg", "#cloud-config\nusers:\n  - name: a\n    no_create_home: true\n    primary_group: users\n", true, "users"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, diags := importer.Import(importer.Input{Name: c.name, Data: []byte(c.data), Dir: t.TempDir()})
			if res == nil {
				t.Fatalf("import refused the config:\n%s", diags.Error())
			}
			if len(diags) > 0 {
				t.Errorf("warnings:\n%s", diags.Error())
			}
			u := res.Hooks[0].Users[0]
			if u.NoCreateHome != c.noCreateHome || u.PrimaryGroup != c.primaryGroup {
				t.Errorf("noCreateHome %v, primaryGroup %q; want %v, %q\n%s", u.NoCreateHome, u.PrimaryGroup, c.noCreateHome, c.primaryGroup, res.Spec)
			}
			if res.Rest != nil {
				t.Errorf("leftovers:\n%s", res.Rest)
			}
		})
	}
}
