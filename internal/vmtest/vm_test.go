//go:build vmtest

package vmtest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// proxyEnv makes the test binary a byte pipe between its standard input
// and output and a TCP address: qemu runs it for each connection the guest
// opens to a guestfwd address (guestfwd=...-cmd:), so that the guest reaches
// the test's servers on the host's loopback and nothing else, without a
// netcat on the host.
const proxyEnv = "HOSTPROV_VMTEST_PROXY"

func TestMain(m *testing.M) {
	if addr := os.Getenv(proxyEnv); addr != "" {
		os.Exit(proxy(addr))
	}
	os.Exit(m.Run())
}

func proxy(addr string) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vmtest proxy: %v\n", err)
		return 1
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(c, os.Stdin); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(os.Stdout, c); done <- struct{}{} }()
	<-done
	<-done
	return 0
}

// tools are what the test runs on the host, with the Debian package of each.
var tools = [][2]string{
	{"qemu-system-x86_64", "qemu-system-x86"},
	{"mmdebstrap", "mmdebstrap"},
	{"genisoimage", "genisoimage"},
	{"dpkg-scanpackages", "dpkg-dev"},
	{"mkfs.ext4", "e2fsprogs"},
	{"chroot", "coreutils"},
	{"tar", "tar"},
}

// need fails (CI=true) or skips the test when it cannot run here.
func need(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root (mmdebstrap, chroot and mkfs.ext4 -d of a tree owned by root)")
	}
	var pkgs []string
	for _, tl := range tools {
		if _, err := exec.LookPath(tl[0]); err != nil {
			missing = append(missing, tl[0])
			pkgs = append(pkgs, tl[1])
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "the VM test needs " + strings.Join(missing, ", ")
	if len(pkgs) > 0 {
		msg += "; install the Debian packages: apt-get install " + strings.Join(pkgs, " ") + " (or run .ci/setup)"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// repoRoot is the repository's root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run runs a command in dir and returns its standard output; what it
// writes to standard error (render's warnings) is logged, never mixed
// into the output, which may be user data.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("%s %s:\n%s", name, strings.Join(args, " "), stderr.String())
	}
	return string(out)
}

// A route is one way the specs reach the guest, booted in a VM of its own.
type route struct {
	name   string
	append string            // more kernel command line
	units  string            // the unit states: NAME AT-BOOT-1 AT-BOOT-2
	seed   string            // the NoCloud seed ISO, for cloud-init
	disk   string            // the root file system image
	lines  []string          // the report's lines, as read
	times  map[string]string // timings, for the summary
}

// unitStates says what each unit hostprov makes must be after each boot:
// active, inactive, failed, skipped (a false condition: a when: Once hook
// whose stamp is there, the swap file's maker once it exists) or absent.
// missing-tool's download fails: cloud-init writes its unit but neither
// enables nor starts it; apply installs no part of that hook.
const commonUnits = `create-swapfile.service inactive skipped
swap1.swap active active
iscsi-setup.service active skipped
lun-slow.service active skipped
lun-login.service active active
mnt-lun.mount active active
vmtest-app.service active active
fetched-tool.service active active
`

func TestVM(t *testing.T) {
	need(t)
	root := repoRoot(t)
	ctx := context.Background()
	timings := map[string]string{}

	start := time.Now()
	img, built, err := buildBase(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	how := "reused from the cache"
	if built {
		how = "built"
	}
	timings["image"] = fmt.Sprintf("%s (%s)", time.Since(start).Round(time.Second), how)

	work := t.TempDir()
	if d := os.Getenv("VMTEST_KEEP"); d != "" {
		work = d
		os.MkdirAll(work, 0o755)
	}
	t.Logf("work directory %s (VMTEST_KEEP=DIR keeps it)", work)

	prep := time.Now()
	bin, deb := buildHostprov(t, root, work)

	// The servers the guest reaches: the apt repository over HTTP, the
	// spec's download over HTTPS with a CA of the test's own.
	tool := "#!/bin/sh\necho 'fetched over https' > /run/vmtest-tool\n"
	toolSum := sha256.Sum256([]byte(tool))
	repoSrv := httptest.NewServer(http.FileServer(http.Dir(img.Repo)))
	defer repoSrv.Close()
	ca := newCA(t)
	fileSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/vmtest-tool" {
			io.WriteString(w, tool)
			return
		}
		http.NotFound(w, r)
	}))
	fileSrv.TLS = ca.serverConfig(t, fileHost)
	fileSrv.StartTLS()
	defer fileSrv.Close()

	specs := writeSpecs(t, root, work, "sha256-"+hex.EncodeToString(toolSum[:]))
	expected, cloudConfig := renderExpected(t, root, work, bin, specs)
	tree, kernel, initrd := makeTree(t, work, img, expected, ca.PEM)
	routes := selectRoutes()
	makeDisks(t, work, tree, specs, deb, cloudConfig, routes)
	timings["prepare"] = time.Since(prep).Round(time.Second).String()

	// The VMs, at once: each is one host thread under emulation.
	var wg sync.WaitGroup
	for _, rt := range routes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			boot(t, work, rt, kernel, initrd, repoSrv.Listener.Addr().String(), fileSrv.Listener.Addr().String())
		}()
	}
	wg.Wait()

	report(t, work, routes, timings)
}

// buildHostprov builds hostprov for the host (render) into work, and its
// .deb for the guest.
func buildHostprov(t *testing.T, root, work string) (bin, deb string) {
	bin = filepath.Join(work, "hostprov")
	run(t, root, "go", "build", "-o", bin, "./cmd/hostprov")
	dist := filepath.Join(work, "dist")
	run(t, root, "go", "run", "./internal/cmd/package", "-arch", "amd64", "-format", "deb", "-out", dist,
		"-maintainer", "hostprov VM test <vm-test@hostprov.dev>")
	debs, _ := filepath.Glob(filepath.Join(dist, "*.deb"))
	if len(debs) != 1 {
		t.Fatalf("the package build made %v, not one .deb", debs)
	}
	return bin, debs[0]
}

// writeSpecs writes the specs, as /etc/hostprov/hooks.d holds them, into
// a directory of work and returns it; toolHash is the hash of the file the
// fetch specs download.
func writeSpecs(t *testing.T, root, work, toolHash string) string {
	specs := filepath.Join(work, "specs")
	os.MkdirAll(specs, 0o755)
	copyFile(t, filepath.Join(root, "examples/swap/hostprov.yaml"), filepath.Join(specs, "10-swap.yaml"))
	copyFile(t, filepath.Join(root, "examples/iscsi/hostprov.yaml"), filepath.Join(specs, "20-iscsi.yaml"))
	lun, err := os.ReadFile("testdata/lun.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("VMTEST_NO_DEVICE_TIMEOUT") != "" {
		// The proof that deviceTimeout is needed: without it the first
		// boot's mount fails ("Dependency failed for /mnt/lun").
		lun = regexp.MustCompile(`(?m)^  deviceTimeout:.*\n`).ReplaceAll(lun, nil)
	}
	writeFile(t, filepath.Join(specs, "30-lun.yaml"), string(lun))
	copyFile(t, "testdata/app.yaml", filepath.Join(specs, "40-app.yaml"))
	for _, f := range []string{"fetch", "fetchfail"} {
		b, err := os.ReadFile("testdata/" + f + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(b), "FILES_URL", "https://"+fileHost)
		s = strings.ReplaceAll(s, "FILE_HASH", toolHash)
		writeFile(t, filepath.Join(specs, "50-"+f+".yaml"), s)
	}
	return specs
}

// renderExpected renders what the unit files must be into a directory
// of work: render --format dir of the specs that have units only, and the
// units of --format units for those with files and users (which --format
// dir refuses). It returns that directory, and the specs rendered as
// cloud-init user data.
func renderExpected(t *testing.T, root, work, bin, specs string) (expected, cloudConfig string) {
	expected = filepath.Join(work, "expected")
	unitOnly := filepath.Join(work, "specs-units-only")
	os.MkdirAll(unitOnly, 0o755)
	for _, f := range []string{"10-swap.yaml", "20-iscsi.yaml", "30-lun.yaml"} {
		copyFile(t, filepath.Join(specs, f), filepath.Join(unitOnly, f))
	}
	run(t, root, bin, "render", "-d", unitOnly, "--format", "dir", "--out", expected)
	cloudConfig = run(t, root, bin, "render", "-d", specs, "--format", "cloud-init")
	for _, f := range []string{"40-app.yaml", "50-fetch.yaml", "50-fetchfail.yaml"} {
		for name, body := range unitsOf(run(t, root, bin, "render", "-f", filepath.Join(specs, f), "--format", "units")) {
			writeFile(t, filepath.Join(expected, name), body)
		}
	}
	return expected, cloudConfig
}

// makeTree makes the guest's tree in work: the cached base, then what is
// this run's (the disk the iSCSI target serves, the test's CA, the checks,
// the expected units). It returns the tree and the kernel and initrd to
// boot.
func makeTree(t *testing.T, work string, img baseImage, expected string, caPEM []byte) (tree, kernel, initrd string) {
	tree = filepath.Join(work, "root")
	os.RemoveAll(tree)
	os.MkdirAll(tree, 0o755)
	run(t, tree, "tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-xpf", img.Tar)
	os.MkdirAll(filepath.Join(tree, "var/lib/vmtest"), 0o755)
	run(t, tree, "truncate", "-s", "64M", "var/lib/vmtest/lun.img")
	run(t, tree, "mkfs.ext4", "-q", "-F", "-L", "lun", "var/lib/vmtest/lun.img")
	writeFile(t, filepath.Join(tree, "usr/local/share/ca-certificates/hostprov-vmtest.crt"), string(caPEM))
	run(t, tree, "chroot", ".", "update-ca-certificates")
	copyFile(t, "testdata/check.sh", filepath.Join(tree, "usr/local/lib/vmtest/check.sh"))
	os.Chmod(filepath.Join(tree, "usr/local/lib/vmtest/check.sh"), 0o755)
	copyFile(t, "testdata/vmtest-check.service", filepath.Join(tree, "etc/systemd/system/vmtest-check.service"))
	run(t, tree, "chroot", ".", "systemctl", "enable", "vmtest-check.service")
	run(t, tree, "cp", "-a", expected, "var/lib/vmtest/expected")
	kernel, initrd = filepath.Join(work, "vmlinuz"), filepath.Join(work, "initrd.img")
	for from, to := range map[string]string{"boot/vmlinuz-*": kernel, "boot/initrd.img-*": initrd} {
		m, _ := filepath.Glob(filepath.Join(tree, from))
		if len(m) != 1 {
			t.Fatalf("the image has %v, not one %s", m, from)
		}
		run(t, tree, "cp", m[0], to)
	}
	return tree, kernel, initrd
}

// selectRoutes are the routes to boot: all, or those VMTEST_ROUTES names
// (comma-separated).
func selectRoutes() []*route {
	routes := []*route{
		{name: "cloud-init", units: commonUnits + "missing-tool.service inactive inactive\n"},
		{name: "node", append: " cloud-init=disabled", units: commonUnits + "missing-tool.service absent absent\n"},
	}
	if r := os.Getenv("VMTEST_ROUTES"); r != "" {
		var keep []*route
		for _, rt := range routes {
			if strings.Contains(","+r+",", ","+rt.name+",") {
				keep = append(keep, rt)
			}
		}
		routes = keep
	}
	return routes
}

// makeDisks writes each route's root file system image from tree, with
// what the route needs: the NoCloud seed of the cloud-init route, the
// installed package and the specs of the node route.
func makeDisks(t *testing.T, work, tree, specs, deb, cloudConfig string, routes []*route) {
	for _, rt := range routes {
		writeFile(t, filepath.Join(tree, "var/lib/vmtest/route"), rt.name+"\n")
		writeFile(t, filepath.Join(tree, "var/lib/vmtest/units"), rt.units)
		if rt.name == "cloud-init" {
			seed := filepath.Join(work, "seed")
			os.MkdirAll(seed, 0o755)
			writeFile(t, filepath.Join(seed, "user-data"), cloudConfig)
			writeFile(t, filepath.Join(seed, "meta-data"), "instance-id: vmtest-"+time.Now().Format("20060102150405")+"\nlocal-hostname: vmtest\n")
			rt.seed = filepath.Join(work, "seed.iso")
			run(t, seed, "genisoimage", "-quiet", "-output", rt.seed, "-volid", "cidata", "-joliet", "-rock", "user-data", "meta-data")
		} else {
			// The node package: installed in the image, the specs in
			// hooks.d, applied by hostprov-apply.service at boot. This
			// is the last route: the tree is not used after it.
			copyFile(t, deb, filepath.Join(tree, "tmp/hostprov.deb"))
			run(t, tree, "chroot", ".", "dpkg", "-i", "/tmp/hostprov.deb")
			os.Remove(filepath.Join(tree, "tmp/hostprov.deb"))
			// apply installs no part of a hook whose download failed.
			os.Remove(filepath.Join(tree, "var/lib/vmtest/expected/missing-tool.service"))
			ents, _ := os.ReadDir(specs)
			for _, e := range ents {
				copyFile(t, filepath.Join(specs, e.Name()), filepath.Join(tree, "etc/hostprov/hooks.d", e.Name()))
			}
		}
		rt.disk = filepath.Join(work, rt.name+".img")
		run(t, work, "mkfs.ext4", "-q", "-F", "-L", "root", "-d", tree, rt.disk, "4G")
	}
}

// report prints every check's line of each route and fails the test on a
// failed one, then the timings.
func report(t *testing.T, work string, routes []*route, timings map[string]string) {
	for _, rt := range routes {
		for _, l := range rt.lines {
			fmt.Printf("%s: %s\n", rt.name, l)
			if strings.Contains(l, " FAIL ") {
				t.Errorf("%s: %s", rt.name, l)
			}
		}
		for _, b := range []string{"1", "2"} {
			if !hasLine(rt.lines, "VMTEST "+b+" DONE") {
				t.Errorf("%s: boot %s did not finish its checks (console: %s)", rt.name, b, filepath.Join(work, rt.name+".console"+b+".log"))
			}
		}
	}
	fmt.Printf("timing: image %s; prepare (package, render, root images) %s\n", timings["image"], timings["prepare"])
	for _, rt := range routes {
		fmt.Printf("timing: %s: boot to checks %s, first boot done (powered off) %s; reboot to checks %s, second boot done %s; accel %s\n",
			rt.name, rt.times["boot1"], rt.times["done1"], rt.times["boot2"], rt.times["done2"], rt.times["accel"])
	}
}

func hasLine(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// accel is qemu's accelerator: TCG (software emulation) unless
// VMTEST_ACCEL says kvm. Not KVM whenever /dev/kvm opens: on a machine that
// is itself a VM, nested KVM may open and then fail to start the guest (or
// start it and never run it), where TCG is slow but works everywhere.
func accel() string {
	if a := os.Getenv("VMTEST_ACCEL"); a != "" {
		return a
	}
	return "tcg"
}

// boot runs rt's VM twice on the same disk, each time until the guest
// powers off after its checks or a deadline, reading the report from the
// second serial port as it comes.
func boot(t *testing.T, work string, rt *route, kernel, initrd, repoAddr, fileAddr string) {
	rt.times = map[string]string{"accel": accel()}
	exe, err := os.Executable()
	if err != nil {
		t.Error(err)
		return
	}
	fwd := func(port int, addr string) string {
		return fmt.Sprintf("guestfwd=tcp:%s:%d-cmd:env %s=%s %s", hostAddr, port, proxyEnv, addr, exe)
	}
	report := filepath.Join(work, rt.name+".report.log")
	os.Remove(report)
	var offset int64
	for _, b := range []string{"1", "2"} {
		console := filepath.Join(work, rt.name+".console"+b+".log")
		args := []string{
			"-machine", "q35", "-accel", rt.times["accel"], "-cpu", "max", "-smp", "1", "-m", "1536",
			"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
			"-kernel", kernel, "-initrd", initrd,
			// no_timer_check: under emulation on a loaded host the
			// kernel's check of the IO-APIC timer can time out and panic
			// ("IO-APIC + timer doesn't work!"), as a boot here did;
			// virtual machines' kernels commonly skip it. panic=1 ends
			// the VM (-no-reboot) on any panic, rather than leaving it
			// to the boot's time limit.
			"-append", "root=/dev/vda rw console=ttyS0,115200 net.ifnames=0 systemd.show_status=1 no_timer_check panic=1" + rt.append,
			"-drive", "file=" + rt.disk + ",format=raw,if=virtio,cache=unsafe",
			"-serial", "file:" + console, "-chardev", "file,id=report,path=" + report + ",append=on", "-serial", "chardev:report",
			"-nic", "user,model=virtio-net-pci,restrict=on," + fwd(80, repoAddr) + "," + fwd(443, fileAddr),
		}
		if rt.seed != "" {
			args = append(args, "-drive", "file="+rt.seed+",format=raw,if=virtio,readonly=on")
		}
		limit := 40 * time.Minute
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
		qlog, _ := os.Create(filepath.Join(work, rt.name+".qemu"+b+".log"))
		cmd.Stdout, cmd.Stderr = qlog, qlog
		start := time.Now()
		if err := cmd.Start(); err != nil {
			cancel()
			t.Errorf("%s: qemu: %v", rt.name, err)
			return
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var err error
	wait:
		for {
			select {
			case err = <-exited:
				break wait
			case <-time.After(2 * time.Second):
			}
			rt.read(report, &offset, b, start)
		}
		cancel()
		qlog.Close()
		rt.read(report, &offset, b, start)
		rt.times["done"+b] = time.Since(start).Round(time.Second).String()
		if err != nil {
			t.Errorf("%s: boot %s: qemu: %v after %s (see %s)", rt.name, b, err, time.Since(start).Round(time.Second), console)
			return
		}
	}
}

// read takes the report's new lines, and notes when boot b's first came:
// the boot has settled and its checks begin.
func (rt *route) read(report string, offset *int64, b string, start time.Time) {
	lines := readFrom(report, offset)
	if len(lines) > 0 && rt.times["boot"+b] == "" {
		rt.times["boot"+b] = time.Since(start).Round(time.Second).String()
	}
	rt.lines = append(rt.lines, lines...)
}

// readFrom returns the whole lines of path after *off, and moves *off past them.
func readFrom(path string, off *int64) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if _, err := f.Seek(*off, io.SeekStart); err != nil {
		return nil
	}
	var lines []string
	r := bufio.NewReader(f)
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return lines
		}
		*off += int64(len(l))
		lines = append(lines, strings.TrimRight(l, "\r\n"))
	}
}

// unitsOf splits render --format units output into its units: each starts
// with a "# NAME" line of a unit name and ends before the blank line that
// precedes the next "# " entry (a unit, a file, a user, ...).
func unitsOf(out string) map[string]string {
	units := map[string]string{}
	header := regexp.MustCompile(`^# ([A-Za-z0-9:_.\\@-]+\.(service|socket|mount|swap|timer|path|target|automount|slice|scope|device))$`)
	entry := regexp.MustCompile(`^# (file|directory|link|user|group) `)
	lines := strings.SplitAfter(out, "\n")
	for i := 0; i < len(lines); i++ {
		m := header.FindStringSubmatch(strings.TrimRight(lines[i], "\n"))
		if m == nil {
			continue
		}
		var b strings.Builder
		j := i + 1
		for ; j < len(lines); j++ {
			l := strings.TrimRight(lines[j], "\n")
			if l == "" && j+1 < len(lines) {
				next := strings.TrimRight(lines[j+1], "\n")
				if header.MatchString(next) || entry.MatchString(next) {
					break
				}
			}
			b.WriteString(lines[j])
		}
		units[m[1]] = strings.TrimSuffix(b.String(), "\n") + "\n"
		i = j
	}
	return units
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

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(b))
}
