package ignition_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// rigSpec is a small spec as a user would give it for a first boot: a
// one-shot hook that leaves a marker (its value comes from its drop-in, so
// the marker proves the drop-in was read too), a hook installed but not
// enabled, and a mask.
const rigSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: hostprov-test-done
  description: Leave a marker, with the value the drop-in gives
  type: oneshot
  remainAfterExit: true
  exec: [/bin/sh, -c, 'printf "%s" "$HOSTPROV_MARK" > /var/lib/hostprov-test-done']
  dropins:
  - name: 10-mark.conf
    contents: |
      [Service]
      Environment=HOSTPROV_MARK=from-dropin
- name: hostprov-test-disabled
  type: oneshot
  enabled: false
  wantedBy: [multi-user.target]
  exec: [/bin/touch, /var/lib/hostprov-test-disabled]
- name: hostprov-test-masked.service
  mask: true
`

// TestIgnitionInRig is a first boot in small: Ignition's apply tool,
// inside a real systemd, installs the Ignition output in its root; systemd
// applies Ignition's presets (as it does on the first boot), reloads and
// reaches multi-user.target, and the enabled hook has run to
// ActiveState=active, Result=success, with its drop-in, while the disabled
// hook did not run and the masked unit is masked.
func TestIgnitionInRig(t *testing.T) {
	built, diags := compile.Build("rig.yaml", []byte(rigSpec), compile.Options{})
	us := built.Units
	if len(diags) > 0 {
		t.Fatalf("the spec must render without any diagnostic:\n%v", diags.Error())
	}
	ign, err := ignition.Render(us, ignition.Options{})
	if err != nil {
		t.Fatal(err)
	}

	m := rendertest.NewIgnitionMachine(t)
	r := m.Rig
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Ignition's files stage installs into the machine's own root.
	if out, err := m.Apply(ctx, "/", ign); err != nil {
		t.Fatal(err)
	} else if testing.Verbose() {
		t.Logf("ignition-apply:\n%s", out)
	}

	// Ignition only writes a preset file for enabled; on the first boot
	// systemd applies it, with the image's own presets. Here: the
	// presets of Fedora CoreOS and RHCOS, then systemctl preset, inside
	// the rig, for the units the spec enables or disables.
	if err := rendertest.WriteFile(filepath.Join(r.Root, "etc", rendertest.VendorPresetFile), []byte(rendertest.VendorPreset), 0o644); err != nil {
		t.Fatal(err)
	}
	presetArgs := []string{"systemctl", "preset"}
	for _, u := range us {
		if u.Enabled != nil && !u.Mask {
			presetArgs = append(presetArgs, u.Name)
		}
	}
	if _, err := r.Run(ctx, presetArgs...); err != nil {
		t.Fatal(err)
	}
	if err := r.Conn.ReloadContext(ctx); err != nil {
		t.Fatal(err)
	}

	// Boot on: reach the target the hook is wanted by.
	done := make(chan string, 1)
	if _, err := r.Conn.StartUnitContext(ctx, "multi-user.target", "replace", done); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res != "done" {
			t.Fatalf("start multi-user.target: job %s", res)
		}
	case <-ctx.Done():
		t.Fatal("start multi-user.target: no result in time")
	}

	check := func(unit, prop string, want any, service bool) {
		t.Helper()
		var got any
		if service {
			p, err := r.Conn.GetServicePropertyContext(ctx, unit, prop)
			if err != nil {
				t.Fatal(err)
			}
			got = p.Value.Value()
		} else {
			p, err := r.Conn.GetUnitPropertyContext(ctx, unit, prop)
			if err != nil {
				t.Fatal(err)
			}
			got = p.Value.Value()
		}
		if got != want {
			t.Errorf("%s: %s=%v, want %v", unit, prop, got, want)
		}
	}
	check("hostprov-test-done.service", "UnitFileState", "enabled", false)
	check("hostprov-test-done.service", "ActiveState", "active", false)
	check("hostprov-test-done.service", "Result", "success", true)
	check("hostprov-test-done.service", "ExecMainStatus", int32(0), true)
	if b, err := os.ReadFile(filepath.Join(r.Root, "var/lib/hostprov-test-done")); err != nil {
		t.Errorf("the hook's marker: %v", err)
	} else if string(b) != "from-dropin" {
		t.Errorf("the hook's marker holds %q, want %q (from its drop-in)", b, "from-dropin")
	}

	check("hostprov-test-disabled.service", "UnitFileState", "disabled", false)
	check("hostprov-test-disabled.service", "ActiveState", "inactive", false)
	if _, err := os.Stat(filepath.Join(r.Root, "var/lib/hostprov-test-disabled")); !os.IsNotExist(err) {
		t.Errorf("the disabled hook ran (its marker: %v)", err)
	}

	check("hostprov-test-masked.service", "LoadState", "masked", false)
}
