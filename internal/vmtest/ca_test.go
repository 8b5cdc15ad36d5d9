//go:build vmtest

package vmtest

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"

	"github.com/hostprov/hostprov/internal/certs"
)

// testCA is a certificate authority of this run's own, which the guest
// trusts (it is installed into the guest's CA store), so that the spec's
// https:// download is checked as on a real node.
type testCA struct{ *certs.CA }

func newCA(t *testing.T) *testCA {
	t.Helper()
	ca, err := certs.NewCA("hostprov VM test CA", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca}
}

// serverConfig is a TLS configuration with a certificate for host, signed
// by the CA.
func (ca *testCA) serverConfig(t *testing.T, host string) *tls.Config {
	t.Helper()
	certPEM, keyPEM, err := ca.Sign(certs.Leaf{
		Subject:  pkix.Name{CommonName: host},
		DNSNames: []string{host},
		Usage:    x509.ExtKeyUsageServerAuth,
	})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}
}
