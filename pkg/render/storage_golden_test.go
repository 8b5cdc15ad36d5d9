package render_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

// TestStorageGolden renders the storage goldens to Ignition, Butane and
// cloud-init. A file from an s3:// source cannot be carried by cloud-init,
// which refuses it at the file.
func TestStorageGolden(t *testing.T) {
	for name, path := range rendertest.StorageGoldens(t) {
		t.Run(name, func(t *testing.T) {
			r := rendertest.BuildAll(t, path)
			ign, err := ignition.Render(r.Units, ignition.Options{Pretty: true, Storage: r.Storage})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(rendertest.StorageDir(), name+".ign.json"), ign)
			bu, err := butane.Render(r.Units, butane.Options{Storage: r.Storage})
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join(rendertest.StorageDir(), name+".bu"), bu)
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
			golden.Check(t, filepath.Join(rendertest.StorageDir(), name+".cloud-init.yml"), ci)
		})
	}
}

// TestStorageButaneTranslates: Butane's own translation of the Butane
// golden, with the spec's directory as --files-dir, is the Ignition
// output.
func TestStorageButaneTranslates(t *testing.T) {
	for name, path := range rendertest.StorageGoldens(t) {
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
	r, diags := compile.Build("named.yaml", []byte(named), compile.Options{})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	docs := map[string]compile.Result{"named": r}
	for name, path := range rendertest.StorageGoldens(t) {
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

// A kops hook cannot carry files: each entry is refused at its place.
func TestStorageKopsRefused(t *testing.T) {
	path := filepath.Join(rendertest.StorageDir(), "files.yaml")
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
	r, diags := compile.Build("special.yaml", []byte(spec), compile.Options{})
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
