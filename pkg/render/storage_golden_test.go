package render_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coreos/butane/config"
	"github.com/coreos/butane/config/common"

	"github.com/hostprov/hostprov/internal/golden"
	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
	"github.com/hostprov/hostprov/pkg/render/butane"
	"github.com/hostprov/hostprov/pkg/render/cloudinit"
	"github.com/hostprov/hostprov/pkg/render/ignition"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

// storageDir holds the golden specs with files, directories and links, and
// the files their local: entries name.
var storageDir = filepath.Join("..", "..", "testdata", "golden", "storage")

// storageGoldens are the specs of storageDir by name.
func storageGoldens(t *testing.T) map[string]string {
	t.Helper()
	ms, err := filepath.Glob(filepath.Join(storageDir, "*.yaml"))
	if err != nil || len(ms) < 2 {
		t.Fatalf("found %d storage goldens (%v); the tests expect the ones in the repository", len(ms), err)
	}
	out := map[string]string{}
	for _, m := range ms {
		out[strings.TrimSuffix(filepath.Base(m), ".yaml")] = m
	}
	// The examples with files, directories or links are goldens too.
	ex, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "hostprov.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ex {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := compile.BuildAll(m, data); !r.Storage.Empty() {
			out["examples/"+filepath.Base(filepath.Dir(m))] = m
		}
	}
	if _, ok := out["examples/node-metrics"]; !ok {
		t.Fatal("examples/node-metrics is not among the storage goldens")
	}
	return out
}

// TestStorageGolden renders the storage goldens to Ignition, Butane and
// cloud-init. A file from an s3:// source cannot be carried by cloud-init,
// which refuses it at the file.
func TestStorageGolden(t *testing.T) {
	for name, path := range storageGoldens(t) {
		t.Run(name, func(t *testing.T) {
			r := rendertest.BuildAll(t, path)
			ign, err := ignition.Render(r.Units, ignition.Options{Pretty: true, Storage: r.Storage})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(storageDir, name+".ign.json"), ign)
			bu, err := butane.Render(r.Units, butane.Options{Storage: r.Storage})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(storageDir, name+".bu"), bu)
			ci, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
			hasS3 := false
			for _, f := range r.Storage.Files {
				hasS3 = hasS3 || strings.HasPrefix(f.Source, "s3://")
			}
			if hasS3 {
				var ds hooks.Diagnostics
				if !errors.As(err, &ds) || !strings.Contains(ds.Error(), "cloud-init cannot download from s3://") ||
					ds[0].Pos.File != path || ds[0].Pos.Line == 0 {
					t.Fatalf("cloud-init output of a file from source: %v, want a refusal at the file", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(storageDir, name+".cloud-init.yml"), ci)
		})
	}
}

// TestStorageIgnitionEveryVersion parses the storage goldens with the
// parser of every Ignition version (no error, no warning) and reads back
// every file's bytes and mode, every directory and link. Ignition 3.0.0
// knows only sha512, so a spec with a sha256 hash is refused there, at the
// file.
func TestStorageIgnitionEveryVersion(t *testing.T) {
	compressed := false
	for name, path := range storageGoldens(t) {
		r := rendertest.BuildAll(t, path)
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

// TestStorageButaneTranslates: Butane's own translation of the Butane
// golden, with the spec's directory as --files-dir, is the Ignition
// output.
func TestStorageButaneTranslates(t *testing.T) {
	for name, path := range storageGoldens(t) {
		t.Run(name, func(t *testing.T) {
			r := rendertest.BuildAll(t, path)
			for _, iv := range []string{"3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0"} {
				bu, err := butane.Render(r.Units, butane.Options{IgnitionVersion: iv, Storage: r.Storage})
				if err != nil {
					t.Fatal(err)
				}
				got, rpt, err := config.TranslateBytes(bu, common.TranslateBytesOptions{TranslateOptions: common.TranslateOptions{FilesDir: filepath.Dir(path)}})
				if err != nil || len(rpt.Entries) > 0 {
					t.Fatalf("Butane %s: %v\n%s\n%s", iv, err, rpt, bu)
				}
				want, err := ignition.Render(r.Units, ignition.Options{Version: iv, Storage: r.Storage})
				if err != nil {
					t.Fatal(err)
				}
				rendertest.SameJSON(t, name+" "+iv, want, got)
			}
		})
	}
}

// TestStorageCloudInitSchema runs cloud-init's own validator on the
// cloud-init output of every storage golden without an s3:// source, and
// of files owned by name, which are deferred.
func TestStorageCloudInitSchema(t *testing.T) {
	if _, err := exec.LookPath("cloud-init"); err != nil {
		hosttools.Unavailable(t, "cloud-init not found (Debian package cloud-init)")
	}
	named := rendertest.SpecHeader + "- name: a\n  exec: [/bin/true]\n  files: [{path: /etc/a, contents: \"a\\n\", user: app, group: app, mode: 0600}]\n"
	r, diags := compile.BuildAll("named.yaml", []byte(named))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	docs := map[string]compile.Result{"named": r}
	for name, path := range storageGoldens(t) {
		g := rendertest.BuildAll(t, path)
		s3 := false
		for _, f := range g.Storage.Files {
			s3 = s3 || strings.HasPrefix(f.Source, "s3://")
		}
		if !s3 { // cloud-init refuses an s3:// source (TestStorageGolden)
			docs[name] = g
		}
	}
	if len(docs) < 3 {
		t.Fatalf("only %d documents to check", len(docs))
	}
	for name, r := range docs {
		ci, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
		if err != nil {
			t.Fatal(err)
		}
		if name == "named" && (!bytes.Contains(ci, []byte("owner: app:app")) || !bytes.Contains(ci, []byte("defer: true"))) {
			t.Errorf("%s: a file owned by name is not deferred with its owner:\n%s", name, ci)
		}
		file := filepath.Join(t.TempDir(), strings.ReplaceAll(name, "/", "-")+".yaml")
		if err := os.WriteFile(file, ci, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := rendertest.CloudInitSchema(file)
		if want := "Valid cloud-config: " + file + "\n"; err != nil || out != want {
			t.Errorf("cloud-init schema -c %s: %v\n%s\n%s", name, err, out, ci)
		}
	}
}

// TestStorageIgnitionApply applies the Ignition output of every storage
// golden that needs no download with Ignition's own apply tool to an empty root and checks, on
// disk, every file's bytes, mode and owner, every directory's mode and
// owner, and every link.
func TestStorageIgnitionApply(t *testing.T) {
	m := rendertest.NewIgnitionMachine(t)
	for name, path := range storageGoldens(t) {
		r := rendertest.BuildAll(t, path)
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

// A kops hook cannot carry files: each entry is refused at its place.
func TestStorageKopsRefused(t *testing.T) {
	path := filepath.Join(storageDir, "files.yaml")
	r := rendertest.BuildAll(t, path)
	_, err := kopshooks.Render(r.Units, kopshooks.Options{Storage: r.Storage})
	var ke *kopshooks.Error
	if !errors.As(err, &ke) || !errors.Is(err, kopshooks.ErrStorage) {
		t.Fatalf("got %v, want a *KopsError with ErrKopsStorage", err)
	}
	ds := ke.Diagnostics()
	if n := len(r.Storage.Files) + len(r.Storage.Directories) + len(r.Storage.Links); len(ds) != n {
		t.Fatalf("%d diagnostics, want one per entry (%d):\n%v", len(ds), n, ds)
	}
	if !strings.HasPrefix(ds[0].String(), path+":15:9: error: hooks[0]: file /etc/node-exporter/web.yml: a kops hook is a unit and nothing else") {
		t.Errorf("first diagnostic: %s", ds[0])
	}
}

// Ignition before spec 3.6.0 sets no set-id or sticky bit (its parser
// says so): the Ignition and Butane outputs refuse such a mode at the
// entry, and cloud-init, whose chmod sets them, keeps it.
func TestStorageSpecialBits(t *testing.T) {
	spec := rendertest.SpecHeader + "- name: spool\n  directories: [{path: /var/spool/x, mode: 01777}]\n  files: [{path: /usr/local/bin/x, contents: \"#!/bin/sh\\n\", mode: 04755}]\n"
	r, diags := compile.BuildAll("special.yaml", []byte(spec))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	_, ierr := ignition.Render(r.Units, ignition.Options{Version: "3.5.0", Storage: r.Storage})
	_, berr := butane.Render(r.Units, butane.Options{Storage: r.Storage})
	for name, err := range map[string]error{"ignition": ierr, "butane": berr} {
		var ds hooks.Diagnostics
		if !errors.As(err, &ds) || len(ds) != 2 || ds[0].Pos.Line != 5 || !strings.Contains(ds[0].Message, "mode 01777 has set-id or sticky bits") ||
			ds[1].Pos.Line != 6 || !strings.Contains(ds[1].Hint, "give mode 0755") {
			t.Errorf("%s: %v, want both entries refused at their lines", name, err)
		}
	}
	ci, err := cloudinit.Render(r.Units, cloudinit.Options{Storage: r.Storage})
	if err != nil || !bytes.Contains(ci, []byte("permissions: '4755'")) || !bytes.Contains(ci, []byte(`[chmod, "1777", /var/spool/x]`)) {
		t.Errorf("cloud-init: %v\n%s", err, ci)
	}
}
