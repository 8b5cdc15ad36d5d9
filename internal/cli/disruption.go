package cli

import (
	"fmt"
	"io"
	"sort"

	"github.com/hostprov/hostprov/internal/pipeline"
	"github.com/hostprov/hostprov/pkg/apply"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// writeDisruptions says which hooks whose units p adds or changes declare
// a disruption, and what the person is to do about it: hostprov apply on
// a machine neither drains nor reboots it (only the Kubernetes agent
// does), and must not do either silently. done says whether p was
// carried out (apply) or only shown (plan). Units that p removes are not
// named: their hooks are gone from the spec, and with them what they
// declared.
func writeDisruptions(w io.Writer, p *apply.Plan, ds map[string]pipeline.Disruption, done bool) {
	if p == nil || len(ds) == 0 {
		return
	}
	seen := map[string]bool{}
	var drain, reboot []string
	for _, u := range p.Units {
		d, ok := ds[u.Unit]
		if !ok || (u.Change != "add" && u.Change != "change") || seen[d.Hook] {
			continue
		}
		seen[d.Hook] = true
		if d.Kind == hooks.DisruptionReboot {
			reboot = append(reboot, d.Hook)
		} else {
			drain = append(drain, d.Hook)
		}
	}
	sort.Strings(drain)
	sort.Strings(reboot)
	for _, h := range drain {
		if done {
			fmt.Fprintf(w, "hostprov: hook %s declares disruption: Drain; hostprov apply does not drain a machine, so it was applied while workloads ran\n", h)
		} else {
			fmt.Fprintf(w, "hostprov: hook %s declares disruption: Drain: move the machine's workloads away before you apply\n", h)
		}
	}
	for _, h := range reboot {
		if done {
			fmt.Fprintf(w, "hostprov: hook %s declares disruption: Reboot: a reboot is needed to finish applying it; hostprov does not reboot (run systemctl reboot when the machine may go down)\n", h)
		} else {
			fmt.Fprintf(w, "hostprov: hook %s declares disruption: Reboot: a reboot will be needed after the apply\n", h)
		}
	}
}
