// Package kubetest runs a real Kubernetes control plane for tests: etcd and
// kube-apiserver as processes, on 127.0.0.1, in a test's temporary
// directory, stopped when the test ends.
//
// A real API server, not a fake client, because what hostprov relies on is
// the server's: admission webhooks, the CRDs' schema validation, status
// subresources, field and label selectors, RBAC, and service-account tokens
// bound to a Pod on a node. No kubelet, scheduler or controller manager
// runs: Pods stay Pending, nothing is garbage-collected, and a Node is
// only an object.
//
// The binaries come from bin/tools of this repository (`make tools` builds
// kube-apiserver; .ci/setup installs Debian's etcd-server) or from PATH. A
// test that cannot find them skips, except under CI=true, where it fails.
package kubetest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/certs"
	"github.com/hostprov/hostprov/internal/hosttools"
	"github.com/hostprov/hostprov/internal/testbin"
)

// Cluster is a running etcd and kube-apiserver. Its methods may be called
// from any goroutine of the test that started it.
type Cluster struct {
	host     string // https://127.0.0.1:PORT
	caData   []byte // PEM: the serving certificate's CA
	certData []byte // PEM: the admin's client certificate ...
	keyData  []byte // ... and its key
	dir      string

	adminOnce sync.Once
	admin     client.Client // Client's, made at its first call
	adminErr  error
}

// How long the API server may take to become ready; it is about 3 s on a
// quiet machine, far more on a loaded CI one.
const readyTimeout = 90 * time.Second

// Start starts etcd and kube-apiserver, waits until the API server's
// /readyz answers ok, and stops both when t ends; when t failed, the end
// of the API server's log is printed with t.Log.
//
// The API server serves on a free port of 127.0.0.1 with a certificate it
// makes itself (--cert-dir), authenticates clients by certificates of a CA
// that Start makes (the admin's is in system:masters) and by
// service-account tokens, and authorizes by RBAC only. Tokens are signed
// by a key Start makes, so TokenRequest works, and a token bound to a Pod
// on a node carries the node's name (see NodeIdentity).
func Start(t testing.TB) *Cluster {
	t.Helper()
	etcdBin := binary(t, "etcd", "etcd not found: install Debian's etcd-server")
	apiBin := binary(t, "kube-apiserver", "kube-apiserver not built: run make tools")

	dir := t.TempDir()
	c := &Cluster{dir: dir}
	pki, err := makePKI(dir)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	c.certData, c.keyData = pki.adminCert, pki.adminKey

	// A free port is free when freePorts looks, not always when a server
	// binds it: another test's server may take it in between, as a CI run
	// with every package's servers at once showed ("address already in
	// use"). Such a start is tried again on other ports, twice at most.
	for attempt := 1; ; attempt++ {
		api, etcd, err := c.start(t, dir, attempt, pki, etcdBin, apiBin)
		if err != nil && attempt < 3 && (portTaken(api.log) || portTaken(etcd.log)) {
			api.stop()
			etcd.stop()
			t.Logf("kubetest: %v: a port was taken before the server bound it; trying other ports", err)
			continue
		}
		t.Cleanup(func() {
			etcdDied := etcd.exited()
			api.stop()
			etcd.stop()
			if t.Failed() {
				t.Logf("kubetest: the end of kube-apiserver's log:\n%s", tail(api.log, 60))
				if etcdDied {
					t.Logf("kubetest: etcd exited early; the end of its log:\n%s", tail(etcd.log, 30))
				}
			}
		})
		if err != nil {
			t.Fatalf("kubetest: %v", err) // the cleanup prints the logs
		}
		return c
	}
}

// portTaken reports whether a server's log says it could not bind its port.
func portTaken(log string) bool {
	data, _ := os.ReadFile(log)
	return strings.Contains(string(data), "address already in use")
}

// start starts etcd and kube-apiserver on free ports, each attempt with a
// data directory and logs of its own, and waits until the API server is
// ready.
func (c *Cluster) start(t testing.TB, dir string, attempt int, pki *pki, etcdBin, apiBin string) (api, etcd *process, err error) {
	ports, err := freePorts(3)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.host = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	suffix := ""
	if attempt > 1 {
		suffix = strconv.Itoa(attempt)
	}

	// Both start at once: the API server retries etcd until it answers,
	// which saves waiting for etcd first.
	etcd, err = startProcess(filepath.Join(dir, "etcd"+suffix+".log"), etcdBin,
		"--name=kubetest",
		"--data-dir="+filepath.Join(dir, "etcd"+suffix),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--log-level=warn",
	)
	if err != nil {
		t.Fatalf("kubetest: starting etcd: %v", err)
	}
	api, err = startProcess(filepath.Join(dir, "kube-apiserver"+suffix+".log"), apiBin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "serving"),
		"--client-ca-file="+pki.clientCAFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+pki.saPublicFile,
		"--service-account-signing-key-file="+pki.saKeyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		// No Endpoints for the kubernetes Service: nothing reaches the
		// API server through it here, and with one server there is
		// nothing to reconcile.
		"--endpoint-reconciler-type=none",
	)
	if err != nil {
		etcd.stop()
		t.Fatalf("kubetest: starting kube-apiserver: %v", err)
	}
	return api, etcd, c.waitReady(api, etcd)
}

// Config is a client configuration of the cluster's admin (a member of
// system:masters, which RBAC lets do anything), without client-side rate
// limits (QPS -1): the test's own calls should not queue behind each
// other, while the server's priority and fairness still applies. Each
// call returns a new copy for the caller to change.
func (c *Cluster) Config() *rest.Config {
	return &rest.Config{
		Host: c.host,
		QPS:  -1,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   bytes.Clone(c.caData),
			CertData: bytes.Clone(c.certData),
			KeyData:  bytes.Clone(c.keyData),
		},
	}
}

// anonymous is a configuration that trusts the server and sends no
// credentials.
func (c *Cluster) anonymous() *rest.Config {
	return &rest.Config{Host: c.host, TLSClientConfig: rest.TLSClientConfig{CAData: bytes.Clone(c.caData)}}
}

// waitReady waits until the API server's /readyz answers 200, or either
// process exits, or readyTimeout passes. It reads the serving CA from the
// certificate the API server writes in its --cert-dir first.
func (c *Cluster) waitReady(api, etcd *process) error {
	deadline := time.Now().Add(readyTimeout)
	certFile := filepath.Join(c.dir, "serving", "apiserver.crt")
	var lastErr error
	for time.Now().Before(deadline) {
		if api.exited() {
			return fmt.Errorf("kube-apiserver exited: %v", api.err)
		}
		if etcd.exited() {
			return fmt.Errorf("etcd exited: %v", etcd.err)
		}
		lastErr = c.ready(certFile)
		if lastErr == nil {
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after %v: %v", readyTimeout, lastErr)
}

// ready is nil when the API server is ready.
func (c *Cluster) ready(certFile string) error {
	if c.caData == nil {
		// The file holds the serving certificate followed by the CA
		// that signed it: the roots to trust. It is written whole
		// before the server listens, so it is read once it does.
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(c.host, "https://"), time.Second)
		if err != nil {
			return err
		}
		conn.Close()
		data, err := os.ReadFile(certFile)
		if err != nil {
			return err
		}
		if !x509.NewCertPool().AppendCertsFromPEM(data) {
			return fmt.Errorf("%s: no certificate", certFile)
		}
		c.caData = data
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.caData)
	cert, err := tls.X509KeyPair(c.certData, c.keyData)
	if err != nil {
		return err
	}
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}
	defer client.CloseIdleConnections()
	resp, err := client.Get(c.host + "/readyz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s: %s", resp.Status, strings.TrimSpace(body.String()))
	}
	return nil
}

// binary is the path of the named tool: bin/tools of the module, or PATH.
// Without it, the test skips (fails under CI=true) saying why.
func binary(t testing.TB, name, missing string) string {
	t.Helper()
	if root, err := testbin.ModuleRoot(); err == nil {
		p := filepath.Join(root, "bin", "tools", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	hosttools.Unavailable(t, "%s", missing)
	return ""
}

// freePorts are n distinct ports of 127.0.0.1 that were free a moment
// ago. Another process may take one before the server binds it; the
// ports of the ephemeral range are handed out in turn, which makes that
// rare.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// process is a running etcd or kube-apiserver.
type process struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when it exited; err is then its end
	err  error
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop kills the process and waits for its end. Neither server needs a
// graceful end here: their data is a temporary directory, and the API
// server's orderly shutdown alone takes a second.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// startProcess starts bin with args, its output appended to logFile.
func startProcess(logFile, bin string, args ...string) (*process, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	// If the test binary dies (a panic, go test's timeout), the servers
	// die with it rather than linger holding ports.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := spawn(cmd); err != nil {
		f.Close()
		return nil, err
	}
	p := &process{cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// spawn starts cmd from one OS thread that lives as long as the test
// binary. Pdeathsig is sent when the thread that started the child ends,
// not the process, and Go may end a thread (one a goroutine locked and
// left locked); so children are started from a thread locked for good.
func spawn(cmd *exec.Cmd) error {
	spawnerOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must not end
			for r := range spawnCh {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error)
	spawnCh <- spawnReq{cmd, done}
	return <-done
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnerOnce sync.Once
	spawnCh     chan spawnReq
)

// tail is the last n lines of file.
func tail(file string, n int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pki is the keys and certificates Start makes: the client CA and the
// admin's certificate, and the service accounts' signing key.
type pki struct {
	clientCAFile        string
	adminCert, adminKey []byte
	saKeyFile           string
	saPublicFile        string
}

func makePKI(dir string) (*pki, error) {
	ca, err := certs.NewCA("kubetest client CA", time.Now(), 24*time.Hour)
	if err != nil {
		return nil, err
	}
	p := &pki{
		clientCAFile: filepath.Join(dir, "client-ca.crt"),
		saKeyFile:    filepath.Join(dir, "sa.key"),
		saPublicFile: filepath.Join(dir, "sa.pub"),
	}
	p.adminCert, p.adminKey, err = ca.Sign(certs.Leaf{
		// The user is the common name, its groups the organizations.
		Subject: pkix.Name{CommonName: "kubetest-admin", Organization: []string{"system:masters"}},
		Usage:   x509.ExtKeyUsageClientAuth,
	})
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saPEM, err := certs.KeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	saPub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	for file, data := range map[string][]byte{
		p.clientCAFile: ca.PEM,
		p.saKeyFile:    saPEM,
		p.saPublicFile: certs.PEM("PUBLIC KEY", saPub),
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
	}
	return p, nil
}
