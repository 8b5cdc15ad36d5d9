package apply_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hostprov/hostprov/pkg/apply"
)

// A symbolic link among a path's parents is refused: nothing is written
// where it points.
func TestPathsSymlinkParent(t *testing.T) {
	n := newNode(t)
	elsewhere := t.TempDir()
	if err := os.MkdirAll(n.at("/etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, n.at("/etc/app")); err != nil {
		t.Fatal(err)
	}
	p, err := n.planStorage("- name: app\n  files: [{path: /etc/app/config, contents: x}]\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].Message, "/etc/app, a directory on its way, is a symbolic link to "+elsewhere) {
		t.Fatalf("conflicts = %v", p.Conflicts)
	}
	if _, err := apply.Execute(context.Background(), p, n.sd, nil); err == nil {
		t.Fatal("applied")
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("written through the link: %v", ents)
	}
}
