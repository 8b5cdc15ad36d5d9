package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	"github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	"github.com/goreleaser/nfpm/v2/rpm"

	"github.com/hostprov/hostprov/internal/cli"
)

// versionPackage is where the version is stamped, with -X.
const versionPackage = "github.com/hostprov/hostprov/internal/cli.Version"

// Where the package puts hostprov's files. The units and the preset go to
// /usr/lib, the distributions' directory for them (Debian's merged /usr
// included), not /etc, which is the administrator's.
const (
	unitDir   = "/usr/lib/systemd/system"
	presetDir = "/usr/lib/systemd/system-preset"
	hooksDir  = "/etc/hostprov/hooks.d"
	docDir    = "/usr/share/doc/hostprov"
	// examplesDir has the repository's examples.
	examplesDir = docDir + "/examples"
	// licenseDir is where RPM distributions keep a package's %license
	// files.
	licenseDir = "/usr/share/licenses/hostprov"
	// manDir is where the man pages go: man1 for the commands, man5 for
	// the hook spec's format.
	manDir = "/usr/share/man/man"
)

// units are the unit files of packaging/systemd, and preset the preset
// file that enables them.
var (
	units  = []string{"hostprov-apply.service", "hostprov-apply.path", "hostprov-reapply.service"}
	preset = "80-hostprov.preset"
)

// Config says what to build.
type Config struct {
	// Root is the repository: its cmd/hostprov is built and its packaging
	// directory, VERSION, LICENSE, README.md and SECURITY.md are packaged,
	// and docs/spec.md is the text of hostprov-hooks(5).
	Root string
	// Version is the packages' version and the one stamped into the binary;
	// empty means the VERSION file's.
	Version string
	// Out is where the packages are written (dist/ for make package).
	Out string
	// Arches are Go's names (amd64, arm64); Formats "deb" and "rpm".
	Arches  []string
	Formats []string
	// Maintainer is the packages' maintainer, "Name <address>": who ships
	// them, and whom their users write to (see CheckMaintainer).
	Maintainer string
	// Date is the packages' file times and the changelog's and man pages'
	// date, so that one commit packages to the same bytes; zero means
	// SourceDate's.
	Date time.Time
}

// SourceDate is the date of the source being packaged: SOURCE_DATE_EPOCH
// when it is set (the reproducible-builds convention, which make package
// sets to the commit's date), or else the date of root's last commit. It is
// never the clock: packages dated when they were built differ from build
// to build. A tree with neither is an error that says what to set.
func SourceDate(root string) (time.Time, error) {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil || sec < 0 {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", s)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	cmd := exec.Command("git", "log", "-1", "--format=%ct")
	cmd.Dir = root
	out, err := cmd.Output()
	if sec, perr := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && perr == nil {
		return time.Unix(sec, 0).UTC(), nil
	}
	return time.Time{}, errors.New("no date for the packages: set SOURCE_DATE_EPOCH (seconds since 1970, such as the release commit's date) when packaging a tree without git history")
}

// CheckMaintainer says why m cannot name the packages' maintainer, or
// returns nil. It must be "Name <user@host>", as Debian's Maintainer field
// and RPM's Packager are written, with a host that mail can reach: lintian
// checks only that the host is a syntactically valid domain, so it passes
// the domains reserved never to resolve (RFC 2606 and RFC 6761: .invalid,
// .example, .test, .localhost and example.com, .net, .org), which would
// name no one.
func CheckMaintainer(m string) error {
	name, rest, ok := strings.Cut(m, " <")
	addr, ok2 := strings.CutSuffix(rest, ">")
	user, host, ok3 := strings.Cut(addr, "@")
	if m == "" {
		return errors.New(`no maintainer: give who ships the packages as "Name <address>" (make package MAINTAINER="Name <address>")`)
	}
	if !ok || !ok2 || !ok3 || strings.TrimSpace(name) == "" || user == "" || !strings.Contains(host, ".") ||
		strings.ContainsAny(addr, " <>") || strings.ContainsAny(name, "<>") {
		return fmt.Errorf(`maintainer %q: write it as "Name <user@host>"`, m)
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	tld := h[strings.LastIndexByte(h, '.')+1:]
	switch {
	case tld == "invalid" || tld == "example" || tld == "test" || tld == "localhost" || tld == "local",
		h == "example.com" || h == "example.net" || h == "example.org" ||
			strings.HasSuffix(h, ".example.com") || strings.HasSuffix(h, ".example.net") || strings.HasSuffix(h, ".example.org"):
		return fmt.Errorf("maintainer %q: %s is a domain reserved never to receive mail; name an address where the packages' users can reach whoever ships them", m, host)
	}
	return nil
}

// versionPattern is what a version must look like to be a Debian and an
// RPM version alike and sort the same in both: digits and dots, with an
// optional ~ suffix for a pre-release (0.2.0~rc1 sorts before 0.2.0).
var versionPattern = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*(~[0-9A-Za-z.]+)?$`)

// ReadVersion returns the version in root's VERSION file: the one place the
// version of a release is written.
func ReadVersion(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if !versionPattern.MatchString(v) {
		return "", fmt.Errorf("VERSION: %q is not a version such as 1.2.3 or 1.3.0~rc1", v)
	}
	return v, nil
}

// Build builds hostprov for each of c.Arches and packages it in each of
// c.Formats into c.Out, and returns the packages' paths. Nothing is left
// in c.Out but whole packages: each is written under a temporary name and
// renamed.
func Build(ctx context.Context, c Config) ([]string, error) {
	if c.Version == "" {
		v, err := ReadVersion(c.Root)
		if err != nil {
			return nil, err
		}
		c.Version = v
	}
	if !versionPattern.MatchString(c.Version) {
		return nil, fmt.Errorf("version %q: want digits and dots, with an optional ~ suffix", c.Version)
	}
	if err := CheckMaintainer(c.Maintainer); err != nil {
		return nil, err
	}
	if c.Date.IsZero() {
		d, err := SourceDate(c.Root)
		if err != nil {
			return nil, err
		}
		c.Date = d
	}
	c.Date = c.Date.UTC().Truncate(time.Second)
	stage, err := os.MkdirTemp("", "hostprov-package-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	if err := stageShared(c, stage); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(c.Out, 0o755); err != nil {
		return nil, err
	}
	var built []string
	for _, arch := range c.Arches {
		bin := filepath.Join(stage, "hostprov-"+arch)
		if err := buildBinary(ctx, c, arch, bin); err != nil {
			return built, err
		}
		for _, format := range c.Formats {
			path, err := writePackage(c, stage, arch, bin, format)
			if err != nil {
				return built, fmt.Errorf("%s %s: %w", format, arch, err)
			}
			built = append(built, path)
		}
	}
	return built, nil
}

// buildBinary builds cmd/hostprov for linux/arch as a static binary with the
// version stamped. -s -w drop the symbol table and DWARF, as Debian strips
// binaries; -trimpath keeps the build machine's paths out of it.
func buildBinary(ctx context.Context, c Config, arch, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=auto",
		"-ldflags", "-s -w -X "+versionPackage+"="+c.Version,
		"-o", out, "./cmd/hostprov")
	cmd.Dir = c.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for linux/%s: %v\n%s", arch, err, stderr.String())
	}
	return nil
}

// stageShared writes what every package has and that is generated rather
// than copied: the man pages and completions, from the command tree of
// this very source, and the changelog.
func stageShared(c Config, stage string) error {
	for _, dir := range []string{"man", "completion"} {
		if err := os.MkdirAll(filepath.Join(stage, dir), 0o755); err != nil {
			return err
		}
	}
	specText, err := os.ReadFile(filepath.Join(c.Root, specDoc))
	if err != nil {
		return err
	}
	spec, err := specManPage(specText, c.Version, c.Date)
	if err != nil {
		return err
	}
	for _, p := range append(manPages(cli.Command(), c.Version, c.Date), spec) {
		if err := writeGzip(filepath.Join(stage, "man", p.name+".gz"), p.roff, c.Date); err != nil {
			return err
		}
	}
	var bash, zsh, fish bytes.Buffer
	root := cli.Command()
	if err := root.GenBashCompletionV2(&bash, true); err != nil {
		return err
	}
	if err := root.GenZshCompletion(&zsh); err != nil {
		return err
	}
	if err := root.GenFishCompletion(&fish, true); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"bash": bash.Bytes(), "zsh": zsh.Bytes(), "fish": fish.Bytes()} {
		if err := os.WriteFile(filepath.Join(stage, "completion", name), b, 0o644); err != nil {
			return err
		}
	}
	for _, doc := range []string{"README.md", "SECURITY.md"} {
		b, err := os.ReadFile(filepath.Join(c.Root, doc))
		if err != nil {
			return err
		}
		if err := writeGzip(filepath.Join(stage, doc+".gz"), b, c.Date); err != nil {
			return err
		}
	}
	return writeGzip(filepath.Join(stage, "changelog.gz"), changelog(c), c.Date)
}

// changelog is the package's changelog in Debian's format, one entry for
// this version: hostprov is packaged by its own repository (a native
// package, in Debian's words), and its changes are that repository's
// history.
func changelog(c Config) []byte {
	return fmt.Appendf(nil, "hostprov (%s) stable; urgency=medium\n\n"+
		"  * hostprov %s, packaged from its repository; the changes are in\n"+
		"    its commit history.\n\n -- %s  %s\n",
		c.Version, c.Version, c.Maintainer, c.Date.Format(time.RFC1123Z))
}

// writeGzip writes data gzipped at the best compression with no file name
// in the header and a fixed time, as Debian compresses man pages and docs,
// so that the same input gives the same bytes.
func writeGzip(path string, data []byte, date time.Time) error {
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	zw.ModTime = date
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// packageFile is the package's file name: Debian's name_version_arch.deb
// and RPM's name-version.arch.rpm, each with its own format's name for the
// architecture (amd64 and arm64; x86_64 and aarch64), the one its header
// carries and its package manager checks.
func packageFile(version, arch, format string) string {
	if format == "deb" {
		return fmt.Sprintf("hostprov_%s_%s.deb", version, arch)
	}
	return fmt.Sprintf("hostprov-%s.%s.rpm", version, rpmArch[arch])
}

// rpmArch is RPM's name for each of Go's architectures built.
var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

// writePackage writes the package of one format for one architecture.
func writePackage(c Config, stage, arch, bin, format string) (string, error) {
	if _, ok := rpmArch[arch]; !ok {
		return "", fmt.Errorf("architecture %q: hostprov is packaged for amd64 and arm64", arch)
	}
	info := packageInfo(c, stage, arch, bin, format)
	var packager nfpm.Packager
	switch format {
	case "deb":
		packager = deb.Default
	case "rpm":
		packager = rpm.DefaultRPM
	default:
		return "", fmt.Errorf("format %q: want deb or rpm", format)
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	path := filepath.Join(c.Out, packageFile(c.Version, arch, format))
	tmp, err := os.CreateTemp(c.Out, ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := packager.Package(info, tmp); err != nil {
		tmp.Close()
		return "", err
	}
	if err := errors.Join(tmp.Chmod(0o644), tmp.Sync(), tmp.Close()); err != nil {
		return "", err
	}
	return path, os.Rename(tmp.Name(), path)
}

// packageContents are the files of the package of format: the binary bin,
// the units, configuration, docs, examples and man pages (from stage, made
// by build, and the repository's packaging directory).
func packageContents(c Config, stage, bin, format string) files.Contents {
	pkg := filepath.Join(c.Root, "packaging")
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst,
			FileInfo: &files.ContentFileInfo{Mode: mode, MTime: c.Date}}
	}
	contents := files.Contents{
		file(bin, "/usr/bin/hostprov", 0o755),
		file(filepath.Join(pkg, "systemd", preset), presetDir+"/"+preset, 0o644),
		{Destination: "/etc/hostprov", Type: files.TypeDir,
			FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: c.Date}},
		{Destination: hooksDir, Type: files.TypeDir,
			FileInfo: &files.ContentFileInfo{Mode: 0o755, MTime: c.Date}},
		// A configuration file in hooks.d keeps the directory through
		// dpkg -r, as Debian keeps configuration until a purge (dpkg
		// removes an owned directory that is left empty); apply -d reads
		// only *.yaml, so it is not a spec.
		{Source: filepath.Join(pkg, "hooks.d.README"), Destination: hooksDir + "/README",
			Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644, MTime: c.Date}},
		// The boot service's flags (HOSTPROV_APPLY_FLAGS), the
		// administrator's to set: kept through upgrades.
		{Source: filepath.Join(pkg, "default"), Destination: "/etc/default/hostprov",
			Type: files.TypeConfigNoReplace, FileInfo: &files.ContentFileInfo{Mode: 0o644, MTime: c.Date}},
		// Debian's machine-readable copyright file; RPM takes the
		// license text itself, as %license (below).
		file(filepath.Join(pkg, "copyright"), docDir+"/copyright", 0o644),
		file(filepath.Join(stage, "README.md.gz"), docDir+"/README.md.gz", 0o644),
		file(filepath.Join(stage, "SECURITY.md.gz"), docDir+"/SECURITY.md.gz", 0o644),
		file(filepath.Join(stage, "completion", "bash"), "/usr/share/bash-completion/completions/hostprov", 0o644),
		file(filepath.Join(stage, "completion", "zsh"), "/usr/share/zsh/vendor-completions/_hostprov", 0o644),
		file(filepath.Join(stage, "completion", "fish"), "/usr/share/fish/vendor_completions.d/hostprov.fish", 0o644),
	}
	if format == "rpm" {
		license := file(filepath.Join(c.Root, "LICENSE"), licenseDir+"/LICENSE", 0o644)
		license.Type = files.TypeRPMLicense
		contents = append(contents, license)
	}
	if format == "deb" {
		// A native package's changelog, as Debian names it.
		contents = append(contents,
			file(filepath.Join(stage, "changelog.gz"), docDir+"/changelog.gz", 0o644),
			file(filepath.Join(pkg, "deb", "lintian-overrides"), "/usr/share/lintian/overrides/hostprov", 0o644))
	}
	for _, u := range units {
		contents = append(contents, file(filepath.Join(pkg, "systemd", u), unitDir+"/"+u, 0o644))
	}
	// The repository's examples, as they are (specs, their files and
	// READMEs), but their Go tests.
	examples, _ := filepath.Glob(filepath.Join(c.Root, "examples", "*", "*"))
	for _, e := range examples {
		if fi, err := os.Stat(e); err != nil || !fi.Mode().IsRegular() || strings.HasSuffix(e, ".go") {
			continue
		}
		rel, _ := filepath.Rel(filepath.Join(c.Root, "examples"), e)
		contents = append(contents, file(e, examplesDir+"/"+filepath.ToSlash(rel), 0o644))
	}
	for _, section := range []string{"1", "5"} {
		mans, _ := filepath.Glob(filepath.Join(stage, "man", "*."+section+".gz"))
		for _, m := range mans {
			contents = append(contents, file(m, manDir+section+"/"+filepath.Base(m), 0o644))
		}
	}
	return contents
}

// packageInfo describes the package to nfpm: its metadata, its files
// (packageContents), and the maintainer scripts of the format.
func packageInfo(c Config, stage, arch, bin, format string) *nfpm.Info {
	pkg := filepath.Join(c.Root, "packaging")
	info := &nfpm.Info{
		Name:     "hostprov",
		Arch:     arch,
		Platform: "linux",
		Version:  c.Version,
		// The version is used as written: nfpm would otherwise read it as
		// semver and move a ~ suffix elsewhere.
		VersionSchema: "none",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    c.Maintainer,
		Homepage:      "https://github.com/hostprov/hostprov",
		License:       "Apache-2.0",
		Description: "boot-time host provisioner: YAML hook specs to systemd units\n" +
			"hostprov turns a short YAML hook spec into canonical systemd units and\n" +
			"installs them on the node it runs on with one daemon-reload, changing\n" +
			"exactly what changed. It also renders them as Ignition, Butane or\n" +
			"cloud-init user data and as kops hooks.\n" +
			"\n" +
			"This package runs hostprov at boot on the spec files of\n" +
			"/etc/hostprov/hooks.d, and again whenever one of them changes.",
		MTime: c.Date,
	}
	info.Contents = packageContents(c, stage, bin, format)
	// Recommends, not Depends: the binary is static, and render, validate
	// and apply --root on an image need no systemd on the machine that
	// runs them; applying on a node talks to its systemd and makes
	// accounts with its systemd-sysusers, which a node has. apt and dnf
	// install a recommended package by default.
	info.Recommends = []string{"systemd"}
	info.Umask = 0o022
	switch format {
	case "deb":
		info.Scripts = nfpm.Scripts{
			PostInstall: filepath.Join(pkg, "deb", "postinst"),
			PreRemove:   filepath.Join(pkg, "deb", "prerm"),
			PostRemove:  filepath.Join(pkg, "deb", "postrm"),
		}
	case "rpm":
		info.Release = "1"
		info.RPM.Group = "System Environment/Base"
		// A fixed build host, not the machine's name: the same commit
		// packages to the same header.
		info.RPM.BuildHost = "localhost"
		// RPM's summary is Debian's first line of the description.
		summary, rest, _ := strings.Cut(info.Description, "\n")
		info.RPM.Summary, info.Description = summary, rest
		info.Scripts = nfpm.Scripts{
			PostInstall: filepath.Join(pkg, "rpm", "post"),
			PreRemove:   filepath.Join(pkg, "rpm", "preun"),
			PostRemove:  filepath.Join(pkg, "rpm", "postun"),
		}
	}
	return info
}
