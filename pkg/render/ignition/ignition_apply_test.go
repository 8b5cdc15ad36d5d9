package ignition_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/unitdir"
	"github.com/hostprov/hostprov/pkg/units"
)

// systemctlRoot runs systemctl --root=root with the arguments, offline.
func systemctlRoot(ctx context.Context, root string, args ...string) error {
	cmd := exec.CommandContext(ctx, "systemctl", append([]string{"--root=" + root}, args...)...)
	cmd.Env = append(os.Environ(), "SYSTEMD_COLORS=0", "SYSTEMD_PAGER=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("systemctl --root=%s %s: %w\n%s", root, strings.Join(args, " "), err, out)
	}
	return nil
}

// unitTree is what a root holds under etc/systemd/system: regular files
// (path -> contents) and symbolic links (path -> target), paths relative
// to the unit directory, slash-separated.
type unitTree struct {
	files map[string]string
	modes map[string]fs.FileMode
	links map[string]string
}

func readUnitTree(t *testing.T, root string) unitTree {
	t.Helper()
	dir := filepath.Join(root, "etc", "systemd", "system")
	tr := unitTree{files: map[string]string{}, modes: map[string]fs.FileMode{}, links: map[string]string{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			tr.links[rel] = target
			return err
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			tr.files[rel] = string(b)
			tr.modes[rel] = fi.Mode().Perm()
		case !d.IsDir():
			t.Errorf("%s: neither a file, a link nor a directory (%v)", rel, d.Type())
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return tr
}

// installTargets returns the values of an [Install] list key (WantedBy=,
// RequiredBy=) as systemd reads them: space-separated lists, an empty
// value resetting what came before.
func installTargets(f *units.File, key string) []string {
	var out []string
	for _, v := range f.Values(units.SectionInstall, key) {
		if v == "" {
			out = nil
			continue
		}
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// enableLinks returns the links `systemctl enable` makes for a unit file of
// this spec in the unit directory, relative to it: TARGET.wants/NAME for
// WantedBy=, TARGET.requires/NAME for RequiredBy=, where a template is
// enabled as its DefaultInstance=. It returns nil when the file says
// nothing to enable it for.
func enableLinks(t *testing.T, u compile.Unit) []string {
	t.Helper()
	f, err := units.Parse(u.Contents)
	if err != nil {
		t.Fatalf("%s: %v", u.Name, err)
	}
	name := u.Name
	if typ := units.Type(name); strings.HasSuffix(name, "@."+typ) {
		inst := f.Values(units.SectionInstall, "DefaultInstance")
		if len(inst) == 0 || inst[len(inst)-1] == "" {
			return nil
		}
		name = strings.TrimSuffix(name, "."+typ) + inst[len(inst)-1] + "." + typ
	}
	var links []string
	for _, target := range installTargets(f, "WantedBy") {
		links = append(links, target+".wants/"+name)
	}
	for _, target := range installTargets(f, "RequiredBy") {
		links = append(links, target+".requires/"+name)
	}
	return links
}

// TestIgnitionApplyGoldens gives every golden spec's Ignition output, in
// every spec version hostprov emits, to Ignition's own apply tool, run on a
// machine with systemd as on a first boot, to install into an empty root;
// and proves that what Ignition installs is what hostprov means:
//
//   - the unit files and drop-ins it writes under etc/systemd/system are
//     byte for byte (and mode for mode) those of unitdir.Write, no more
//     and no fewer;
//   - masks are links to /dev/null;
//   - after `systemctl --root preset-all` with the image presets of
//     Fedora CoreOS (rendertest.VendorPreset; Ignition only writes a preset file,
//     systemd makes the links on the first boot), every enabled unit with
//     WantedBy= or RequiredBy= has its link, no unit with enabled: false
//     has any, and the whole set of links is exactly what `systemctl
//     enable` makes of unitdir.Write's output (with its masks);
//   - units of the image, which an empty root does not have, are named in
//     the preset file as enable or disable, as the spec says.
func TestIgnitionApplyGoldens(t *testing.T) {
	if _, err := exec.LookPath("systemctl"); err != nil {
		hosttools.Unavailable(t, "systemctl not found (Debian package systemd)")
	}
	m := rendertest.NewIgnitionMachine(t)
	for name, path := range rendertest.GoldenSpecs(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			us := rendertest.Units(t, path)

			// What hostprov itself installs: the directory output with
			// its masks, and the links systemctl makes for what the spec
			// enables.
			ref := t.TempDir()
			refDir := filepath.Join(ref, "etc", "systemd", "system")
			if err := unitdir.Write(refDir, us); err != nil {
				t.Fatal(err)
			}
			var enable []string
			for _, u := range us {
				if u.Contents != nil && !u.Mask && u.Enabled != nil && *u.Enabled && len(enableLinks(t, u)) > 0 {
					enable = append(enable, u.Name)
				}
			}
			if len(enable) > 0 {
				if err := systemctlRoot(ctx, ref, append([]string{"enable"}, enable...)...); err != nil {
					t.Fatal(err)
				}
			}
			want := readUnitTree(t, ref)

			for _, version := range ignition.Versions() {
				t.Run(version, func(t *testing.T) {
					ign, err := ignition.Render(us, ignition.Options{Version: version})
					if err != nil {
						t.Fatal(err)
					}
					inside, root, err := m.NewRoot()
					if err != nil {
						t.Fatal(err)
					}
					log, err := m.Apply(ctx, inside, ign)
					if err != nil {
						t.Fatal(err)
					}
					if testing.Verbose() {
						t.Logf("ignition-apply:\n%s", log)
					}
					checkApplied(t, us, root, want, ign)
				})
			}
		})
	}
}

// checkApplied compares what Ignition's apply tool installed in root with
// what hostprov means (want: unitdir.Write plus systemctl enable).
func checkApplied(t *testing.T, us []compile.Unit, root string, want unitTree, ign []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := readUnitTree(t, root)

	// Files: the same paths, bytes and modes as the directory output.
	rendertest.CompareFiles(t, "ignition-apply", want.files, got.files)
	for p, m := range want.modes {
		if g, ok := got.modes[p]; ok && g != m {
			t.Errorf("ignition-apply wrote %s with mode %v; unitdir.Write writes %v", p, g, m)
		}
	}
	// Nothing else anywhere in the root but the preset file.
	presetFile := filepath.Join("etc", "systemd", "system-preset", "20-ignition.preset")
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if !strings.HasPrefix(rel, filepath.Join("etc", "systemd", "system")+string(filepath.Separator)) && rel != presetFile {
			t.Errorf("ignition-apply wrote %s, which is neither a unit file nor its preset file", rel)
		}
		return nil
	})

	// Before preset-all, the only links are masks, each to /dev/null.
	masks := map[string]string{}
	for _, u := range us {
		if u.Mask {
			masks[u.Name] = "/dev/null"
		}
	}
	if diff := cmp.Diff(masks, got.links); diff != "" {
		t.Errorf("links after ignition-apply, before any preset, are not exactly the masks (-want +got):\n%s", diff)
	}

	// The preset file names each unit of the image that the spec enables
	// or disables: an empty root has no file of theirs to link, so this
	// is all there is to check for them.
	preset, err := os.ReadFile(filepath.Join(root, presetFile))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(preset), "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, u := range us {
		if u.Contents != nil || u.Mask || u.Enabled == nil {
			continue
		}
		verb := "disable"
		if *u.Enabled {
			verb = "enable"
		}
		if !lines[verb+" "+u.Name] {
			t.Errorf("%s is a unit of the image with enabled: %v, but the preset file has no %q line:\n%s", u.Name, *u.Enabled, verb+" "+u.Name, preset)
		}
	}

	// First boot: systemd applies the presets, Ignition's and the image's.
	// systemctl does it offline.
	if err := rendertest.WriteFile(filepath.Join(root, "usr", "lib", rendertest.VendorPresetFile), []byte(rendertest.VendorPreset), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := systemctlRoot(ctx, root, "preset-all"); err != nil {
		t.Fatal(err)
	}
	got = readUnitTree(t, root)
	for _, u := range us {
		switch {
		case u.Mask:
			if l := got.links[u.Name]; l != "/dev/null" {
				t.Errorf("%s: mask: true, but after preset-all it is %q, not a link to /dev/null", u.Name, l)
			}
		case u.Contents == nil || u.Enabled == nil:
		case *u.Enabled:
			for _, l := range enableLinks(t, u) {
				if _, ok := got.links[l]; !ok {
					t.Errorf("%s: enabled: true, but after preset-all there is no link %s", u.Name, l)
				}
			}
		default:
			for l, target := range got.links {
				if linksTo(l, target, u.Name) {
					t.Errorf("%s: enabled: false, but after preset-all there is a link %s -> %s", u.Name, l, target)
				}
			}
		}
	}
	// And the whole set is what systemctl enable and mask make.
	wantLinks := map[string]string{}
	for l, target := range want.links {
		wantLinks[l] = target
	}
	if diff := cmp.Diff(sortedLinks(wantLinks), sortedLinks(got.links)); diff != "" {
		t.Errorf("links after preset-all differ from systemctl enable and mask of the directory output (-enable +ignition):\n%s\npreset file:\n%s\nconfig:\n%s", diff, preset, ign)
	}
}

// linksTo reports whether the link at rel (to target) enables unit: it
// points at the unit's file, or it is named after the unit or, for a
// template, one of its instances.
func linksTo(rel, target, unit string) bool {
	base := filepath.Base(rel)
	if filepath.Base(target) == unit || base == unit {
		return true
	}
	typ := units.Type(unit)
	if prefix, ok := strings.CutSuffix(unit, "@."+typ); ok {
		return strings.HasPrefix(base, prefix+"@") && strings.HasSuffix(base, "."+typ)
	}
	return false
}

func sortedLinks(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for l, target := range m {
		out = append(out, l+" -> "+target)
	}
	sort.Strings(out)
	return out
}
