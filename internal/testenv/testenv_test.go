package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/internal/testenv"
)

// TestFederation proves what later integration tests rely on: a host and two
// members that are separate clusters, each reachable through the kubeconfig
// the helper hands out.
func TestFederation(t *testing.T) {
	f := testenv.StartForTest(t, testenv.Options{})
	ctx := context.Background()

	require.NotNil(t, f.Host)
	require.Len(t, f.Members, 2)
	a, b := f.Member("k8s-a"), f.Member("k8s-b")
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.Nil(t, f.Member("k8s-c"))

	hosts := map[string]string{}
	for _, c := range []*testenv.Cluster{f.Host, a, b} {
		t.Run(c.Name, func(t *testing.T) {
			// The kubeconfig is self-contained and works on its own.
			kc, err := clientcmd.Load(c.Kubeconfig)
			require.NoError(t, err)
			for name, cluster := range kc.Clusters {
				assert.Empty(t, cluster.CertificateAuthority, "cluster %s references a CA file", name)
				assert.NotEmpty(t, cluster.CertificateAuthorityData, "cluster %s has no CA data", name)
			}
			for name, user := range kc.AuthInfos {
				assert.Nil(t, user.Exec, "user %s uses an exec plugin", name)
				assert.Empty(t, user.ClientCertificate, "user %s references a certificate file", name)
			}
			cfg, err := clientcmd.RESTConfigFromKubeConfig(c.Kubeconfig)
			require.NoError(t, err)
			cs, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			v, err := cs.Discovery().ServerVersion()
			require.NoError(t, err)
			assert.Equal(t, "1", v.Major)
			hosts[c.Name] = cfg.Host
		})
	}
	assert.Len(t, map[string]bool{hosts["host"]: true, hosts["k8s-a"]: true, hosts["k8s-b"]: true}, 3,
		"every cluster must be its own API server: %v", hosts)

	// Each member has its own etcd: what is written to one is absent in the
	// other and in the host.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-a"}}
	require.NoError(t, a.Client.Create(ctx, ns))
	require.NoError(t, a.Client.Get(ctx, clientObjectKey("only-in-a"), &corev1.Namespace{}))
	for _, other := range []*testenv.Cluster{b, f.Host} {
		err := other.Client.Get(ctx, clientObjectKey("only-in-a"), &corev1.Namespace{})
		assert.True(t, apierrors.IsNotFound(err), "%s: want NotFound, got %v", other.Name, err)
	}
}

// TestProxy proves a member can be cut off through its proxy and reached
// again, which is how integration tests make a member unreachable.
func TestProxy(t *testing.T) {
	f := testenv.StartForTest(t, testenv.Options{Members: []string{"m"}})
	m := f.Member("m")
	require.NotNil(t, m.Proxy)
	assert.Nil(t, f.Host.Proxy, "the host is not proxied")
	cfg, err := clientcmd.RESTConfigFromKubeConfig(m.ProxiedKubeconfig)
	require.NoError(t, err)
	cfg.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.Discovery().ServerVersion()
	require.NoError(t, err, "reachable through the proxy")

	m.Proxy.Sever()
	_, err = cs.Discovery().ServerVersion()
	assert.Error(t, err, "a severed member must not answer")

	m.Proxy.Restore()
	_, err = cs.Discovery().ServerVersion()
	assert.NoError(t, err, "a restored member answers again")
}

func TestStopIsIdempotent(t *testing.T) {
	f, err := testenv.Start(testenv.Options{Members: []string{"solo"}})
	require.NoError(t, err)
	require.Len(t, f.Members, 1)
	require.NoError(t, f.Stop())
	require.NoError(t, f.Stop())
	_, err = kubernetes.NewForConfigOrDie(f.Host.Config).Discovery().ServerVersion()
	assert.Error(t, err, "the host must be stopped")
}

func clientObjectKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }
