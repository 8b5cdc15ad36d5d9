package cli

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hostprov/hostprov/internal/suggest"
	"github.com/hostprov/hostprov/pkg/apply"
)

func newRemove() *cobra.Command {
	var (
		nf     nodeFlags
		all    bool
		dryRun bool
		noWait bool
		force  bool
	)
	c := &cobra.Command{
		Use:   "remove NAME... | --all [--dry-run] [--force] [--no-wait] [--timeout DURATION]",
		Short: "Stop, disable and delete units hostprov installed",
		Long: `Remove stops, disables and deletes the units hostprov installed for the named hooks
(or units), with their drop-ins and enable links, and reloads systemd once. With --all
it removes every unit hostprov owns on this node. Files edited since hostprov wrote
them are left alone unless --force. hostprov status lists the hooks installed.

A name hostprov did not install is invalid input (exit code 2), and then nothing is
removed. With --dry-run it prints the remove plan and changes nothing.

Each stop job and the daemon-reload may take --timeout (10m; 0: as long as systemd
works on it), each other call to systemd 30s. SIGTERM or SIGINT stops a remove where it
is, as it stops an apply (see hostprov apply --help), with exit code 143 or 130.`,
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case all && len(args) > 0:
				return invalid("give the hooks to remove or --all, not both")
			case !all && len(args) == 0:
				return invalid("name the hooks to remove (hostprov status lists them), or --all")
			}
			opts, err := nf.options()
			if err != nil {
				return err
			}
			opts.Force = force
			makePlan := func(ctx context.Context, st *apply.State) (*apply.Plan, error) {
				names := args
				if all {
					names = nil
					for _, u := range st.Units {
						names = append(names, u.Name)
					}
					// Hooks with files but no unit.
					for _, h := range pathHooks(st) {
						names = append(names, h)
					}
				} else if err := checkInstalled(names, st); err != nil {
					return nil, err
				}
				return apply.NewRemovePlan(ctx, names, st, opts)
			}
			if dryRun {
				return showPlan(c, opts, nf.output, false, makePlan)
			}
			return runApply(c, &nf, opts, noWait, makePlan)
		},
	}
	nf.register(c)
	nf.registerTimeout(c)
	c.Flags().BoolVar(&all, "all", false, "remove every unit hostprov installed")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the remove plan and change nothing")
	c.Flags().BoolVar(&noWait, "no-wait", false, "fail at once when another apply is running, instead of waiting for it")
	c.Flags().BoolVar(&force, "force", false, "remove files hostprov wrote even if they were edited since")
	return c
}

// maxListed is how many installed hooks an error names, so that a node with
// many keeps its hint on one line.
const maxListed = 10

// checkInstalled makes sure that every name is a hook or unit hostprov
// installed. An unknown name is invalid input, told before anything is
// done, so that a typo removes nothing; the hint lists the installed hooks,
// the nearest to the first unknown name first.
func checkInstalled(names []string, st *apply.State) error {
	var unknown []string
	for _, n := range names {
		found := false
		for _, u := range st.Units {
			if u.Name == n || u.Hook == n {
				found = true
				break
			}
		}
		if !found && !slices.Contains(pathHooks(st), n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	what := fmt.Sprintf("no hook or unit named %s is installed here", strings.Join(unknown, ", "))
	if len(unknown) > 1 {
		what = fmt.Sprintf("no hooks or units named %s are installed here", strings.Join(unknown, ", "))
	}
	if len(st.Units) == 0 {
		return invalid("%s: hostprov has installed nothing on this node; nothing was removed", what)
	}
	// A hook is named by its hook name; a unit without one (from an
	// older state) by its unit name. Either is accepted.
	type installed struct{ name, unit string }
	var hooks []installed
	var known []string
	for _, u := range st.Units {
		h := installed{name: u.Hook, unit: u.Name}
		if h.name == "" {
			h.name = u.Name
		}
		hooks = append(hooks, h)
		known = append(known, h.name)
	}
	dist := func(h installed) int {
		return min(suggest.Distance(unknown[0], h.name), suggest.Distance(unknown[0], h.unit))
	}
	sort.SliceStable(hooks, func(i, j int) bool { return dist(hooks[i]) < dist(hooks[j]) })
	var list []string
	for _, h := range hooks[:min(len(hooks), maxListed)] {
		list = append(list, h.name)
	}
	hint := "installed: " + strings.Join(list, ", ")
	if more := len(hooks) - maxListed; more > 0 {
		hint += fmt.Sprintf(" and %d more (hostprov status lists them)", more)
	}
	if m := suggest.Closest(unknown[0], known); m != "" {
		hint = "did you mean " + m + "? " + hint
	}
	return invalid("%s; nothing was removed\n\thint: %s", what, hint)
}

// pathHooks are the hooks of the files, directories and links the state
// records.
func pathHooks(st *apply.State) []string {
	var hs []string
	for _, p := range st.Paths {
		if p.Hook != "" && !slices.Contains(hs, p.Hook) {
			hs = append(hs, p.Hook)
		}
	}
	return hs
}
