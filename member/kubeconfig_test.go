package member

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// testPEM is a self-signed certificate and its key, in PEM: usable as CA
// data and as a client certificate, which is all ParseKubeconfig checks.
type testPEM struct {
	cert, key []byte
}

func newTestPEM(t testing.TB) testPEM {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fedop-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return testPEM{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

// validKubeconfig returns a self-contained kubeconfig of the shape fedop
// accepts: https server, inline CA, inline client certificate.
func validKubeconfig(p testPEM) *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["member"] = &clientcmdapi.Cluster{Server: "https://member.example:6443", CertificateAuthorityData: p.cert}
	kc.AuthInfos["fedop"] = &clientcmdapi.AuthInfo{ClientCertificateData: p.cert, ClientKeyData: p.key}
	kc.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "fedop"}
	kc.CurrentContext = "member"
	return kc
}

func writeKubeconfig(t testing.TB, kc *clientcmdapi.Config) []byte {
	t.Helper()
	data, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return data
}

func TestParseKubeconfig(t *testing.T) {
	p := newTestPEM(t)
	valid := writeKubeconfig(t, validKubeconfig(p))
	validJSON, err := yaml.YAMLToJSON(valid)
	require.NoError(t, err)

	// edit returns validKubeconfig(p) changed by f, serialised.
	edit := func(f func(kc *clientcmdapi.Config)) []byte {
		kc := validKubeconfig(p)
		f(kc)
		return writeKubeconfig(t, kc)
	}
	user := func(f func(u *clientcmdapi.AuthInfo)) []byte {
		return edit(func(kc *clientcmdapi.Config) { f(kc.AuthInfos["fedop"]) })
	}
	exec := &clientcmdapi.ExecConfig{
		Command: "/bin/sh", Args: []string{"-c", "id"}, APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
	}

	tests := []struct {
		name      string
		data      []byte
		allowExec bool
		// want is nil for accepted, else the error the result must wrap.
		want error
	}{
		{name: "client certificate", data: valid},
		{name: "JSON", data: validJSON},
		{name: "bearer token", data: user(func(u *clientcmdapi.AuthInfo) {
			u.ClientCertificateData, u.ClientKeyData, u.Token = nil, nil, "secret-token"
		})},
		{name: "server with a path", data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].Server = "https://proxy.example/k8s/clusters/c-1"
		})},
		{name: "empty", data: nil, want: ErrInvalidKubeconfig},
		{name: "not YAML", data: []byte("clusters: [\x00"), want: ErrInvalidKubeconfig},
		{name: "YAML of another shape", data: []byte("clusters: 3\n"), want: ErrInvalidKubeconfig},
		{name: "no current-context", data: edit(func(kc *clientcmdapi.Config) { kc.CurrentContext = "" }), want: ErrInvalidKubeconfig},
		{name: "missing current-context", data: edit(func(kc *clientcmdapi.Config) { kc.CurrentContext = "other" }), want: ErrInvalidKubeconfig},
		{name: "missing cluster", data: edit(func(kc *clientcmdapi.Config) { kc.Contexts["member"].Cluster = "other" }), want: ErrInvalidKubeconfig},
		{name: "missing user", data: edit(func(kc *clientcmdapi.Config) { kc.Contexts["member"].AuthInfo = "other" }), want: ErrInvalidKubeconfig},
		{name: "no server", data: edit(func(kc *clientcmdapi.Config) { kc.Clusters["member"].Server = "" }), want: ErrInvalidKubeconfig},
		{name: "CA data not PEM", data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].CertificateAuthorityData = []byte("not a certificate")
		}), want: ErrInvalidKubeconfig},
		{name: "client key not matching", data: user(func(u *clientcmdapi.AuthInfo) { u.ClientKeyData = []byte("not a key") }), want: ErrInvalidKubeconfig},
		{name: "http server", data: edit(func(kc *clientcmdapi.Config) { kc.Clusters["member"].Server = "http://member.example" }), want: ErrKubeconfigRefused},
		{
			name: "server without scheme", want: ErrKubeconfigRefused,
			data: edit(func(kc *clientcmdapi.Config) { kc.Clusters["member"].Server = "member.example:6443" }),
		},
		{name: "insecure-skip-tls-verify", data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].CertificateAuthorityData = nil
			kc.Clusters["member"].InsecureSkipTLSVerify = true
		}), want: ErrKubeconfigRefused},
		{name: "insecure-skip-tls-verify even with allowExec", allowExec: true, data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].CertificateAuthorityData = nil
			kc.Clusters["member"].InsecureSkipTLSVerify = true
		}), want: ErrKubeconfigRefused},
		{name: "http server even with allowExec", allowExec: true, data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].Server = "http://member.example"
		}), want: ErrKubeconfigRefused},
		{name: "exec plugin", data: user(func(u *clientcmdapi.AuthInfo) { u.Exec = exec }), want: ErrKubeconfigRefused},
		{name: "exec plugin with allowExec", allowExec: true, data: user(func(u *clientcmdapi.AuthInfo) {
			u.ClientCertificateData, u.ClientKeyData, u.Exec = nil, nil, exec
		})},
		{name: "exec plugin in a user the current context does not use", data: edit(func(kc *clientcmdapi.Config) {
			kc.AuthInfos["other"] = &clientcmdapi.AuthInfo{Exec: exec}
		}), want: ErrKubeconfigRefused},
		{name: "auth provider", data: user(func(u *clientcmdapi.AuthInfo) {
			u.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"idp-issuer-url": "https://idp.example"}}
		}), want: ErrKubeconfigRefused},
		{name: "basic auth", data: user(func(u *clientcmdapi.AuthInfo) { u.Username, u.Password = "admin", "admin" }), want: ErrKubeconfigRefused},
		{name: "basic auth with allowExec", allowExec: true, data: user(func(u *clientcmdapi.AuthInfo) { u.Username, u.Password = "admin", "admin" })},
		{name: "CA file", data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].CertificateAuthorityData = nil
			kc.Clusters["member"].CertificateAuthority = "/etc/kubernetes/pki/ca.crt"
		}), want: ErrKubeconfigRefused},
		{name: "CA file in another cluster", data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["other"] = &clientcmdapi.Cluster{Server: "https://other.example", CertificateAuthority: "/etc/passwd"}
		}), want: ErrKubeconfigRefused},
		{name: "proxy-url", data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].ProxyURL = "http://attacker.example:3128"
		}), want: ErrKubeconfigRefused},
		{name: "proxy-url with allowExec", allowExec: true, data: edit(func(kc *clientcmdapi.Config) {
			kc.Clusters["member"].ProxyURL = "http://proxy.example:3128"
		})},
		{name: "client certificate file", data: user(func(u *clientcmdapi.AuthInfo) {
			u.ClientCertificateData, u.ClientCertificate = nil, "/etc/kubernetes/pki/client.crt"
		}), want: ErrKubeconfigRefused},
		{name: "client key file", data: user(func(u *clientcmdapi.AuthInfo) {
			u.ClientKeyData, u.ClientKey = nil, "/etc/kubernetes/pki/client.key"
		}), want: ErrKubeconfigRefused},
		{name: "token file", data: user(func(u *clientcmdapi.AuthInfo) { u.Token, u.TokenFile = "t", "/var/run/secrets/token" }), want: ErrKubeconfigRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseKubeconfig(tt.data, tt.allowExec)
			if tt.want != nil {
				require.ErrorIs(t, err, tt.want)
				assert.Nil(t, cfg)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, cfg)
			assert.Contains(t, cfg.Host, "https://")
			assert.False(t, cfg.Insecure)
			if !tt.allowExec {
				assertNoRefusedConfig(t, tt.data)
			}
		})
	}

	t.Run("rest.Config of the current context", func(t *testing.T) {
		cfg, err := ParseKubeconfig(valid, false)
		require.NoError(t, err)
		assert.Equal(t, "https://member.example:6443", cfg.Host)
		assert.Equal(t, p.cert, cfg.CAData)
		assert.Equal(t, p.cert, cfg.CertData)
		assert.Equal(t, p.key, cfg.KeyData)
		assert.Nil(t, cfg.ExecProvider)
	})
}

// assertNoRefusedConfig asserts that the kubeconfig data, which
// ParseKubeconfig accepted without allowExec, has nothing it must refuse.
func assertNoRefusedConfig(t testing.TB, data []byte) {
	t.Helper()
	kc, err := clientcmd.Load(data)
	require.NoError(t, err, "accepted a kubeconfig that clientcmd cannot load")
	for name, c := range kc.Clusters {
		if c == nil {
			continue
		}
		assert.Empty(t, c.CertificateAuthority, "cluster %q: CA file accepted", name)
		assert.False(t, c.InsecureSkipTLSVerify, "cluster %q: insecure accepted", name)
	}
	for name, u := range kc.AuthInfos {
		if u == nil {
			continue
		}
		assert.Nil(t, u.Exec, "user %q: exec plugin accepted", name)
		assert.Nil(t, u.AuthProvider, "user %q: auth provider accepted", name)
		assert.Empty(t, u.ClientCertificate, "user %q: certificate file accepted", name)
		assert.Empty(t, u.ClientKey, "user %q: key file accepted", name)
		assert.Empty(t, u.TokenFile, "user %q: token file accepted", name)
		assert.Empty(t, u.Username, "user %q: basic auth accepted", name)
		assert.Empty(t, u.Password, "user %q: basic auth accepted", name)
	}
}

// FuzzParseKubeconfig checks that ParseKubeconfig never panics on
// untrusted bytes, and that whatever it accepts without allowExec has no
// exec plugin, auth provider, basic auth, file reference or insecure
// cluster, in the file or in the rest.Config it made. Run it with
// go test -fuzz=FuzzParseKubeconfig ./member/; the normal run tries the
// seeds only.
func FuzzParseKubeconfig(f *testing.F) {
	p := newTestPEM(f)
	valid := validKubeconfig(p)
	f.Add(writeKubeconfig(f, valid))
	withExec := validKubeconfig(p)
	withExec.AuthInfos["fedop"].Exec = &clientcmdapi.ExecConfig{Command: "sh", APIVersion: "client.authentication.k8s.io/v1"}
	f.Add(writeKubeconfig(f, withExec))
	withFile := validKubeconfig(p)
	withFile.Clusters["member"].CertificateAuthority = "/etc/passwd"
	f.Add(writeKubeconfig(f, withFile))
	withToken := validKubeconfig(p)
	withToken.AuthInfos["fedop"] = &clientcmdapi.AuthInfo{Token: "t"}
	f.Add(writeKubeconfig(f, withToken))
	f.Add([]byte(`{"apiVersion":"v1","kind":"Config","current-context":"c",` +
		`"contexts":[{"name":"c","context":{"cluster":"k","user":"u"}}],` +
		`"clusters":[{"name":"k","cluster":{"server":"https://x"}}],"users":[{"name":"u","user":null}]}`))
	f.Add([]byte("current-context: c\ncontexts:\n- name: c\n  context: null\nclusters:\n- name: k\n  cluster: null\n"))
	f.Add([]byte("\x00\xff"))
	f.Add([]byte(""))

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseKubeconfig(data, false)
		if err != nil {
			assert.Nil(t, cfg)
			return
		}
		require.NotNil(t, cfg)
		assertNoRefusedConfig(t, data)
		assert.Nil(t, cfg.ExecProvider)
		assert.Nil(t, cfg.AuthProvider)
		assert.Empty(t, cfg.CAFile)
		assert.Empty(t, cfg.CertFile)
		assert.Empty(t, cfg.KeyFile)
		assert.Empty(t, cfg.BearerTokenFile)
		assert.Empty(t, cfg.Username)
		assert.Empty(t, cfg.Password)
		assert.False(t, cfg.Insecure)
	})
}
