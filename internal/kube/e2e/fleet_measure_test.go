package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/kube/controller"
	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
)

// monitor prints, every period until ctx ends, what a run at scale is read
// by when it goes wrong: the HostHooks' last status, how long ago the
// controller last renewed its Lease (past its 10 s renew deadline it
// loses it), and the cores each process of the run took since the last
// line. A benchmark's own log is cut to a few lines and printed at its
// end, so this goes to stderr as it happens.
func monitor(ctx context.Context, start time.Time, w *completeWatch, l *leaseWatch, period time.Duration) {
	last := cpuTimes()
	lastAt := time.Now()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now, at := cpuTimes(), time.Now()
		var cores []string
		for _, name := range slices.Sorted(maps.Keys(now)) {
			cores = append(cores, fmt.Sprintf("%s %.2f", name, (now[name]-last[name])/at.Sub(lastAt).Seconds()))
		}
		last, lastAt = now, at
		w.mu.Lock()
		st := w.last
		w.mu.Unlock()
		renewed := "never"
		if r := l.renewed.Load(); r != 0 {
			renewed = at.Sub(time.Unix(0, r)).Round(100*time.Millisecond).String() + " ago"
		}
		_, load, err := readLoadavg()
		if err != nil {
			load = err.Error()
		}
		fmt.Fprintf(os.Stderr, "+%v: %q %d matched, %d updated, %d succeeded; lease renewed %s; cores: %s; load %s\n",
			at.Sub(start).Round(time.Second), st.Phase, st.MatchedNodes, st.UpdatedNodes, st.SucceededNodes,
			renewed, strings.Join(cores, ", "), load)
	}
}

// cpuTimes is the CPU time, in seconds, of this process ("bench": the
// agents, the controller and the webhook) and of each of its children
// (etcd, kube-apiserver), by name.
func cpuTimes() map[string]float64 {
	ps := []process{{pid: "self", name: "bench"}}
	if cs, err := childProcesses(); err == nil {
		ps = append(ps, cs...)
	}
	times := map[string]float64{}
	for _, p := range ps {
		data, err := os.ReadFile(filepath.Join("/proc", p.pid, "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		// pid (comm) state ppid ... utime is the 14th field, stime the 15th.
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseFloat(f[11], 64)
		k, _ := strconv.ParseFloat(f[12], 64)
		times[p.name] = (u + k) / clockTicks
	}
	return times
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every
// architecture Linux runs on today.
const clockTicks = 100

// tailFile prints the last n lines of file to stderr.
func tailFile(file string, n int) {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	lines = lines[max(0, len(lines)-n):]
	fmt.Fprintf(os.Stderr, "the last %d lines of %s:\n", len(lines), filepath.Base(file))
	_, _ = io.WriteString(os.Stderr, strings.Join(lines, "\n")+"\n")
}

// loadavg is the machine's 1-minute load average, and the whole line of
// /proc/loadavg's three averages.
func loadavg(b *testing.B) (float64, string) {
	b.Helper()
	v, line, err := readLoadavg()
	if err != nil {
		b.Fatal(err)
	}
	return v, line
}

func readLoadavg() (float64, string, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, "", err
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return 0, "", fmt.Errorf("/proc/loadavg: %q", data)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, "", fmt.Errorf("/proc/loadavg: %v", err)
	}
	return v, strings.Join(f[:3], " "), nil
}

// resetPeakRSS resets this process's peak RSS (VmHWM), so that each fleet
// size reports its own.
func resetPeakRSS() {
	// Linux since 4.0; where it fails, the peak is the process's.
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is the peak RSS (VmHWM) of process pid ("self" for this one),
// in KiB.
func peakRSS(b *testing.B, pid string) float64 {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatalf("/proc/%s/status: %q: %v", pid, line, err)
			}
			return kb
		}
	}
	b.Fatalf("/proc/%s/status has no VmHWM", pid)
	return 0
}

// process is a child process of this one: the cluster's etcd and
// kube-apiserver.
type process struct{ pid, name string }

func children(b *testing.B) []process {
	b.Helper()
	ps, err := childProcesses()
	if err != nil {
		b.Fatal(err)
	}
	return ps
}

func childProcesses() ([]process, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		return nil, err
	}
	self := strconv.Itoa(os.Getpid())
	var ps []process
	for _, stat := range stats {
		data, err := os.ReadFile(stat)
		if err != nil {
			continue // ended since
		}
		// pid (comm) state ppid ...
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		if f := strings.Fields(s[end+1:]); len(f) > 1 && f[1] == self {
			ps = append(ps, process{pid: filepath.Base(filepath.Dir(stat)), name: s[open+1 : end]})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
	return ps, nil
}

// completeWatch tells, from a watch of the HostHooks (so that waiting for
// it adds no requests to what is measured), when its status is Complete
// for given hooks.
type completeWatch struct {
	mu     sync.Mutex
	cond   *sync.Cond
	last   v1alpha1.HostHooksStatus
	gen    int64
	failed string // why waiting is in vain
}

// leaseWatch counts the changes of the controller's Lease: renewals by
// its holder, and changes of holder.
type leaseWatch struct {
	renewals, transitions atomic.Int64
	renewed               atomic.Int64 // the last RenewTime, in Unix nanoseconds
}

func (l *leaseWatch) counts() (renewals, transitions int64) {
	return l.renewals.Load(), l.transitions.Load()
}

// watchFleet watches the HostHooks and the controller's Lease.
func watchFleet(b *testing.B, cfg *rest.Config, cl client.Client) (*completeWatch, *leaseWatch) {
	b.Helper()
	ca, err := cache.New(cfg, cache.Options{Scheme: cl.Scheme(), ByObject: map[client.Object]cache.ByObject{
		&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{fleetNS: {}},
			Field: fields.OneTermEqualSelector("metadata.name", controller.LeaseName)},
	}})
	if err != nil {
		b.Fatal(err)
	}
	inf, err := ca.GetInformer(b.Context(), &v1alpha1.HostHooks{})
	if err != nil {
		b.Fatal(err)
	}
	w := &completeWatch{}
	w.cond = sync.NewCond(&w.mu)
	see := func(obj any) {
		if hh, ok := obj.(*v1alpha1.HostHooks); ok {
			w.mu.Lock()
			w.last, w.gen = hh.Status, hh.Generation
			w.cond.Broadcast()
			w.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o any) { see(o) }}); err != nil {
		b.Fatal(err)
	}
	linf, err := ca.GetInformer(b.Context(), &coordinationv1.Lease{})
	if err != nil {
		b.Fatal(err)
	}
	l := &leaseWatch{}
	renewed := func(o any) {
		if lease, ok := o.(*coordinationv1.Lease); ok && lease.Spec.RenewTime != nil {
			l.renewed.Store(lease.Spec.RenewTime.UnixNano())
		}
	}
	if _, err := linf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: renewed, UpdateFunc: func(o, n any) {
		old, ok1 := o.(*coordinationv1.Lease)
		lease, ok2 := n.(*coordinationv1.Lease)
		switch {
		case !ok1 || !ok2:
		case ptr.Deref(old.Spec.HolderIdentity, "") != ptr.Deref(lease.Spec.HolderIdentity, ""):
			l.transitions.Add(1)
		case !old.Spec.RenewTime.Equal(lease.Spec.RenewTime):
			l.renewals.Add(1)
		}
		renewed(n)
	}}); err != nil {
		b.Fatal(err)
	}
	runBench(b, ca.Start)
	if !ca.WaitForCacheSync(b.Context()) {
		b.Fatal("the HostHooks and Lease watches did not sync")
	}
	return w, l
}

// fail ends every wait, now and later, with why.
func (w *completeWatch) fail(why string) {
	w.mu.Lock()
	if w.failed == "" {
		w.failed = why
	}
	w.cond.Broadcast()
	w.mu.Unlock()
}

func (w *completeWatch) wait(b *testing.B, hash string, n int) {
	b.Helper()
	timeout := time.AfterFunc(30*time.Minute, func() { w.fail("not complete within 30 minutes") })
	defer timeout.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for !(w.last.HooksHash == hash && w.last.ObservedGeneration == w.gen && w.last.Phase == v1alpha1.PhaseComplete &&
		int(w.last.SucceededNodes) == n) {
		if w.failed != "" {
			b.Fatalf("%s: %+v", w.failed, w.last)
		}
		w.cond.Wait()
	}
}

// metrics are the API server's counters.
type metrics struct {
	requests float64            // every verb but WATCH
	watches  float64            // watches being served
	byKey    map[string]float64 // by "VERB resource[/subresource] code"
	denials  float64            // requests the admission policies refused
	// webhookCalls are the API server's calls of hostprov's webhook
	webhookCalls float64
	policyEr     float64 // and admitted with an error of theirs
}

// scrape reads the API server's /metrics.
func scrape(b *testing.B, c *kubetest.Cluster) metrics {
	b.Helper()
	hc, err := rest.HTTPClientFor(c.Config())
	if err != nil {
		b.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(c.Config().Host + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Fatalf("/metrics: %s %v", resp.Status, err)
	}
	m := metrics{byKey: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			ls, v := sample(line)
			// WATCH is counted as it starts; a request of no resource
			// is the benchmark's own scrape of /metrics.
			if ls["verb"] == "WATCH" || ls["resource"] == "" {
				continue
			}
			m.requests += v
			key := ls["verb"] + " " + ls["resource"]
			if ls["subresource"] != "" {
				key += "/" + ls["subresource"]
			}
			m.byKey[key+" "+ls["code"]] += v
		case strings.HasPrefix(line, "apiserver_admission_webhook_request_total{"):
			if ls, v := sample(line); ls["name"] == "hosthooks.hostprov.dev" {
				m.webhookCalls += v
			}
		case strings.HasPrefix(line, "apiserver_longrunning_requests{"):
			if ls, v := sample(line); ls["verb"] == "WATCH" {
				m.watches += v
			}
		case strings.HasPrefix(line, "apiserver_validating_admission_policy_check_total{"):
			// Counted are the denials, and the errors of a policy's
			// expressions (admitted: they are not a denial), not the
			// requests a policy admitted.
			switch ls, v := sample(line); ls["enforcement_action"] {
			case "deny":
				m.denials += v
			case "allow":
				m.policyEr += v
			}
		}
	}
	return m
}

// sample parses one sample line of the Prometheus text format.
func sample(line string) (map[string]string, float64) {
	ls := map[string]string{}
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, v, _ := strings.Cut(kv, "=")
		ls[k] = strings.Trim(v, `"`)
	}
	v, _ := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
	return ls, v
}

// minus lists the requests of m since before, most first.
func (m metrics) minus(before metrics) string {
	type kv struct {
		k string
		v float64
	}
	var d []kv
	for k, v := range m.byKey {
		if dv := v - before.byKey[k]; dv > 0 {
			d = append(d, kv{k, dv})
		}
	}
	sort.Slice(d, func(i, j int) bool { return d[i].v > d[j].v || d[i].v == d[j].v && d[i].k < d[j].k })
	var sb strings.Builder
	for _, e := range d {
		fmt.Fprintf(&sb, "  %8.0f %s\n", e.v, e.k)
	}
	return sb.String()
}
