// Package certs makes small certificate authorities and the certificates
// they sign: the admission webhook's own CA and serving certificate, and
// the CAs that tests serve and authenticate real TLS with.
//
// One place, because the details are easy to get subtly wrong in a copy
// (a CA without basic constraints, a leaf without the right extended key
// usage, a serial number reused across CAs) and each copy drifted.
package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority: a self-signed certificate that may sign
// leaf certificates only (no intermediate CAs), and its key.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // Cert, PEM-encoded: what a client adds to its roots
	key  crypto.Signer
}

// NewCA makes a CA named commonName, valid from an hour before now (so a
// peer whose clock is a little behind accepts it) until now plus validity.
func NewCA(commonName string, now time.Time, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, PEM: PEM("CERTIFICATE", der), key: key}, nil
}

// Leaf is what a certificate the CA signs is for: its subject, the DNS
// names and IP addresses it serves (for a server), and its extended key
// usage (x509.ExtKeyUsageServerAuth or x509.ExtKeyUsageClientAuth).
type Leaf struct {
	Subject  pkix.Name
	DNSNames []string
	IPs      []net.IP
	Usage    x509.ExtKeyUsage
}

// Sign makes a key and a certificate for it as leaf says, signed by ca
// and valid as long as ca is. It returns both PEM-encoded, the key as
// PKCS #8: what tls.X509KeyPair reads and a kubernetes.io/tls Secret holds.
func (ca *CA) Sign(leaf Leaf) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial,
		Subject:      leaf.Subject,
		DNSNames:     leaf.DNSNames,
		IPAddresses:  leaf.IPs,
		NotBefore:    ca.Cert.NotBefore,
		NotAfter:     ca.Cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{leaf.Usage},
	}, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = KeyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return PEM("CERTIFICATE", der), keyPEM, nil
}

// KeyPEM is key as a PEM-encoded PKCS #8 private key.
func KeyPEM(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return PEM("PRIVATE KEY", der), nil
}

// PEM is der in a PEM block of type typ.
func PEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// serialNumber is random, as RFC 5280 asks serial numbers to be unique
// per CA and CAs here are made afresh: 127 bits keep it positive and
// within the 20 octets allowed.
func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}
