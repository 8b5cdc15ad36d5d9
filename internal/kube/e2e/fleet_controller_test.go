package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/kubetest"
	"github.com/hostprov/hostprov/internal/testbin"
)

// controllerProcess is `hostprov controller`, the real binary, in a
// process of its own as in its pod: its Lease renewals, its webhook and
// its reconciles have a Go runtime, a heap and connections that the
// benchmark's 10,000 agents do not share. In one process with them, its
// renewals waited for that runtime (its garbage collection and scheduling
// of their goroutines), and it lost its Lease at 10,000 nodes.
type controllerProcess struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error // why it exited, once exited is closed
}

// startController starts the controller with the token of its service
// account, leader election, and the webhook served on addr.
func startController(b *testing.B, c *kubetest.Cluster, token, addr string) *controllerProcess {
	b.Helper()
	bin := testbin.Hostprov(b, "kube")
	kubeconfig := c.TokenKubeconfig(b, token)
	dir := b.TempDir()
	p := &controllerProcess{log: filepath.Join(dir, "controller.log"), exited: make(chan struct{})}
	logf, err := os.Create(p.log)
	if err != nil {
		b.Fatal(err)
	}
	p.cmd = exec.Command(bin, "controller", "--kubeconfig", kubeconfig, "--namespace", fleetNS,
		"--webhook-addr", addr, "--metrics-addr", "0", "--health-addr", "0")
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	b.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// whenExited calls f, with why, if the controller exits before the
// benchmark ends: it lost its Lease, or failed.
func (p *controllerProcess) whenExited(b *testing.B, f func(why string)) {
	go func() {
		select {
		case <-b.Context().Done():
		case <-p.exited:
			if b.Context().Err() == nil {
				tailFile(p.log, 40)
				f(fmt.Sprintf("the controller exited at %s: %v", time.Now().Format("15:04:05.000"), p.err))
			}
		}
	}()
}

// fleetNice is the CPU priority (nice value) of this process while it is
// the fleet: lower than the control plane's (0), by the weight of 10
// steps about a tenth of the CPU when both want it.
const fleetNice = 10

// lowerPriority makes this process, the simulated fleet, yield the CPU to
// the API server, etcd and the controller, which it started at the
// normal priority. In a cluster the agents run on nodes of their own and
// take none of the control plane's CPU; here 10,000 of them share 2 cores
// with it, and starved its answers to the controller's Lease renewals
// past their deadline. Linux keeps a nice value per thread, and a new
// thread has its creator's, so every thread of the process is set, and
// the runtime's later ones follow.
func lowerPriority(b *testing.B) {
	b.Helper()
	// A thread that an unchanged one makes while this runs keeps the old
	// value: pass again until a pass finds no thread it had not set.
	set := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			b.Fatal(err)
		}
		changed := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || set[tid] {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, fleetNice); err != nil && !errors.Is(err, syscall.ESRCH) {
				b.Fatalf("the fleet's CPU priority: %v", err)
			}
			set[tid], changed = true, true
		}
		if !changed {
			return
		}
	}
}
