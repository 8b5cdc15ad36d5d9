//go:build kube

package deploytest_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hostprov/hostprov/internal/cli"
)

// The pods' arguments are hostprov's: each container's command line, with
// the variables the kubelet expands in it ($(NODE_NAME)) set, parses as
// hostprov parses it (with --help, so that nothing runs): a flag renamed
// or dropped in the command fails here, not in a cluster's crash loop.
func TestPodArguments(t *testing.T) {
	_, objs := load(t)
	pods := map[string]corev1.PodSpec{
		"agent":      decode[appsv1.DaemonSet](t, objs, "DaemonSet", "hostprov-agent").Spec.Template.Spec,
		"controller": decode[appsv1.Deployment](t, objs, "Deployment", "hostprov-controller").Spec.Template.Spec,
	}
	for name, pod := range pods {
		c := pod.Containers[0]
		if len(c.Args) == 0 || c.Args[0] != name || len(c.Command) != 0 {
			t.Errorf("%s: command %q args %q, want the image's entrypoint with args %s ...", name, c.Command, c.Args, name)
			continue
		}
		var out, errOut bytes.Buffer
		if code := cli.Run([]string{"help", name}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "hostprov "+name) {
			// The command comes with the agent's and the controller's
			// own changes; until then there is nothing to parse with.
			t.Skipf("this hostprov has no %s command yet (help %s: exit %d, %s)", name, name, code, strings.TrimSpace(errOut.String()))
		}
		args := expand(t, c)
		out.Reset()
		errOut.Reset()
		if code := cli.Run(append(args, "--help"), nil, &out, &errOut); code != 0 || errOut.Len() != 0 {
			t.Errorf("hostprov %q: exit %d: %s", args, code, errOut.String())
		}
	}
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand is c's arguments with $(VAR) replaced as the kubelet does: by
// the value of the container's variable VAR (a stand-in for one from the
// downward API). A reference to a variable the container does not have is
// an error here, though the kubelet would leave it as written.
func expand(t *testing.T, c corev1.Container) []string {
	t.Helper()
	vars := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			vars[e.Name] = "from-" + strings.ReplaceAll(e.ValueFrom.FieldRef.FieldPath, ".", "-")
		default:
			vars[e.Name] = e.Value
		}
	}
	var out []string
	for _, a := range c.Args {
		out = append(out, varRef.ReplaceAllStringFunc(a, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := vars[name]
			if !ok {
				t.Errorf("argument %q refers to $(%s), which the container does not set", a, name)
			}
			return v
		}))
	}
	return out
}
