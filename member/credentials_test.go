package member

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// jwt returns an unsigned token with payload: enough for a decoder that,
// as CredentialsLifetime, does not verify.
func jwt(payload string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

func TestCredentialsLifetime(t *testing.T) {
	certPEM := selfSigned(t, time.Unix(1000, 0), time.Unix(5000, 0))
	tests := []struct {
		name   string
		cfg    rest.Config
		before time.Time
		after  time.Time
		ok     bool
	}{
		{"token with iat and exp", rest.Config{BearerToken: jwt(`{"iat":100,"exp":700,"sub":"x"}`)}, time.Unix(100, 0), time.Unix(700, 0), true},
		{"token with nbf only", rest.Config{BearerToken: jwt(`{"nbf":200,"exp":800}`)}, time.Unix(200, 0), time.Unix(800, 0), true},
		{"token without start", rest.Config{BearerToken: jwt(`{"exp":800}`)}, time.Time{}, time.Unix(800, 0), true},
		{"token without exp", rest.Config{BearerToken: jwt(`{"iat":1}`)}, time.Time{}, time.Time{}, false},
		{"opaque token", rest.Config{BearerToken: "abcdef"}, time.Time{}, time.Time{}, false},
		{"payload not base64", rest.Config{BearerToken: "a.!!.c"}, time.Time{}, time.Time{}, false},
		{"client certificate", rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: certPEM}}, time.Unix(1000, 0), time.Unix(5000, 0), true},
		{"opaque token falls back to the certificate", rest.Config{BearerToken: "abc", TLSClientConfig: rest.TLSClientConfig{CertData: certPEM}},
			time.Unix(1000, 0), time.Unix(5000, 0), true},
		{"nothing", rest.Config{}, time.Time{}, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after, ok := CredentialsLifetime(&tt.cfg)
			assert.Equal(t, tt.ok, ok)
			assert.True(t, tt.before.Equal(before), "notBefore %v, want %v", before, tt.before)
			assert.True(t, tt.after.Equal(after), "notAfter %v, want %v", after, tt.after)
		})
	}
}

func TestReadCredentials(t *testing.T) {
	secret := func(ann map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: ann}}
	}
	// A token without iat gets its start from the requested duration.
	c := readCredentials(secret(map[string]string{AnnotationServiceAccount: "fedop-system/fedop-member", AnnotationTokenDuration: "10m"}),
		&rest.Config{BearerToken: jwt(`{"exp":1600}`)})
	assert.Equal(t, types.NamespacedName{Namespace: "fedop-system", Name: "fedop-member"}, c.account)
	assert.Equal(t, 10*time.Minute, c.duration)
	assert.Equal(t, time.Unix(1000, 0), c.notBefore)
	assert.Equal(t, 10*time.Minute, c.lifetime())

	// Without a duration annotation, the current token's lifetime.
	c = readCredentials(secret(map[string]string{AnnotationServiceAccount: "fedop-system/fedop-member"}), &rest.Config{BearerToken: jwt(`{"iat":0,"exp":3600}`)})
	assert.Equal(t, time.Hour, c.duration)

	// No ServiceAccount, a malformed one, or no token: nothing to renew.
	for _, ann := range []map[string]string{nil, {AnnotationServiceAccount: "fedop-member"}, {AnnotationServiceAccount: "/x"}} {
		assert.Empty(t, readCredentials(secret(ann), &rest.Config{BearerToken: jwt(`{"iat":0,"exp":3600}`)}).account.Name, "%v", ann)
	}
	certPEM := selfSigned(t, time.Unix(1000, 0), time.Unix(5000, 0))
	certOnly := &rest.Config{TLSClientConfig: rest.TLSClientConfig{CertData: certPEM}}
	assert.Empty(t, readCredentials(secret(map[string]string{AnnotationServiceAccount: "a/b"}), certOnly).account.Name)
}

func TestNamespacesOfAndRegistrationHash(t *testing.T) {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationNamespaces: " db, ,cache "}}}
	assert.Equal(t, []string{"db", "cache"}, namespacesOf(s))
	assert.Nil(t, namespacesOf(&corev1.Secret{}))
	data := []byte("kubeconfig")
	plain := registrationHash(data, &corev1.Secret{})
	assert.Len(t, plain, 64)
	assert.NotEqual(t, plain, registrationHash(data, s), "the namespaces shape the cache: another registration")
	assert.Equal(t, registrationHash(data, s), registrationHash(data, s.DeepCopy()))
}

func selfSigned(t *testing.T, notBefore, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"}, NotBefore: notBefore, NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestCheckCredentials: a member past RenewFraction of its token's
// lifetime is renewed (here the renewal fails: no host client), and one
// with less than a tenth left whose renewal failed, or that names no
// ServiceAccount, reports CredentialsExpiringSoon.
func TestCheckCredentials(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	clk := clocktesting.NewFakeClock(start)
	r := NewRegistry(Options{Clock: clk})
	ctx := context.Background()
	add := func(name string, account types.NamespacedName) {
		in := &instance{name: name, ctx: ctx, creds: credentials{notBefore: start, notAfter: start.Add(time.Hour), account: account, duration: time.Hour}}
		r.members[name] = &member{inst: in, creds: in.creds, state: State{Name: name, Registered: true, Connected: true}}
	}
	add("renewed", types.NamespacedName{Namespace: "fedop-system", Name: "fedop-member"})
	add("unrenewable", types.NamespacedName{})

	// Half the lifetime: nothing due, nothing to report.
	clk.SetTime(start.Add(30 * time.Minute))
	r.checkCredentials(ctx)
	for _, name := range []string{"renewed", "unrenewable"} {
		assert.Empty(t, r.State(name).CredentialsReason)
	}
	r.mu.Lock()
	assert.False(t, r.members["renewed"].creds.renewing)
	r.mu.Unlock()

	// Two thirds: the renewal starts, and fails.
	clk.SetTime(start.Add(41 * time.Minute))
	r.checkCredentials(ctx)
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		c := r.members["renewed"].creds
		return !c.renewing && c.lastErr != ""
	}, 10*time.Second, 10*time.Millisecond)
	assert.Empty(t, r.State("renewed").CredentialsReason, "reported with a third of the lifetime left")

	// Less than a tenth left: both report it.
	clk.SetTime(start.Add(55 * time.Minute))
	r.checkCredentials(ctx)
	st := r.State("renewed")
	assert.Equal(t, ReasonCredentialsExpiringSoon, st.CredentialsReason)
	assert.Contains(t, st.CredentialsMessage, "renewing them failed: no host client")
	assert.True(t, st.Connected, "expiring soon is not disconnected")
	st = r.State("unrenewable")
	assert.Equal(t, ReasonCredentialsExpiringSoon, st.CredentialsReason)
	assert.Contains(t, st.CredentialsMessage, AnnotationServiceAccount)
}
