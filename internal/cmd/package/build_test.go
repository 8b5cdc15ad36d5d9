package main

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/cli"
	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/internal/testbin"
)

// repoRoot is the repository, from this package's directory.
const repoRoot = "../../.."

// date is the packages' date in the tests: a fixed one, as
// SOURCE_DATE_EPOCH gives.
var date = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// testMaintainer names the maintainer of the packages the tests build,
// which never leave the tests' temporary directories.
const testMaintainer = "hostprov package tests <package-tests@hostprov.dev>"

// need ends the test unless each tool is on PATH and the test runs as root
// (dpkg and rpm install into a root directory with root's ownership).
func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			hosttools.Unavailable(t, "%s not found (.ci/setup installs it)", tool)
		}
	}
	if os.Geteuid() != 0 {
		hosttools.Unavailable(t, "installing packages into a root directory needs root")
	}
}

// runCmd runs a command and returns its standard output; it fails the test if
// the command fails, with everything it printed.
func runCmd(t *testing.T, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LANG=C.UTF-8", "SYSTEMD_COLORS=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// build builds the packages of arches and formats at version into a new
// directory and returns their paths by file name.
func build(t *testing.T, version string, arches, formats []string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testbin.BuildLimit)
	defer cancel()
	out := t.TempDir()
	paths, err := Build(ctx, Config{Root: repoRoot, Version: version, Out: out,
		Arches: arches, Formats: formats, Maintainer: testMaintainer, Date: date})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	byName := map[string]string{}
	for _, p := range paths {
		byName[filepath.Base(p)] = p
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(paths) {
		t.Errorf("%s holds %d files, want the %d packages and nothing else", out, len(ents), len(paths))
	}
	return byName
}

// newDpkgRoot makes an empty root with the database dpkg --root needs,
// and a systemctl: deb-systemd-helper enables through systemctl preset
// only on a system that has systemd (it checks for $DPKG_ROOT/usr/bin/
// systemctl) and makes the links itself otherwise. The copy is never run;
// the host's systemctl works on the root with --root.
func newDpkgRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	systemctl, err := exec.LookPath("systemctl")
	if err != nil {
		hosttools.Unavailable(t, "systemctl not found (Debian package systemd)")
	}
	writeFile(t, filepath.Join(root, "usr/bin/systemctl"), readFile(t, systemctl))
	if err := os.Chmod(filepath.Join(root, "usr/bin/systemctl"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// dpkg runs dpkg on root. The maintainer scripts run outside root
// (--force-script-chrootless, with DPKG_ROOT set, as for a bootstrap), since
// the empty root has no shell: the scripts and deb-systemd-helper work on
// $DPKG_ROOT, which is what is tested.
func dpkg(t *testing.T, root string, args ...string) string {
	t.Helper()
	return runCmd(t, "dpkg", append([]string{"--root=" + root, "--force-script-chrootless", "--log=/dev/null"}, args...)...)
}

// isEnabled is systemctl --root's answer for unit, without failing on a
// unit that is not enabled.
func isEnabled(t *testing.T, root, unit string) string {
	t.Helper()
	out, _ := exec.Command("systemctl", "--root="+root, "is-enabled", unit).Output()
	return strings.TrimSpace(string(out))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// version is the repository's VERSION.
func version(t *testing.T) string {
	t.Helper()
	v, err := ReadVersion(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPackages builds the four packages as make package does and checks
// them with the distributions' own tools: what they hold, that they install
// into an empty root, that the binary runs and says its version, that the
// units are enabled as the preset says, and lintian.
func TestPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hostprov for two architectures; skipped with -short")
	}
	need(t, "go", "dpkg", "dpkg-deb", "rpm", "lintian", "systemctl", "systemd-analyze", "deb-systemd-helper")
	v := version(t)
	pkgs := build(t, v, []string{"amd64", "arm64"}, []string{"deb", "rpm"})
	want := []string{"hostprov-" + v + ".aarch64.rpm", "hostprov-" + v + ".x86_64.rpm",
		"hostprov_" + v + "_amd64.deb", "hostprov_" + v + "_arm64.deb"}
	var names []string
	for n := range pkgs {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("built %q, want %q", names, want)
	}
	b := built{version: v, pkgs: pkgs, deb: pkgs["hostprov_"+v+"_amd64.deb"]}
	for _, tc := range []struct {
		name  string
		check func(*testing.T, built)
	}{
		{"deb-info", testDebInfo},
		{"deb-contents", testDebContents},
		{"copyright", testCopyright},
		{"static-binaries", testStaticBinaries},
		{"units-verify", testUnitsVerify},
		{"dpkg-install", testDpkgInstall},
		{"dpkg-admin-preset", testDpkgAdminPreset},
		{"dpkg-upgrade-remove-purge", testDpkgUpgradeRemovePurge},
		{"rpm", testRpm},
		{"rpm-scriptlets", testRpmScriptlets},
		{"lintian", testLintian},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, b) })
	}
}

// built are the packages TestPackages built: by file name, and the amd64
// Debian package, at version.
type built struct {
	version string
	pkgs    map[string]string
	deb     string
}

// testDebInfo checks the Debian packages' control fields and conffiles.
func testDebInfo(t *testing.T, b built) {
	v, pkgs, deb := b.version, b.pkgs, b.deb
	for arch, p := range map[string]string{"amd64": deb, "arm64": pkgs["hostprov_"+v+"_arm64.deb"]} {
		info := runCmd(t, "dpkg-deb", "-I", p)
		for _, field := range []string{"Package: hostprov", "Version: " + v, "Architecture: " + arch, "Section: admin"} {
			if !strings.Contains(info, "\n "+field+"\n") {
				t.Errorf("dpkg-deb -I %s: no %q in\n%s", filepath.Base(p), field, info)
			}
		}
		if got := strings.TrimSpace(runCmd(t, "dpkg-deb", "-f", p, "Depends")); got != "" {
			t.Errorf("%s depends on %q; a static binary needs nothing", filepath.Base(p), got)
		}
		if got := strings.TrimSpace(runCmd(t, "dpkg-deb", "-f", p, "Recommends")); got != "systemd" {
			t.Errorf("%s recommends %q, want systemd (apply and systemd-sysusers)", filepath.Base(p), got)
		}
	}
	if got := strings.TrimSpace(runCmd(t, "dpkg-deb", "-f", deb, "Maintainer")); got != testMaintainer {
		t.Errorf("Maintainer: %q, want %q", got, testMaintainer)
	}
	conffiles := runCmd(t, "sh", "-c", "dpkg-deb --ctrl-tarfile \"$1\" | tar -xO ./conffiles", "sh", deb)
	if conffiles != "/etc/default/hostprov\n/etc/hostprov/hooks.d/README\n" && conffiles != "/etc/hostprov/hooks.d/README\n/etc/default/hostprov\n" {
		t.Errorf("conffiles = %q, want /etc/default/hostprov and the hooks.d README", conffiles)
	}
}

// testDebContents checks every file of the Debian package, with its mode and owner.
func testDebContents(t *testing.T, b built) {
	v, deb := b.version, b.deb
	listing := runCmd(t, "dpkg-deb", "-c", deb)
	modes := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		f := strings.Fields(line)
		modes[strings.TrimPrefix(f[len(f)-1], ".")] = f[0] + " " + f[1]
	}
	wantFiles := map[string]string{
		"/usr/bin/hostprov": "-rwxr-xr-x root/root",
		"/usr/lib/systemd/system/hostprov-apply.service":     "-rw-r--r-- root/root",
		"/usr/lib/systemd/system/hostprov-apply.path":        "-rw-r--r-- root/root",
		"/usr/lib/systemd/system/hostprov-reapply.service":   "-rw-r--r-- root/root",
		"/usr/lib/systemd/system-preset/80-hostprov.preset":  "-rw-r--r-- root/root",
		"/etc/hostprov/hooks.d/":                             "drwxr-xr-x root/root",
		"/etc/hostprov/hooks.d/README":                       "-rw-r--r-- root/root",
		"/etc/default/hostprov":                              "-rw-r--r-- root/root",
		"/usr/share/bash-completion/completions/hostprov":    "-rw-r--r-- root/root",
		"/usr/share/zsh/vendor-completions/_hostprov":        "-rw-r--r-- root/root",
		"/usr/share/fish/vendor_completions.d/hostprov.fish": "-rw-r--r-- root/root",
		"/usr/share/doc/hostprov/copyright":                  "-rw-r--r-- root/root",
		"/usr/share/doc/hostprov/changelog.gz":               "-rw-r--r-- root/root",
		"/usr/share/doc/hostprov/README.md.gz":               "-rw-r--r-- root/root",
		"/usr/share/doc/hostprov/SECURITY.md.gz":             "-rw-r--r-- root/root",
	}
	// Every file of the repository's examples but their Go tests.
	examples, _ := filepath.Glob(filepath.Join(repoRoot, "examples", "*", "*"))
	n := 0
	for _, e := range examples {
		if !strings.HasSuffix(e, ".go") {
			wantFiles[docDir+"/examples/"+filepath.Base(filepath.Dir(e))+"/"+filepath.Base(e)] = "-rw-r--r-- root/root"
			n++
		}
	}
	if n < 10 || wantFiles[docDir+"/examples/swap/hostprov.yaml"] == "" {
		t.Errorf("only %d example files found", n)
	}
	for path := range modes {
		if strings.HasSuffix(path, ".go") {
			t.Errorf("the package has Go source %s", path)
		}
	}
	// A man page for every command a user can run.
	for _, p := range manPages(cli.Command(), v, date) {
		wantFiles["/usr/share/man/man1/"+p.name+".gz"] = "-rw-r--r-- root/root"
	}
	// And one of the hook spec's format.
	wantFiles["/usr/share/man/man5/hostprov-hooks.5.gz"] = "-rw-r--r-- root/root"
	for _, cmd := range []string{"hostprov", "hostprov-apply", "hostprov-render", "hostprov-kops-set-hooks", "hostprov-completion-bash"} {
		if _, ok := wantFiles["/usr/share/man/man1/"+cmd+".1.gz"]; !ok {
			t.Errorf("no man page %s(1) among the generated ones", cmd)
		}
	}
	for path, mode := range wantFiles {
		if got, ok := modes[path]; !ok {
			t.Errorf("dpkg-deb -c: no %s", path)
		} else if got != mode {
			t.Errorf("dpkg-deb -c: %s is %s, want %s", path, got, mode)
		}
	}
}

// testCopyright checks Debian's machine-readable copyright file.
func testCopyright(t *testing.T, b built) {
	deb := b.deb
	// Debian's machine-readable format, with the Apache License
	// 2.0 of the repository's LICENSE.
	dir := t.TempDir()
	runCmd(t, "dpkg-deb", "-x", deb, dir)
	got := readFile(t, filepath.Join(dir, docDir, "copyright"))
	for _, want := range []string{
		"Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n",
		"\nFiles: *\n", "\nLicense: Apache-2.0\n", "/usr/share/common-licenses/Apache-2.0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("copyright lacks %q:\n%s", want, got)
		}
	}
	if license := readFile(t, filepath.Join(repoRoot, "LICENSE")); !strings.Contains(license, "Apache License\n                           Version 2.0, January 2004") {
		t.Errorf("LICENSE is not the Apache License 2.0")
	}
}

// testStaticBinaries checks that the binary of each architecture is static, for its machine.
func testStaticBinaries(t *testing.T, b built) {
	v, pkgs := b.version, b.pkgs
	for arch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		dir := t.TempDir()
		runCmd(t, "dpkg-deb", "-x", pkgs["hostprov_"+v+"_"+arch+".deb"], dir)
		f, err := elf.Open(filepath.Join(dir, "usr/bin/hostprov"))
		if err != nil {
			t.Fatal(err)
		}
		if f.Machine != machine {
			t.Errorf("%s binary is for %v, want %v", arch, f.Machine, machine)
		}
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
				t.Errorf("%s binary is not static: it has a %v program header", arch, prog.Type)
			}
		}
		f.Close()
	}
}

// testUnitsVerify checks the units as the package installs them, with systemd-analyze verify.
func testUnitsVerify(t *testing.T, b built) {
	deb := b.deb
	// The units as the package installs them, with the binary they
	// run, checked by systemd itself.
	dir := t.TempDir()
	runCmd(t, "dpkg-deb", "-x", deb, dir)
	for _, u := range units {
		if got, want := readFile(t, filepath.Join(dir, unitDir, u)), readFile(t, filepath.Join(repoRoot, "packaging/systemd", u)); got != want {
			t.Errorf("the package's %s differs from packaging/systemd/%s", u, u)
		}
	}
	hosttools.CopyStandardUnits(t, dir)
	hosttools.VerifyRoot(t, dir, units...)
	// The watch and the boot service run exactly the command the brief
	// of hooks.d promises, with the flags of /etc/default/hostprov.
	for _, u := range []string{"hostprov-apply.service", "hostprov-reapply.service"} {
		text := readFile(t, filepath.Join(dir, unitDir, u))
		if !strings.Contains(text, "\nExecStart=/usr/bin/hostprov apply -d /etc/hostprov/hooks.d $HOSTPROV_APPLY_FLAGS\n") ||
			!strings.Contains(text, "\nEnvironmentFile=-/etc/default/hostprov\n") {
			t.Errorf("%s does not run hostprov apply -d /etc/hostprov/hooks.d with the flags of /etc/default/hostprov", u)
		}
	}
}

// testDpkgInstall checks that the package installs into an empty root and enables its units by preset.
func testDpkgInstall(t *testing.T, b built) {
	v, deb := b.version, b.deb
	root := newDpkgRoot(t)
	dpkg(t, root, "-i", deb)
	out := runCmd(t, filepath.Join(root, "usr/bin/hostprov"), "version")
	if !strings.HasPrefix(out, "hostprov "+v+" ") && out != "hostprov "+v+"\n" {
		t.Errorf("hostprov version = %q, want the stamped %s", out, v)
	}
	// The examples, as installed, are valid specs.
	for _, ex := range []string{"swap", "iscsi", "node-metrics"} {
		runCmd(t, filepath.Join(root, "usr/bin/hostprov"), "validate", "-f", filepath.Join(root, docDir, "examples", ex, "hostprov.yaml"))
	}
	// The postinst enabled both units through systemctl preset.
	for _, u := range []string{"hostprov-apply.path", "hostprov-apply.service"} {
		if got := isEnabled(t, root, u); got != "enabled" {
			t.Errorf("after dpkg -i, systemctl is-enabled %s = %q, want enabled", u, got)
		}
	}
	// The preset file alone enables them, as systemd's first boot
	// (preset-all) or a postinst's systemctl preset would.
	runCmd(t, "systemctl", "--root="+root, "disable", "hostprov-apply.path", "hostprov-apply.service")
	if got := isEnabled(t, root, "hostprov-apply.path"); got != "disabled" {
		t.Fatalf("after disable, is-enabled = %q", got)
	}
	runCmd(t, "systemctl", "--root="+root, "preset", "hostprov-apply.path", "hostprov-apply.service")
	for _, u := range []string{"hostprov-apply.path", "hostprov-apply.service"} {
		if got := isEnabled(t, root, u); got != "enabled" {
			t.Errorf("after systemctl preset, is-enabled %s = %q, want enabled", u, got)
		}
	}
}

// testDpkgAdminPreset checks that an administrator's preset wins at a first installation.
func testDpkgAdminPreset(t *testing.T, b built) {
	deb := b.deb
	// An administrator's preset that says disable wins at a first
	// installation: the package enables through presets, not blindly.
	root := newDpkgRoot(t)
	writeFile(t, filepath.Join(root, "etc/systemd/system-preset/10-local.preset"), "disable hostprov-*\n")
	dpkg(t, root, "-i", deb)
	for _, u := range []string{"hostprov-apply.path", "hostprov-apply.service"} {
		if got := isEnabled(t, root, u); got != "disabled" {
			t.Errorf("with a preset saying disable, is-enabled %s = %q, want disabled", u, got)
		}
	}
}

// testDpkgUpgradeRemovePurge checks what an upgrade, dpkg -r and dpkg -P keep and remove.
func testDpkgUpgradeRemovePurge(t *testing.T, b built) {
	v, deb := b.version, b.deb
	next := v + ".1"
	nextDeb := build(t, next, []string{"amd64"}, []string{"deb"})["hostprov_"+next+"_amd64.deb"]
	root := newDpkgRoot(t)
	dpkg(t, root, "-i", deb)
	spec := filepath.Join(root, "etc/hostprov/hooks.d/node.yaml")
	state := filepath.Join(root, "var/lib/hostprov/state.json")
	stamp := filepath.Join(root, "var/lib/hostprov/stamps/make-swap.0123456789abcdef")
	writeFile(t, spec, "hooks:\n- name: make-swap\n")
	writeFile(t, state, `{"version":1}`+"\n")
	writeFile(t, stamp, "")
	// The administrator turned the watch off; an upgrade keeps that.
	runCmd(t, "systemctl", "--root="+root, "disable", "hostprov-apply.path")

	dpkg(t, root, "-i", nextDeb)
	if out := runCmd(t, filepath.Join(root, "usr/bin/hostprov"), "version"); !strings.HasPrefix(out, "hostprov "+next+" ") && out != "hostprov "+next+"\n" {
		t.Errorf("after the upgrade, hostprov version = %q, want %s", out, next)
	}
	if got := readFile(t, spec); got != "hooks:\n- name: make-swap\n" {
		t.Errorf("the upgrade changed the spec in hooks.d: %q", got)
	}
	if got := readFile(t, state); got != `{"version":1}`+"\n" {
		t.Errorf("the upgrade changed the state file: %q", got)
	}
	if got := isEnabled(t, root, "hostprov-apply.path"); got != "disabled" {
		t.Errorf("after the upgrade, the watch the administrator disabled is %q", got)
	}
	if got := isEnabled(t, root, "hostprov-apply.service"); got != "enabled" {
		t.Errorf("after the upgrade, the boot service is %q, want enabled", got)
	}

	dpkg(t, root, "-r", "hostprov")
	if exists(filepath.Join(root, "usr/bin/hostprov")) {
		t.Error("dpkg -r left /usr/bin/hostprov")
	}
	for _, p := range []string{spec, filepath.Join(root, "etc/hostprov/hooks.d/README"), state, stamp} {
		if !exists(p) {
			t.Errorf("dpkg -r removed %s; remove keeps configuration and state", strings.TrimPrefix(p, root))
		}
	}
	if status := runCmd(t, "dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"), "-W", "-f=${db:Status-Abbrev}", "hostprov"); status != "rc " {
		t.Errorf("after dpkg -r, status %q, want rc (config files remain)", status)
	}

	dpkg(t, root, "-P", "hostprov")
	if exists(filepath.Join(root, "etc/hostprov/hooks.d/README")) {
		t.Error("dpkg -P left the package's README in hooks.d")
	}
	// The administrator's own spec is not the package's to delete, and
	// dpkg keeps the directory that holds it.
	if !exists(spec) {
		t.Error("dpkg -P removed the administrator's spec file")
	}
	// hostprov's state and run-once stamps outlive the package with
	// the units they describe (postrm says why).
	if !exists(state) || !exists(stamp) {
		t.Error("dpkg -P removed /var/lib/hostprov")
	}
	links, _ := filepath.Glob(filepath.Join(root, "etc/systemd/system/*/hostprov-*"))
	masks, _ := filepath.Glob(filepath.Join(root, "etc/systemd/system/hostprov-*"))
	if left := append(links, masks...); len(left) != 0 {
		t.Errorf("dpkg -P left enable links or masks: %q", left)
	}
	if exists(filepath.Join(root, "var/lib/systemd/deb-systemd-helper-enabled/hostprov-apply.service.dsh-also")) {
		t.Error("dpkg -P left deb-systemd-helper's record of the units")
	}
	if status, _ := exec.Command("dpkg-query", "--admindir="+filepath.Join(root, "var/lib/dpkg"), "-W", "-f=${db:Status-Abbrev}", "hostprov").Output(); len(status) != 0 && string(status) != "un " {
		t.Errorf("after dpkg -P, status %q, want none", status)
	}

	// With nothing of the administrator's in it, purge leaves no
	// /etc/hostprov at all.
	clean := newDpkgRoot(t)
	dpkg(t, clean, "-i", deb)
	dpkg(t, clean, "-P", "hostprov")
	if exists(filepath.Join(clean, "etc/hostprov")) {
		t.Error("dpkg -P of an untouched installation left /etc/hostprov")
	}
}

// testRpm checks the RPM packages' tags and an installation into an empty root.
func testRpm(t *testing.T, b built) {
	v, pkgs := b.version, b.pkgs
	for arch, p := range map[string]string{"x86_64": pkgs["hostprov-"+v+".x86_64.rpm"], "aarch64": pkgs["hostprov-"+v+".aarch64.rpm"]} {
		info := runCmd(t, "rpm", "-qip", p)
		for _, field := range []string{"Name        : hostprov", "Version     : " + v, "Architecture: " + arch} {
			if !strings.Contains(info, field+"\n") {
				t.Errorf("rpm -qip %s: no %q in\n%s", filepath.Base(p), field, info)
			}
		}
	}
	rpmFile := pkgs["hostprov-"+v+".x86_64.rpm"]
	// The license, as RPM distributions ship it: the tag, and the
	// text as a %license file.
	if got := runCmd(t, "rpm", "-qp", "--queryformat", "%{LICENSE}", rpmFile); got != "Apache-2.0" {
		t.Errorf("rpm License: %q, want Apache-2.0", got)
	}
	if got := runCmd(t, "rpm", "-qpL", rpmFile); got != "/usr/share/licenses/hostprov/LICENSE\n" {
		t.Errorf("rpm -qpL = %q, want the LICENSE file", got)
	}
	if got := runCmd(t, "rpm", "-qp", "--queryformat", "%{PACKAGER}", rpmFile); got != testMaintainer {
		t.Errorf("rpm Packager: %q, want %q", got, testMaintainer)
	}
	if got := strings.TrimSpace(runCmd(t, "rpm", "-qp", "--recommends", rpmFile)); got != "systemd" {
		t.Errorf("rpm --recommends = %q, want systemd", got)
	}
	if got := runCmd(t, "rpm", "-qpc", rpmFile); got != "/etc/default/hostprov\n/etc/hostprov/hooks.d/README\n" {
		t.Errorf("rpm -qpc = %q, want /etc/default/hostprov and the hooks.d README", got)
	}
	root := t.TempDir()
	runCmd(t, "rpm", "--root="+root, "--initdb")
	// The scriptlets run chrooted into root, which has no shell:
	// they are tested below, with a recording systemctl.
	runCmd(t, "rpm", "--root="+root, "-i", "--nodeps", "--noscripts", rpmFile)
	if out := runCmd(t, filepath.Join(root, "usr/bin/hostprov"), "version"); !strings.HasPrefix(out, "hostprov "+v) {
		t.Errorf("hostprov version = %q, want %s", out, v)
	}
	// What %post does on a first installation, here on root.
	runCmd(t, "systemctl", "--root="+root, "preset", "hostprov-apply.service", "hostprov-apply.path")
	if got := isEnabled(t, root, "hostprov-apply.path"); got != "enabled" {
		t.Errorf("after systemctl preset, is-enabled hostprov-apply.path = %q", got)
	}
}

// testRpmScriptlets checks what the RPM scriptlets run, with a recording systemctl.
func testRpmScriptlets(t *testing.T, b built) {
	v, pkgs := b.version, b.pkgs
	rpmFile := pkgs["hostprov-"+v+".x86_64.rpm"]
	bin := t.TempDir()
	log := filepath.Join(bin, "log")
	writeFile(t, filepath.Join(bin, "systemctl"), "#!/bin/sh\necho \"systemctl $*\" >> \""+log+"\"\n")
	if err := os.Chmod(filepath.Join(bin, "systemctl"), 0o755); err != nil {
		t.Fatal(err)
	}
	scriptlet := func(tag, arg string) string {
		t.Helper()
		body := runCmd(t, "rpm", "-qp", "--queryformat", "%{"+tag+"}", rpmFile)
		os.Remove(log)
		cmd := exec.Command("/bin/sh", "-c", body, tag, arg)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%%%s %s: %v\n%s", tag, arg, err, out)
		}
		b, _ := os.ReadFile(log)
		return string(b)
	}
	preset := "systemctl --no-reload preset hostprov-apply.service hostprov-apply.path\n"
	if got := scriptlet("POSTIN", "1"); !strings.Contains(got, preset) {
		t.Errorf("%%post at a first installation ran\n%s\nwant %s", got, preset)
	}
	if got := scriptlet("POSTIN", "2"); strings.Contains(got, "preset") {
		t.Errorf("%%post on an upgrade presets again, undoing the administrator's choice:\n%s", got)
	}
	disable := "systemctl --no-reload disable --now hostprov-apply.path hostprov-apply.service\n"
	if got := scriptlet("PREUN", "0"); !strings.Contains(got, disable) {
		t.Errorf("%%preun on erase ran\n%s\nwant %s", got, disable)
	}
	if got := scriptlet("PREUN", "1"); got != "" {
		t.Errorf("%%preun on an upgrade ran\n%s\nwant nothing", got)
	}
}

// testLintian checks that lintian finds nothing in the Debian package.
func testLintian(t *testing.T, b built) {
	deb := b.deb
	// Any error or warning fails; the one override the package ships
	// (statically-linked-binary, see packaging/deb/lintian-overrides)
	// is reported as an override, not a failure.
	cmd := exec.Command("lintian", "--fail-on", "error,warning", "--tag-display-limit", "0", deb)
	out, err := cmd.CombinedOutput()
	text := strings.TrimSpace(strings.ReplaceAll(string(out), "running with root privileges is not recommended!", ""))
	if err != nil || text != "" {
		t.Errorf("lintian %s: %v\n%s", filepath.Base(deb), err, text)
	}
}

// TestReadVersion checks that VERSION holds a version both formats read
// alike, and that Build refuses one they would not.
func TestReadVersion(t *testing.T) {
	v := version(t)
	if !versionPattern.MatchString(v) {
		t.Fatalf("VERSION = %q", v)
	}
	for _, bad := range []string{"v1.2.3", "1.2.3-1", "1.2 3", "", "1..2"} {
		if versionPattern.MatchString(bad) {
			t.Errorf("version %q accepted; it is not a Debian and RPM version alike", bad)
		}
	}
	_, err := Build(context.Background(), Config{Root: repoRoot, Version: "v1.2.3", Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), `version "v1.2.3"`) {
		t.Errorf("Build with version v1.2.3: %v, want a refusal", err)
	}
}

// TestReproducible builds the amd64 packages twice, seconds apart, with no
// date given, as make package does: they are the same bytes, dated the
// commit's date (or SOURCE_DATE_EPOCH's), never the clock's.
func TestReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hostprov twice; skipped with -short")
	}
	need(t, "go", "git", "dpkg-deb")
	commit, err := SourceDate(repoRoot)
	if err != nil {
		t.Skipf("no commit date: %v", err)
	}
	buildAt := func(epoch string) map[string][]byte {
		t.Helper()
		t.Setenv("SOURCE_DATE_EPOCH", epoch)
		out := t.TempDir()
		paths, err := Build(context.Background(), Config{Root: repoRoot, Version: "0.0.1", Out: out,
			Arches: []string{"amd64"}, Formats: []string{"deb", "rpm"}, Maintainer: testMaintainer})
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		got := map[string][]byte{}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			got[filepath.Base(p)] = b
		}
		return got
	}
	first := buildAt("")
	// The clock moves on by more than the packages' one-second dates.
	time.Sleep(1100 * time.Millisecond)
	second := buildAt("")
	if len(first) != 2 {
		t.Fatalf("built %d packages, want 2", len(first))
	}
	for name, b := range first {
		if !bytes.Equal(b, second[name]) {
			t.Errorf("%s differs between two builds of one commit", name)
		}
	}
	// The .deb's files and changelog carry the commit's date.
	deb := filepath.Join(t.TempDir(), "hostprov.deb")
	if err := os.WriteFile(deb, first["hostprov_0.0.1_amd64.deb"], 0o644); err != nil {
		t.Fatal(err)
	}
	contents := runCmd(t, "dpkg-deb", "-c", deb)
	if want := commit.Format("2006-01-02 15:04"); !strings.Contains(contents, " "+want+" ./usr/bin/hostprov\n") {
		t.Errorf("/usr/bin/hostprov is not dated %s, the commit's date:\n%s", want, contents)
	}
	// SOURCE_DATE_EPOCH, when set, is the date instead.
	epoch := buildAt("1700000000")
	if err := os.WriteFile(deb, epoch["hostprov_0.0.1_amd64.deb"], 0o644); err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(1700000000, 0).UTC().Format("2006-01-02 15:04"); !strings.Contains(runCmd(t, "dpkg-deb", "-c", deb), " "+want+" ./usr/bin/hostprov\n") {
		t.Errorf("with SOURCE_DATE_EPOCH=1700000000, /usr/bin/hostprov is not dated %s", want)
	}
}

// TestCheckMaintainer: the packages name someone who can be reached.
func TestCheckMaintainer(t *testing.T) {
	for _, ok := range []string{testMaintainer, "Jane Doe <jane@example.co.uk>", "ACME Ops <ops@acme.dev>"} {
		if err := CheckMaintainer(ok); err != nil {
			t.Errorf("CheckMaintainer(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "jane@acme.dev", "Jane <jane@acme.dev", "<jane@acme.dev>", "Jane <jane>", "Jane <@acme.dev>",
		"hostprov maintainers <maintainers@hostprov.invalid>", "Jane <jane@example.com>", "Jane <jane@ci.example.org>",
		"Jane <jane@host.test>", "Jane <jane@box.localhost>", "Jane <jane@box.local>", "Jane <jane@acme.EXAMPLE>"} {
		if err := CheckMaintainer(bad); err == nil {
			t.Errorf("CheckMaintainer(%q) accepted it", bad)
		}
	}
	_, err := Build(context.Background(), Config{Root: repoRoot, Out: t.TempDir(), Date: date})
	if err == nil || !strings.Contains(err.Error(), "MAINTAINER=") {
		t.Errorf("Build without a maintainer: %v, want a refusal that says what to give", err)
	}
}
