package cloudinit_test

import (
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// TestCloudInitFetch runs the downloads of the cloud-init output of the
// download golden as cloud-init's runcmd would, with their URLs pointed at
// a local server and their paths below a scratch root: a download with
// the hash its verification gives lands with its mode, and one with
// another hash fails and writes nothing.
func TestCloudInitFetch(t *testing.T) {
	dir := t.TempDir()
	fetcher, runcmd, ci := cloudInitRun(t, rendertest.Path("testdata", "golden", "storage", "download.yaml"), dir)
	body := "" // the golden's hashes are those of no bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }))
	defer srv.Close()
	root := filepath.Join(dir, "root")
	var fetches [][]string
	for _, c := range runcmd {
		if len(c) == 9 && c[0] == "python3" && c[1] == "/var/lib/hostprov/fetch.py" {
			c = append([]string(nil), c...)
			c[1], c[2], c[4] = fetcher, srv.URL+"/"+filepath.Base(c[2]), filepath.Join(root, c[4])
			c[8] = filepath.Join(dir, "held", filepath.Base(c[8])) // the hook's mark
			// The owners by id, as this machine need not have them:
			// its own, so that the test runs as any user.
			c[6], c[7] = strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
			fetches = append(fetches, c)
		}
	}
	if len(fetches) != 2 {
		t.Fatalf("%d downloads in runcmd, want 2:\n%s", len(fetches), ci)
	}
	for _, c := range fetches {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
		fi, err := os.Stat(c[4])
		if err != nil || fi.Size() != 0 || fi.Mode().Perm().String() != os.FileMode(mustOctal(t, c[5])).String() {
			t.Errorf("%s: %v %v, want an empty file of mode %s", c[4], fi, err, c[5])
		}
	}
	body = "tampered"
	os.RemoveAll(root)
	out, err := exec.Command(fetches[0][0], fetches[0][1:]...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not the hash its verification gives; not written") {
		t.Fatalf("a download with another hash: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Dir(fetches[0][4])); err == nil {
		t.Errorf("a download with another hash left %s", filepath.Dir(fetches[0][4]))
	}
}

func mustOctal(t *testing.T, s string) uint32 {
	var m uint32
	for _, c := range s {
		if c < '0' || c > '7' {
			t.Fatalf("mode %q is not octal", s)
		}
		m = m*8 + uint32(c-'0')
	}
	return m
}

// TestCloudInitFetchRetries runs the cloud-init output's download script
// against a server that fails the way a server does while a node boots
// (503 twice), and against one that answers 404: the first download is
// tried again and lands, the second fails after one request.
func TestCloudInitFetchRetries(t *testing.T) {
	dir := t.TempDir()
	fetcher, _, _ := cloudInitRun(t, rendertest.Path("testdata", "golden", "storage", "download.yaml"), dir)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := requests.Add(1)
		switch {
		case r.URL.Path == "/missing":
			http.NotFound(w, r)
		case n <= 2:
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
		// else: no bytes, the hash the command below asks for.
	}))
	defer srv.Close()
	const empty = "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	uid, gid := strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
	dest := filepath.Join(dir, "root", "tool")
	out, err := exec.Command("python3", fetcher, srv.URL+"/tool", empty, dest, "0644", uid, gid).CombinedOutput()
	if err != nil {
		t.Fatalf("a download that fails twice with 503: %v\n%s", err, out)
	}
	if n := requests.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (two 503 answers, then the file)\n%s", n, out)
	}
	if _, err := os.Stat(dest); err != nil {
		t.Error(err)
	}
	requests.Store(10)
	out, err = exec.Command("python3", fetcher, srv.URL+"/missing", empty, dest+"2", "0644", uid, gid).CombinedOutput()
	if err == nil {
		t.Fatalf("a download answered 404 succeeded:\n%s", out)
	}
	if n := requests.Load(); n != 11 {
		t.Errorf("%d requests for a 404, want 1: a final answer is not tried again\n%s", n-10, out)
	}
}

// TestCloudInitFailedDownloadHoldsItsHook runs the whole runcmd of a
// spec of two hooks, one with a download, with systemctl replaced by a
// recorder and the marks below a scratch directory: when the download
// fails, the other hook's unit is enabled and started, the downloading
// hook's is neither, and the last command fails, naming the hook, so
// that cloud-init reports it; when it lands, both are enabled and started
// and runcmd ends well.
func TestCloudInitFailedDownloadHoldsItsHook(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "hooks.yaml")
	os.WriteFile(spec, []byte(`apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
  - name: other
    exec: [/bin/true]
  - name: tool
    exec: [/usr/local/bin/tool, serve]
    files:
      - path: /usr/local/bin/tool
        source: https://downloads.example.com/tool
        verification:
          hash: sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
        mode: 0755
`), 0o644)
	fetcher, runcmd, _ := cloudInitRun(t, spec, dir)
	if _, err := exec.LookPath("sh"); err != nil {
		hosttools.Unavailable(t, "sh not found (cloud-init runs runcmd with sh)")
	}
	// systemctl records its arguments, one call a line.
	bin := filepath.Join(dir, "bin")
	os.Mkdir(bin, 0o755)
	calls := filepath.Join(dir, "systemctl.log")
	os.WriteFile(filepath.Join(bin, "systemctl"), []byte("#!/bin/sh\necho \"$*\" >> "+calls+"\n"), 0o755)
	found := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !found {
			http.NotFound(w, r)
		} // else: no bytes, the hash the spec asks for.
	}))
	defer srv.Close()
	held := filepath.Join(dir, "held")
	root := filepath.Join(dir, "root")
	// run runs runcmd as cloud-init does, one command after the other
	// whatever each returns, and returns the last one's error and the
	// output of all.
	run := func() (string, error) {
		os.RemoveAll(held)
		os.RemoveAll(root)
		os.Remove(calls)
		var last error
		var out strings.Builder
		for _, c := range runcmd {
			c = append([]string(nil), c...)
			for i := range c {
				c[i] = strings.ReplaceAll(c[i], "/run/hostprov/download-failed", held)
			}
			if c[0] == "python3" {
				c[1], c[2], c[4] = fetcher, srv.URL+"/tool", filepath.Join(root, c[4])
				c[6], c[7] = strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
			}
			if c[0] == "systemctl" {
				// exec.Command looks its name up in this process's PATH.
				c[0] = filepath.Join(bin, "systemctl")
			}
			cmd := exec.Command(c[0], c[1:]...)
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
			b, err := cmd.CombinedOutput()
			out.Write(b)
			last = err
		}
		log, _ := os.ReadFile(calls)
		return out.String() + "\n--- systemctl:\n" + string(log), last
	}

	out, err := run()
	if err == nil {
		t.Errorf("runcmd with a failed download ended well:\n%s", out)
	}
	for _, want := range []string{"enable --no-reload other.service", "start --no-block other.service",
		"these hooks were neither enabled nor started: tool"} {
		if !strings.Contains(out, want) {
			t.Errorf("runcmd with a failed download: no %q in:\n%s", want, out)
		}
	}
	_, called, _ := strings.Cut(out, "--- systemctl:")
	if strings.Contains(called, "tool.service") {
		t.Errorf("runcmd enabled or started the hook whose download failed:\n%s", out)
	}

	found = true
	out, err = run()
	if err != nil {
		t.Errorf("runcmd with every download: %v\n%s", err, out)
	}
	for _, want := range []string{"enable --no-reload tool.service", "start --no-block tool.service", "start --no-block other.service"} {
		if !strings.Contains(out, want) {
			t.Errorf("runcmd with every download: no %q in:\n%s", want, out)
		}
	}
}

// cloudInitRun renders the spec at path to cloud-init user data, writes
// its download script into dir, and returns the script's path, the
// runcmd and the user data.
func cloudInitRun(t *testing.T, path, dir string) (fetcher string, runcmd [][]string, ci []byte) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		hosttools.Unavailable(t, "python3 not found (cloud-init's own language; Debian package python3)")
	}
	r := rendertest.Build(t, path)
	ci, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		WriteFiles []struct{ Path, Content string } `yaml:"write_files"`
		Runcmd     [][]string                       `yaml:"runcmd"`
	}
	if err := yaml.Unmarshal(ci, &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.WriteFiles {
		if f.Path == "/var/lib/hostprov/fetch.py" {
			fetcher = filepath.Join(dir, "fetch.py")
			os.WriteFile(fetcher, []byte(f.Content), 0o755)
		}
	}
	if fetcher == "" {
		t.Fatalf("no fetcher in write_files:\n%s", ci)
	}
	return fetcher, doc.Runcmd, ci
}

// TestCloudInitHeldHookOfItsOwnSpec: a hook's index is its place in its own
// spec, so in a set of specs the hook with a download holds back only its
// own units, not those of the hook at the same index of another spec, as
// a boot of the VM test showed.
func TestCloudInitHeldHookOfItsOwnSpec(t *testing.T) {
	on := true
	unit := func(file, name string) compile.Unit {
		return compile.Unit{Name: name + ".service", Hook: 0, HookName: name, Enabled: &on,
			Pos:      hooks.Position{File: file, Line: 4, Column: 3},
			Contents: []byte("[Service]\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n")}
	}
	us := []compile.Unit{unit("fetch.yaml", "fetched"), unit("app.yaml", "app")}
	st := compile.Storage{Files: []compile.StorageFile{{Path: "/usr/local/bin/tool", Mode: 0o755, Hook: 0,
		Source: "https://files.example.com/tool", Pos: hooks.Position{File: "fetch.yaml", Line: 6, Column: 7},
		Hash: "sha256-e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}}}
	ci, err := cloudinit.Render(us, cloudinit.Options{Storage: st})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Runcmd [][]string `yaml:"runcmd"`
	}
	if err := yaml.Unmarshal(ci, &doc); err != nil {
		t.Fatal(err)
	}
	var plain, gated []string
	for _, c := range doc.Runcmd {
		switch {
		case c[0] == "systemctl" && (c[1] == "enable" || c[1] == "start"):
			plain = append(plain, c[len(c)-1])
		case c[0] == "sh" && len(c) > 5 && c[5] == "systemctl":
			gated = append(gated, c[4]+" "+c[len(c)-1])
		}
	}
	if want := []string{"app.service", "app.service"}; !slices.Equal(plain, want) {
		t.Errorf("enabled and started at once: %v, want %v\n%s", plain, want, ci)
	}
	mark := "/run/hostprov/download-failed/fetched fetched.service"
	if want := []string{mark, mark}; !slices.Equal(gated, want) {
		t.Errorf("behind a mark: %v, want %v\n%s", gated, want, ci)
	}
}
