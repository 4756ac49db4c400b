package federation

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// TestProxyGet checks the request a hook call makes of the member API
// server (an httptest server stands in for it) and how answers become
// errors.
func TestProxyGet(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	code := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		c := code
		mu.Unlock()
		w.WriteHeader(c)
		_, _ = w.Write([]byte("not in quorum"))
	}))
	defer srv.Close()
	cs, err := corev1client.NewForConfig(&rest.Config{Host: srv.URL})
	require.NoError(t, err)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "demo-pd-1"}}

	require.NoError(t, proxyGet(context.Background(), cs, pod, 2379, "/drain"))
	mu.Lock()
	code = http.StatusServiceUnavailable
	mu.Unlock()
	err = proxyGet(context.Background(), cs, pod, 2379, "/health")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 503")
	assert.Equal(t, []string{
		"GET /api/v1/namespaces/ns/pods/demo-pd-1:2379/proxy/drain",
		"GET /api/v1/namespaces/ns/pods/demo-pd-1:2379/proxy/health",
	}, paths)
}

func TestHookPort(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "a", Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}}},
		{Name: "b", Ports: []corev1.ContainerPort{{Name: "agent", ContainerPort: 8080}}},
	}}}
	for _, tc := range []struct {
		port intstr.IntOrString
		want int
		err  string
	}{
		{intstr.FromInt32(9000), 9000, ""},
		{intstr.FromString("client"), 2379, ""},
		{intstr.FromString("agent"), 8080, ""},
		{intstr.FromString("peer"), 0, `pod p has no container port named "peer"`},
	} {
		got, err := hookPort(pod, tc.port)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err)
			continue
		}
		assert.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
}
