package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"

	"github.com/hostprov/hostprov/internal/fsutil"
)

// fetchSources downloads the source of every file the plan writes from
// one, and checks each against its verification hash, before anything is
// written: a failed download or a wrong hash leaves the node as it was.
func (e *executor) fetchSources(ctx context.Context) error {
	client := e.p.opts.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: DownloadTimeout}
	}
	for i := range e.p.Files {
		f := &e.p.Files[i]
		if f.Kind != KindFile || f.Source == "" || f.New != nil || f.Op != OpAdd && f.Op != OpChange {
			continue
		}
		data, err := download(ctx, client, f.Source)
		if err != nil {
			return fmt.Errorf("%s (hook %s): downloading %s: %w; nothing was changed: check that the node can reach it, and run apply again", f.Path, f.Hook, f.Source, err)
		}
		want := f.path.want.Hash
		if !hashMatches(want, data) {
			return fmt.Errorf("%s (hook %s): %s does not have the hash its verification gives (%s; the download has sha256-%s); nothing was changed: fix the hash in the hook, or the file at the URL",
				f.Path, f.Hook, f.Source, want, hashOf(data))
		}
		f.New, f.NewSHA256 = data, hashOf(data)
		f.path.done.SHA256 = f.NewSHA256
	}
	return nil
}

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
		return nil, fmt.Errorf("the server answered %s", resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxNodeFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxNodeFile {
		return nil, fmt.Errorf("larger than %d MiB, the most hostprov places", maxNodeFile>>20)
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
