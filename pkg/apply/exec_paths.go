package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"time"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// fetchSources downloads the source of every file the plan writes from
// one, and checks each against its verification hash, before anything is
// written. A failed download or a wrong hash fails the file's hook, not
// the apply: the plan is made again with that hook held (see holdHooks),
// so that its units and paths stay as the last apply left them, still
// hostprov's, while the other hooks are applied; each such file is a
// failed event, and Execute's error names them once the rest is done.
//
// A download that fails for a reason waiting may cure (no network yet, a
// refused connection, a server answering 5xx, 408 or 429) is tried again,
// after a pause that doubles from fetchRetryBase up to fetchRetryMax, as
// long as the plan's FetchWait allows; an answer such as 404 is final.
//
// At boot the network may not be up yet. hostprov-apply.service is not
// ordered after network-online.target: that would hold every boot for the
// network, and pull a wait-online service in, for the nodes whose specs
// download nothing. Instead, when a source is to be fetched over HTTP(S),
// apply asks systemd to start network-online.target and waits for that
// job (bounded by FetchWait) before the first try, which is what
// systemd.special(7) asks of a unit that needs the network up, done only
// when it is needed. On a running node the target is active already and
// the job ends at once; offline (--root) there is no systemd to ask. A job
// that fails or cannot be queued is no error of its own: the tries tell.
func (e *executor) fetchSources(ctx context.Context) error {
	client := e.p.opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: downloadTimeout}
	}
	wait := e.p.opts.fetchWait()
	waited := false
	got := map[string][]byte{} // path -> the checked download
	hold := map[hookKey]bool{}
	var failed []Event
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if !f.fetches() {
			continue
		}
		set := ""
		if f.path != nil {
			set = f.path.want.set
		}
		if hold[hookKey{set, f.Hook}] {
			continue // its hook failed already
		}
		if !waited && !e.p.opts.Offline && wait > 0 && overNetwork(f.Source) {
			waited = true
			e.waitForNetwork(ctx, wait)
		}
		data, err := downloadRetrying(ctx, client, f.Source, wait)
		if err == nil && !hashMatches(f.path.want.Hash, data) {
			err = fmt.Errorf("%s does not have the hash its verification gives (%s; the download has sha256-%s): fix the hash in the hook, or the file at the URL",
				f.Source, f.path.want.Hash, hashOf(data))
		} else if err != nil {
			err = fmt.Errorf("downloading %s: %w: check that the node can reach it", f.Source, err)
		}
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%s (hook %s): %w; nothing was changed", f.Path, f.Hook, err)
		}
		if err != nil && (f.Hook == "" || e.p.replan == nil) {
			return fmt.Errorf("%s (hook %s): %w; nothing was changed", f.Path, f.Hook, err)
		}
		if err != nil {
			hold[hookKey{set, f.Hook}] = true
			failed = append(failed, Event{Action: EvFailed, Op: OpDownload, Path: f.Path, Hook: f.Hook,
				Reason: "hook " + f.Hook + " is left as it was", Error: err.Error(), Err: err})
			continue
		}
		got[f.Path] = data
	}
	if len(hold) > 0 {
		p, err := e.p.replan(hold)
		if err != nil {
			return err
		}
		if len(p.Conflicts) > 0 {
			return fmt.Errorf("%s; the plan without hook %s has a conflict, and nothing was changed: %s", failed[0].Error, failed[0].Hook, p.Conflicts[0])
		}
		e.p = p
		for _, ev := range failed {
			e.emit(ev)
		}
	}
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if !f.fetches() {
			continue
		}
		data, ok := got[f.Path]
		if !ok {
			return fmt.Errorf("%s (hook %s): %s was not downloaded; nothing was changed: run hostprov apply again", f.Path, f.Hook, f.Source)
		}
		f.New, f.NewSHA256 = data, hashOf(data)
		f.path.done.SHA256 = f.NewSHA256
	}
	return nil
}

// networkOnline is the target whose start apply waits for before it
// downloads a file's source (see fetchSources).
const networkOnline = "network-online.target"

// waitForNetwork starts networkOnline and waits for the job, at most wait.
func (e *executor) waitForNetwork(ctx context.Context, wait time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := e.sd.Start(ctx, networkOnline); err != nil && !errors.Is(err, ErrSkipped) {
		e.emit(Event{Action: EvSkipped, Op: "wait for", Unit: networkOnline, Reason: "files are to be downloaded; trying all the same", Error: err.Error()})
	}
}

// fetchRetryBase is the first pause between two tries of a download, and
// fetchRetryMax the longest.
var fetchRetryBase = time.Second

const fetchRetryMax = 30 * time.Second

// DefaultFetchWait is how long apply keeps trying to download a file's
// source when Options.FetchWait is zero.
const DefaultFetchWait = 3 * time.Minute

// downloadRetrying downloads url, trying again with exponential backoff
// while the failure may pass and another try can start within wait of the
// first. The error of the last try says how many were made.
func downloadRetrying(ctx context.Context, client *http.Client, url string, wait time.Duration) ([]byte, error) {
	start := time.Now()
	pause := fetchRetryBase
	for tries := 1; ; tries++ {
		data, err := download(ctx, client, url)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			return data, err
		}
		if time.Since(start)+pause > wait {
			return nil, fmt.Errorf("%w (%d tries in %s; apply waits at most %s, see --fetch-wait)", err, tries, time.Since(start).Round(time.Millisecond), wait)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		pause = min(2*pause, fetchRetryMax)
	}
}

// statusError is a download's HTTP answer other than 200 OK.
type statusError struct {
	code   int
	status string
}

func (e *statusError) Error() string { return "the server answered " + e.status }

// retryable tells whether a failed download may succeed when tried again:
// a failure to connect or to read (the network is not up yet, the server
// restarts), or an answer that says to come back later.
func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.code >= 500 || se.code == http.StatusRequestTimeout || se.code == http.StatusTooManyRequests
	}
	return !errors.Is(err, errTooLarge)
}

var errTooLarge = fmt.Errorf("larger than %d MiB, the most hostprov places", maxNodeFile>>20)

func download(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &statusError{code: resp.StatusCode, status: resp.Status}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxNodeFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxNodeFile {
		return nil, errTooLarge
	}
	return data, nil
}

// pathIntent adds to the intent (see Plan.intent) every path the plan
// places, with the hash it has now and the one it is about to get, so that
// a crash cannot leave a path hostprov placed and does not know of.
func (p *Plan) pathIntent(s *State) {
	for _, f := range p.Files {
		if f.Kind == "" || f.Op != OpAdd && f.Op != OpChange {
			continue
		}
		sp := s.Path(f.Path)
		if sp == nil {
			sp = &PathState{}
			s.Paths = append(s.Paths, sp)
		}
		prev := *sp
		*sp = *cloneStatePath(f.path.done)
		sp.Inode, sp.SHA256, sp.Next, sp.NextInode = 0, "", "", 0
		if f.Kind == KindFile {
			sp.Next = f.NewSHA256
			if f.OldSHA256 != "" && (prev.owns(f.OldSHA256) || sp.Existed) {
				sp.SHA256, sp.Inode = f.OldSHA256, f.oldIno
			}
		}
	}
}

// writePaths places and removes the paths of the plan, in its order
// (parents first, removals deepest first), and updates intent as it goes.
// Every directory on the way is opened again, never through a link: one
// swapped for a link since the plan was made is an error, not followed.
func (e *executor) writePaths(ctx context.Context, intent *State) error {
	n := newNodeFS(e.p.opts)
	if e.pathInodes == nil {
		e.pathInodes = map[string]uint64{}
	}
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if f.Kind == "" {
			continue
		}
		// The sysusers.d files come first (see planPaths): once they
		// are placed, the accounts are made, before anything else.
		if !e.first(f) {
			if err := e.runSysusers(ctx); err != nil {
				return err
			}
		}
		switch f.Op {
		case OpUnchanged:
			e.emit(Event{Action: EvUnchanged, Path: f.Path, Reason: f.Reason, SHA256: f.NewSHA256})
			continue
		case OpKeep:
			e.emit(Event{Action: EvKept, Path: f.Path, Reason: f.Reason, SHA256: f.OldSHA256})
			continue
		}
		w, err := n.walk(f.Path)
		if err != nil {
			return err
		}
		if w.bad != "" || w.dir == nil && f.Op != OpRemove {
			why := w.bad
			if why == "" {
				why = "its directory " + w.missing[0] + " is missing"
			}
			return fmt.Errorf("%s: %s; it changed since the plan was made, and nothing more was done: run hostprov apply again", f.Path, why)
		}
		if w.dir == nil {
			continue // gone already
		}
		if pc := f.path; pc != nil && f.Op != OpRemove && (pc.pendingUser != "" || pc.pendingGroup != "") {
			w.dir.Close()
			return fmt.Errorf("%s: its owner %s%s was not created; nothing more was done: run hostprov apply again", f.Path, pc.pendingUser, pc.pendingGroup)
		}
		ino, err := e.placePath(n, w.dir, f)
		w.dir.Close()
		if err != nil {
			return err
		}
		if f.Op == OpRemove {
			intent.Paths = slices.DeleteFunc(intent.Paths, func(sp *PathState) bool { return sp.Path == f.Path })
			e.emit(Event{Action: EvRemoved, Path: f.Path, Reason: f.Reason, SHA256: f.OldSHA256})
			continue
		}
		e.pathInodes[f.Path] = ino
		if sp := intent.Path(f.Path); sp != nil {
			sp.SHA256, sp.Inode, sp.Next, sp.NextInode = f.NewSHA256, ino, "", 0
			if f.Kind != KindFile {
				sp.SHA256 = ""
			}
		}
		reason := f.Reason
		if f.Kind != KindFile {
			reason = string(f.Kind) + "; " + reason
		}
		e.emit(Event{Action: EvWrote, Path: f.Path, Reason: reason, SHA256: f.NewSHA256})
	}
	return e.runSysusers(ctx)
}

// first reports whether f is a sysusers.d file of the plan, or one of the
// directories it is in, which are placed before systemd-sysusers runs.
func (e *executor) first(f *FileChange) bool {
	return f.path != nil && f.path.first
}

// placePath makes, replaces or removes one path in its directory dir, and
// returns the inode of what it placed.
func (e *executor) placePath(n nodeFS, dir *fsutil.Dir, f *FileChange) (uint64, error) {
	name := path.Base(f.Path)
	if f.Op == OpRemove {
		var err error
		if f.Kind == KindDirectory {
			err = e.files.RemoveEmptyDir(dir, name)
		} else {
			err = e.files.Remove(dir, name)
		}
		if err != nil {
			return 0, fsError("removing", f.Path, err)
		}
		return 0, nil
	}
	pc := f.path
	switch f.Kind {
	case KindDirectory:
		sub, err := dir.MkdirAll(name, pc.mode)
		if errors.Is(err, fsutil.ErrNotDir) {
			return 0, fmt.Errorf("%s is a symbolic link or not a directory; hostprov refuses to make a directory through it: move it away", f.Path)
		}
		if err != nil {
			return 0, fsError("making the directory", f.Path, err)
		}
		defer sub.Close()
		if err := sub.SetOwnerMode(pc.owner, pc.mode); err != nil {
			return 0, fsError("setting the owner and mode of", f.Path, err)
		}
		st, err := sub.StatSelf()
		if err != nil {
			return 0, fsError("reading", f.Path, err)
		}
		return st.Ino, nil
	case KindLink:
		if !pc.want.Hard {
			ino, err := dir.Symlink(pc.want.Target, name, pc.owner)
			if err != nil {
				return 0, fsError("making the link", f.Path, err)
			}
			return ino, nil
		}
		w, err := n.walk(pc.want.Target)
		if err != nil {
			return 0, err
		}
		if w.dir == nil || w.bad != "" {
			return 0, fmt.Errorf("%s: the hard link's target %s is missing or below a symbolic link", f.Path, pc.want.Target)
		}
		defer w.dir.Close()
		ino, err := dir.Link(w.dir, path.Base(pc.want.Target), name)
		if err != nil {
			return 0, fsError("making the hard link", f.Path, err)
		}
		return ino, nil
	}
	b, err := e.files.Prepare([]fsutil.File{{Dir: dir, Name: name, Data: f.New, Perm: pc.mode, Owner: pc.owner}})
	if err != nil {
		return 0, writeError(err)
	}
	defer b.Abort()
	if _, err := e.files.Commit(b); err != nil {
		return 0, writeError(err)
	}
	return b.Inode(0), nil
}

// finalPaths gives the final state the inodes of what was placed.
func (e *executor) finalPaths(final *State) {
	for _, sp := range final.Paths {
		if ino, ok := e.pathInodes[sp.Path]; ok {
			sp.Inode = ino
		}
	}
}

// removePathTemps removes the temporary files and links that an apply
// killed while it placed paths left beside them (".NAME.tmp-*"): only
// beside the paths the state records or the plan places, and only after an
// interrupted apply, the only one that leaves any.
func (e *executor) removePathTemps() {
	n := newNodeFS(e.p.opts)
	names := map[string]bool{}
	for _, sp := range e.p.state.Paths {
		names[sp.Path] = true
	}
	for i := range e.p.Files {
		if f := &e.p.Files[i]; f.Kind != "" {
			names[f.Path] = true
		}
	}
	byDir := map[string][]string{}
	for p := range names {
		byDir[path.Dir(p)] = append(byDir[path.Dir(p)], path.Base(p))
	}
	for d, bases := range byDir {
		w, err := n.walk(d + "/x")
		if err != nil || w.dir == nil {
			continue
		}
		ents, err := w.dir.ReadDir()
		for _, ent := range ents {
			if t := fsutil.TempOf(ent.Name); t != "" && slices.Contains(bases, t) && !ent.Type.IsDir() && err == nil {
				w.dir.Remove(ent.Name)
			}
		}
		w.dir.Close()
	}
}
