package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fedop-io/fedop/internal/testenv"
	"github.com/fedop-io/fedop/member"
)

// TestJoinOnRealClusters joins a real member to a real host, proves with
// SelfSubjectAccessReviews made with the joined kubeconfig that its
// identity can do what fedop needs in the listed namespaces and nothing
// else, runs fedop's member registry on the Secret until it renews the
// 10-minute token (RenewFraction shortens the wait), and unjoins. The
// subtests build on each other.
func TestJoinOnRealClusters(t *testing.T) {
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	f := testenv.StartForTest(t, testenv.Options{Members: []string{"k8s-a"}, Scheme: Scheme(),
		HostCRDDirectoryPaths: []string{filepath.Join("..", "..", "..", "config", "crd", "bases")}})
	a := f.Member("k8s-a")
	ctx := context.Background()
	dir := t.TempDir()
	hostPath, memberPath := filepath.Join(dir, "host.kubeconfig"), filepath.Join(dir, "member.kubeconfig")
	require.NoError(t, os.WriteFile(hostPath, f.Host.Kubeconfig, 0o600))
	require.NoError(t, os.WriteFile(memberPath, a.Kubeconfig, 0o600))
	require.NoError(t, a.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metaName("other")}))

	out := &syncBuffer{}
	flags := genericclioptions.NewConfigFlags(true)
	flags.KubeConfig = &hostPath
	o := &Options{IOStreams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: out}, ConfigFlags: flags,
		FedopNamespace: member.DefaultNamespace, Now: time.Now, IsTerminal: func() bool { return false }}
	o.HostConfig = flags.ToRESTConfig
	o.Host = func() (client.WithWatch, error) {
		return client.NewWithWatch(f.Host.Config, client.Options{Scheme: Scheme()})
	}
	run := func(args ...string) error {
		cmd := o.NewRootCommand()
		cmd.SetArgs(args)
		return cmd.ExecuteContext(ctx)
	}

	var joined []byte
	t.Run("join", func(t *testing.T) {
		require.NoError(t, run("join", "k8s-a", "--member-kubeconfig", memberPath, "--namespaces", "db,cache", "--token-duration", "10m"))
		assert.Contains(t, out.String(), "Member k8s-a joined")
		var s corev1.Secret
		require.NoError(t, f.Host.Client.Get(ctx, client.ObjectKey{Namespace: member.DefaultNamespace, Name: "k8s-a"}, &s))
		assert.Equal(t, "true", s.Labels[member.LabelMemberCluster])
		assert.Equal(t, "fedop-system/fedop-member", s.Annotations[member.AnnotationServiceAccount])
		assert.Equal(t, "cache,db", s.Annotations[member.AnnotationNamespaces])
		assert.Equal(t, "10m0s", s.Annotations[member.AnnotationTokenDuration])
		joined = s.Data[member.KubeconfigKey]
		cfg, err := member.ParseKubeconfig(joined, false)
		require.NoError(t, err, "fedop-manager would refuse the kubeconfig join wrote")
		nb, na, ok := member.CredentialsLifetime(cfg)
		require.True(t, ok)
		assert.Equal(t, 10*time.Minute, na.Sub(nb))
		for _, ns := range []string{"db", "cache"} {
			assert.NoError(t, a.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}), "join did not create namespace %s", ns)
		}
	})

	t.Run("the joined identity can do exactly what fedop needs in the listed namespaces", func(t *testing.T) {
		cfg, err := member.ParseKubeconfig(joined, false)
		require.NoError(t, err)
		// client-go's default 5 requests a second would take minutes.
		cfg.QPS, cfg.Burst = 500, 500
		c, err := client.New(cfg, client.Options{Scheme: Scheme()})
		require.NoError(t, err)
		allowed := func(ns, group, resource, sub, verb, name string) bool {
			t.Helper()
			r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Group: group, Resource: resource, Subresource: sub, Verb: verb, Name: name}}}
			assert.NoError(t, c.Create(ctx, r)) // not require: called from goroutines
			return r.Status.Allowed
		}
		// What fedop does in a namespace (join.go's namespacedRules).
		want := map[string][]string{
			"/pods":                           {"get", "list", "watch", "create", "delete", "deletecollection"},
			"/pods/proxy":                     {"get"},
			"/services":                       {"get", "list", "watch", "create", "patch", "delete"},
			"/persistentvolumeclaims":         {"get", "list", "watch", "create", "patch", "delete"},
			"discovery.k8s.io/endpointslices": {"get", "list", "watch", "create", "patch", "delete"},
			"/endpoints":                      {"get", "delete"},
			"/events":                         {"create"},
			"events.k8s.io/events":            {"create"},
			"/pods/exec":                      nil,
			"/pods/log":                       nil,
			"/pods/eviction":                  nil,
			"/secrets":                        nil,
			"/configmaps":                     nil,
			"/serviceaccounts":                nil,
			"rbac.authorization.k8s.io/roles": nil,
			"apps/statefulsets":               nil,
		}
		verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		for ns, listed := range map[string]bool{"db": true, "cache": true, "other": false, "default": false} {
			for key, ok := range want {
				group, rest, _ := strings.Cut(key, "/")
				resource, sub, _ := strings.Cut(rest, "/")
				for _, verb := range verbs {
					exp := listed && slices.Contains(ok, verb)
					// Hundreds of reviews: sixteen at a time.
					sem <- struct{}{}
					wg.Go(func() {
						defer func() { <-sem }()
						assert.Equal(t, exp, allowed(ns, group, resource, sub, verb, ""), "%s %s in namespace %s", verb, key, ns)
					})
				}
			}
		}
		wg.Wait()
		// Cluster-wide: StorageClasses get only; no namespace, no node.
		assert.True(t, allowed("", "storage.k8s.io", "storageclasses", "", "get", "standard"))
		for _, verb := range []string{"list", "watch", "create", "delete"} {
			assert.False(t, allowed("", "storage.k8s.io", "storageclasses", "", verb, ""), verb+" storageclasses")
		}
		for _, verb := range []string{"get", "create", "list"} {
			assert.False(t, allowed("", "", "namespaces", "", verb, "db"), verb+" namespaces")
		}
		assert.False(t, allowed("", "", "nodes", "", "get", ""))
		// Tokens for itself only.
		assert.True(t, allowed("fedop-system", "", "serviceaccounts", "token", "create", "fedop-member"))
		assert.False(t, allowed("fedop-system", "", "serviceaccounts", "token", "create", "default"))
		assert.False(t, allowed("db", "", "serviceaccounts", "token", "create", "fedop-member"))
	})

	t.Run("joining again with fewer namespaces takes the rights in the others away", func(t *testing.T) {
		require.NoError(t, run("join", "k8s-a", "--member-kubeconfig", memberPath, "--namespaces", "db", "--token-duration", "10m"))
		var s corev1.Secret
		require.NoError(t, f.Host.Client.Get(ctx, client.ObjectKey{Namespace: member.DefaultNamespace, Name: "k8s-a"}, &s))
		assert.Equal(t, "db", s.Annotations[member.AnnotationNamespaces])
		joined = s.Data[member.KubeconfigKey]
		cfg, err := member.ParseKubeconfig(joined, false)
		require.NoError(t, err)
		c, err := client.New(cfg, client.Options{Scheme: Scheme()})
		require.NoError(t, err)
		for ns, want := range map[string]bool{"db": true, "cache": false} {
			r := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Resource: "pods", Verb: "create"}}}
			require.NoError(t, c.Create(ctx, r))
			assert.Equal(t, want, r.Status.Allowed, "create pods in %s", ns)
		}
	})

	t.Run("fedop-manager connects with the namespaced identity and renews the token before it expires", func(t *testing.T) {
		mgr, err := ctrl.NewManager(f.Host.Config, ctrl.Options{
			Scheme: Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
			Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}: {Namespaces: map[string]cache.Config{member.DefaultNamespace: {}}},
			}},
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
		})
		require.NoError(t, err)
		// A 10-minute token renewed after 0.3% of its lifetime: about 2s.
		reg := member.NewRegistry(member.Options{
			CacheSelector: labels.SelectorFromSet(labels.Set{"app.kubernetes.io/managed-by": "fedop"}),
			ProbePeriod:   500 * time.Millisecond, SyncTimeout: 10 * time.Second, RenewFraction: 0.003,
		})
		require.NoError(t, reg.SetupWithManager(mgr))
		mctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mctx) }()
		t.Cleanup(func() {
			stop()
			assert.NoError(t, <-done)
		})

		// The cache lists pods, Services and claims in db only:
		// connecting proves the Roles suffice for it.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			s := reg.State("k8s-a")
			assert.True(c, s.Connected, "%s: %s", s.Reason, s.Message)
		}, time.Minute, 50*time.Millisecond)
		first := reg.State("k8s-a").CredentialsExpiry
		require.False(t, first.IsZero())

		var renewed []byte
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var s corev1.Secret
			require.NoError(c, f.Host.Client.Get(ctx, client.ObjectKey{Namespace: member.DefaultNamespace, Name: "k8s-a"}, &s))
			renewed = s.Data[member.KubeconfigKey]
			assert.NotEqual(c, string(joined), string(renewed), "the token was not renewed")
		}, time.Minute, 100*time.Millisecond)
		kc, err := clientcmd.Load(renewed)
		require.NoError(t, err)
		old, err := clientcmd.Load(joined)
		require.NoError(t, err)
		assert.NotEqual(t, old.AuthInfos[serviceAccount].Token, kc.AuthInfos[serviceAccount].Token)
		old.AuthInfos[serviceAccount].Token = kc.AuthInfos[serviceAccount].Token
		assert.Equal(t, old, kc, "renewal changed more than the token")

		// The registry swaps to the renewed kubeconfig and stays connected.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			s := reg.State("k8s-a")
			assert.True(c, s.Connected)
			assert.True(c, s.CredentialsExpiry.After(first), "still on the first token, expiring %s", first)
			assert.Empty(c, s.CredentialsReason)
		}, time.Minute, 50*time.Millisecond)
		cl, err := reg.Get("k8s-a")
		require.NoError(t, err)
		var pods corev1.PodList
		assert.NoError(t, cl.GetClient().List(ctx, &pods, client.InNamespace("db")))
	})

	t.Run("unjoin removes the Secret and the member's RBAC", func(t *testing.T) {
		require.NoError(t, run("unjoin", "k8s-a", "--member-kubeconfig", memberPath))
		err := f.Host.Client.Get(ctx, client.ObjectKey{Namespace: member.DefaultNamespace, Name: "k8s-a"}, &corev1.Secret{})
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the Secret is still there: %v", err)
		cfg, err := member.ParseKubeconfig(joined, false)
		require.NoError(t, err)
		// The ServiceAccount is gone, so its tokens no longer authenticate.
		c, err := client.New(rest.CopyConfig(cfg), client.Options{Scheme: Scheme()})
		require.NoError(t, err)
		assert.Eventually(t, func() bool {
			return c.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "db", Resource: "pods", Verb: "get"}}}) != nil
		}, 30*time.Second, 100*time.Millisecond)
		assert.NoError(t, a.Client.Get(ctx, client.ObjectKey{Name: "db"}, &corev1.Namespace{}), "unjoin deleted a namespace")
	})
}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
