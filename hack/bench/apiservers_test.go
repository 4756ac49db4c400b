package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// TestWriteCerts checks the fleet's certificates as kube-apiserver and
// client-go use them: the serving certificate verifies for 127.0.0.1
// against the CA in the members' kubeconfigs, and fedop's client
// certificate verifies for client authentication against the file given
// as --client-ca-file, naming fedop-bench in group system:masters.
func TestWriteCerts(t *testing.T) {
	f := &fleet{dir: t.TempDir()}
	require.NoError(t, f.writeCerts())
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(f.dir, name))
		require.NoError(t, err)
		return data
	}

	serving, err := tls.X509KeyPair(read("serving.crt"), read("serving.key"))
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(serving.Certificate[0])
	require.NoError(t, err)
	cas := x509.NewCertPool()
	require.True(t, cas.AppendCertsFromPEM(f.caPEM))
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: loopback, Roots: cas})
	assert.NoError(t, err, "serving certificate for 127.0.0.1")
	_, err = leaf.Verify(x509.VerifyOptions{DNSName: "10.0.0.1", Roots: cas})
	assert.Error(t, err, "serving certificate for another address")

	_, err = tls.X509KeyPair(f.clientCertPEM, f.clientKeyPEM)
	require.NoError(t, err)
	clients, err := cert.ParseCertsPEM(f.clientCertPEM)
	require.NoError(t, err)
	require.Len(t, clients, 1)
	clientCAs := x509.NewCertPool()
	require.True(t, clientCAs.AppendCertsFromPEM(read("client-ca.crt")))
	_, err = clients[0].Verify(x509.VerifyOptions{Roots: clientCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err, "client certificate against --client-ca-file")
	_, err = clients[0].Verify(x509.VerifyOptions{Roots: cas, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.Error(t, err, "client certificate against the serving CA")
	assert.Equal(t, "fedop-bench", clients[0].Subject.CommonName)
	assert.Equal(t, []string{"system:masters"}, clients[0].Subject.Organization)

	keys, err := keyutil.PublicKeysFromFile(filepath.Join(f.dir, "sa.key"))
	require.NoError(t, err)
	assert.Len(t, keys, 1, "service account key, read as --service-account-key-file reads it")
}

// TestWaitReady checks the wait for a started process: done once the
// check passes, an error naming the process once it has exited, and one
// naming what it did not answer when the time is up.
func TestWaitReady(t *testing.T) {
	dir := t.TempDir()
	long, err := startProc("sleeper", filepath.Join(dir, "sleep.log"), nil, "/bin/sleep", "30")
	require.NoError(t, err)
	defer long.stop(time.Second)
	calls := 0
	err = waitReady(context.Background(), long, "/ready", 5*time.Second, func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	assert.NoError(t, err)
	assert.Equal(t, 3, calls)

	err = waitReady(context.Background(), long, "/ready", 300*time.Millisecond, func(context.Context) error { return errors.New("not yet") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "sleeper did not answer /ready within 300ms")
	assert.Contains(t, err.Error(), "not yet")

	short, err := startProc("quitter", filepath.Join(dir, "true.log"), nil, "/bin/true")
	require.NoError(t, err)
	<-short.done
	err = waitReady(context.Background(), short, "/ready", 5*time.Second, func(context.Context) error { return errors.New("not yet") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "quitter exited")
}
