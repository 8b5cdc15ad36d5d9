package render_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/render/internal/rendertest"
	"github.com/hostprov/hostprov/pkg/render/kopshooks"
)

const accountsSpec = "apiVersion: hostprov/v1alpha1\nkind: Hooks\nhooks:\n- name: a\n  exec: [/bin/true]\n"

// Two specs with one account: the same entries are one account, two ids
// are an error at both.
func TestAddAccountsAcrossSpecs(t *testing.T) {
	one, d := compile.Build("one.yaml", []byte(accountsSpec+"  users: [{name: app, uid: 1500}]\n  groups: [{name: ops}]\n"), compile.Options{})
	if len(d) > 0 {
		t.Fatal(d)
	}
	same, _ := compile.Build("same.yaml", []byte(accountsSpec+"  users: [{name: app}]\n  groups: [{name: ops, gid: 1700}]\n"), compile.Options{})
	other, _ := compile.Build("other.yaml", []byte(accountsSpec+"  users: [{name: app, uid: 1501}]\n"), compile.Options{})

	var st compile.Storage
	if d := st.AddAccounts(one.Storage); len(d) > 0 {
		t.Fatal(d)
	}
	if d := st.AddAccounts(same.Storage); len(d) > 0 {
		t.Fatalf("agreeing entries: %v", d)
	}
	if len(st.Users) != 1 || *st.Users[0].UID != 1500 || len(st.Groups) != 1 || st.Groups[0].GID == nil || *st.Groups[0].GID != 1700 {
		t.Fatalf("merged accounts: %+v %+v", st.Users, st.Groups)
	}
	d = st.AddAccounts(other.Storage)
	if len(d) != 2 {
		t.Fatalf("got %v, want the clash at both entries", d)
	}
	if got := d[0].String(); !strings.HasPrefix(got, "other.yaml:6:11: error: user app has uid 1501 here and 1500 at one.yaml:6:11") {
		t.Errorf("at the second: %s", got)
	}
	if got := d[1].String(); !strings.HasPrefix(got, "one.yaml:6:11: error: user app has uid 1500 here and 1501 at other.yaml:6:11") {
		t.Errorf("at the first: %s", got)
	}
}

// Entries of one user in two hooks must agree on more than the id.
func TestAccountsDisagree(t *testing.T) {
	_, d := compile.Build("s.yaml", []byte(accountsSpec+"  users: [{name: app, shell: /bin/sh}]\n- name: b\n  users: [{name: app, shell: /bin/bash}]\n"), compile.Options{})
	if len(d) != 1 || !strings.Contains(d[0].String(), "s.yaml:8:11: error: hooks[1].users[0]: user app is written already, with another shell") {
		t.Fatalf("got %v", d)
	}
}

// A kops hook cannot create accounts: each is refused at its entry.
func TestAccountsKopsRefused(t *testing.T) {
	r := rendertest.BuildAll(t, filepath.Join(rendertest.StorageDir(), "accounts.yaml"))
	_, err := kopshooks.Render(r.Units, kopshooks.Options{Storage: r.Storage})
	var ke *kopshooks.Error
	if !errors.As(err, &ke) || !errors.Is(err, kopshooks.ErrAccounts) {
		t.Fatalf("got %v, want a *KopsError with ErrKopsAccounts", err)
	}
	var accounts int
	for _, d := range ke.Diagnostics() {
		if strings.Contains(d.Message, "cannot create users or groups") {
			accounts++
		}
	}
	if want := len(r.Storage.Users) + len(r.Storage.Groups); accounts != want || want != 5 {
		t.Errorf("%d accounts refused, want %d (5):\n%v", accounts, want, ke.Diagnostics())
	}
}
