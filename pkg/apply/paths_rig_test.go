package apply_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/compile"
)

// applyStorage plans and executes a spec, its files, directories and links
// included, as hostprov apply does.
func (n *rigNode) applyStorage(ctx context.Context, specYAML string) (*apply.Plan, *apply.Result) {
	n.t.Helper()
	r, diags := compile.Build("hostprov.yaml", []byte(specYAML), compile.Options{})
	if diags.HasErrors(false) {
		n.t.Fatalf("spec: %v", diags)
	}
	st, err := apply.LoadState(apply.StatePath(n.opts.StateDirPath()))
	if err != nil {
		n.t.Fatal(err)
	}
	opts := n.opts
	opts.Paths, opts.Accounts = apply.PathsOf(r.Storage, r.Spec), apply.AccountsOf(r.Storage, r.Spec)
	p, err := apply.NewPlan(ctx, r.Units, st, opts)
	if err != nil {
		n.t.Fatal(err)
	}
	res, err := apply.Execute(ctx, p, n.m, nil)
	if err != nil {
		n.t.Fatalf("apply: %v\nevents:\n%s", err, eventsText(res))
	}
	return p, res
}

const rigFilesSpec = `apiVersion: hostprov/v1alpha1
kind: Hooks
hooks:
- name: reader
  exec: [/bin/sh, -c, 'cat /etc/reader/config >> /var/lib/reader-data/runs; exec sleep infinity']
  files: [{path: /etc/reader/config, contents: "generation 1\n", mode: 0640}]
  directories: [{path: /var/lib/reader-data, mode: 0700}]
  links: [{path: /etc/reader/current, target: /etc/reader/config}]
`

// TestRigFiles applies a service with its config file, a directory and a
// link on a real systemd: the service reads the file it was given, a
// changed file restarts it (it reads the new one), an edit on disk is
// drift that apply keeps and reports, and a spec without them prunes them.
func TestRigFiles(t *testing.T) {
	t.Parallel()
	ctx := rigContext(t)
	n := newRigNode(ctx, t)
	runs := func() string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(n.r.Root, "var/lib/reader-data/runs"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(data)
	}
	n.applyStorage(ctx, rigFilesSpec)
	waitFor(t, func() bool { return runs() == "generation 1\n" }, "the service to read its config")
	if st := rigStatus(ctx, t, n.m, "reader.service"); st.ActiveState != "active" {
		t.Fatalf("reader.service: %+v", st)
	}
	if fi, err := os.Stat(filepath.Join(n.r.Root, "var/lib/reader-data")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(n.r.Root, "etc/reader/current")); err != nil || target != "/etc/reader/config" {
		t.Errorf("link: %q %v", target, err)
	}
	since := rigStatus(ctx, t, n.m, "reader.service").ActiveEnter

	// A changed file: the service restarts and reads it; no daemon-reload,
	// since no unit file changed.
	p, res := n.applyStorage(ctx, strings.Replace(rigFilesSpec, "generation 1", "generation 2", 1))
	if !strings.Contains(eventsText(res), "restarted reader.service (a file of its hook changed: /etc/reader/config)") {
		t.Errorf("events:\n%s", eventsText(res))
	}
	for _, a := range p.Actions {
		if a.Kind == apply.ActReload {
			t.Errorf("plan reloads systemd for a changed config file: %v", p.Actions)
		}
	}
	waitFor(t, func() bool { return runs() == "generation 1\ngeneration 2\n" }, "the service to read its new config")
	if st := rigStatus(ctx, t, n.m, "reader.service"); !st.ActiveEnter.After(since) || st.ActiveState != "active" {
		t.Errorf("after the change: %+v, want active since after %v", st, since)
	}

	// Drift: an edit on disk is kept, and the service is not restarted.
	conf := filepath.Join(n.r.Root, "etc/reader/config")
	if err := os.WriteFile(conf, []byte("edited by hand\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	p, res = n.applyStorage(ctx, strings.Replace(rigFilesSpec, "generation 1", "generation 3", 1))
	if len(p.Warnings) == 0 || !strings.Contains(p.Warnings[len(p.Warnings)-1].String(), "/etc/reader/config: edited since hostprov wrote it (drift)") {
		t.Errorf("warnings: %v", p.Warnings)
	}
	if data, _ := os.ReadFile(conf); string(data) != "edited by hand\n" {
		t.Errorf("drifted file overwritten: %q", data)
	}
	if strings.Contains(eventsText(res), "restarted") {
		t.Errorf("restarted for a file it did not change:\n%s", eventsText(res))
	}

	// Pruned: the spec keeps the service, not its files. The drifted
	// file stays (and with it its directory); the link and the
	// directory go.
	n.applyStorage(ctx, "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: reader\n  exec: [/bin/sleep, infinity]\n")
	if _, err := os.Lstat(filepath.Join(n.r.Root, "etc/reader/current")); err == nil {
		t.Error("the link was not pruned")
	}
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("the drifted file was pruned: %v", err)
	}
	// The directory holds the service's runs, which are not hostprov's.
	if _, err := os.Stat(filepath.Join(n.r.Root, "var/lib/reader-data/runs")); err != nil {
		t.Errorf("the directory went with what the service wrote in it: %v", err)
	}
	// With --force the drifted file and the directory it was in go.
	n.opts.Force = true
	n.applyStorage(ctx, "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: reader\n  exec: [/bin/sleep, infinity]\n")
	for _, gone := range []string{"etc/reader/config", "etc/reader"} {
		if _, err := os.Lstat(filepath.Join(n.r.Root, gone)); err == nil {
			t.Errorf("%s not pruned with --force", gone)
		}
	}
}

// waitFor waits up to a minute for cond, polling.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
