//go:build e2e

package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// This file sets the suite up: configuration, clients, the manager, and
// the decoys of scenario 10, created in every member before the first
// scenario. scenarios_test.go holds the scenarios, helpers_test.go what
// they share.

// fcNames are the FederationClusters of the scenarios, one per namespace:
// each scenario works in a namespace of its own, created (with decoys)
// before the first scenario runs.
var fcNames = []string{
	"create", "upgrade", "env", "scale", "kill", "down", "rotate", "bad", "delete", "delete-down",
	"stall", "identity", "partition", "stuck", "lost", "frozen", "storage", "hooks", "canary", "etcd",
	"discovery", "dns",
}

// suite is what every scenario shares.
var suite struct {
	cfg      Config
	provider *Provider
	// runID makes this run's namespaces and Secrets unique, so that the
	// suite can run twice against one set of clusters.
	runID string

	hostConfig *rest.Config
	host       client.Client
	// memberA and memberB are the first two members: they take the places
	// of k8s-a and k8s-b in the sample.
	memberA, memberB string
	memberConfigs    map[string]*rest.Config
	members          map[string]client.Client

	decoys []decoy

	// mu guards figures.
	mu      sync.Mutex
	figures []figure
}

// figure is one line of the closing summary: what a scenario's checker saw.
type figure struct {
	scenario string
	report   Report
	window   window
}

func TestMain(m *testing.M) {
	suite.cfg.RegisterFlags(flag.CommandLine)
	flag.Parse()
	if err := suite.cfg.Complete(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: configuration:", err)
		os.Exit(2)
	}
	quietClientLogs()

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	err := setup(ctx)
	cancel()
	code := 2
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: setup:", err)
	} else {
		code = m.Run()
		printFigures()
	}
	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: teardown:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// quietClientLogs sends client-go's and controller-runtime's logs of the
// suite's own clients to a file in the lab directory (or nowhere): while a
// member is down, its watches log an error a second, which would bury the
// test output.
func quietClientLogs() {
	logger := logr.Discard()
	if suite.cfg.LabDir != "" {
		if f, err := os.OpenFile(filepath.Join(suite.cfg.LabDir, "e2e-clients.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			var mu sync.Mutex
			logger = funcr.New(func(prefix, args string) {
				mu.Lock()
				defer mu.Unlock()
				// A log line that cannot be written has nowhere to be reported.
				_, _ = fmt.Fprintln(f, time.Now().Format(time.RFC3339Nano), prefix, args)
			}, funcr.Options{})
		}
	}
	klog.SetLogger(logger)
	ctrl.SetLogger(logger)
}

func setup(ctx context.Context) error {
	cfg := suite.cfg
	var err error
	if suite.provider, err = NewProvider(cfg); err != nil {
		return err
	}
	suite.runID = strconv.FormatInt(time.Now().Unix()%(36*36*36*36), 36)
	if suite.hostConfig, err = RESTConfig(cfg.HostKubeconfig); err != nil {
		return err
	}
	if suite.host, err = client.New(suite.hostConfig, client.Options{Scheme: Scheme}); err != nil {
		return err
	}
	if err := suite.host.List(ctx, &v1alpha1.FederationClusterList{}); err != nil {
		return fmt.Errorf("listing FederationClusters on the host (is the CRD installed?): %w", err)
	}
	suite.memberA, suite.memberB = cfg.Members[0].Name, cfg.Members[1].Name
	suite.memberConfigs = map[string]*rest.Config{}
	suite.members = map[string]client.Client{}
	for _, m := range cfg.Members {
		rc, err := RESTConfig(m.Kubeconfig)
		if err != nil {
			return err
		}
		c, err := client.New(rc, client.Options{Scheme: Scheme})
		if err != nil {
			return err
		}
		suite.memberConfigs[m.Name], suite.members[m.Name] = rc, c
	}

	// Namespaces and decoys, in the host and every member, before fedop
	// runs anything.
	for _, name := range fcNames {
		ns := namespaceOf(name)
		if err := createNamespace(ctx, suite.host, ns); err != nil {
			return fmt.Errorf("host: %w", err)
		}
		for _, m := range cfg.Members {
			if err := createNamespace(ctx, suite.members[m.Name], ns); err != nil {
				return fmt.Errorf("member %s: %w", m.Name, err)
			}
			ds, err := createDecoys(ctx, m.Name, ns, name)
			if err != nil {
				return fmt.Errorf("decoys in %s: %w", m.Name, err)
			}
			suite.decoys = append(suite.decoys, ds...)
		}
	}

	// Every member registered the provider's way, before the manager
	// starts: the lab's manager then reaches members through the suite's
	// proxies, which Partition freezes.
	for _, m := range cfg.Members {
		if err := suite.provider.Registrar.Register(ctx, m.Name, m.Name, RegisterOptions{}); err != nil {
			return fmt.Errorf("registering %s: %w", m.Name, err)
		}
	}
	if err := suite.provider.Manager.Start(ctx); err != nil {
		return err
	}
	id, _, _ := suite.provider.Manager.Running(ctx)
	fmt.Printf("e2e: provider %s, run %s, members %s and %s, fedop-manager %s\n", suite.provider.Name, suite.runID, suite.memberA, suite.memberB, id)
	return nil
}

// teardown brings every member up and heals it (a failed scenario may have
// left one down or partitioned) and stops the manager gracefully.
func teardown() error {
	if suite.provider == nil {
		return nil // setup failed before there was anything to undo
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []string
	for _, m := range suite.cfg.Members {
		if err := suite.provider.Members.Heal(ctx, m.Name); err != nil {
			errs = append(errs, err.Error())
		}
		if err := suite.provider.Members.Up(ctx, m.Name); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if err := suite.provider.Manager.Stop(ctx); err != nil {
		errs = append(errs, err.Error())
	}
	// The run's namespaces go, decoys and what a failed scenario left with
	// them: a node of a kind member takes 110 pods, and the next run on the
	// same clusters (make e2e-etcd after make e2e-kind) needs the room.
	// The deletions are not waited for; E2E_KEEP_NAMESPACES=1 keeps them
	// for a look after a failure.
	if os.Getenv("E2E_KEEP_NAMESPACES") == "" {
		clients := []client.Client{suite.host}
		for _, m := range suite.cfg.Members {
			clients = append(clients, suite.members[m.Name])
		}
		for _, name := range fcNames {
			for _, c := range clients {
				err := c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(name)}})
				if err != nil && !apierrors.IsNotFound(err) {
					errs = append(errs, fmt.Sprintf("deleting namespace %s: %v", namespaceOf(name), err))
				}
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// namespaceOf returns the namespace of the scenario whose
// FederationCluster is fcName.
func namespaceOf(fcName string) string {
	return "e2e-" + suite.runID + "-" + fcName
}

func createNamespace(ctx context.Context, c client.Client, name string) error {
	return c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// decoy is an object in a member that looks like fedop's by name and some
// labels, but lacks app.kubernetes.io/managed-by=fedop: fedop must never
// touch it (scenario 10).
type decoy struct {
	member string
	obj    client.Object
}

func (d decoy) String() string {
	kind := "pod"
	if _, ok := d.obj.(*corev1.Service); ok {
		kind = "service"
	}
	return fmt.Sprintf("%s %s/%s in %s", kind, d.obj.GetNamespace(), d.obj.GetName(), d.member)
}

// createDecoys creates, in namespace ns of member, decoys for the
// FederationCluster fcName:
//   - pod <fc>-pd-0-decoy, with only the template's app label;
//   - pod <fc>-pd-99, named like an ordinal of pd and carrying every label
//     of fedop's pods (instance, component, member) but managed-by;
//   - Service <fc>-decoy with the instance label.
func createDecoys(ctx context.Context, member, ns, fcName string) ([]decoy, error) {
	c := suite.members[member]
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "pd", Image: "pingcap/pd:v8.5.0"}}}
	useWorkload(&spec)
	// No readiness probe: nothing checks a decoy's readiness, and each
	// probe of the workload costs a shell (serve.sh) in the node. The
	// suite's decoys number 132 pods with three members, which probed
	// every second made a loaded kind node slower than the scenarios it
	// hosts.
	spec.Containers[0].ReadinessProbe = nil
	objs := []client.Object{
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName + "-pd-0-decoy", Labels: map[string]string{"app": fcName + "-pd"}},
			Spec:       *spec.DeepCopy(),
		},
		&corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName + "-pd-99", Labels: map[string]string{
				"app": fcName + "-pd", v1alpha1.LabelInstance: fcName, v1alpha1.LabelComponent: "pd", v1alpha1.LabelMember: member,
			}},
			Spec: *spec.DeepCopy(),
		},
		&corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fcName + "-decoy", Labels: map[string]string{v1alpha1.LabelInstance: fcName}},
			Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": fcName + "-pd"}},
		},
	}
	out := make([]decoy, 0, len(objs))
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return nil, err
		}
		out = append(out, decoy{member: member, obj: o})
	}
	return out, nil
}

// recordFigures keeps r as scenario's line of the closing summary.
func recordFigures(scenario string, r Report, w window) {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	suite.figures = append(suite.figures, figure{scenario: scenario, report: r, window: w})
}

// printFigures prints the closing summary: per scenario, what its checker
// saw in its measurement window.
func printFigures() {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	fmt.Println()
	fmt.Println("=== e2e checker figures: the suite's own watches and receive times; " +
		"unavailable = replicas that were up and are not; disrupted = those of them fedop took down (see e2e.Checker)")
	fmt.Println("    step overhead = previous step's replacement Ready (or removed pod gone) -> next pod's deletionTimestamp; " +
		"includes spec.minReadySeconds=2 (fedop waits 1-2s of it: Ready times have a one-second resolution)")
	fmt.Printf("%-40s %7s %6s %9s %5s %8s %8s %8s %8s\n", "scenario", "maxDisr", "maxUnv", "deletions", "steps", "p50", "p90", "p99", "max")
	var clean, all []time.Duration
	maxUnavailable, maxDisrupted := 0, 0
	for _, f := range suite.figures {
		maxUnavailable = max(maxUnavailable, f.report.MaxUnavailable)
		maxDisrupted = max(maxDisrupted, f.report.MaxDisrupted)
		name := f.scenario
		var o []time.Duration
		switch f.window {
		case windowRollout:
			o = f.report.Overheads()
			clean = append(clean, o...)
			all = append(all, o...)
		case windowFaults:
			o = f.report.Overheads()
			all = append(all, o...)
			name += " *"
		case windowTeardown:
			name += " (teardown)"
		}
		fmt.Printf("%-40s %7d %6d %9d %5d %8s %8s %8s %8s\n", name, f.report.MaxDisrupted, f.report.MaxUnavailable, len(f.report.Deletions), len(o),
			pct(o, 50), pct(o, 90), pct(o, 99), pct(o, 100))
	}
	fmt.Printf("%-40s %7s %6s %9s %5d %8s %8s %8s %8s\n", "steps without faults", "", "", "",
		len(clean), pct(clean, 50), pct(clean, 90), pct(clean, 99), pct(clean, 100))
	fmt.Printf("%-40s %7d %6d %9s %5d %8s %8s %8s %8s\n", "all", maxDisrupted, maxUnavailable, "",
		len(all), pct(all, 50), pct(all, 90), pct(all, 99), pct(all, 100))
	fmt.Println("    * faults injected during the window (kills, a member down, rotated credentials): its steps include the faults' time")
	fmt.Println("    (teardown): a deletion of the FederationCluster, all pods at once by design: no steps")
}

func pct(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "-"
	}
	if p == 100 {
		return fmtDuration(slices.Max(ds))
	}
	return fmtDuration(Percentile(ds, p))
}
