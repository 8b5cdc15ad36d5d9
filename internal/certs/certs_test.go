package certs

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"
)

// A server certificate verifies for its names and addresses against the
// CA, only as a server, and only while the CA is valid; a client
// certificate carries its subject's organizations (a Kubernetes user's
// groups) and verifies only as a client.
func TestSign(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || !ca.Cert.MaxPathLenZero || ca.Cert.Subject.CommonName != "test CA" {
		t.Errorf("CA certificate: IsCA %v, MaxPathLenZero %v, subject %v", ca.Cert.IsCA, ca.Cert.MaxPathLenZero, ca.Cert.Subject)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("no certificate in the CA's PEM")
	}
	server := sign(t, ca, Leaf{
		Subject:  pkix.Name{CommonName: "svc.example"},
		DNSNames: []string{"svc.example"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
		Usage:    x509.ExtKeyUsageServerAuth,
	})
	for _, tc := range []struct {
		name    string
		opts    x509.VerifyOptions
		wantErr bool
	}{
		{"by name", x509.VerifyOptions{DNSName: "svc.example", CurrentTime: now}, false},
		{"by address", x509.VerifyOptions{DNSName: "127.0.0.1", CurrentTime: now}, false},
		{"another name", x509.VerifyOptions{DNSName: "other.example", CurrentTime: now}, true},
		{"as a client", x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}, true},
		{"after the CA's end", x509.VerifyOptions{DNSName: "svc.example", CurrentTime: now.Add(25 * time.Hour)}, true},
		{"before the CA's start", x509.VerifyOptions{DNSName: "svc.example", CurrentTime: now.Add(-2 * time.Hour)}, true},
	} {
		tc.opts.Roots = roots
		if _, err := server.Verify(tc.opts); (err != nil) != tc.wantErr {
			t.Errorf("server certificate %s: %v, want an error: %v", tc.name, err, tc.wantErr)
		}
	}

	client := sign(t, ca, Leaf{
		Subject: pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		Usage:   x509.ExtKeyUsageClientAuth,
	})
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate as a client: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots}); err == nil {
		t.Error("client certificate verifies as a server")
	}
	if got := client.Subject.Organization; len(got) != 1 || got[0] != "system:masters" {
		t.Errorf("client certificate organizations %q", got)
	}

	// Two CAs made at once are two: a certificate of one does not verify
	// against the other, and their serial numbers differ.
	other, err := NewCA("test CA", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if other.Cert.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 {
		t.Error("two CAs with one serial number")
	}
	otherRoots := x509.NewCertPool()
	otherRoots.AddCert(other.Cert)
	if _, err := server.Verify(x509.VerifyOptions{Roots: otherRoots, DNSName: "svc.example"}); err == nil {
		t.Error("a certificate verifies against another CA")
	}
}

// sign is the certificate ca signs for leaf, checked to pair with its key.
func sign(t *testing.T, ca *CA, leaf Leaf) *x509.Certificate {
	t.Helper()
	certPEM, keyPEM, err := ca.Sign(leaf)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("the certificate and key do not pair: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
