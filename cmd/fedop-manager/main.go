// Command fedop-manager runs fedop: the member registry (one informer cache
// per member cluster registered as a kubeconfig Secret) and the
// FederationCluster reconciler. It runs in-cluster or locally against the
// cluster in $KUBECONFIG (the host).
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/internal/version"
	"github.com/fedop-io/fedop/member"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr, probeAddr, pprofAddr, leaderElectionID string
		leaderElectionNamespace                             string
		leaderElect                                         bool
		memberOpts                                          member.Options
		workers                                             int
		discoveryBatch                                      time.Duration
	)
	var (
		secureMetrics, enableHTTP2, showVersion bool
		metricsCertDir                          string
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "The address the metrics endpoint binds to; \"0\" disables it.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true, "Serve metrics over HTTPS, to clients that authenticate with a bearer token the host's TokenReview accepts and that a SubjectAccessReview allows to get /metrics (ClusterRole fedop-metrics-reader). false serves plain, unauthenticated HTTP: for labs and benchmarks only.")
	flag.StringVar(&metricsCertDir, "metrics-cert-dir", "", "A directory holding the metrics server's tls.crt and tls.key (for example a mounted cert-manager Secret), reloaded when they change; when empty, or when either file is missing, a self-signed certificate is generated at start.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false, "Allow HTTP/2 on the metrics server. Off by default, as kubebuilder scaffolds, because of the HTTP/2 Stream Cancellation and Rapid Reset CVEs (GHSA-qppj-fm5r-hxr3, GHSA-4374-p667-p6c8).")
	flag.BoolVar(&showVersion, "version", false, "Print the version and commit and exit.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address the health probe endpoint binds to; \"0\" disables it.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "0", "The address the pprof endpoint (/debug/pprof/) binds to; \"0\" disables it. It serves profiles unauthenticated: bind it to localhost.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Enable leader election, so that only one manager is active at a time.")
	flag.StringVar(&leaderElectionID, "leader-election-id", "fedop-manager.fedop.io", "The name of the leader election Lease.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "The namespace of the leader election Lease; empty means the manager's own namespace in-cluster (fedop-system when run locally).")
	flag.StringVar(&memberOpts.Namespace, "member-namespace", member.DefaultNamespace, "The host namespace of member cluster Secrets (label fedop.io/member-cluster=true, kubeconfig in data key kubeconfig or value).")
	flag.BoolVar(&memberOpts.AllowExecKubeconfigs, "allow-exec-kubeconfigs", false, "Allow member kubeconfigs to use exec plugins, auth providers, basic auth, file references and proxy-url. Kubeconfig Secrets are untrusted input: leave this off unless every Secret's author is trusted with this process's privileges.")
	flag.DurationVar(&memberOpts.ProbePeriod, "member-probe-period", time.Second, "The freshness bound: no pod is deleted anywhere while a member in use has not answered within it. Each member's /readyz is probed twice per period.")
	flag.IntVar(&memberOpts.FailureThreshold, "member-failure-threshold", 10, "Failed probes in a row (half a probe period apart) after which a member is reported disconnected.")
	flag.DurationVar(&memberOpts.SyncTimeout, "member-sync-timeout", 30*time.Second, "How long one member's cache may take to start and sync.")
	flag.IntVar(&workers, "max-concurrent-reconciles", 4, "How many FederationClusters are reconciled in parallel (by each of the two controllers: rollout and discovery).")
	flag.DurationVar(&discoveryBatch, "discovery-batch-period", 100*time.Millisecond, "How long the discovery controller gathers pod, Service and EndpointSlice events before it writes the EndpointSlices they call for, as kube-controller-manager's --endpointslice-updates-batch-period: fewer writes, none in the way of a rollout step. 0 writes on every event.")
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	if showVersion {
		fmt.Println("fedop-manager", version.Get())
		return nil
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("host cluster config: %w", err)
	}
	cfg.UserAgent = version.UserAgent("fedop-manager")
	if leaderElect && leaderElectionNamespace == "" {
		if _, err := os.Stat("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err != nil {
			leaderElectionNamespace = member.DefaultNamespace
		}
	}
	// Metrics as kubebuilder serves them: HTTPS with authentication and
	// authorization delegated to the host's API server, HTTP/1.1 only.
	metricsOpts := metricsserver.Options{BindAddress: metricsAddr, SecureServing: secureMetrics, CertDir: metricsCertDir}
	if secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if !enableHTTP2 {
		metricsOpts.TLSOpts = append(metricsOpts.TLSOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        probeAddr,
		PprofBindAddress:              pprofAddr,
		LeaderElection:                leaderElect,
		LeaderElectionID:              leaderElectionID,
		LeaderElectionNamespace:       leaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache: cache.Options{
			// The manager reads Secrets only where members are registered,
			// and only registration Secrets: its RBAC allows no more.
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}: {
					Namespaces: map[string]cache.Config{memberOpts.Namespace: {}},
					Label:      labels.SelectorFromSet(labels.Set{member.LabelMemberCluster: "true"}),
				},
			},
		},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}

	memberOpts.Scheme = scheme
	memberOpts.CacheSelector = v1alpha1.ManagedBySelector()
	// Member caches keep of each pod only what the reconciler reads, sync
	// every kind it reads before a member counts as connected, and index
	// it by FederationCluster.
	memberOpts.Transform = federation.TrimPod
	memberOpts.Objects = federation.CachedObjects()
	memberOpts.IndexFields = federation.CachedIndexes()
	registry := member.NewRegistry(memberOpts)
	if err := registry.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the member registry: %w", err)
	}
	hostname, _ := os.Hostname()
	identity := fmt.Sprintf("%s_%d", hostname, os.Getpid())
	rec := federation.NewReconciler(federation.Options{
		Client:                  mgr.GetClient(),
		Members:                 registry,
		Recorder:                mgr.GetEventRecorder("fedop-manager"),
		Identity:                identity,
		MaxConcurrentReconciles: workers,
		DiscoveryBatchPeriod:    discoveryBatch,
	})
	ctx := ctrl.SetupSignalHandler()
	if err := rec.SetupWithManager(ctx, mgr); err != nil {
		return fmt.Errorf("setting up the FederationCluster controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	log.Info("Starting fedop-manager", "version", version.Get().Version, "commit", version.Get().Commit,
		"memberNamespace", memberOpts.Namespace, "allowExecKubeconfigs", memberOpts.AllowExecKubeconfigs, "identity", identity)
	return mgr.Start(ctx)
}
