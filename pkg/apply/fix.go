package apply

import "strings"

// Fix is what can be done about a Problem, as data, so that each caller of
// the planner words it for its user. Manual is done by hand on the node
// ("move it away"), Spec in the hook's spec ("set overwrite: true on
// it"): every caller can offer them. Flag is the option of hostprov apply
// that does it, Does what it then does ("--adopt", "to take it over"):
// only the CLI has it; the Kubernetes agent, whose HostHooks have no such
// option, leaves it out.
type Fix struct {
	Manual string `json:"manual,omitempty"`
	Spec   string `json:"spec,omitempty"`
	Flag   string `json:"flag,omitempty"`
	Does   string `json:"does,omitempty"`
}

// Text is the fix in words, with the flag when flags is set: "move it
// away, or run with --adopt to take it over".
func (f *Fix) Text(flags bool) string {
	if f == nil {
		return ""
	}
	var ways []string
	for _, w := range []string{f.Manual, f.Spec} {
		if w != "" {
			ways = append(ways, w)
		}
	}
	if flags && f.Flag != "" {
		ways = append(ways, strings.TrimSpace("run with "+f.Flag+" "+f.Does))
	}
	return strings.Join(ways, ", or ")
}

// Text is the problem, where it is, and its fix as Fix.Text words it.
func (p Problem) Text(flags bool) string {
	at := p.Unit
	if p.Path != "" {
		at = p.Path
	}
	s := at + ": " + p.Message
	if fix := p.Fix.Text(flags); fix != "" {
		s += ": " + fix
	}
	return s
}
