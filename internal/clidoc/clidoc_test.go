package clidoc_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/clidoc"
)

// TestCommands: the walk leaves out hidden commands, with what is below
// them, and cobra's help command.
func TestCommands(t *testing.T) {
	root := &cobra.Command{Use: "tool"}
	run := func(*cobra.Command, []string) error { return nil }
	shown := &cobra.Command{Use: "shown", RunE: run}
	hidden := &cobra.Command{Use: "hidden", Hidden: true}
	hidden.AddCommand(&cobra.Command{Use: "below", RunE: run})
	group := &cobra.Command{Use: "group"}
	group.AddCommand(&cobra.Command{Use: "leaf", RunE: run})
	root.AddCommand(shown, hidden, group)
	root.InitDefaultHelpCmd()
	var got []string
	for _, c := range clidoc.Commands(root) {
		got = append(got, c.CommandPath())
	}
	want := []string{"tool", "tool group", "tool group leaf", "tool shown"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("-want +got:\n%s", d)
	}
}
