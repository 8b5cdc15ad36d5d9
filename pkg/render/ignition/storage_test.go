package ignition_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
)

// TestStorageIgnitionEveryVersion parses the storage goldens with the
// parser of every Ignition version (no error, no warning) and reads back
// every file's bytes and mode, every directory and link. Ignition 3.0.0
// knows only sha512, so a spec with a sha256 hash is refused there, at the
// file.
func TestStorageIgnitionEveryVersion(t *testing.T) {
	compressed := false
	for name, path := range rendertest.StorageGoldens(t) {
		r := rendertest.Build(t, path)
		for _, v := range ignition.Versions() {
			t.Run(name+"/"+v, func(t *testing.T) {
				ign, err := ignition.Render(r.Units, ignition.Options{Version: v, Storage: r.Storage})
				sha256 := false
				for _, f := range r.Storage.Files {
					sha256 = sha256 || strings.HasPrefix(f.Hash, "sha256-")
				}
				if v == "3.0.0" && sha256 {
					var ds hooks.Diagnostics
					if !errors.As(err, &ds) || !strings.Contains(ds.Error(), "Ignition 3.0.0 verifies only sha512 hashes") {
						t.Fatalf("got %v, want the sha256 hash refused", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				j, rpt, err := rendertest.IgnitionParsers[v](ign)
				if err != nil || len(rpt.Entries) > 0 {
					t.Fatalf("Ignition %s: %v\n%s\n%s", v, err, rpt, ign)
				}
				var got rendertest.IgnitionStorage
				if err := json.Unmarshal(j, &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Storage.Files) != len(r.Storage.Files) || len(got.Storage.Directories) != len(r.Storage.Directories) ||
					len(got.Storage.Links) != len(r.Storage.Links) {
					t.Fatalf("Ignition has %d files, %d directories, %d links; want %d, %d, %d", len(got.Storage.Files),
						len(got.Storage.Directories), len(got.Storage.Links), len(r.Storage.Files), len(r.Storage.Directories), len(r.Storage.Links))
				}
				for i, want := range r.Storage.Files {
					f := got.Storage.Files[i]
					if f.Path != want.Path || f.Mode == nil || *f.Mode != int(want.Mode) || f.Contents.Source == nil {
						t.Errorf("files[%d] = %+v, want %s mode %o", i, f, want.Path, want.Mode)
						continue
					}
					if want.Source != "" {
						if *f.Contents.Source != want.Source || f.Contents.Verification.Hash == nil || *f.Contents.Verification.Hash != want.Hash {
							t.Errorf("files[%d]: source %s, hash %v; want %s, %s", i, *f.Contents.Source, f.Contents.Verification.Hash, want.Source, want.Hash)
						}
						continue
					}
					compressed = compressed || (f.Contents.Compression != nil && *f.Contents.Compression == "gzip")
					if b := rendertest.DecodeContents(t, *f.Contents.Source, f.Contents.Compression); !bytes.Equal(b, want.Contents) {
						t.Errorf("files[%d] %s: contents %q, want %q", i, want.Path, b, want.Contents)
					}
				}
				for i, want := range r.Storage.Links {
					l := got.Storage.Links[i]
					if l.Path != want.Path || l.Target == nil || *l.Target != want.Target || (l.Hard != nil && *l.Hard) != want.Hard {
						t.Errorf("links[%d] = %+v, want %+v", i, l, want)
					}
				}
			})
		}
	}
	if !compressed {
		t.Error("no golden file's contents were compressed: the goldens should show compression: gzip")
	}
}

// TestStorageIgnitionApply applies the Ignition output of every storage
// golden that needs no download with Ignition's own apply tool to an empty root and checks, on
// disk, every file's bytes, mode and owner, every directory's mode and
// owner, and every link.
func TestStorageIgnitionApply(t *testing.T) {
	m := rendertest.NewIgnitionMachine(t)
	for name, path := range rendertest.StorageGoldens(t) {
		r := rendertest.Build(t, path)
		fetch := false
		for _, f := range r.Storage.Files {
			fetch = fetch || f.Source != ""
		}
		if fetch {
			continue // offline: nothing to download from
		}
		if r.Storage.HasAccounts() {
			// ignition-apply refuses passwd: ("cannot apply passwd
			// live"): users and groups are checked by Ignition's
			// parser and Butane's translation here, and on a rig by
			// apply's tests. The files, directories and links are
			// applied as Ignition places them after its passwd
			// stage: here owned by the ids their accounts would get.
			r = withoutAccounts(r)
		}
		t.Run(name, func(t *testing.T) { checkIgnitionApplied(t, m, r) })
	}
}

// withoutAccounts is r without its users and groups, every owner they
// give by name given instead by an id: the account's own, or one from
// 2000 up.
func withoutAccounts(r compile.Result) compile.Result {
	ids := map[string]int{}
	next := 2000
	id := func(kind, name string, given *uint32) {
		if given != nil {
			ids[kind+name] = int(*given)
		} else if _, ok := ids[kind+name]; !ok {
			ids[kind+name], next = next, next+1
		}
	}
	for _, g := range r.Storage.Groups {
		id("g", g.Name, g.GID)
	}
	for _, u := range r.Storage.Users {
		id("u", u.Name, u.UID)
		id("g", u.Name, nil) // the user's group of its name
	}
	byID := func(kind string, o compile.Owner) compile.Owner {
		if n, ok := ids[kind+o.Name]; ok && o.ID == nil {
			return compile.Owner{ID: &n}
		}
		return o
	}
	st := r.Storage
	st.Users, st.Groups = nil, nil
	st.Files = slices.Clone(st.Files)
	for i := range st.Files {
		st.Files[i].User, st.Files[i].Group = byID("u", st.Files[i].User), byID("g", st.Files[i].Group)
	}
	st.Directories = slices.Clone(st.Directories)
	for i := range st.Directories {
		st.Directories[i].User, st.Directories[i].Group = byID("u", st.Directories[i].User), byID("g", st.Directories[i].Group)
	}
	st.Links = slices.Clone(st.Links)
	for i := range st.Links {
		st.Links[i].User, st.Links[i].Group = byID("u", st.Links[i].User), byID("g", st.Links[i].Group)
	}
	r.Storage = st
	return r
}

func checkIgnitionApplied(t *testing.T, m *rendertest.IgnitionMachine, r compile.Result) {
	ign, err := ignition.Render(r.Units, ignition.Options{Storage: r.Storage})
	if err != nil {
		t.Fatal(err)
	}
	inside, root, err := m.NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if log, err := m.Apply(ctx, inside, ign); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	owner := func(p string, fi os.FileInfo, user, group compile.Owner) {
		st := fi.Sys().(*syscall.Stat_t)
		id := func(o compile.Owner) uint32 {
			if o.ID != nil {
				return uint32(*o.ID)
			}
			return 0
		}
		if st.Uid != id(user) || st.Gid != id(group) {
			t.Errorf("%s is owned by %d:%d, want %s:%s", p, st.Uid, st.Gid, user, group)
		}
	}
	for _, f := range r.Storage.Files {
		p := filepath.Join(root, f.Path)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.Equal(b, f.Contents) {
			t.Errorf("%s has %q, want %q", f.Path, b, f.Contents)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Sys().(*syscall.Stat_t).Mode & 0o7777; got != f.Mode {
			t.Errorf("%s has mode %04o, want %04o", f.Path, got, f.Mode)
		}
		owner(f.Path, fi, f.User, f.Group)
	}
	for _, d := range r.Storage.Directories {
		fi, err := os.Lstat(filepath.Join(root, d.Path))
		if err != nil {
			t.Error(err)
			continue
		}
		if !fi.IsDir() || fi.Sys().(*syscall.Stat_t).Mode&0o7777 != d.Mode {
			t.Errorf("%s is %v, want a directory with mode %04o", d.Path, fi.Mode(), d.Mode)
		}
		owner(d.Path, fi, d.User, d.Group)
	}
	for _, l := range r.Storage.Links {
		p := filepath.Join(root, l.Path)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Error(err)
			continue
		}
		if !l.Hard {
			if target, err := os.Readlink(p); err != nil || target != l.Target {
				t.Errorf("%s links to %q (%v), want %q", l.Path, target, err, l.Target)
			}
			owner(l.Path, fi, l.User, l.Group)
			continue
		}
		tfi, err := os.Lstat(filepath.Join(root, l.Target))
		if err != nil {
			t.Error(err)
			continue
		}
		if !os.SameFile(fi, tfi) {
			t.Errorf("%s is not a hard link to %s", l.Path, l.Target)
		}
	}
}
