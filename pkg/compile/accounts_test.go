package compile_test

import (
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
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

// Entries of one account are compared field by field in one order, within
// a spec and across specs: the first field that differs is the one
// reported, for users and for groups.
func TestAccountFieldsInOrder(t *testing.T) {
	_, d := compile.Build("s.yaml", []byte(accountsSpec+
		"  users: [{name: app, home: /srv/a, noCreateHome: true}]\n  groups: [{name: ops, system: true}]\n"+
		"- name: b\n  users: [{name: app, home: /srv/b}]\n  groups: [{name: ops}]\n"), compile.Options{})
	got := d.Error()
	for _, w := range []string{
		"s.yaml:9:11: error: hooks[1].users[0]: user app is written already, with another home",
		"s.yaml:10:12: error: hooks[1].groups[0]: group ops is written already, with another system",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	if len(d) != 2 {
		t.Errorf("%d diagnostics, want 2:\n%s", len(d), got)
	}

	one, _ := compile.Build("one.yaml", []byte(accountsSpec+"  users: [{name: app, home: /srv/a, noCreateHome: true}]\n  groups: [{name: ops, system: true}]\n"), compile.Options{})
	other, _ := compile.Build("other.yaml", []byte(accountsSpec+"  users: [{name: app, home: /srv/b}]\n  groups: [{name: ops}]\n"), compile.Options{})
	var st compile.Storage
	st.AddAccounts(one.Storage)
	got = st.AddAccounts(other.Storage).Error()
	for _, w := range []string{
		"other.yaml:6:11: error: user app has home /srv/b here and /srv/a at one.yaml:6:11",
		"other.yaml:7:12: error: group ops has system false here and true at one.yaml:7:12",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}
