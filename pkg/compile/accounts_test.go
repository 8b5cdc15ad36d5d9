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
