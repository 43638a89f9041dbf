package remote

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/rtbd/rtbd/catalog"
	"github.com/rtbd/rtbd/catalog/catalogpb"
)

// With Options.TLS the client speaks TLS and verifies each node against its
// own address (the per-node server name), here an IP SAN of 127.0.0.1.
func TestTLS(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "catalog node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &testNode{name: "tls", addr: lis.Addr().String(), release: make(chan struct{})}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
	})))
	catalogpb.RegisterCatalogServer(srv, testServer{n: n}) // no health service: counts as healthy
	go srv.Serve(lis)                                      //nolint:errcheck
	t.Cleanup(srv.Stop)

	c := newTestClient(t, Options{Target: "static:///" + n.addr, TLS: &tls.Config{RootCAs: pool}})
	name, err := call(c, groupOK)
	if err != nil || name != "tls" {
		t.Fatalf("TLS call: %q, %v", name, err)
	}

	// A client that does not trust the certificate must not get an answer.
	bad := newTestClient(t, Options{Target: "static:///" + n.addr, TLS: &tls.Config{}})
	if _, err := call(bad, groupOK); !errors.Is(err, catalog.ErrUnavailable) {
		t.Fatalf("client without the CA: err = %v, want catalog.ErrUnavailable", err)
	}
}
