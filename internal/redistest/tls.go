package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// tlsMaterial is a throw-away CA and one leaf certificate for 127.0.0.1 /
// localhost, valid for both server and client authentication, so the same
// files serve redis-server, its replication and cluster-bus links, and test
// clients.
type tlsMaterial struct {
	caFile, certFile, keyFile string
	client                    *tls.Config // trusts the CA, presents the leaf
}

// newTLSMaterial generates the CA and leaf into dir (ca.crt, redis.crt,
// redis.key).
func newTLSMaterial(dir string) (*tlsMaterial, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(leafKey)
	if err != nil {
		return nil, err
	}

	m := &tlsMaterial{
		caFile:   filepath.Join(dir, "ca.crt"),
		certFile: filepath.Join(dir, "redis.crt"),
		keyFile:  filepath.Join(dir, "redis.key"),
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	for _, f := range []struct {
		path string
		data []byte
	}{{m.caFile, caPEM}, {m.certFile, certPEM}, {m.keyFile, keyPEM}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return nil, err
		}
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	m.client = &tls.Config{
		RootCAs:      pool,
		Certificates: []tls.Certificate{pair},
		ServerName:   "127.0.0.1",
		MinVersion:   tls.VersionTLS12,
	}
	return m, nil
}

// configLines returns the redis.conf lines that serve TLS on port (plain TCP
// off), with TLS on replication and, for cluster nodes, on the bus too.
func (m *tlsMaterial) configLines(port int, cluster bool) []string {
	lines := []string{
		"port 0",
		"tls-port " + itoa(port),
		"tls-cert-file " + quote(m.certFile),
		"tls-key-file " + quote(m.keyFile),
		"tls-ca-cert-file " + quote(m.caFile),
		"tls-auth-clients optional",
		"tls-replication yes",
	}
	if cluster {
		lines = append(lines, "tls-cluster yes")
	}
	return lines
}
