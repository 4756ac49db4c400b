package member_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/fedop-io/fedop/internal/testenv"
	"github.com/fedop-io/fedop/member"
)

const (
	// wait bounds every Eventually: generous, as the race detector and a
	// shared two-core machine slow everything down.
	wait = 30 * time.Second
	tick = 50 * time.Millisecond
)

func TestGetStateNamesWithoutSecrets(t *testing.T) {
	r := member.NewRegistry(member.Options{})

	_, err := r.Get("k8s-a")
	require.ErrorIs(t, err, member.ErrNotRegistered)
	assert.NotErrorIs(t, err, member.ErrDisconnected)
	assert.Equal(t, member.State{Name: "k8s-a", Reason: member.ReasonNotRegistered, Message: "no registration Secret"}, r.State("k8s-a"))
	assert.Empty(t, r.Names())
}

// TestRegistry runs the registry in a manager on a real host API server,
// against two real member API servers. The subtests run in order and build
// on each other: they share the three API servers, which take seconds
// each to start.
func TestRegistry(t *testing.T) {
	// Shown when the test fails (or with -v); funcr rather than testr,
	// which panics when a member's goroutine logs after the test ended.
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	f := testenv.StartForTest(t, testenv.Options{})
	a, b := f.Member("k8s-a"), f.Member("k8s-b")
	host := f.Host.Client
	ctx := context.Background()
	require.NoError(t, host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: member.DefaultNamespace}}))

	mgr, err := ctrl.NewManager(f.Host.Config, ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// As SetupWithManager advises: the manager caches the registration
		// namespace's Secrets only.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{member.DefaultNamespace: {}}},
		}},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	reg := member.NewRegistry(member.Options{
		CacheSelector: labels.SelectorFromSet(fedopLabels),
		ProbePeriod:   500 * time.Millisecond,
		SyncTimeout:   3 * time.Second,
	})
	require.NoError(t, reg.SetupWithManager(mgr))
	seen := newCalls()
	sink, err := ctrl.NewControllerManagedBy(mgr).
		Named("test-sink").
		WatchesRawSource(reg.Source(seen.memberMap)).
		Build(reconcile.Func(seen.reconcile))
	require.NoError(t, err)
	// watchPods starts the sink's pod watch on member name, as a
	// reconciler does on every reconcile that reads the member.
	watchPods := func(t *testing.T, name string) {
		t.Helper()
		require.NoError(t, reg.Watch(ctx, name, seen.podWatcher(sink, "pods", name)))
	}

	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	// Cleanups run last in, first out: the manager stops before the API
	// servers do.
	t.Cleanup(func() {
		stopMgr()
		assert.NoError(t, <-mgrDone)
	})

	t.Run("members connect", func(t *testing.T) {
		require.NoError(t, host.Create(ctx, registration("k8s-a", member.KubeconfigKey, a.Kubeconfig)))
		// k8s-b in Cluster API's format.
		require.NoError(t, host.Create(ctx, registration("k8s-b", member.KubeconfigKeyValue, b.Kubeconfig)))
		for _, name := range []string{"k8s-a", "k8s-b"} {
			requireConnected(t, reg, name)
			cl, err := reg.Get(name)
			require.NoError(t, err)
			assert.NotNil(t, cl)
			v, ok := gauge(t, name)
			assert.True(t, ok, "no fedop_member_connected series for %s", name)
			assert.Equal(t, 1.0, v)
			// memberMap runs in the sink's Source goroutine, after the
			// registry notified: not necessarily before State says
			// connected.
			assert.Eventually(t, func() bool { return seen.members(name) > 0 }, wait, tick, "memberMap not called for %s", name)
			watchPods(t, name)
			assert.Eventually(t, func() bool { return seen.reconciled(types.NamespacedName{Name: name}) }, wait, tick,
				"the request memberMap returned for %s was not reconciled", name)
		}
		assert.Equal(t, []string{"k8s-a", "k8s-b"}, reg.Names())
	})

	t.Run("only labelled objects reach objMap and the cache", func(t *testing.T) {
		// The unlabelled pod first: if the cache were not restricted, its
		// add would arrive before the labelled pod's.
		require.NoError(t, a.Client.Create(ctx, pod("unlabelled", nil)))
		require.NoError(t, a.Client.Create(ctx, pod("labelled", fedopLabels)))
		require.Eventually(t, func() bool { return seen.objects("k8s-a/default/labelled") > 0 }, wait, tick)
		assert.Eventually(t, func() bool {
			return seen.reconciled(types.NamespacedName{Namespace: "k8s-a", Name: "labelled"})
		}, wait, tick, "the request objMap returned was not reconciled")

		cl, err := reg.Get("k8s-a")
		require.NoError(t, err)
		var got corev1.Pod
		require.NoError(t, cl.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "labelled"}, &got))
		assert.Empty(t, got.ManagedFields, "the cache keeps managedFields")

		err = cl.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "unlabelled"}, &got)
		assert.True(t, apierrors.IsNotFound(err), "the unlabelled pod is in the cache: %v", err)
		assert.Zero(t, seen.objects("k8s-a/default/unlabelled"))
		// It does exist: the cache, not the API server, leaves it out.
		assert.NoError(t, cl.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: "default", Name: "unlabelled"}, &got))
	})

	t.Run("a watch is started once per connection, and a later one sees the existing objects", func(t *testing.T) {
		before := seen.objects("k8s-a/default/labelled")
		watchPods(t, "k8s-a") // the same watch again: nothing new starts
		late := seen.podWatcher(sink, "late", "k8s-a")
		require.NoError(t, reg.Watch(ctx, "k8s-a", late))
		require.NoError(t, reg.Watch(ctx, "k8s-a", late))
		// The late watch replays the labelled pod once; the first does not
		// again.
		require.Eventually(t, func() bool { return seen.objects("late/k8s-a/default/labelled") == 1 }, wait, tick)
		assert.Never(t, func() bool {
			return seen.objects("late/k8s-a/default/labelled") > 1 || seen.objects("k8s-a/default/labelled") > before
		}, time.Second, tick, "a watch started twice on one connection")

		err := reg.Watch(ctx, "k8s-z", late)
		assert.ErrorIs(t, err, member.ErrNotRegistered)
	})

	t.Run("refused registrations are recorded, not fatal", func(t *testing.T) {
		withExec := rewrite(t, a.Kubeconfig, func(kc *clientcmdapi.Config) {
			for _, u := range kc.AuthInfos {
				u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "id"}, APIVersion: "client.authentication.k8s.io/v1"}
			}
		})
		tests := []struct {
			secret *corev1.Secret
			reason string
		}{
			{registration("broken", member.KubeconfigKey, []byte("apiVersion: v1\nclusters: [")), member.ReasonInvalidKubeconfig},
			{registration("empty", "other-key", a.Kubeconfig), member.ReasonInvalidKubeconfig},
			{registration("exec", member.KubeconfigKey, withExec), member.ReasonKubeconfigRefused},
			{registration("not.a.label", member.KubeconfigKey, a.Kubeconfig), member.ReasonInvalidName},
		}
		for _, tt := range tests {
			t.Run(tt.secret.Name, func(t *testing.T) {
				require.NoError(t, host.Create(ctx, tt.secret))
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					s := reg.State(tt.secret.Name)
					assert.True(c, s.Registered)
					assert.False(c, s.Connected)
					assert.Equal(c, tt.reason, s.Reason)
					assert.NotEmpty(c, s.Message)
				}, wait, tick)
				_, err := reg.Get(tt.secret.Name)
				assert.ErrorIs(t, err, member.ErrDisconnected)
				assert.ErrorContains(t, err, tt.reason)
				v, ok := gauge(t, tt.secret.Name)
				assert.True(t, ok)
				assert.Zero(t, v)
				assert.Eventually(t, func() bool { return hasEvent(t, host, tt.secret.Name, corev1.EventTypeWarning, tt.reason) }, wait, tick,
					"no Warning event %s on Secret %s", tt.reason, tt.secret.Name)
			})
		}
		// The registry still serves the good members.
		requireConnected(t, reg, "k8s-a")
		requireConnected(t, reg, "k8s-b")
	})

	t.Run("a rotated kubeconfig replaces the cluster", func(t *testing.T) {
		before := seen.members("k8s-a")
		old, err := reg.Get("k8s-a")
		require.NoError(t, err)
		// The same kubeconfig in JSON: other bytes, so another sha256.
		rotated, err := yaml.YAMLToJSON(a.Kubeconfig)
		require.NoError(t, err)
		updateRegistration(t, host, "k8s-a", func(s *corev1.Secret) { s.Data[member.KubeconfigKey] = rotated })

		var cl cluster.Cluster
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var err error
			cl, err = reg.Get("k8s-a")
			require.NoError(c, err)
			assert.NotSame(c, old, cl)
		}, wait, tick)
		// The registry notifies after it publishes: Get may see the new
		// cluster a moment before memberMap is called.
		assert.Eventually(t, func() bool { return seen.members("k8s-a") > before }, wait, tick, "memberMap not called for the replacement")
		var got corev1.Pod
		assert.NoError(t, cl.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "labelled"}, &got))
		// A new connection: its cache has no watch until asked again.
		replayed := seen.objects("k8s-a/default/labelled")
		watchPods(t, "k8s-a")
		assert.Eventually(t, func() bool { return seen.objects("k8s-a/default/labelled") > replayed }, wait, tick,
			"the watch was not started on the new connection")

		require.NoError(t, a.Client.Create(ctx, pod("after-rotation", fedopLabels)))
		assert.Eventually(t, func() bool {
			return seen.objects("k8s-a/default/after-rotation") > 0 &&
				cl.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "after-rotation"}, &got) == nil
		}, wait, tick)
	})

	t.Run("a changed kubeconfig that does not sync keeps the previous cluster", func(t *testing.T) {
		cur, err := reg.Get("k8s-a")
		require.NoError(t, err)
		unreachable := rewrite(t, a.Kubeconfig, func(kc *clientcmdapi.Config) {
			for _, c := range kc.Clusters {
				c.Server = "https://127.0.0.1:1"
			}
		})
		updateRegistration(t, host, "k8s-a", func(s *corev1.Secret) { s.Data[member.KubeconfigKey] = unreachable })
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			s := reg.State("k8s-a")
			assert.True(c, s.Connected)
			assert.Contains(c, s.Message, "previous")
		}, wait, tick)
		assert.Eventually(t, func() bool { return hasEvent(t, host, "k8s-a", corev1.EventTypeWarning, member.ReasonSyncFailed) }, wait, tick)
		still, err := reg.Get("k8s-a")
		require.NoError(t, err)
		assert.Same(t, cur, still)

		// Back to a working kubeconfig: a new cluster, connected.
		updateRegistration(t, host, "k8s-a", func(s *corev1.Secret) { s.Data[member.KubeconfigKey] = a.Kubeconfig })
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cl, err := reg.Get("k8s-a")
			require.NoError(c, err)
			assert.NotSame(c, cur, cl)
			assert.Empty(c, reg.State("k8s-a").Message)
		}, wait, tick)
	})

	t.Run("a refused kubeconfig keeps the previous cluster", func(t *testing.T) {
		cur, err := reg.Get("k8s-a")
		require.NoError(t, err)
		assert.True(t, hasEvent(t, host, "k8s-a", corev1.EventTypeNormal, "Connected"), "no Normal event Connected on the Secret")
		withExec := rewrite(t, a.Kubeconfig, func(kc *clientcmdapi.Config) {
			for _, u := range kc.AuthInfos {
				u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "id"}, APIVersion: "client.authentication.k8s.io/v1"}
			}
		})
		updateRegistration(t, host, "k8s-a", func(s *corev1.Secret) { s.Data[member.KubeconfigKey] = withExec })
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			s := reg.State("k8s-a")
			assert.True(c, s.Connected)
			assert.Contains(c, s.Message, member.ReasonKubeconfigRefused)
			assert.Contains(c, s.Message, "still using the previous one")
		}, wait, tick)
		assert.Eventually(t, func() bool {
			return hasEvent(t, host, "k8s-a", corev1.EventTypeWarning, member.ReasonKubeconfigRefused)
		}, wait, tick)
		still, err := reg.Get("k8s-a")
		require.NoError(t, err)
		assert.Same(t, cur, still, "the refused kubeconfig replaced the working connection")
		var got corev1.Pod
		assert.NoError(t, still.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "labelled"}, &got))
		v, ok := gauge(t, "k8s-a")
		assert.True(t, ok)
		assert.Equal(t, 1.0, v)

		// The working kubeconfig back: the same connection, the message gone.
		updateRegistration(t, host, "k8s-a", func(s *corev1.Secret) { s.Data[member.KubeconfigKey] = a.Kubeconfig })
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.Empty(c, reg.State("k8s-a").Message)
		}, wait, tick)
		again, err := reg.Get("k8s-a")
		require.NoError(t, err)
		assert.Same(t, cur, again)
	})

	t.Run("members that do not answer do not block the others", func(t *testing.T) {
		// One refuses connections, one accepts them and never answers: its
		// start is cut off by SyncTimeout.
		silent := listenSilently(t)
		for name, server := range map[string]string{"refusing": "https://127.0.0.1:1", "silent": "https://" + silent} {
			kc := rewrite(t, a.Kubeconfig, func(kc *clientcmdapi.Config) {
				for _, c := range kc.Clusters {
					c.Server = server
				}
			})
			require.NoError(t, host.Create(ctx, registration(name, member.KubeconfigKey, kc)))
		}
		for _, name := range []string{"refusing", "silent"} {
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				s := reg.State(name)
				assert.True(c, s.Registered)
				assert.False(c, s.Connected)
				assert.Equal(c, member.ReasonSyncFailed, s.Reason)
			}, wait, tick)
			_, err := reg.Get(name)
			assert.ErrorIs(t, err, member.ErrDisconnected)
			assert.Eventually(t, func() bool { return hasEvent(t, host, name, corev1.EventTypeWarning, member.ReasonSyncFailed) }, wait, tick)
		}
		assert.Contains(t, reg.State("silent").Message, "within")

		// While both are retried, the others serve, and a new member
		// still connects.
		require.NoError(t, b.Client.Create(ctx, pod("while-dead", fedopLabels)))
		assert.Eventually(t, func() bool { return seen.objects("k8s-b/default/while-dead") > 0 }, wait, tick)
		require.NoError(t, host.Create(ctx, registration("k8s-b2", member.KubeconfigKey, b.Kubeconfig)))
		requireConnected(t, reg, "k8s-b2")
		requireConnected(t, reg, "k8s-a")
		err := reg.Watch(ctx, "silent", seen.podWatcher(sink, "pods", "silent"))
		assert.ErrorIs(t, err, member.ErrDisconnected)
	})

	t.Run("failing probes disconnect a member and a success connects it again", func(t *testing.T) {
		target, err := serverAddress(b.Kubeconfig)
		require.NoError(t, err)
		p := startProxy(t, "127.0.0.1:0", target)
		proxied := rewrite(t, b.Kubeconfig, func(kc *clientcmdapi.Config) {
			for _, c := range kc.Clusters {
				c.Server = "https://" + p.addr
			}
		})
		require.NoError(t, host.Create(ctx, registration("k8s-p", member.KubeconfigKey, proxied)))
		requireConnected(t, reg, "k8s-p")
		watchPods(t, "k8s-p")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.False(c, reg.State("k8s-p").LastProbeTime.IsZero())
		}, wait, tick)
		before := seen.members("k8s-p")

		p.stop()
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			s := reg.State("k8s-p")
			assert.False(c, s.Connected)
			assert.Equal(c, member.ReasonProbeFailed, s.Reason)
		}, wait, tick)
		_, err = reg.Get("k8s-p")
		assert.ErrorIs(t, err, member.ErrDisconnected)
		v, ok := gauge(t, "k8s-p")
		assert.True(t, ok)
		assert.Zero(t, v)
		assert.Eventually(t, func() bool { return seen.members("k8s-p") > before }, wait, tick, "memberMap not called on disconnect")
		requireConnected(t, reg, "k8s-b")

		// Made and removed during the outage: the member counts as
		// connected again only with a cache listed after it answered, so
		// both show at once, without waiting for a watch to catch up.
		require.NoError(t, b.Client.Create(ctx, pod("during-outage", fedopLabels)))
		require.NoError(t, b.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "while-dead"}}, client.GracePeriodSeconds(0)))
		before = seen.members("k8s-p")
		p = startProxy(t, p.addr, target)
		requireConnected(t, reg, "k8s-p")
		assert.Eventually(t, func() bool { return seen.members("k8s-p") > before }, wait, tick, "memberMap not called on reconnect")
		cl, err := reg.Get("k8s-p")
		require.NoError(t, err)
		var got corev1.Pod
		assert.NoError(t, cl.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "during-outage"}, &got),
			"connected again, but the cache does not show a pod created while the member was away")
		err = cl.GetClient().Get(ctx, client.ObjectKey{Namespace: "default", Name: "while-dead"}, &got)
		assert.True(t, apierrors.IsNotFound(err), "connected again, but the cache still shows a pod deleted while the member was away: %v", err)
		// Fresh also needs every probe since to have answered within its
		// timeout (half a period, 250ms here), which a loaded machine can
		// miss for a moment; the cache's contents above are what the
		// resync promised.
		assert.Eventually(t, func() bool { return reg.State("k8s-p").Fresh }, wait, tick, "connected with a fresh cache, but never fresh")
		// A new connection: the watch starts again and replays.
		watchPods(t, "k8s-p")
		assert.Eventually(t, func() bool { return seen.objects("k8s-p/default/during-outage") > 0 }, wait, tick)
	})

	t.Run("a member that stops answering is not fresh at once, and fresh again with a new cache", func(t *testing.T) {
		target, err := serverAddress(a.Kubeconfig)
		require.NoError(t, err)
		p := startProxy(t, "127.0.0.1:0", target)
		proxied := rewrite(t, a.Kubeconfig, func(kc *clientcmdapi.Config) {
			for _, c := range kc.Clusters {
				c.Server = "https://" + p.addr
			}
		})
		require.NoError(t, host.Create(ctx, registration("k8s-f", member.KubeconfigKey, proxied)))
		requireConnected(t, reg, "k8s-f")
		require.Eventually(t, func() bool { return reg.State("k8s-f").Fresh }, wait, tick)
		first, err := reg.Get("k8s-f")
		require.NoError(t, err)

		p.stop()
		// Not fresh at the first failed probe, long before it is declared
		// disconnected (10 failed probes): the first state seen not fresh
		// is still connected. Both from one read, so that they cannot
		// straddle the disconnection; no bound on how soon, as a loaded
		// machine delays the probes (the bound is TestFreshnessGate's, on
		// an injected clock).
		var stale member.State
		require.Eventually(t, func() bool { stale = reg.State("k8s-f"); return !stale.Fresh }, wait, 10*time.Millisecond)
		assert.True(t, stale.Connected, "disconnected already: freshness must go first")

		p = startProxy(t, p.addr, target)
		require.Eventually(t, func() bool { return reg.State("k8s-f").Fresh }, wait, tick)
		again, err := reg.Get("k8s-f")
		require.NoError(t, err)
		assert.NotSame(t, first, again, "fresh again with the cache listed before the interruption")
	})

	t.Run("deleting the Secret or removing its label removes the member", func(t *testing.T) {
		before := seen.members("k8s-b")
		require.NoError(t, host.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: member.DefaultNamespace, Name: "k8s-b"}}))
		updateRegistration(t, host, "broken", func(s *corev1.Secret) { delete(s.Labels, member.LabelMemberCluster) })
		for _, name := range []string{"k8s-b", "broken"} {
			require.Eventually(t, func() bool { return !reg.State(name).Registered }, wait, tick, "%s still registered", name)
			assert.NotContains(t, reg.Names(), name)
			assert.Equal(t, member.ReasonNotRegistered, reg.State(name).Reason)
			_, err := reg.Get(name)
			assert.ErrorIs(t, err, member.ErrNotRegistered)
			_, ok := gauge(t, name)
			assert.False(t, ok, "the fedop_member_connected series of %s is still there", name)
		}
		assert.Eventually(t, func() bool { return seen.members("k8s-b") > before }, wait, tick, "memberMap not called on removal")
		requireConnected(t, reg, "k8s-a")
	})
}

// fedopLabels is what the test registry's CacheSelector selects.
var fedopLabels = map[string]string{"app.kubernetes.io/managed-by": "fedop"}

func registration(name, key string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: member.DefaultNamespace,
			Name:      name,
			Labels:    map[string]string{member.LabelMemberCluster: "true"},
		},
		Data: map[string][]byte{key: kubeconfig},
	}
}

func updateRegistration(t *testing.T, c client.Client, name string, edit func(*corev1.Secret)) {
	t.Helper()
	var s corev1.Secret
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: member.DefaultNamespace, Name: name}, &s))
	edit(&s)
	require.NoError(t, c.Update(context.Background(), &s))
}

func pod(name string, podLabels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: podLabels},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "c", Image: "registry.example/c:1"}},
		},
	}
}

func requireConnected(t *testing.T, reg *member.Registry, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := reg.State(name)
		assert.True(c, s.Registered, "%s not registered", name)
		assert.True(c, s.Connected, "%s not connected: %s: %s", name, s.Reason, s.Message)
	}, wait, tick)
}

// rewrite returns kubeconfig changed by edit.
func rewrite(t *testing.T, kubeconfig []byte, edit func(*clientcmdapi.Config)) []byte {
	t.Helper()
	kc, err := clientcmd.Load(kubeconfig)
	require.NoError(t, err)
	edit(kc)
	data, err := clientcmd.Write(*kc)
	require.NoError(t, err)
	return data
}

// serverAddress returns the host:port of the current cluster's server.
func serverAddress(kubeconfig []byte) (string, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return "", err
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

// gauge returns the value of fedop_member_connected{member=name} in
// controller-runtime's metrics registry, and whether the series exists.
func gauge(t *testing.T, name string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, mf := range families {
		if mf.GetName() != "fedop_member_connected" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "member" && l.GetValue() == name {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// hasEvent reports whether an event of type and reason regards the
// registration Secret name.
func hasEvent(t *testing.T, c client.Client, name, eventType, reason string) bool {
	t.Helper()
	var list eventsv1.EventList
	if err := c.List(context.Background(), &list, client.InNamespace(member.DefaultNamespace)); err != nil {
		t.Logf("listing events: %v", err)
		return false
	}
	for _, e := range list.Items {
		if e.Regarding.Kind == "Secret" && e.Regarding.Name == name && e.Type == eventType && e.Reason == reason {
			return true
		}
	}
	return false
}

// calls records what a Source's map function, the handlers of pod watches
// and their controller's reconciler were called with.
type calls struct {
	mu        sync.Mutex
	objectsBy map[string]int
	membersBy map[string]int
	requests  map[types.NamespacedName]bool
}

func newCalls() *calls {
	return &calls{objectsBy: map[string]int{}, membersBy: map[string]int{}, requests: map[types.NamespacedName]bool{}}
}

// podWatcher returns a watch, named name, of the pods of member for sw:
// each pod event is counted under member/namespace/name (prefixed by
// name/ unless name is "pods") and maps to the request member/pod name.
func (c *calls) podWatcher(sw member.SourceWatcher, name, memberName string) member.Watcher {
	prefix := ""
	if name != "pods" {
		prefix = name + "/"
	}
	return member.KindWatcher(name, sw, &corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, obj client.Object) []reconcile.Request {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.objectsBy[prefix+memberName+"/"+obj.GetNamespace()+"/"+obj.GetName()]++
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: memberName, Name: obj.GetName()}}}
	}))
}

// memberMap maps member name to the request with the member's name.
func (c *calls) memberMap(_ context.Context, name string) []reconcile.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.membersBy[name]++
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

func (c *calls) reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[req.NamespacedName] = true
	return reconcile.Result{}, nil
}

func (c *calls) objects(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.objectsBy[key]
}

func (c *calls) members(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.membersBy[name]
}

func (c *calls) reconciled(key types.NamespacedName) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests[key]
}

// listenSilently returns the address of a listener that accepts
// connections and never answers, until the test ends.
func listenSilently(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// proxy forwards TCP connections to target; stop cuts them all, as an API
// server that goes down would.
type proxy struct {
	addr   string
	target string
	ln     net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// startProxy listens on addr (host:0 for any port) and forwards to target
// until stop or the end of the test.
func startProxy(t *testing.T, addr, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	p := &proxy{addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	go p.accept()
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(c)
	}
}

func (p *proxy) forward(c net.Conn) {
	d, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, d) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(d, c)
	go pipe(c, d)
	<-done
	_ = c.Close()
	_ = d.Close()
}

// track records conns for stop, or closes them when stop already ran.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
}
