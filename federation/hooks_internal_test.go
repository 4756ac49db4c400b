package federation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/federation/rollout"
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

// TestCheckHealthWithBackoff: a gate over many pods, some of them in
// backoff after a failure, records every pod's answer: a fresh call's, or
// the last one for a pod in backoff. Run with -race: the calls in flight
// and the pods in backoff write the same map.
func TestCheckHealthWithBackoff(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	r := &Reconciler{hooks: newHookRuns(flowcontrol.NewFakeBackOff(time.Second, time.Minute, clock))}
	key := client.ObjectKey{Namespace: "ns", Name: "demo"}
	// No component in the observation: every call fails at once with
	// "no postReady gate", which is all this test needs of a call.
	obs := &observation{now: clock.Now()}
	var refs []rollout.PodRef
	for i := range 16 {
		ref := rollout.PodRef{Component: "db", Member: "a", Name: fmt.Sprintf("demo-db-%d", i)}
		if i%2 == 1 {
			r.hooks.failed(hookID(key, "postReady", ref), obs.now, errors.New("HTTP 500"))
		}
		refs = append(refs, ref)
	}
	health := map[string]string{}
	var out hookOutcome
	r.checkHealth(context.Background(), key, obs, refs, health, &out)
	require.Len(t, health, len(refs))
	for i, ref := range refs {
		want := "component db has no postReady gate"
		if i%2 == 1 {
			want = "HTTP 500"
		}
		assert.Equal(t, want, health[ref.Member+"/"+ref.Name], ref.Name)
	}
	assert.Positive(t, out.retryAfter, "a pod in backoff says when to look again")
}
