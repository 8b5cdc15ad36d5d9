package compile_test

import (
	"fmt"
	"testing"

	"github.com/hostprov/hostprov/pkg/compile"
	"github.com/hostprov/hostprov/pkg/hooks"
)

// TestManyRefusedHooks checks that a spec in which every hook has an
// error gets each error once, at its own hook, and that telling which
// hooks the parser refused looks at one refused path per hook: it once
// scanned every refused path for every hook, which made validation
// quadratic in the number of hooks (minutes for 40000 hooks with an
// error each). The work is counted, not timed.
func TestManyRefusedHooks(t *testing.T) {
	for _, n := range []int{10, 500, 2000} {
		t.Run(fmt.Sprintf("hooks=%d", n), func(t *testing.T) {
			us, diags, examined := compile.BuildExamined("many.yaml", errorSpec(n))
			if len(us) != 0 {
				t.Errorf("%d units from a spec with errors", len(us))
			}
			if examined > n {
				t.Errorf("examined %d refused paths for %d hooks, want at most one per hook", examined, n)
			}
			if len(diags) != n {
				t.Fatalf("%d diagnostics for %d hooks with an error each:\n%v", len(diags), n, diags.Error())
			}
			for i, d := range diags {
				// Each hook of errorSpec is 6 lines, after the 3-line
				// header; exec is its fourth line.
				want := hooks.Diagnostic{
					Severity: hooks.Error,
					Pos:      hooks.Position{File: "many.yaml", Line: 3 + 6*i + 4, Column: 9},
					Path:     fmt.Sprintf("hooks[%d].exec", i),
					Message:  "exec must be a list of arguments, not a string",
					Hint:     fmt.Sprintf(`write exec: ["/usr/local/bin/prepare", "--id", "%d"], one item per argument`, i),
				}
				if d != want {
					t.Fatalf("diagnostic %d is\n%v\nwant\n%v", i, d, want)
				}
			}
		})
	}
}
