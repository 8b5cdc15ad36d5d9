package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/hostprov/hostprov/internal/certs"
)

// CAKey is the key of the Secret's CA certificate (PEM), next to
// tls.crt and tls.key: what the webhook configuration's caBundle is.
const CAKey = "ca.crt"

const (
	// How long a certificate EnsureCertificate makes is valid. Nothing
	// rotates it while replicas run, so it is long; a replica that starts
	// within renewBefore of its end makes a new one.
	certValidity = 10 * 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
)

// EnsureCertificate returns the webhook's serving certificate, kept in
// the Secret secretName of namespace, and makes the
// ValidatingWebhookConfiguration webhookConfigName trust it.
//
// The certificate is for the Service serviceName of namespace, as the API
// server calls it (DNS names SERVICE.NAMESPACE.svc and
// SERVICE.NAMESPACE.svc.cluster.local), signed by a CA of its own; the
// Secret (type kubernetes.io/tls) holds tls.crt, tls.key and the CA in
// ca.crt. When the Secret is missing, EnsureCertificate makes both and
// creates it; when another replica created it first, it uses that one.
// When the Secret's certificate is unusable (broken, for other names,
// expiring within 30 days), it replaces it, keeping the old CAs that are
// still valid in ca.crt so that replicas still serving the old
// certificate stay trusted until they restart. Then it sets the caBundle
// of every webhook of the configuration to ca.crt, unless it is that
// already.
//
// It needs to get, create and update that Secret, and to get and update
// that ValidatingWebhookConfiguration. A missing configuration is an
// error: it is deployed with the webhook.
func EnsureCertificate(ctx context.Context, c client.Client, namespace, secretName, serviceName, webhookConfigName string) (tls.Certificate, error) {
	names := []string{serviceName + "." + namespace + ".svc", serviceName + "." + namespace + ".svc.cluster.local"}
	secret, err := ensureSecret(ctx, c, client.ObjectKey{Namespace: namespace, Name: secretName}, names)
	if err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("secret %s/%s: %w", namespace, secretName, err)
	}
	if err := setCABundle(ctx, c, webhookConfigName, secret.Data[CAKey]); err != nil {
		return tls.Certificate{}, err
	}
	return cert, nil
}

// ensureSecret is the Secret key holding a usable certificate for names,
// made or replaced when it is missing or unusable. Replicas racing to
// make it all end up with the one whose write won.
func ensureSecret(ctx context.Context, c client.Client, key client.ObjectKey, names []string) (*corev1.Secret, error) {
	var lastErr error
	for range 5 {
		var s corev1.Secret
		err := c.Get(ctx, key, &s)
		if apierrors.IsNotFound(err) {
			data, err := newCertificate(names, nil, nil)
			if err != nil {
				return nil, err
			}
			s = corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
				Type:       corev1.SecretTypeTLS,
				Data:       data,
			}
			if err = c.Create(ctx, &s); apierrors.IsAlreadyExists(err) {
				lastErr = err
				continue // another replica's: read it
			}
			if err != nil {
				return nil, fmt.Errorf("creating secret %s: %w", key, err)
			}
			return &s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading secret %s: %w", key, err)
		}
		problem := checkCertificate(s.Data, names, time.Now())
		if problem == nil {
			return &s, nil
		}
		data, err := newCertificate(names, nil, validCAs(s.Data[CAKey], time.Now()))
		if err != nil {
			return nil, err
		}
		// The type stays as it is: it is immutable.
		s.Data = data
		if err = c.Update(ctx, &s); apierrors.IsConflict(err) {
			lastErr = err
			continue // another replica replaced it: read its
		}
		if err != nil {
			return nil, fmt.Errorf("replacing secret %s (%v): %w", key, problem, err)
		}
		return &s, nil
	}
	return nil, fmt.Errorf("secret %s: changed under each attempt to make it: %w", key, lastErr)
}

// checkCertificate is nil when data's certificate and key match, and the
// certificate is signed by a CA of data's ca.crt, serves names, and is
// valid for longer than renewBefore after now.
func checkCertificate(data map[string][]byte, names []string, now time.Time) error {
	pair, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[CAKey]) {
		return fmt.Errorf("no CA certificate in %s", CAKey)
	}
	for _, name := range names {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots, CurrentTime: now}); err != nil {
			return err
		}
	}
	if leaf.NotAfter.Before(now.Add(renewBefore)) {
		return fmt.Errorf("the certificate expires at %v", leaf.NotAfter)
	}
	return nil
}

// validCAs are the certificates of bundle (PEM) still valid at now, as
// PEM.
func validCAs(bundle []byte, now time.Time) []byte {
	var out []byte
	for {
		var b *pem.Block
		b, bundle = pem.Decode(bundle)
		if b == nil {
			return out
		}
		if cert, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == "CERTIFICATE" && now.Before(cert.NotAfter) {
			out = append(out, pem.EncodeToMemory(b)...)
		}
	}
}

// newCertificate makes a CA and a serving certificate it signs, for the
// DNS names and IP addresses: the Secret's data, ca.crt holding the new
// CA followed by keepCAs.
func newCertificate(names []string, ips []net.IP, keepCAs []byte) (map[string][]byte, error) {
	now := time.Now()
	ca, err := certs.NewCA("hostprov webhook CA "+now.UTC().Format(time.RFC3339), now, certValidity)
	if err != nil {
		return nil, err
	}
	cn := "hostprov webhook"
	if len(names) > 0 {
		cn = names[0]
	}
	cert, key, err := ca.Sign(certs.Leaf{
		Subject:  pkix.Name{CommonName: cn},
		DNSNames: names,
		IPs:      ips,
		Usage:    x509.ExtKeyUsageServerAuth,
	})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		corev1.TLSCertKey:       cert,
		corev1.TLSPrivateKeyKey: key,
		CAKey:                   append(ca.PEM, keepCAs...),
	}, nil
}

// setCABundle makes every webhook of the configuration name trust ca.
func setCABundle(ctx context.Context, c client.Client, name string, ca []byte) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		if err := c.Get(ctx, client.ObjectKey{Name: name}, &cfg); err != nil {
			return err
		}
		if len(cfg.Webhooks) == 0 {
			return errors.New("it has no webhooks")
		}
		changed := false
		for i := range cfg.Webhooks {
			if cc := &cfg.Webhooks[i].ClientConfig; !bytes.Equal(cc.CABundle, ca) {
				cc.CABundle = ca
				changed = true
			}
		}
		if !changed {
			return nil
		}
		return c.Update(ctx, &cfg)
	})
	if err != nil {
		return fmt.Errorf("setting the caBundle of ValidatingWebhookConfiguration %s: %w", name, err)
	}
	return nil
}

// How long Serve waits for the reviews in flight when its context ends.
const shutdownTimeout = 5 * time.Second

// Serve serves handler over HTTPS with cert on addr ("host:port") until
// ctx ends, then closes the listener and waits a few seconds for the
// reviews in flight. It returns nil when ctx ended it, or why it could
// not listen or serve. Mount NewHandler's webhook at Path in handler.
func Serve(ctx context.Context, addr string, cert tls.Certificate, handler http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
		// An AdmissionReview is small, and the API server gives up
		// on a webhook after 30 s at most.
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 30 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-done
	if errors.Is(err, context.DeadlineExceeded) {
		return nil // the reviews still in flight are cut off; the API server retries or fails them
	}
	return err
}
