// Package agent is hostprov's node agent on Kubernetes: it applies, on its
// node, every HostHooks that selects the node and that the rollout
// approved for it (its NodeHooks' spec.hooksHash), each as one spec set,
// prunes the sets of the HostHooks that no longer select it, and writes
// each NodeHooks' status.
//
// It watches (never polls) the HostHooks, its own Node and its node's
// NodeHooks, and coalesces their events: a burst of them is one apply.
// It applies through pkg/apply under the lock that hostprov apply takes,
// all sets in one plan (one daemon-reload), and never touches a spec set
// without v1alpha1.SetPrefix (the node's own specs). Between applies it
// follows systemd's signals for its units, so that a hook that ends later
// is reported without applying again. The node's state is the truth: a new
// agent plans no changes where the last one applied, and runs nothing
// again.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/sdbus"
	"github.com/hostprov/hostprov/pkg/apis/hostprov/v1alpha1"
	"github.com/hostprov/hostprov/pkg/apply"
)

// Config is an agent's configuration.
type Config struct {
	// NodeName is the node the agent runs on.
	NodeName string
	// REST reaches the API server. HTTPClient, when set, is the client
	// for it, shared by many agents in one process (a benchmark);
	// otherwise one is made from REST.
	REST       *rest.Config
	HTTPClient *http.Client
	// Options are apply's: the root, unit and state directories (those
	// of hostprov apply, whose lock the agent shares).
	Options apply.Options
	// SystemdSocket is systemd's private socket; default
	// sdbus.PrivateSocket. Connect, when set, connects instead (a fake
	// systemd, a test rig).
	SystemdSocket string
	Connect       func(ctx context.Context) (*Systemd, error)
	// Log receives what the agent does; default slog.Default().
	Log *slog.Logger
	// Metrics receive what the agent does; nil makes the agent its own
	// (Agent.Metrics).
	Metrics *Metrics
	// DrainTimeout is how long a drain for a hook that declares a
	// disruption may take; default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// LeaseNamespace is the namespace of the reboot locks (Leases);
	// default DefaultLeaseNamespace. BootID reads the ID of the current
	// boot; default ReadBootID.
	LeaseNamespace string
	BootID         func() (string, error)
	// WatchSpread is the least window over which the agents of a cluster
	// start their watches of a new HostHooks' NodeHooks, each at a random
	// moment of it, so that a new HostHooks does not make every agent
	// call the API server at once (see DefaultWatchSpread, the agent
	// command's default). Zero starts them at once.
	WatchSpread time.Duration
}

// Stats count what an agent did, for tests and benchmarks.
type Stats struct {
	// Syncs are applies (plans of the approved and pruned sets, carried
	// out); Refreshes reports after a signal of systemd, without a plan.
	Syncs     int64
	Refreshes int64
	// StatusWrites are NodeHooks status updates sent.
	StatusWrites int64
}

// Agent is one node's agent. Make it with New and run it with Run.
type Agent struct {
	cfg    Config
	node   *node
	cache  cache.Cache
	client client.Client
	// nodeHooks are the node's NodeHooks, watched by name as the
	// HostHooks come and go.
	nodeHooks *nodeHooksWatches

	kick         chan struct{}
	mu           sync.Mutex
	wantSync     bool
	wantRefresh  bool
	written      map[types.UID]writtenStatus // what the agent wrote, until its cache has it
	last         *result                     // of the last sync
	units        map[string]UnitState        // the agent's units (and instances) as last seen
	syncs        atomic.Int64
	refreshes    atomic.Int64
	statusWrites atomic.Int64
	health       health
	// rebootAsked is set once this agent asked systemd to reboot: it
	// asks once (see resume).
	rebootAsked bool
}

// New makes the agent of cfg.NodeName; it connects to nothing until Run.
func New(cfg Config) (*Agent, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("agent: no node name: give --node-name or set NODE_NAME (the DaemonSet sets it from spec.nodeName)")
	}
	if cfg.REST == nil {
		return nil, errors.New("agent: no API server configuration")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.SystemdSocket == "" {
		cfg.SystemdSocket = sdbus.PrivateSocket
	}
	if cfg.Connect == nil {
		socket, opts := cfg.SystemdSocket, cfg.Options
		cfg.Connect = func(ctx context.Context) (*Systemd, error) { return DialNode(ctx, socket, opts) }
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := policyv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = DefaultDrainTimeout
	}
	if cfg.LeaseNamespace == "" {
		cfg.LeaseNamespace = DefaultLeaseNamespace
	}
	if cfg.BootID == nil {
		cfg.BootID = ReadBootID
	}
	if err := coordinationv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		var err error
		if hc, err = rest.HTTPClientFor(cfg.REST); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	}
	mapper := restMapper()
	c, err := cache.New(cfg.REST, cache.Options{
		HTTPClient: hc, Scheme: scheme, Mapper: mapper,
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&v1alpha1.HostHooks{}: {},
			// Its own Node only, and of it only what the agent reads:
			// the labels and its own mark of a cordon. A Node's status
			// is most of it, and changes.
			&corev1.Node{}: {Field: fields.OneTermEqualSelector("metadata.name", cfg.NodeName), Transform: nodeLabelsOnly},
			// The NodeHooks are watched one by one, by name: see
			// nodeHooksWatches.
		},
	})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	cl, err := client.NewWithWatch(cfg.REST, client.Options{HTTPClient: hc, Scheme: scheme, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	log := cfg.Log
	dr := &drainer{c: cl, node: cfg.NodeName, timeout: cfg.DrainTimeout, retry: time.Second, maxRetry: 30 * time.Second,
		logf: func(msg string, args ...any) { log.Info(msg, args...) }}
	a := &Agent{cfg: cfg, cache: c, client: cl,
		node: &node{opts: cfg.Options, log: cfg.Log, builds: map[string]built{}, metrics: cfg.Metrics, drainer: dr,
			rebooter: newRebooter(cl, cfg)},
		kick:    make(chan struct{}, 1),
		written: map[types.UID]writtenStatus{},
		units:   map[string]UnitState{}}
	a.nodeHooks = newNodeHooksWatches(cfg.NodeName, cl, a.nodeHooksHandler(), func() { a.want(true) }, cfg.WatchSpread)
	return a, nil
}

// restMapper knows the kinds the agent reads and writes (with the pods it
// evicts and the Leases of its reboot locks): a static mapper, so that no
// agent asks the API server's discovery (a thousand agents would
// ask a thousand times).
func restMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.AddSpecific(corev1.SchemeGroupVersion.WithKind("Node"), corev1.SchemeGroupVersion.WithResource("nodes"),
		corev1.SchemeGroupVersion.WithResource("node"), meta.RESTScopeRoot)
	m.AddSpecific(v1alpha1.GroupVersion.WithKind("HostHooks"), v1alpha1.GroupVersion.WithResource("hosthooks"),
		v1alpha1.GroupVersion.WithResource("hosthooks"), meta.RESTScopeRoot)
	m.AddSpecific(v1alpha1.GroupVersion.WithKind("NodeHooks"), v1alpha1.GroupVersion.WithResource("nodehooks"),
		v1alpha1.GroupVersion.WithResource("nodehooks"), meta.RESTScopeRoot)
	m.AddSpecific(corev1.SchemeGroupVersion.WithKind("Pod"), corev1.SchemeGroupVersion.WithResource("pods"),
		corev1.SchemeGroupVersion.WithResource("pod"), meta.RESTScopeNamespace)
	m.AddSpecific(coordinationv1.SchemeGroupVersion.WithKind("Lease"), coordinationv1.SchemeGroupVersion.WithResource("leases"),
		coordinationv1.SchemeGroupVersion.WithResource("lease"), meta.RESTScopeNamespace)
	return m
}

func nodeLabelsOnly(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	var marks map[string]string
	if m, ok := n.Annotations[AnnotationCordoned]; ok {
		marks = map[string]string{AnnotationCordoned: m}
	}
	return &corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: n.Name, UID: n.UID,
		ResourceVersion: n.ResourceVersion, Labels: n.Labels, Annotations: marks}}, nil
}

// Stats returns what the agent did so far.
func (a *Agent) Stats() Stats {
	return Stats{Syncs: a.syncs.Load(), Refreshes: a.refreshes.Load(), StatusWrites: a.statusWrites.Load()}
}

// want asks the worker for a sync (or only a refresh of the report); asks
// made while it works are one.
func (a *Agent) want(sync bool) {
	a.mu.Lock()
	if sync {
		a.wantSync = true
	} else {
		a.wantRefresh = true
	}
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// Run runs the agent until ctx ends, and then returns nil; it returns an
// error only when it cannot start (its watches fail to start).
func (a *Agent) Run(ctx context.Context) error {
	if err := a.watch(ctx); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		err := a.cache.Start(ctx)
		if ctx.Err() == nil {
			// The informers stopped while the agent runs: it would
			// see no more changes. Its liveness probe says so.
			a.health.watchesEnded.Store(true)
			a.cfg.Log.Error("the watches ended", "error", err)
		}
		errc <- err
	}()
	if !a.cache.WaitForCacheSync(ctx) {
		select {
		case err := <-errc:
			if err != nil {
				return fmt.Errorf("agent: watches: %w", err)
			}
		default:
		}
		return nil
	}
	a.health.synced.Store(true)
	a.cfg.Log.Info("watching", "node", a.cfg.NodeName)
	backoff := newBackoff()
	for ctx.Err() == nil {
		sd, err := a.cfg.Connect(ctx)
		if err != nil {
			d := backoff.next()
			a.cfg.Log.Error("cannot reach systemd", "error", err, "retry in", d)
			sleep(ctx, d)
			continue
		}
		a.health.reached.Store(true)
		err = a.serve(ctx, sd)
		if sd.Close != nil {
			sd.Close()
		}
		if err == nil {
			backoff.reset()
			continue
		}
		d := backoff.next()
		a.cfg.Log.Error("systemd did not answer; connecting again", "error", err, "retry in", d)
		sleep(ctx, d)
	}
	return nil
}

// watch registers the event handlers: every change that can change what
// the node should have asks for a sync. Updates that cannot (a Node's
// status, the controller's HostHooks status, the agent's own NodeHooks
// status writes) are ignored, so that an idle agent does nothing.
func (a *Agent) watch(ctx context.Context) error {
	add := func(obj client.Object, changed func(old, new any) bool) error {
		inf, err := a.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("agent: watch %T: %w", obj, err)
		}
		_, err = inf.AddEventHandler(a.handler(changed))
		return err
	}
	if err := add(&v1alpha1.HostHooks{}, func(o, n any) bool {
		oh, nh := o.(*v1alpha1.HostHooks), n.(*v1alpha1.HostHooks)
		return oh.Generation != nh.Generation || (oh.DeletionTimestamp == nil) != (nh.DeletionTimestamp == nil) ||
			!equality.Semantic.DeepEqual(oh.Spec, nh.Spec)
	}); err != nil {
		return err
	}
	return add(&corev1.Node{}, func(o, n any) bool {
		return !labels.Equals(o.(*corev1.Node).Labels, n.(*corev1.Node).Labels)
	})
}

// handler asks for a sync at every add and delete, and at the updates
// that changed says matter.
func (a *Agent) handler(changed func(old, new any) bool) toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { a.want(true) },
		UpdateFunc: func(old, new any) {
			if changed(old, new) {
				a.want(true)
			}
		},
		DeleteFunc: func(any) { a.want(true) },
	}
}

// nodeHooksHandler is the handler of the NodeHooks watches: a change of
// the spec matters, and a status someone else wrote.
func (a *Agent) nodeHooksHandler() toolscache.ResourceEventHandler {
	return a.handler(func(o, n any) bool {
		on, nn := o.(*v1alpha1.NodeHooks), n.(*v1alpha1.NodeHooks)
		if on.Spec != nn.Spec {
			return true
		}
		// A status someone else wrote (cleared, to run failed hooks
		// again, or anything else, which the agent writes over) is
		// looked at; the agent's own writes, and the versions before
		// its last one, are not.
		return !equality.Semantic.DeepEqual(on.Status, nn.Status) && !a.ownOrOlder(nn)
	})
}

// serve is the worker while the connection sd to systemd lasts: it syncs
// once, then whenever asked, and refreshes the report when systemd signals
// a change of one of the agent's units. It returns nil when ctx ends or
// the connection is lost, and the error of a sync that systemd did not
// answer, after which the connection is not to be trusted.
func (a *Agent) serve(ctx context.Context, sd *Systemd) error {
	a.want(true)
	if sd.Changes != nil {
		stop := make(chan struct{})
		defer close(stop)
		go a.follow(sd.Changes, stop)
	}
	backoff := newBackoff()
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-sd.Lost:
			a.cfg.Log.Warn("the connection to systemd ended; connecting again")
			return nil
		case <-retry:
			retry = nil
			a.want(true)
			continue
		case <-a.kick:
		}
		a.mu.Lock()
		doSync, doRefresh := a.wantSync, a.wantRefresh
		a.wantSync, a.wantRefresh = false, false
		a.mu.Unlock()
		var err error
		switch {
		case doSync:
			err = a.sync(ctx, sd)
		case doRefresh:
			err = a.refresh(ctx, sd)
		}
		var se *systemdError
		if errors.As(err, &se) && ctx.Err() == nil {
			return err
		}
		if err != nil && ctx.Err() == nil {
			d := backoff.next()
			a.cfg.Log.Error("sync failed", "error", err, "retry in", d)
			retry = time.After(d)
		} else if err == nil {
			backoff.reset()
		}
	}
}

// follow turns systemd's signals about the agent's units into refreshes.
// Only a change of a unit's ActiveState or SubState counts: systemd sends
// other property changes too (loading an idle unit to answer a question
// about it is one), and a refresh asks questions.
func (a *Agent) follow(changes <-chan UnitState, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case c := <-changes:
			a.mu.Lock()
			prev, ours := a.units[c.Unit]
			changed := c.Unit == "" || ours && (c.ActiveState != "" && c.ActiveState != prev.ActiveState ||
				c.SubState != "" && c.SubState != prev.SubState)
			if ours && changed {
				if c.ActiveState != "" {
					prev.ActiveState = c.ActiveState
				}
				if c.SubState != "" {
					prev.SubState = c.SubState
				}
				a.units[c.Unit] = prev
			}
			a.mu.Unlock()
			if changed {
				a.want(false)
			}
		}
	}
}

// sync applies and writes the statuses.
func (a *Agent) sync(ctx context.Context, sd *Systemd) error {
	a.syncs.Add(1)
	v, err := a.view(ctx)
	if err != nil {
		return err
	}
	if v.labels == nil {
		a.cfg.Log.Info("waiting for the Node to be seen", "node", a.cfg.NodeName)
		return nil
	}
	if v.listing {
		// A NodeHooks not listed yet would look absent, and the set of
		// a node no longer selected would be pruned without its
		// approval: the end of the listing asks for the sync again.
		return nil
	}
	// A reboot the agent asked for comes first: nothing is applied
	// before it, and the node is uncordoned only after it.
	if err := a.resume(ctx, sd); err != nil {
		return err
	}
	a.node.applying = func(names []string) { a.writeApplying(ctx, v, names) }
	a.node.tools = sd.Tools
	r, err := a.node.sync(ctx, sd.Systemd, v)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.last = r
	a.mu.Unlock()
	if err := a.writeStatuses(ctx, v, r); err != nil && !r.reboot {
		return err
	}
	if r.reboot {
		a.rebootAsked = true
		rec, err := a.node.rebooter.read()
		if err != nil || rec == nil {
			return fmt.Errorf("the record of the reboot: %v", err)
		}
		return a.reboot(ctx, sd, rec)
	}
	if r.retry {
		// Returned as an error, so that the worker tries again with
		// its backoff; the NodeHooks says why.
		return errors.New("hooks that need a drain were not applied; trying again")
	}
	return nil
}

// refresh reports again with the outcomes of the last sync.
func (a *Agent) refresh(ctx context.Context, sd *Systemd) error {
	a.mu.Lock()
	last := a.last
	a.mu.Unlock()
	if last == nil {
		return nil
	}
	a.refreshes.Add(1)
	v, err := a.view(ctx)
	if err != nil {
		return err
	}
	reports, err := a.node.report(ctx, sd.Systemd)
	if err != nil {
		return err
	}
	r := &result{outcomes: map[string]*outcome{}, reports: reports}
	for name, o := range last.outcomes {
		c := *o
		c.changed = false
		r.outcomes[name] = &c
	}
	// A NodeHooks that came after the last sync waits for the next,
	// which its event asked for: the last sync decided nothing for it.
	known := v.nodeHooks[:0:0]
	for _, nh := range v.nodeHooks {
		if r.outcomes[nh.Spec.HostHooks] != nil {
			known = append(known, nh)
		}
	}
	v.nodeHooks = known
	return a.writeStatuses(ctx, v, r)
}

// view reads the agent's cache, with the NodeHooks as the agent knows
// them (known).
func (a *Agent) view(ctx context.Context) (*view, error) {
	v := &view{hostHooks: map[string]*v1alpha1.HostHooks{}}
	var n corev1.Node
	switch err := a.cache.Get(ctx, client.ObjectKey{Name: a.cfg.NodeName}, &n); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, err
	default:
		v.labels = labels.Set(n.Labels)
		if v.labels == nil {
			v.labels = labels.Set{}
		}
		_, v.cordoned = n.Annotations[AnnotationCordoned]
	}
	var hhs v1alpha1.HostHooksList
	if err := a.cache.List(ctx, &hhs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range hhs.Items {
		v.hostHooks[hhs.Items[i].Name] = &hhs.Items[i]
	}
	names := make([]string, 0, len(hhs.Items))
	var matched int32
	for i := range hhs.Items {
		names = append(names, hhs.Items[i].Name)
		matched = max(matched, hhs.Items[i].Status.MatchedNodes)
	}
	if err := a.nodeHooks.ensure(ctx, names, matched); err != nil {
		return nil, err
	}
	nhs, synced := a.nodeHooks.list()
	v.listing = !synced
	for _, nh := range nhs {
		if nh.Spec.NodeName == a.cfg.NodeName && nh.Spec.HostHooks != "" {
			v.nodeHooks = append(v.nodeHooks, a.known(nh))
		}
	}
	return v, nil
}

// backoff spaces retries of a failed sync or connection: 1s, doubling, at
// most 5 minutes.
type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{} }

func (b *backoff) next() time.Duration {
	if b.d == 0 {
		b.d = time.Second
	} else if b.d < 5*time.Minute {
		b.d = min(2*b.d, 5*time.Minute)
	}
	return b.d
}

func (b *backoff) reset() { b.d = 0 }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
