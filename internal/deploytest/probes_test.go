//go:build kube

package deploytest_test

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hostprov/hostprov/internal/cli"
)

// agentPort is the port the agent serves the flag's address on: the one
// its arguments give, or hostprov agent's default.
func agentPort(t *testing.T, c corev1.Container, flag string) int32 {
	t.Helper()
	addr := ""
	for i, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--"+flag+"="); ok {
			addr = v
		} else if a == "--"+flag && i+1 < len(c.Args) {
			addr = c.Args[i+1]
		}
	}
	if addr == "" {
		var out, errOut bytes.Buffer
		if code := cli.Run([]string{"agent", "--help"}, nil, &out, &errOut); code != 0 {
			t.Fatalf("hostprov agent --help: exit %d: %s", code, errOut.String())
		}
		m := regexp.MustCompile(`--` + flag + ` ADDR .*\(default "([^"]*)"\)`).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("hostprov agent has no --%s with a default", flag)
		}
		addr = m[1]
	}
	i := strings.LastIndexByte(addr, ':')
	port, err := strconv.Atoi(addr[i+1:])
	if i < 0 || err != nil || port == 0 {
		t.Fatalf("--%s %q: the agent serves no fixed port", flag, addr)
	}
	return int32(port)
}

// The agent's probes and its metrics port are the ports it serves them
// on, at the pod's address: no host port, nothing the pod did not have.
func TestAgentProbes(t *testing.T) {
	_, objs := load(t)
	pod := decode[appsv1.DaemonSet](t, objs, "DaemonSet", "hostprov-agent").Spec.Template.Spec
	c := pod.Containers[0]
	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		if p.HostPort != 0 || p.HostIP != "" {
			t.Errorf("port %s is on the host (%d): the agent needs no host port", p.Name, p.HostPort)
		}
		ports[p.Name] = p
	}
	for name, flag := range map[string]string{"metrics": "metrics-addr", "health": "health-addr"} {
		if p, ok := ports[name]; !ok || p.ContainerPort != agentPort(t, c, flag) {
			t.Errorf("port %s: %+v; want the port of the agent's --%s, %d", name, p, flag, agentPort(t, c, flag))
		}
	}
	for what, probe := range map[string]*corev1.Probe{"/readyz": c.ReadinessProbe, "/healthz": c.LivenessProbe} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != what || probe.HTTPGet.Port.String() != "health" {
			t.Errorf("probe %s: %+v; want an HTTP GET of %s on the port health", what, probe, what)
		}
	}
}
