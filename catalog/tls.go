package catalog

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// ServerTLS loads a catalog node's TLS config: its certificate and key and,
// when caFile is set, client certificates verified against that CA.
func ServerTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("catalog: tls cert %s / key %s: %w", certFile, keyFile, err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2"}}
	if caFile != "" {
		pool, err := loadPool(caFile)
		if err != nil {
			return nil, err
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// ClientTLS loads the TLS config a client uses to reach catalog nodes: the
// CA that signed the nodes' certificates (system roots if empty) and,
// optionally, a client certificate.
func ClientTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pool, err := loadPool(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("catalog: tls cert %s / key %s: %w", certFile, keyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

func loadPool(caFile string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("catalog: tls ca %s: %w", caFile, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("catalog: tls ca %s: no PEM certificate in it", caFile)
	}
	return pool, nil
}
