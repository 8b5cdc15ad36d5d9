package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestNodeHooksName: names are valid, readable and one per pair of a
// HostHooks and a node, also when dots make "HOSTHOOKS.NODE" ambiguous.
func TestNodeHooksName(t *testing.T) {
	long := strings.Repeat("n", 63) + "." + strings.Repeat("o", 63) + "." + strings.Repeat("d", 63) + "." + strings.Repeat("e", 61)
	pairs := [][2]string{
		{"base", "w1.lab"},
		{"base.w1", "lab"},
		{"base.w1.lab", "x"},
		{"iscsi", "node-1"},
		{strings.Repeat("h", 200), long},
		{strings.Repeat("h", 199), "h" + long},
	}
	seen := map[string][2]string{}
	for _, p := range pairs {
		name := NodeHooksName(p[0], p[1])
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("%v: %q is no object name: %v", p, name, errs)
		}
		if len(p[0]+p[1]) < 200 && !strings.HasPrefix(name, p[0]+"."+p[1]+"-") {
			t.Errorf("%v: %q does not show HOSTHOOKS.NODE", p, name)
		}
		if o, ok := seen[name]; ok {
			t.Errorf("%v and %v have one name, %q", o, p, name)
		}
		seen[name] = p
		if again := NodeHooksName(p[0], p[1]); again != name {
			t.Errorf("%v: %q, then %q", p, name, again)
		}
	}
}
