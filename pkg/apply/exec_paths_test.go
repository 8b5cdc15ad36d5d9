package apply_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
)

// A source is downloaded over TLS and checked against its hash before
// anything is written: a wrong hash fails its hook, which writes nothing,
// not even its other files; s3:// is refused with a hint.
func TestPathsSource(t *testing.T) {
	needRoot(t)
	body := []byte("#!/bin/sh\necho downloaded\n")
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tool" {
			http.NotFound(w, r)
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	client := func(o *apply.Options) { o.HTTPClient = srv.Client() }
	good := hex.EncodeToString(func() []byte { s := sha512.Sum512(body); return s[:] }())
	bad := hashHex("something else")
	spec := func(hash string) string {
		return "- name: tool\n  files:\n    - {path: /etc/inline, contents: x}\n    - path: /usr/local/bin/tool\n      source: " + srv.URL + "/tool\n      verification: {hash: " + hash + "}\n      mode: 0755\n"
	}

	n := newNode(t)
	_, _, err := n.applyStorage(spec("sha256-"+bad), client)
	if err == nil || !strings.Contains(err.Error(), "does not have the hash") || !strings.Contains(err.Error(), "hook failed") {
		t.Fatalf("bad hash: err = %v", err)
	}
	if !n.gone("/etc/inline") || !n.gone("/usr/local/bin/tool") || len(n.state().Paths) != 0 {
		t.Fatal("something was written although a download had the wrong hash")
	}

	p, _ := n.mustApplyStorage(spec("sha512-"+good), client)
	if got := n.readNode("/usr/local/bin/tool"); got != string(body) {
		t.Errorf("tool = %q", got)
	}
	if _, _, mode := owner(t, n.at("/usr/local/bin/tool")); mode.Perm() != 0o755 {
		t.Errorf("mode %v", mode)
	}
	var b bytes.Buffer
	p.WriteText(&b)
	if !strings.Contains(b.String(), "from "+srv.URL+"/tool") {
		t.Errorf("plan text does not name the source:\n%s", b.String())
	}
	if sp := n.state().Path("/usr/local/bin/tool"); sp == nil || sp.SHA256 != hashHex(string(body)) {
		t.Errorf("state = %+v, want the download's sha256", sp)
	}
	// The same hash again: nothing to download, nothing changes; a new
	// mode alone needs no download either (the server is gone).
	srv.Close()
	if again, err := n.planStorage(spec("sha512-"+good), client); err != nil || again.HasChanges() {
		t.Errorf("re-plan: %v, changes %v", err, again != nil && again.HasChanges())
	}
	n.mustApplyStorage(strings.Replace(spec("sha512-"+good), "0755", "0700", 1), client)
	if _, _, mode := owner(t, n.at("/usr/local/bin/tool")); mode.Perm() != 0o700 || n.readNode("/usr/local/bin/tool") != string(body) {
		t.Errorf("after a new mode: %v", mode)
	}

	n = newNode(t)
	p, err = n.planStorage("- name: tool\n  files:\n    - path: /opt/tool\n      source: s3://bucket/tool\n      verification: {hash: sha256-" + bad + "}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "presigned https:// URL") {
		t.Errorf("s3: conflicts = %v", p.Conflicts)
	}
}

// TestPathsSourceRetries checks that a download is tried again, with
// growing pauses, while the server fails in a way that may pass, within
// FetchWait; that the network is asked for first, once; that an answer
// such as 404 is not tried again; and that a server that never answers
// fails the apply after FetchWait, with nothing written.
func TestPathsSourceRetries(t *testing.T) {
	needRoot(t)
	defer apply.SetFetchRetryBase(10 * time.Millisecond)()
	body := []byte("#!/bin/sh\necho downloaded\n")
	var mu sync.Mutex
	requests := map[string]int{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests[r.URL.Path]++
		n := requests[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/flaky" && n > 3:
			w.Write(body)
		case r.URL.Path == "/flaky", r.URL.Path == "/down":
			http.Error(w, "not yet", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	sum := sha256.Sum256(body)
	spec := func(p string) string {
		return "- name: tool\n  files:\n    - path: /usr/local/bin/tool\n      source: " + srv.URL + p +
			"\n      verification: {hash: sha256-" + hex.EncodeToString(sum[:]) + "}\n      mode: 0755\n"
	}
	wait := func(d time.Duration) func(*apply.Options) {
		return func(o *apply.Options) { o.FetchWait, o.HTTPClient = d, srv.Client() }
	}
	tries := func(p string) int { mu.Lock(); defer mu.Unlock(); return requests[p] }

	n := newNode(t)
	_, calls := n.mustApplyStorage(spec("/flaky"), wait(10*time.Second))
	if got := n.readNode("/usr/local/bin/tool"); got != string(body) || tries("/flaky") != 4 {
		t.Errorf("after %d tries the tool is %q; want 4 tries and the download", tries("/flaky"), got)
	}
	if len(calls) == 0 || calls[0] != "start "+"network-online.target" || strings.Count(strings.Join(calls, "\n"), "network-online.target") != 1 {
		t.Errorf("systemd calls %q; want one start of %s, first", calls, "network-online.target")
	}

	n = newNode(t)
	_, _, err := n.applyStorage(spec("/missing"), wait(10*time.Second))
	if err == nil || !strings.Contains(err.Error(), "404") || tries("/missing") != 1 {
		t.Errorf("404: %d tries, err = %v; want one try and an error", tries("/missing"), err)
	}

	n = newNode(t)
	start := time.Now()
	_, _, err = n.applyStorage(spec("/down"), wait(300*time.Millisecond))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "503") || !strings.Contains(err.Error(), "tries in") || !strings.Contains(err.Error(), "--fetch-wait") {
		t.Fatalf("a server that stays down: err = %v", err)
	}
	if got := tries("/down"); got < 3 || took > 5*time.Second {
		t.Errorf("a server that stays down: %d tries in %v; want several, bounded by the wait", got, took)
	}
	if !n.gone("/usr/local/bin/tool") {
		t.Error("the tool was written although its download failed")
	}

	// Offline (--root) there is no systemd to ask for the network.
	n = newNode(t)
	n.opts.Offline = true
	delete(requests, "/flaky")
	_, calls = n.mustApplyStorage(spec("/flaky"), wait(10*time.Second))
	if strings.Contains(strings.Join(calls, "\n"), "network-online.target") {
		t.Errorf("offline apply asked systemd for the network: %q", calls)
	}
}

// A file whose source cannot be downloaded fails its hook, not the apply:
// the other hooks are applied, the failed hook's units and files are
// neither installed nor changed nor pruned (what an earlier apply placed
// stays, still owned), the failure is in the action log and the error,
// and no inputs are recorded, so that the next apply tries the hook again
// and converges once the source is back.
func TestPathsSourceFailsItsHook(t *testing.T) {
	needRoot(t)
	defer apply.SetFetchRetryBase(10 * time.Millisecond)()
	t.Run("a new hook", func(t *testing.T) {
		f := newFetchServer(t)
		sourceFailsNewHook(t, f)
	})
	t.Run("a hook applied before", func(t *testing.T) {
		f := newFetchServer(t)
		sourceFailsAppliedHook(t, f)
	})
}

var fetchV1, fetchV2 = []byte("#!/bin/sh\necho v1\n"), []byte("#!/bin/sh\necho v2\n")

// fetchServer serves the sources of TestPathsSourceFailsItsHook: v1, and
// v2 once serve says so; what it does not serve fails with 500.
type fetchServer struct {
	t       *testing.T
	srv     *httptest.Server
	mu      sync.Mutex
	serving map[string][]byte
}

func newFetchServer(t *testing.T) *fetchServer {
	f := &fetchServer{t: t, serving: map[string][]byte{"/v1": fetchV1}}
	f.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		body, ok := f.serving[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			http.Error(w, "gone", http.StatusInternalServerError)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fetchServer) serve(p string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.serving[p] = body
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// spec is hook fetcher, whose file's source is version, and with plain a
// hook plain without files.
func (f *fetchServer) spec(version string, body []byte, plain bool) string {
	s := "- name: fetcher\n  exec: [/usr/local/bin/tool, " + version + "]\n  files:\n    - path: /usr/local/bin/tool\n      source: " + f.srv.URL + "/" + version +
		"\n      verification: {hash: sha256-" + sha256Hex(body) + "}\n      mode: 0755\n"
	if plain {
		s += "- name: plain\n  exec: [/bin/true]\n"
	}
	return s
}

func (f *fetchServer) run(n *node, yaml string) (*apply.Result, error) {
	f.t.Helper()
	p, err := n.planStorage(yaml, func(o *apply.Options) {
		o.HTTPClient, o.FetchWait, o.Inputs = f.srv.Client(), 50*time.Millisecond, "inputs"
	})
	if err != nil {
		f.t.Fatalf("plan: %v", err)
	}
	n.sd.Reset()
	return apply.Execute(context.Background(), p, n.sd, nil)
}

func failedDownload(res *apply.Result) bool {
	for _, ev := range res.Events {
		if ev.Action == apply.EvFailed && ev.Op == apply.OpDownload && ev.Hook == "fetcher" && ev.Path == "/usr/local/bin/tool" && strings.Contains(ev.Error, "500") {
			return true
		}
	}
	return false
}

func hooksOf(st *apply.State) (units, paths []string) {
	for _, u := range st.Units {
		units = append(units, u.Hook+":"+u.Name)
	}
	for _, sp := range st.Paths {
		paths = append(paths, sp.Hook+":"+sp.Path)
	}
	return
}

// sourceFailsNewHook: a new hook whose source fails: the other hook is
// applied, and once the source is there the next apply installs the hook.
func sourceFailsNewHook(t *testing.T, f *fetchServer) {
	n := newNode(t)
	res, err := f.run(n, f.spec("v2", fetchV2, true))
	if err == nil || !strings.Contains(err.Error(), "fetcher") || !strings.Contains(err.Error(), "500") {
		t.Fatalf("err = %v; want the failed hook and why", err)
	}
	if !failedDownload(res) {
		t.Errorf("no failed download of hook fetcher in the action log: %+v", res.Events)
	}
	if _, err := os.Stat(n.unitPath("plain.service")); err != nil {
		t.Errorf("the plain hook was not applied: %v", err)
	}
	if !n.gone("/usr/local/bin/tool") || !n.gone(strings.TrimPrefix(n.unitPath("fetcher.service"), n.root)) {
		t.Error("the failed hook's file or unit was installed")
	}
	if calls := strings.Join(n.sd.Log(), "\n"); !strings.Contains(calls, "start plain.service") || strings.Contains(calls, "fetcher.service") {
		t.Errorf("systemd calls %q; want plain.service started, nothing of fetcher.service", calls)
	}
	st := n.state()
	if units, paths := hooksOf(st); strings.Join(units, " ") != "plain:plain.service" || len(paths) != 0 || st.Inputs != "" {
		t.Errorf("state: units %q, paths %q, inputs %q; want plain.service only, and no inputs recorded", units, paths, st.Inputs)
	}
	f.serve("/v2", fetchV2)
	if _, err := f.run(n, f.spec("v2", fetchV2, true)); err != nil {
		t.Fatalf("apply once the source is back: %v", err)
	}
	if got := n.readNode("/usr/local/bin/tool"); got != string(fetchV2) || n.gone(strings.TrimPrefix(n.unitPath("fetcher.service"), n.root)) {
		t.Errorf("after the source came back: tool %q, fetcher.service there: %v", got, !n.gone(strings.TrimPrefix(n.unitPath("fetcher.service"), n.root)))
	}
}

// sourceFailsAppliedHook: a hook applied before whose new source fails
// stays as it was: its file, its unit (which the spec changes too) and
// what the state records, while the plain hook is added. A re-apply
// without the source changes nothing else and fails the same way; once
// the source is back, it converges.
func sourceFailsAppliedHook(t *testing.T, f *fetchServer) {
	n := newNode(t)
	if _, err := f.run(n, f.spec("v1", fetchV1, false)); err != nil {
		t.Fatal(err)
	}
	before := n.state()
	unit, err := os.ReadFile(n.unitPath("fetcher.service"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.run(n, f.spec("v2", fetchV2, true))
	if err == nil || !failedDownload(res) {
		t.Fatalf("err = %v, events %+v; want the failed download of hook fetcher", err, res.Events)
	}
	if got := n.readNode("/usr/local/bin/tool"); got != string(fetchV1) {
		t.Errorf("the tool is %q; want v1 left in place", got)
	}
	if now, _ := os.ReadFile(n.unitPath("fetcher.service")); string(now) != string(unit) {
		t.Errorf("fetcher.service changed:\n%s", now)
	}
	after := n.state()
	if _, err := os.Stat(n.unitPath("plain.service")); err != nil {
		t.Errorf("the plain hook was not applied: %v", err)
	}
	bu, bp := hooksOf(before)
	au, ap := hooksOf(after)
	if strings.Join(bp, " ") != strings.Join(ap, " ") || !slices.Contains(au, "fetcher:fetcher.service") || !slices.Contains(au, "plain:plain.service") || len(au) != len(bu)+1 {
		t.Errorf("state units %q paths %q; want %q and %q with plain.service added", au, ap, bu, bp)
	}
	if sp := after.Path("/usr/local/bin/tool"); sp == nil || sp.SHA256 != sha256Hex(fetchV1) || sp.Next != "" {
		t.Errorf("state of the tool: %+v; want v1's hash", sp)
	}
	for _, ev := range res.Events {
		if ev.Path == "/usr/local/bin/tool" && ev.Action == apply.EvRemoved || ev.Unit == "fetcher.service" && ev.Action != apply.EvFailed {
			t.Errorf("event %+v about the held hook", ev)
		}
	}
	if _, err := f.run(n, f.spec("v2", fetchV2, true)); err == nil || n.readNode("/usr/local/bin/tool") != string(fetchV1) {
		t.Fatalf("second apply without the source: err = %v", err)
	}
	f.serve("/v2", fetchV2)
	if _, err := f.run(n, f.spec("v2", fetchV2, true)); err != nil {
		t.Fatal(err)
	}
	if got := n.readNode("/usr/local/bin/tool"); got != string(fetchV2) {
		t.Errorf("the tool is %q; want v2", got)
	}
	if now, _ := os.ReadFile(n.unitPath("fetcher.service")); string(now) == string(unit) {
		t.Error("fetcher.service was not changed once the source was back")
	}
	if st := n.state(); st.Inputs != "inputs" || st.Path("/usr/local/bin/tool").SHA256 != sha256Hex(fetchV2) {
		t.Errorf("state after convergence: inputs %q, tool %+v", st.Inputs, st.Path("/usr/local/bin/tool"))
	}
}

// An apply that dies at any file operation, and then one that runs to the
// end, leave the node as the spec says, every path recorded, and no
// temporary file beside them.
func TestPathsCrash(t *testing.T) {
	needRoot(t)
	const v1 = "- name: app\n  exec: [/usr/bin/app]\n  files: [{path: /etc/app/a, contents: \"1\\n\"}, {path: /etc/app/b, contents: \"1\\n\"}]\n  links: [{path: /etc/app/l, target: a}]\n"
	v2 := strings.ReplaceAll(v1, `"1\n"`, `"2\n"`) + "  directories: [{path: /srv/app}]\n"
	planted := 0
	for step := 1; step < 20; step++ {
		n := newNode(t)
		n.mustApplyStorage(v1)
		p, err := n.planStorage(v2)
		if err != nil {
			t.Fatal(err)
		}
		crash := &crashFiles{n: step}
		if _, err := apply.ExecuteWith(context.Background(), p, n.sd, nil, crash); err == nil {
			if step < 3 {
				t.Errorf("step %d: no file operation failed", step)
			}
			continue
		}
		// What a kill while writing leaves, and a failing operation
		// does not.
		if interrupted(n.state()) {
			n.writeNode("/etc/app/.a.tmp-0123456789abcdef", "half")
			planted++
		}
		n.mustApplyStorage(v2)
		if a, b := n.readNode("/etc/app/a"), n.readNode("/etc/app/b"); a != "2\n" || b != "2\n" || n.gone("/srv/app") {
			t.Errorf("step %d: a=%q b=%q, /srv/app gone %v", step, a, b, n.gone("/srv/app"))
		}
		if again, err := n.planStorage(v2); err != nil || again.HasChanges() || len(again.Warnings) > 0 {
			var b bytes.Buffer
			again.WriteText(&b)
			t.Errorf("step %d: the apply after the crash did not converge: %v\n%s", step, err, b.String())
		}
		ents, _ := os.ReadDir(n.at("/etc/app"))
		if len(ents) != 3 {
			t.Errorf("step %d: /etc/app holds %v, want a, b and l alone", step, ents)
		}
	}
	if planted == 0 {
		t.Error("no crash left an interrupted apply of the paths")
	}
}

func interrupted(st *apply.State) bool {
	for _, sp := range st.Paths {
		if sp.Next != "" {
			return true
		}
	}
	return false
}
