package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/e2e"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// Item 7: discovery: a pod IP change followed into every member's
// EndpointSlices, and the slice writes per replaced pod. Section 7 of the
// report (writeDiscoveryDetails) says how, and how it differs from e2e
// scenario 20's e2e.SliceWatch (every change of a pod, in the exact form
// the slices must take, against one thing here: the new IP).

const (
	// discoveryName is item 7's FederationCluster; discoveryPerMember its
	// pods per component (pd, tikv) per member.
	discoveryName      = "disc"
	discoveryPerMember = 2
	// discoveryIdle is the window before the first replacement over which
	// slice writes are counted with nothing changing.
	discoveryIdle = 10 * time.Second
	// replacementTimeout bounds one replacement, from the deletion to the
	// new IP listed everywhere and the FederationCluster settled.
	replacementTimeout = time.Minute
	// discoveryPoll is how often the watches' records are checked for the
	// end of a replacement; every time measured comes from the records.
	discoveryPoll = 20 * time.Millisecond
	// targetDiscoveryP99 is the Discovery issue's target on the lab (e2e
	// scenario 20).
	targetDiscoveryP99 = time.Second
	// minReplacements is the fewest replacements a p99 is reported over.
	minReplacements = 20
	// spareIPs is how many free addresses item 7 gives the kwok IP pool of
	// each member before its FederationCluster is created.
	spareIPs = 32
)

// sliceWriteVerbs are the verbs of kube-apiserver's apiserver_request_total
// that write. A server-side apply, fedop's way of writing slices, is
// reported as APPLY, not PATCH.
var sliceWriteVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}

// replacement is one pod replaced in item 7.
type replacement struct {
	member, pod  string
	oldIP, newIP string
	// ipSeen is when the pod watch of member first saw the new instance
	// with an IP; listed holds, by member, when that member's slices were
	// first seen listing newIP for pod.
	ipSeen time.Time
	listed map[string]time.Time
}

// memberLatency returns the time from r.ipSeen to member m's slices
// listing the new IP, 0 if they did before the pod watch saw it (fedop's
// own watch of the pod can be quicker than the benchmark's), and whether
// they listed it at all.
func (r replacement) memberLatency(m string) (time.Duration, bool) {
	at, ok := r.listed[m]
	if !ok {
		return 0, false
	}
	return max(at.Sub(r.ipSeen), 0), true
}

// latency returns the replacement's propagation latency: the largest of
// members' latencies, and false if one of them never listed the IP.
func (r replacement) latency(members []string) (time.Duration, bool) {
	var d time.Duration
	for _, m := range members {
		l, ok := r.memberLatency(m)
		if !ok {
			return 0, false
		}
		d = max(d, l)
	}
	return d, true
}

// early counts the members whose slices listed the new IP before the pod
// watch saw it.
func (r replacement) early() int {
	n := 0
	for _, at := range r.listed {
		if at.Before(r.ipSeen) {
			n++
		}
	}
	return n
}

// discoveryResult is item 7's outcome.
type discoveryResult struct {
	members []string
	pods    int
	// replacements are the ones measured; reused counts those whose new
	// instance got the old one's IP again (there is no change to follow,
	// so they are left out of the latencies; their writes are counted).
	replacements []replacement
	reused       int
	// writes are the EndpointSlice write requests each member's
	// kube-apiserver served over the replacements, by member then verb;
	// idleWrites those over idleWindow before them.
	writes, idleWrites map[string]map[string]float64
	window, idleWindow time.Duration
}

// latencies returns the propagation latency of every measured
// replacement.
func (d *discoveryResult) latencies() []time.Duration {
	out := make([]time.Duration, 0, len(d.replacements))
	for _, r := range d.replacements {
		if l, ok := r.latency(d.members); ok {
			out = append(out, l)
		}
	}
	return out
}

// memberLatencies returns the latencies in the pod's own member (own) or
// in the other members.
func (d *discoveryResult) memberLatencies(own bool) []time.Duration {
	var out []time.Duration
	for _, r := range d.replacements {
		for _, m := range d.members {
			if (m == r.member) != own {
				continue
			}
			if l, ok := r.memberLatency(m); ok {
				out = append(out, l)
			}
		}
	}
	return out
}

// attempts is the number of pods replaced, IPs reused included.
func (d *discoveryResult) attempts() int { return len(d.replacements) + d.reused }

// writesPerReplacement returns the slice writes of every member per pod
// replaced, and by member and by verb.
func (d *discoveryResult) writesPerReplacement() (total float64, byMember, byVerb map[string]float64) {
	byMember, byVerb = map[string]float64{}, map[string]float64{}
	n := float64(max(d.attempts(), 1))
	for m, verbs := range d.writes {
		for v, c := range verbs {
			total += c / n
			byMember[m] += c / n
			byVerb[v] += c / n
		}
	}
	return total, byMember, byVerb
}

// sumWrites returns every count of w.
func sumWrites(w map[string]map[string]float64) float64 {
	total := 0.0
	for _, verbs := range w {
		for _, c := range verbs {
			total += c
		}
	}
	return total
}

// endpointSliceWrites returns, by verb, the EndpointSlice write requests
// a kube-apiserver's metrics count (apiserver_request_total), whatever
// their code.
func endpointSliceWrites(s scrape) map[string]float64 {
	out := map[string]float64{}
	for _, v := range sliceWriteVerbs {
		if n, ok := s.sum("apiserver_request_total", map[string]string{"resource": "endpointslices", "verb": v}); ok {
			out[v] = n
		}
	}
	return out
}

// writeDelta returns after minus before by member and verb, dropping
// zeros.
func writeDelta(before, after map[string]scrape) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for m, a := range after {
		b := endpointSliceWrites(before[m])
		out[m] = map[string]float64{}
		for v, n := range endpointSliceWrites(a) {
			if d := n - b[v]; d != 0 {
				out[m][v] = d
			}
		}
	}
	return out
}

// scrapeAPIServer reads the metrics of the kube-apiserver that rc talks
// to. at is when the answer came, before it is parsed.
func scrapeAPIServer(ctx context.Context, rc rest.Interface) (scrape, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	data, err := rc.Get().AbsPath("/metrics").SetHeader("Accept", "text/plain;version=0.0.4").DoRaw(ctx)
	at := time.Now()
	if err != nil {
		return scrape{}, fmt.Errorf("GET /metrics: %w", err)
	}
	samples, err := parseText(bytes.NewReader(data))
	if err != nil {
		return scrape{}, fmt.Errorf("GET /metrics: %w", err)
	}
	return scrape{at: at, samples: samples}, nil
}

// endpointKey is one endpoint of a slice: a pod's name and one address.
type endpointKey struct{ hostname, address string }

// sliceObserver watches fedop's EndpointSlices of some Services in one
// namespace of several members, with informers of its own, and records
// when each member's slices first listed each endpoint.
type sliceObserver struct {
	w *podwatch.Watch

	// mu guards listed: the informers of several members call in
	// concurrently.
	mu sync.Mutex
	// listed holds, by member, when its slices were first seen listing
	// each endpoint.
	listed map[string]map[endpointKey]time.Time
}

// startSliceObserver starts a sliceObserver of the slices of services in
// namespace ns of every member in members (name to config): those labelled
// kubernetes.io/service-name one of services and
// endpointslice.kubernetes.io/managed-by fedop.io. It returns once each
// watch has listed what exists.
func startSliceObserver(ctx context.Context, members map[string]*rest.Config, ns string, services []string) (*sliceObserver, error) {
	byService, err := labels.NewRequirement(discoveryv1.LabelServiceName, selection.In, services)
	if err != nil {
		return nil, err
	}
	byManager, err := labels.NewRequirement(discoveryv1.LabelManagedBy, selection.Equals, []string{v1alpha1.EndpointSliceManagedBy})
	if err != nil {
		return nil, err
	}
	o := &sliceObserver{listed: map[string]map[endpointKey]time.Time{}}
	for m := range members {
		o.listed[m] = map[endpointKey]time.Time{}
	}
	selector := labels.NewSelector().Add(*byService, *byManager).String()
	w, err := podwatch.StartInformers(ctx, podwatch.Options{Members: fastConfigs(members), Namespace: ns, Selector: func(string) string { return selector }},
		func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Discovery().V1().EndpointSlices().Informer()
		}, o.onSlice)
	if err != nil {
		return nil, fmt.Errorf("slice observer: %w", err)
	}
	o.w = w
	return o, nil
}

func (o *sliceObserver) stop() { o.w.Stop() }

func (o *sliceObserver) onSlice(member string, obj any, gone bool, at time.Time) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || gone {
		return // a slice that goes lists nothing new
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ep := range s.Endpoints {
		if ep.Hostname == nil {
			continue
		}
		for _, a := range ep.Addresses {
			k := endpointKey{*ep.Hostname, a}
			if _, seen := o.listed[member][k]; !seen {
				o.listed[member][k] = at
			}
		}
	}
}

// listedAt returns, by member, when its slices first listed address for
// pod; members that have not are absent.
func (o *sliceObserver) listedAt(pod, address string) map[string]time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]time.Time{}
	for m, byKey := range o.listed {
		if at, ok := byKey[endpointKey{pod, address}]; ok {
			out[m] = at
		}
	}
	return out
}

// discoveryPhase runs item 7 with the main manager: it creates
// FederationCluster discoveryName on the lab's first two members, counts
// the slice writes of an idle window, replaces pods until b.replacements
// IP changes were measured, and deletes the FederationCluster (waiting for
// the manager's cleanup, so that item 4 finds only its own pods).
func (b *bench) discoveryPhase(ctx context.Context) (err error) {
	res := &b.res.discovery
	res.members = b.options.members[:2]
	image := imagePrefix + "disc-0"
	fc := stepFederation(discoveryName, components, res.members, discoveryPerMember, image)
	res.pods = 2 * len(res.members) * discoveryPerMember
	key := client.ObjectKeyFromObject(fc)
	if err := b.spareIPPools(ctx, spareIPs); err != nil {
		return err
	}
	pods, err := b.observeFederation(ctx, fc.Name)
	if err != nil {
		return err
	}
	defer pods.Stop()
	services := make([]string, 0, len(components))
	for _, c := range components {
		services = append(services, fc.Name+"-"+c)
	}
	sl, err := startSliceObserver(ctx, b.labConfigs(), namespace, services)
	if err != nil {
		return err
	}
	defer sl.stop()
	if err := b.host.Create(ctx, fc); err != nil {
		return fmt.Errorf("creating FederationCluster %s: %w", fc.Name, err)
	}
	defer func() {
		if derr := b.deleteFederation(key, pods); derr != nil && err == nil {
			err = derr
		}
	}()

	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := pods.waitRolledOut(sctx, image, res.pods); err != nil {
		return fmt.Errorf("creating %s: %w", fc.Name, err)
	}
	if err := waitFederationSettled(sctx, b.host, key, int32(res.pods)); err != nil {
		return err
	}
	targets := liveRecords(pods)
	err = wait.PollUntilContextCancel(sctx, discoveryPoll, true, func(context.Context) (bool, error) {
		for _, t := range targets {
			if len(sl.listedAt(t.Name, t.IP)) < len(res.members) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for every pod of %s in the slices of every member: %w", fc.Name, err)
	}
	b.logf("FederationCluster %s: %d pods over %v, every IP in the slices of every member", fc.Name, len(targets), res.members)

	s0, err := b.scrapeLabMembers(ctx, res.members)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(discoveryIdle):
	}
	s1, err := b.scrapeLabMembers(ctx, res.members)
	if err != nil {
		return err
	}
	res.idleWrites, res.idleWindow = writeDelta(s0, s1), s1[res.members[0]].at.Sub(s0[res.members[0]].at)
	b.logf("EndpointSlice writes in %s with nothing changing: %.0f", ms(res.idleWindow), sumWrites(res.idleWrites))

	start := time.Now()
	for i := 0; len(res.replacements) < b.replacements; i++ {
		if i >= 2*b.replacements {
			return fmt.Errorf("%d of %d replacements gave the pod its old IP again: too few IP changes to measure", res.reused, i)
		}
		t := targets[i%len(targets)]
		r, err := b.replace(ctx, key, pods, sl, res.members, t.Member, t.Name, res.pods)
		if err != nil {
			return fmt.Errorf("replacement %d, %s/%s: %w", i+1, t.Member, t.Name, err)
		}
		if r.newIP == r.oldIP {
			res.reused++
			b.logf("Replacement %d, %s/%s: the new instance has the old IP %s again; not measured", i+1, t.Member, t.Name, r.oldIP)
			continue
		}
		res.replacements = append(res.replacements, r)
		l, _ := r.latency(res.members)
		b.logf("Replacement %d, %s/%s: %s -> %s, in every member's slices %s after the pod watch saw it", i+1, t.Member, t.Name, r.oldIP, r.newIP, ms(l))
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(eventGrace):
	}
	s2, err := b.scrapeLabMembers(ctx, res.members)
	if err != nil {
		return err
	}
	res.writes, res.window = writeDelta(s1, s2), time.Since(start)
	total, _, _ := res.writesPerReplacement()
	lat := res.latencies()
	b.logf("Discovery: %d replacements (%d gave the old IP again): p50 %s p99 %s max %s; %.2f EndpointSlice writes per replacement",
		res.attempts(), res.reused, ms(e2e.Percentile(lat, 50)), ms(e2e.Percentile(lat, 99)), ms(e2e.Percentile(lat, 100)), total)
	return nil
}

// liveRecords returns o's live instances, by cluster then name: the order
// item 7 replaces them in.
func liveRecords(o *observer) []podRecord {
	var out []podRecord
	for _, r := range o.Records() {
		if r.Live() {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Member != out[j].Member {
			return out[i].Member < out[j].Member
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// replace deletes pod name in member, as kubectl delete does (the pod's
// grace period, which the lab's kwok ends at once) with its UID as a
// precondition, and returns once the new instance's IP is in the slices
// of every one of members and the FederationCluster key (of want pods) has
// settled, so that the next replacement starts from rest.
func (b *bench) replace(ctx context.Context, key client.ObjectKey, pods *observer, sl *sliceObserver, members []string,
	member, name string, want int) (replacement, error) {
	old, ok := pods.live(member, name)
	if !ok {
		return replacement{}, fmt.Errorf("no live instance (%s)", pods.describe())
	}
	r := replacement{member: member, pod: name, oldIP: old.IP}
	ctx, cancel := context.WithTimeout(ctx, replacementTimeout)
	defer cancel()
	err := b.members[member].CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(old.UID))})
	if err != nil {
		return r, fmt.Errorf("deleting: %w", err)
	}
	err = wait.PollUntilContextCancel(ctx, discoveryPoll, false, func(context.Context) (bool, error) {
		n, ok := pods.live(member, name)
		if !ok || n.UID == old.UID || n.IP == "" {
			return false, nil
		}
		r.newIP, r.ipSeen = n.IP, n.IPAt
		r.listed = sl.listedAt(name, n.IP)
		return len(r.listed) == len(members), nil
	})
	if err != nil {
		return r, fmt.Errorf("waiting for the new instance's IP (%q) in the slices of every member (listed in %v): %w",
			r.newIP, slices.Sorted(maps.Keys(r.listed)), err)
	}
	return r, waitFederationSettled(ctx, b.host, key, int32(want))
}

// spareIPPools gives the kwok controller of each of the lab's first two
// members n free addresses. kwok v0.8.0's IP pool
// (pkg/kwok/controllers/utils.go, ipPool) gives a pod an address freed
// earlier before a new one, so a pod replaced alone would get its previous
// instance's address back, and its replacement would change no IP. The
// benchmark creates n pods of its own bound to nodes, waits until kwok
// gave each an address, and deletes them: kwok frees their addresses, and
// a replaced pod then draws one of n+1 (the first of a Go map's
// iteration), its old one only by chance.
func (b *bench) spareIPPools(ctx context.Context, n int) error {
	members, sel := b.options.members[:2], unrelatedLabel+"=true"
	obs, err := startObserver(ctx, b.labConfigs(), sel)
	if err != nil {
		return err
	}
	defer obs.Stop()
	count := func(ok func(podRecord) bool) int {
		c := 0
		for _, r := range obs.Records() {
			if ok(r) {
				c++
			}
		}
		return c
	}
	for _, m := range members {
		if err := createUnrelated(ctx, b.members[m], n, 8); err != nil {
			return err
		}
	}
	withIP := func(context.Context) (bool, error) {
		return count(func(r podRecord) bool { return r.Live() && r.IP != "" }) == n*len(members), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, withIP); err != nil {
		return fmt.Errorf("waiting for kwok to give %d pods in each of %v an IP: %w", n, members, err)
	}
	for _, m := range members {
		err := b.members[m].CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)},
			metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return fmt.Errorf("deleting the spare IPs' pods in %s: %w", m, err)
		}
	}
	gone := func(context.Context) (bool, error) {
		return count(func(r podRecord) bool { return r.GoneAt.IsZero() }) == 0, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, gone); err != nil {
		return fmt.Errorf("waiting for the spare IPs' pods to go: %w", err)
	}
	b.logf("Gave the kwok IP pools of %v %d free addresses each", members, n)
	return nil
}

// scrapeLabMembers reads the metrics of the kube-apiserver of each of
// members, by member.
func (b *bench) scrapeLabMembers(ctx context.Context, members []string) (map[string]scrape, error) {
	out := map[string]scrape{}
	for _, m := range members {
		s, err := scrapeAPIServer(ctx, b.members[m].Discovery().RESTClient())
		if err != nil {
			return nil, fmt.Errorf("the metrics of %s: %w", m, err)
		}
		out[m] = s
	}
	return out, nil
}

// deleteFederation deletes FederationCluster key and waits, at most two
// minutes, until it is gone (the manager's finalizer has run) and pods has
// no live pod of it left.
func (b *bench) deleteFederation(key client.ObjectKey, pods *observer) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	if err := b.host.Delete(ctx, fc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting FederationCluster %s: %w", key, err)
	}
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		// Another error is the host's passing trouble: asked again next time.
		err := b.host.Get(ctx, key, fc)
		return apierrors.IsNotFound(err) && len(liveRecords(pods)) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for FederationCluster %s and its pods to go: %w (%s)", key, err, pods.describe())
	}
	return nil
}
