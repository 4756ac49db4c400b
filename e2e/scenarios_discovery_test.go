//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Scenarios of the Discovery issue: every pod resolvable by its stable name
// from every member. This file sorts before scenarios_test.go, so scenario
// 10's decoy sweep stays last.

// discoveryReplacements is how many replacements scenario 20 measures.
const discoveryReplacements = 20

// assertSlices waits until every member's slices and Services of fc match
// the pods of every member (CheckSlices).
func (s *scenario) assertSlices(fc *v1alpha1.FederationCluster, when string) {
	s.t.Helper()
	members := map[string]client.Reader{}
	for _, m := range s.members() {
		members[m] = s.memberClient(m)
	}
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		diffs, err := CheckSlices(context.Background(), fc, members)
		require.NoError(c, err)
		assert.Empty(c, diffs)
	}, waitTimeout, poll, "slices %s", when)
}

// applyEarlierService applies, in member, component's Service as fedop
// applied it before it wrote slices: with a selector on its pods. Where
// kube-controller-manager runs, its EndpointSlice and endpoints
// controllers then make a slice and an Endpoints object of it.
func (s *scenario) applyEarlierService(member, component string) {
	s.t.Helper()
	ac := corev1ac.Service(s.name+"-"+component, s.ns).
		WithLabels(map[string]string{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: s.name,
			v1alpha1.LabelComponent: component, v1alpha1.LabelMember: member,
		}).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: s.name, v1alpha1.LabelComponent: component}).
			WithPorts(corev1ac.ServicePort().WithName("client").WithPort(2379), corev1ac.ServicePort().WithName("peer").WithPort(2380)).
			WithPublishNotReadyAddresses(true))
	require.NoError(s.t, s.memberClient(member).Apply(s.t.Context(), ac, client.FieldOwner(v1alpha1.FieldManager)), "applying the earlier Service in %s", member)
}

// TestScenario20DiscoverySlices: in every member, each component's Service
// is backed by fedop's EndpointSlices listing the pods of both members
// (there is no DNS on the lab's fake nodes; scenario 21 resolves names on
// kind). An earlier fedop's pd Service, with a selector, is taken over in
// place, and what kube-controller-manager made of it goes. The slices
// follow a replaced pod, keep a partitioned member's pods (not serving)
// and take them back when it heals. Then the propagation of
// discoveryReplacements replacements to every member's slices is measured
// (SliceWatch) and logged: the target is p99 under 1s on the lab.
func TestScenario20DiscoverySlices(t *testing.T) {
	s := begin(t, "20 discovery: every member's slices list every pod", "discovery")
	a, b, n := suite.memberA, suite.memberB, s.name
	for _, m := range []string{a, b} {
		s.applyEarlierService(m, "pd")
	}
	// kube-controller-manager made the earlier Service a slice of its own
	// (an empty one: no pod yet) in both members.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, m := range []string{a, b} {
			var list discoveryv1.EndpointSliceList
			require.NoError(c, s.memberClient(m).List(context.Background(), &list, client.InNamespace(s.ns),
				client.MatchingLabels{discoveryv1.LabelServiceName: n + "-pd", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}))
			assert.NotEmpty(c, list.Items, "the EndpointSlice controller's slice in %s", m)
		}
	}, waitTimeout, poll)
	before := map[string]types.UID{}
	for _, m := range []string{a, b} {
		var svc corev1.Service
		require.NoError(t, s.memberClient(m).Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: n + "-pd"}, &svc))
		before[m] = svc.UID
	}

	fc, _ := s.createSample()
	s.assertSlices(fc, "of the sample")
	for _, m := range []string{a, b} {
		var svc corev1.Service
		require.NoError(t, s.memberClient(m).Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: n + "-pd"}, &svc))
		assert.Equal(t, before[m], svc.UID, "the earlier Service in %s was replaced, not updated in place", m)
		// With the selector gone, the endpoints controller's Endpoints
		// object went too (fedop deleted it), or the mirroring controller
		// would keep its stale addresses as slices.
		ep := &unstructured.Unstructured{}
		ep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
		err := s.memberClient(m).Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: n + "-pd"}, ep)
		assert.True(t, apierrors.IsNotFound(err), "Endpoints %s-pd in %s: %v", n, m, err)
	}

	// A replaced pod: its new instance, in every member.
	s.kill(b, n+"-pd-2")
	s.settle()
	s.assertSlices(fc, "after a replacement")

	// A partitioned member: its pods stay listed everywhere, not serving,
	// and serve again once it heals.
	s.partition(b)
	s.waitCondition(v1alpha1.ConditionMembersConnected, metav1.ConditionFalse, v1alpha1.ReasonMemberDisconnected, names([]string{b}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var sl discoveryv1.EndpointSlice
		require.NoError(c, s.memberClient(a).Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: n + "-tikv." + b + ".ipv4"}, &sl))
		var hosts []string
		for _, e := range sl.Endpoints {
			hosts = append(hosts, *e.Hostname)
			assert.False(c, *e.Conditions.Serving, "%s serves", *e.Hostname)
			assert.True(c, *e.Conditions.Ready, "%s is no longer published", *e.Hostname)
		}
		assert.Equal(c, []string{n + "-tikv-2"}, hosts)
	}, waitTimeout, poll, "%s's pods in %s while %s is partitioned", b, a, b)
	s.heal(b)
	s.settle()
	s.assertSlices(fc, "after the partition healed")

	// The figures.
	cfgs := map[string]*rest.Config{}
	for _, m := range s.members() {
		cfgs[m] = suite.memberConfigs[s.clusters[m]]
	}
	w, err := StartSliceWatch(t.Context(), SliceWatchOptions{Members: cfgs, Namespace: s.ns, Name: n})
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	for i := range discoveryReplacements {
		pod := n + "-pd-2"
		if i%2 == 1 {
			pod = n + "-tikv-2"
		}
		s.kill(b, pod)
		s.settle()
		s.assertSlices(fc, "after a replacement")
	}
	require.Eventually(t, func() bool { return w.Report().Pending == 0 }, waitTimeout, poll, "changes not seen in every member: %+v", w.Report())
	r := w.Report()
	t.Logf("discovery (%s): %s", suite.provider.Name, r.Summary())
	assert.Equal(t, discoveryReplacements, r.Deletions)
	assert.GreaterOrEqual(t, r.Changes, discoveryReplacements, "every replacement's new pod was seen in every member")
	s.finish(windowFaults)
}

// proberScript runs in a pod of the workload image (busybox only: no
// getent, whose glibc needs NSS libraries a static image lacks; busybox
// nslookup asks the pod's cluster DNS itself) and prints, five times a
// second, "probe <first IPv4 $NAME resolves to> <HTTP status of GET / on
// it, port $PORT>", "-" for what failed.
const proberScript = `while :; do
  ip=$(nslookup "$NAME" 2>/dev/null | awk '/^Name:/ {f=1; next} f && match($0, /[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+/) {print substr($0, RSTART, RLENGTH); exit}')
  code=
  if [ -n "$ip" ]; then
    code=$(printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 2 "$ip" "$PORT" 2>/dev/null | awk 'NR == 1 {print $2}')
  fi
  echo "probe ${ip:--} ${code:--}"
  usleep 200000
done`

// prober is a pod that resolves one name again and again and calls what
// it resolves to (proberScript); its lines are read from its log, stamped
// by the member's container runtime.
type prober struct {
	// mu guards lines.
	mu    sync.Mutex
	lines []probeLine
}

type probeLine struct {
	at       time.Time
	ip, code string
}

// startProber runs a prober of name fqdn in member, in the scenario's
// namespace, until the test ends.
func (s *scenario) startProber(member, fqdn string) *prober {
	s.t.Helper()
	c := s.memberClient(member)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "dns-prober"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           suite.cfg.WorkloadImage + ":v8.5.0",
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/bin/busybox", "sh", "-c", proberScript},
				Env:             []corev1.EnvVar{{Name: "NAME", Value: fqdn}, {Name: "PORT", Value: fmt.Sprint(suite.cfg.WorkloadPort)}},
			}},
		},
	}
	require.NoError(s.t, c.Create(s.t.Context(), pod), "creating the prober in %s", member)
	s.t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		_ = c.Delete(ctx, pod, client.GracePeriodSeconds(0))
	})
	require.EventuallyWithT(s.t, func(c2 *assert.CollectT) {
		require.NoError(c2, c.Get(context.Background(), client.ObjectKeyFromObject(pod), pod))
		assert.Equal(c2, corev1.PodRunning, pod.Status.Phase)
	}, waitTimeout, poll, "the prober in %s does not run", member)

	cs, err := kubernetes.NewForConfig(suite.memberConfigs[s.clusters[member]])
	require.NoError(s.t, err)
	stream, err := cs.CoreV1().Pods(s.ns).GetLogs(pod.Name, &corev1.PodLogOptions{Follow: true, Timestamps: true}).Stream(s.t.Context())
	require.NoError(s.t, err, "following the prober's log")
	p := &prober{}
	go func() {
		defer func() { _ = stream.Close() }() // read until it ends; closing is all that is left
		sc := bufio.NewScanner(stream)
		for sc.Scan() {
			f := strings.Fields(sc.Text()) // <timestamp> probe <ip> <code>
			if len(f) != 4 || f[1] != "probe" {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, f[0])
			if err != nil {
				continue
			}
			p.mu.Lock()
			p.lines = append(p.lines, probeLine{at: at, ip: f[2], code: f[3]})
			p.mu.Unlock()
		}
	}()
	return p
}

// waitFor waits until the prober resolved the name to ip (and, unless code
// is empty, got HTTP status code from it), and returns when it first did.
func (p *prober) waitFor(t *testing.T, ip, code string) time.Time {
	t.Helper()
	var at time.Time
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.lines {
			if l.ip == ip && (code == "" || l.code == code) {
				at = l.at
				return true
			}
		}
		return false
	}, waitTimeout, poll, "the prober never resolved to %s with status %q; last lines: %v", ip, code, p.last(5))
	return at
}

func (p *prober) last(n int) []probeLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]probeLine(nil), p.lines[max(0, len(p.lines)-n):]...)
}

// TestScenario21DiscoveryDNS: from a pod in k8s-a, the stable name of a pod
// in k8s-b, <pod>.<fc>-pd.<namespace>.svc.cluster.local, resolves through
// k8s-a's cluster DNS to that pod's IP, and an HTTP request to it on the
// workload's port answers across the flat pod network; after the pod is
// replaced, the name resolves to the new IP within seconds. It needs pods
// that run and cluster DNS (kind); the lab's fake nodes have neither.
func TestScenario21DiscoveryDNS(t *testing.T) {
	if suite.cfg.WorkloadImage == "" {
		t.Skip("needs running pods and cluster DNS (kind, E2E_WORKLOAD_IMAGE); the lab's fake nodes have neither (scenario 20 checks the slices there)")
	}
	s := begin(t, "21 discovery: names resolve across members", "dns")
	a, b, n := suite.memberA, suite.memberB, s.name
	s.createSample()
	target := n + "-pd-2" // in k8s-b
	key := b + "/" + target
	fqdn := fmt.Sprintf("%s.%s-pd.%s.svc.cluster.local", target, n, s.ns)
	p := s.startProber(a, fqdn)

	old := s.livePodsIn(t, b)[key]
	require.NotEmpty(t, old.Status.PodIP)
	p.waitFor(t, old.Status.PodIP, "200")
	t.Logf("%s resolves in %s to %s, %s's pod, which answers HTTP", fqdn, a, old.Status.PodIP, b)

	s.kill(b, target)
	var ip string
	var seen time.Time
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pod, ok := s.livePodsIn(c, b)[key]
		require.True(c, ok, "%s did not come back", key)
		require.NotEqual(c, old.UID, pod.UID)
		require.NotEmpty(c, pod.Status.PodIP, "no IP yet")
		ip, seen = pod.Status.PodIP, time.Now()
	}, settleTimeout, poll)
	assert.NotEqual(t, old.Status.PodIP, ip, "the replacement got the old IP: nothing to follow")
	resolved := p.waitFor(t, ip, "")
	t.Logf("%s resolved in %s to the replacement's IP %s %s after the suite saw the IP (poll %s)", fqdn, a, ip, resolved.Sub(seen).Round(time.Millisecond), poll)
	assert.Less(t, resolved.Sub(seen), 10*time.Second, "the name did not follow the replacement within seconds")
	p.waitFor(t, ip, "200")
	s.settle()
	s.finish(windowFaults)
}
