package hooks

import (
	"fmt"
	"strings"
	"testing"
)

// TestManyEmptyHooks checks that a spec of many hooks that each say
// nothing but their name gets one error per hook, at the hook, and that
// asking whether a hook's problem was reported already looks at one
// diagnostic per question: it once scanned every diagnostic so far for
// every hook, which made reading such a spec quadratic in its hooks. The
// work is counted, not timed.
func TestManyEmptyHooks(t *testing.T) {
	for _, n := range []int{10, 500, 2000} {
		t.Run(fmt.Sprintf("hooks=%d", n), func(t *testing.T) {
			var b strings.Builder
			b.WriteString(header)
			for i := 0; i < n; i++ {
				fmt.Fprintf(&b, "- name: hook-%d\n", i)
			}
			d := &decoder{file: "many.yaml"}
			if spec := d.read([]byte(b.String())); spec == nil || len(spec.Hooks) != n {
				t.Fatalf("no spec of %d hooks: %v", n, d.diags)
			}
			if d.examined > n {
				t.Errorf("examined %d diagnostics for %d hooks, want at most one per hook", d.examined, n)
			}
			if len(d.diags) != n {
				t.Fatalf("%d diagnostics for %d empty hooks:\n%v", len(d.diags), n, d.diags.Error())
			}
			for i, got := range d.diags {
				want := Diagnostic{
					Severity: Error,
					Pos:      Position{File: "many.yaml", Line: 4 + i, Column: 3},
					Path:     fmt.Sprintf("hooks[%d]", i),
					Message:  fmt.Sprintf("hook hook-%d has no manifest, exec, directives or dropins", i),
					Hint:     d.diags[0].Hint,
				}
				if got != want {
					t.Fatalf("diagnostic %d is\n%v\nwant\n%v", i, got, want)
				}
			}
		})
	}
}
