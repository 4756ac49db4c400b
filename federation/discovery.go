package federation

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// This file is discovery: every pod of a FederationCluster resolvable by
// its stable name, <pod>.<fc>-<component>.<namespace>.svc.<cluster domain>,
// from every member cluster. In every member that hosts a component, the
// component's headless Service has no selector: it is backed by
// EndpointSlices that fedop writes, one per member whose pods they list
// (and per address family), so that the member's DNS, which reads the
// slices of headless Services, answers for the pods of every member.
// fedop publishes addresses only: routing pod IPs between members (a flat
// pod network) is the environment's job.
//
// The slices are facts, not decisions: writing them changes no pod, so they
// are written by a controller of their own (reconcileDiscovery), on its
// own workqueue, whenever a pod, Service or slice changes, paused or not,
// without the status-flag mutex; no step waits for a slice write. Before
// a component's pods are created in a member, its Service and slices there
// are in place (act asks discoveryInPlace), so a pod that starts finds its
// peers at once.

const (
	// maxSliceEndpoints is the most endpoints the API takes in one
	// EndpointSlice.
	maxSliceEndpoints = 1000
	// labelEndpointsManagedBy marks, with value endpointsController, the
	// Endpoints object kube-controller-manager's endpoints controller keeps
	// for a Service with a selector.
	labelEndpointsManagedBy = "endpoints.kubernetes.io/managed-by"
	endpointsController     = "endpoint-controller"
	// mirroringController is the endpointslice.kubernetes.io/managed-by
	// value of slices mirrored from an Endpoints object.
	mirroringController = "endpointslicemirroring-controller.k8s.io"
)

// podsSource is what one member contributes to a component's slices: the
// pods fedop observes there, or, for a member it cannot see, the endpoints
// the slices last listed for it.
type podsSource struct {
	member string
	// connected says that pods are what the member's cache shows;
	// otherwise lastKnown stands for them.
	connected bool
	pods      []*corev1.Pod
	lastKnown []*discoveryv1.EndpointSlice
	// zone is the zone the placement's node selector pins its pods to, for
	// pods that do not carry the topology.kubernetes.io/zone label.
	zone string
}

// componentSlices returns the EndpointSlices fedop wants in member target
// for component of fc, whose Service has ports: for each source member and
// address family with endpoints, one slice named
// <fc>-<component>.<source>.<family> (split every maxSliceEndpoints, the
// later parts suffixed -1, -2, ...), its endpoints sorted by hostname.
func componentSlices(
	fc *v1alpha1.FederationCluster, component, target string, ports []discoveryv1.EndpointPort, sources []podsSource,
) []*discoveryv1.EndpointSlice {
	var out []*discoveryv1.EndpointSlice
	for _, src := range sources {
		byFamily := map[discoveryv1.AddressType][]discoveryv1.Endpoint{}
		if src.connected {
			for _, pod := range src.pods {
				for _, fe := range podEndpoints(fc, component, pod, src.member == target, src.zone) {
					if byFamily[fe.family] == nil {
						// Most pods have an address of each family the
						// first has: one allocation per family.
						byFamily[fe.family] = make([]discoveryv1.Endpoint, 0, len(src.pods))
					}
					byFamily[fe.family] = append(byFamily[fe.family], fe.endpoint)
				}
			}
		} else {
			for _, s := range src.lastKnown {
				for _, ep := range s.Endpoints {
					byFamily[s.AddressType] = append(byFamily[s.AddressType], notServing(ep))
				}
			}
		}
		for _, family := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
			eps := byFamily[family]
			slices.SortFunc(eps, func(a, b discoveryv1.Endpoint) int {
				return cmp.Or(strings.Compare(ptr.Deref(a.Hostname, ""), ptr.Deref(b.Hostname, "")), slices.Compare(a.Addresses, b.Addresses))
			})
			for part := 0; part*maxSliceEndpoints < len(eps); part++ {
				end := min(len(eps), (part+1)*maxSliceEndpoints)
				// Capped at its end, so that no slice's endpoints share
				// room with the next part's.
				chunk := eps[part*maxSliceEndpoints : end : end]
				out = append(out, newSlice(fc, component, target, src.member, family, part, ports, chunk))
			}
		}
	}
	return out
}

// SliceName is the name of the part-th EndpointSlice listing the pods of
// member source with addresses of family, for component's Service of fc:
// <fc>-<component>.<source>.<family>, and -<part> after it from the
// second part on. The Service name holds no dot and the family is the last
// label, so the name is unique per Service, member and family.
func SliceName(fc *v1alpha1.FederationCluster, component, source string, family discoveryv1.AddressType, part int) string {
	name := ServiceName(fc, component) + "." + source + "." + strings.ToLower(string(family))
	if part > 0 {
		name += "-" + strconv.Itoa(part)
	}
	return name
}

func newSlice(fc *v1alpha1.FederationCluster, component, target, source string, family discoveryv1.AddressType, part int,
	ports []discoveryv1.EndpointPort, eps []discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	labels := ownedLabels(fc, component, target)
	labels[v1alpha1.LabelPodsMember] = source
	labels[discoveryv1.LabelServiceName] = ServiceName(fc, component)
	labels[discoveryv1.LabelManagedBy] = v1alpha1.EndpointSliceManagedBy
	// kube-proxy skips the slices of headless Services by this label, as
	// it does the EndpointSlice controller's.
	labels[corev1.IsHeadlessService] = ""
	return &discoveryv1.EndpointSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: discoveryv1.SchemeGroupVersion.String(), Kind: "EndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      SliceName(fc, component, source, family, part),
			Namespace: fc.Namespace,
			Labels:    labels,
		},
		AddressType: family,
		Endpoints:   eps,
		Ports:       ports,
	}
}

// familyEndpoint is one endpoint of a pod and its address family.
type familyEndpoint struct {
	family   discoveryv1.AddressType
	endpoint discoveryv1.Endpoint
}

// podEndpoints returns pod's endpoint for each address family it has an IP
// of (at most one per family, in the order of its IPs), or none: a pod without an IP yet, one whose name is not fedop's, or
// one that has finished (phase Failed or Succeeded: its IP may already be
// another pod's) is not published.
//
// The conditions follow kube-controller-manager's EndpointSlice controller
// for a Service that publishes not-ready addresses: ready is true (CoreDNS
// answers only for ready endpoints, and a starting pod must find its
// peers), serving is the pod's Ready condition, terminating says it is
// being deleted. nodeName and targetRef name objects of the member the
// slice is written in, so only local pods (local) carry them.
//
// It is a slice, not a map by family: it runs for every pod in every
// member on every reconcile, and a one-entry map of endpoints cost about
// 1.6 KB a pod (BenchmarkComponentSlices).
func podEndpoints(fc *v1alpha1.FederationCluster, component string, pod *corev1.Pod, local bool, zone string) []familyEndpoint {
	if _, ok := rollout.ParseOrdinal(fc.Name, component, pod.Name); !ok ||
		pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return nil
	}
	ips := make([]string, 0, 2)
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = append(ips, pod.Status.PodIP)
	}
	if z := pod.Labels[corev1.LabelTopologyZone]; z != "" {
		zone = z
	}
	serving, _ := podwatch.ReadySince(pod)
	out := make([]familyEndpoint, 0, len(ips))
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			continue
		}
		family := discoveryv1.AddressTypeIPv6
		if ip.To4() != nil {
			family = discoveryv1.AddressTypeIPv4
		}
		if slices.ContainsFunc(out, func(fe familyEndpoint) bool { return fe.family == family }) {
			continue // one address per family, the first, as the EndpointSlice controller does
		}
		ep := discoveryv1.Endpoint{
			Addresses: []string{ip.String()},
			Hostname:  ptr.To(pod.Name),
			Conditions: discoveryv1.EndpointConditions{
				Ready:       ptr.To(true),
				Serving:     ptr.To(serving),
				Terminating: ptr.To(pod.DeletionTimestamp != nil),
			},
		}
		if zone != "" {
			ep.Zone = ptr.To(zone)
		}
		if local {
			if pod.Spec.NodeName != "" {
				ep.NodeName = ptr.To(pod.Spec.NodeName)
			}
			ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
		}
		out = append(out, familyEndpoint{family, ep})
	}
	return out
}

// notServing returns the last known endpoint ep of a pod in a member fedop
// cannot see: still published (the pod may well run: only fedop lost
// sight of it), but no longer said to be serving.
func notServing(ep discoveryv1.Endpoint) discoveryv1.Endpoint {
	out := *ep.DeepCopy()
	out.Conditions.Serving = ptr.To(false)
	out.NodeName, out.TargetRef = nil, nil
	return out
}

// slicePorts returns the ports of a Service's slices: the Service's, with
// the protocol defaulted to TCP as the API server defaults it.
func slicePorts(ports []corev1.ServicePort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(ports))
	for _, p := range ports {
		proto := cmp.Or(p.Protocol, corev1.ProtocolTCP)
		out = append(out, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port), Protocol: &proto})
	}
	return out
}

// sliceDrifted reports whether have differs from want in what fedop
// writes: want's labels, the address type, ports and endpoints.
func sliceDrifted(have, want *discoveryv1.EndpointSlice) bool {
	for k, v := range want.Labels {
		if hv, ok := have.Labels[k]; !ok || hv != v {
			return true
		}
	}
	return have.AddressType != want.AddressType ||
		!equality.Semantic.DeepEqual(have.Ports, want.Ports) ||
		!equality.Semantic.DeepEqual(have.Endpoints, want.Endpoints)
}

// zoneOf returns the zone a pod template's node selector pins it to.
func zoneOf(t *corev1.PodTemplateSpec) string {
	if t == nil {
		return ""
	}
	return t.Spec.NodeSelector[corev1.LabelTopologyZone]
}

// isOurs reports whether slice is one fedop writes.
func isOurs(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == v1alpha1.EndpointSliceManagedBy
}

// readSlices returns, by member, the EndpointSlices of fc's Services in the
// cache of every connected member of obs, as created for that member:
// fedop's, and those kube-controller-manager's controllers made while a
// Service still had a selector (they carry the Service's labels). The
// slices are the cache's own (cacheShared), read-only: a slice of a
// thousand endpoints was deep-copied per member on every reconcile.
func readSlices(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation) (map[string][]*discoveryv1.EndpointSlice, error) {
	out := map[string][]*discoveryv1.EndpointSlice{}
	for name, mv := range obs.members {
		if mv.cluster == nil {
			continue
		}
		var list discoveryv1.EndpointSliceList
		if err := mv.cluster.GetClient().List(ctx, &list, append(ofInstance(fc), cacheShared)...); err != nil {
			return nil, fmt.Errorf("listing EndpointSlices of member %s from its cache: %w", name, err)
		}
		for i := range list.Items {
			if list.Items[i].Labels[v1alpha1.LabelMember] == name {
				out[name] = append(out[name], &list.Items[i])
			}
		}
	}
	return out, nil
}

// sources returns what every placement of cv contributes to its slices in
// member target. A member that is not connected contributes the endpoints
// that target's slices last listed for it, or, if target has none (it
// joined meanwhile), another connected member's.
func (o *observation) sources(cv *componentView, target string) []podsSource {
	out := make([]podsSource, 0, len(cv.placements))
	for _, pv := range cv.placements {
		src := podsSource{member: pv.member, zone: zoneOf(pv.template)}
		if mv := o.members[pv.member]; mv != nil && mv.cluster != nil {
			src.connected, src.pods = true, pv.pods
		} else {
			src.lastKnown = o.lastKnown(cv.name, pv.member, target)
		}
		out = append(out, src)
	}
	return out
}

func (o *observation) lastKnown(component, source, target string) []*discoveryv1.EndpointSlice {
	others := slices.DeleteFunc(slices.Sorted(maps.Keys(o.slices)), func(m string) bool { return m == target })
	for _, m := range append([]string{target}, others...) {
		var found []*discoveryv1.EndpointSlice
		for _, s := range o.slices[m] {
			if isOurs(s) && s.Labels[v1alpha1.LabelComponent] == component && s.Labels[v1alpha1.LabelPodsMember] == source {
				found = append(found, s)
			}
		}
		if len(found) > 0 {
			return found
		}
	}
	return nil
}

// discoveryInPlace reports whether member's cache shows component's
// headless Service as fedop wants it and every EndpointSlice fedop wants
// there for it, so that a pod created there finds its peers at once. The
// slices' endpoints may lag by the pods that changed since their last
// write (a pod just created has no IP to publish yet); a slice that is
// wanted but missing is not in place. A member that has not answered
// within the freshness bound is not written (syncDiscovery): there the
// Service alone counts, as it did when that member last answered.
func (o *observation) discoveryInPlace(fc *v1alpha1.FederationCluster, memberName, component string) bool {
	cv, pv, mv := o.component(component), o.placement(component, memberName), o.members[memberName]
	if cv == nil || cv.spec == nil || pv == nil || mv == nil || mv.cluster == nil || pv.service == nil {
		return false
	}
	if !mv.state.Fresh {
		return true
	}
	svc := desiredService(fc, cv.spec, memberName)
	if serviceDrifted(pv.service, svc) {
		return false
	}
	for _, want := range componentSlices(fc, component, memberName, slicePorts(svc.Spec.Ports), o.sources(cv, memberName)) {
		if !slices.ContainsFunc(o.slices[memberName], func(s *discoveryv1.EndpointSlice) bool { return isOurs(s) && s.Name == want.Name }) {
			return false
		}
	}
	return true
}

// wakeBuffer is how many FederationClusters the discovery controller may
// hand the rolling controller (Reconciler.wake) before it waits.
const wakeBuffer = 1024

// reconcileDiscovery is the discovery controller's reconcile: it brings
// the FederationCluster's discovery objects in every member to what the
// member caches show (syncDiscovery). It writes nothing before fedop's
// finalizer is on, so cleanup removes all it wrote, and nothing once the
// FederationCluster is being deleted (cleanup's turn; a write already
// under way then is caught by cleanup, which keeps the finalizer until
// every member is clean). Failed writes are kept for the status the
// rolling controller writes (issueStore.setDiscovery), which is woken when
// they change, and returned for a rate-limited retry. It takes no mutex:
// the slices are facts, not decisions, and the rolling controller creates
// a component's pods in a member only once they are in place there
// (discoveryInPlace).
func (r *Reconciler) reconcileDiscovery(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fc := &v1alpha1.FederationCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, fc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	fc = r.status.current(fc)
	if !fc.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(fc, v1alpha1.Finalizer) {
		return reconcile.Result{}, nil
	}
	obs, err := r.observe(ctx, fc)
	if err != nil {
		return reconcile.Result{}, err
	}
	errs := r.syncDiscovery(ctx, fc, obs)
	msgs := make([]string, 0, len(errs))
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	if r.issues.setDiscovery(req.NamespacedName, msgs) {
		select {
		case r.wake <- event.GenericEvent{Object: fc}:
		case <-ctx.Done():
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// memberDiscovery is what syncing one member's discovery objects did.
type memberDiscovery struct {
	errs             []error
	applied, deleted int
}

// syncDiscovery brings every fresh member's discovery objects to what
// obs calls for: each component's headless Service where the member hosts
// it, and the EndpointSlices listing the component's pods in every member.
// Members are written in parallel, each with its own deadline, so that a
// member that stopped answering delays no other member's names. It returns
// one error per failed write.
func (r *Reconciler) syncDiscovery(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation) []error {
	var targets []string
	for name, mv := range obs.members {
		// A member that has not answered within the freshness bound is
		// not written: a write would wait for memberWriteTimeout and hold
		// this reconcile. Its slices catch up when it answers again (the
		// registry reports that change).
		if mv.cluster != nil && mv.state.Fresh {
			targets = append(targets, name)
		}
	}
	slices.Sort(targets)
	results := make([]memberDiscovery, len(targets))
	var wg sync.WaitGroup
	for i, name := range targets {
		wg.Go(func() { results[i] = syncMemberDiscovery(ctx, fc, obs, name) })
	}
	wg.Wait()
	var errs []error
	for i, res := range results {
		errs = append(errs, res.errs...)
		if res.applied+res.deleted > 0 {
			ctrl.LoggerFrom(ctx).V(1).Info("Wrote discovery objects", "member", targets[i], "applied", res.applied, "deleted", res.deleted)
		}
	}
	return errs
}

// syncMemberDiscovery syncs member target: the Services of the components
// it hosts first (they create the namespace), then the slices, then the
// Services of components it no longer hosts, once their pods and slices
// are gone; all within memberWriteTimeout.
func syncMemberDiscovery(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation, target string) (res memberDiscovery) {
	ctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
	defer cancel()
	mv := obs.members[target]
	c := mv.cluster.GetClient()
	fail := func(err error) { res.errs = append(res.errs, fmt.Errorf("member %s: %w", target, err)) }

	want := map[string]*discoveryv1.EndpointSlice{}
	stale := map[string]*corev1.Service{} // by component
	for _, cv := range obs.components {
		pv := obs.placement(cv.name, target)
		if pv == nil {
			continue
		}
		var ports []corev1.ServicePort
		switch {
		case cv.spec != nil && pv.spec != nil && pv.spec.Replicas > 0:
			svc := desiredService(fc, cv.spec, target)
			syncHostedService(ctx, mv, fc, pv.service, svc, &res, fail)
			ports = svc.Spec.Ports
		case pv.service != nil && len(pv.pods) > 0:
			// Draining: its pods still run and still look their peers up.
			ports = pv.service.Spec.Ports
		case pv.service != nil:
			stale[cv.name] = pv.service
			continue
		default:
			continue
		}
		for _, s := range componentSlices(fc, cv.name, target, slicePorts(ports), obs.sources(cv, target)) {
			want[s.Name] = s
		}
		if foreign := foreignSlices(obs.slices[target], pv.service); len(foreign) > 0 {
			n, err := deleteForeignSlices(ctx, c, mv.cluster.GetAPIReader(), foreign, pv.service)
			res.deleted += n
			if err != nil {
				fail(err)
			}
		}
	}

	// fedop's slices that are not wanted go; wanted ones missing or stale
	// are applied.
	have := map[string]*discoveryv1.EndpointSlice{}
	failed := map[string]bool{} // components
	for _, s := range obs.slices[target] {
		if !isOurs(s) {
			continue
		}
		have[s.Name] = s
		if want[s.Name] != nil {
			continue
		}
		if err := deleteObject(ctx, c, s); err != nil {
			fail(fmt.Errorf("deleting EndpointSlice %s: %w", s.Name, err))
			failed[s.Labels[v1alpha1.LabelComponent]] = true
			continue
		}
		res.deleted++
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		s := want[name]
		if h := have[name]; h != nil && !sliceDrifted(h, s) {
			continue
		}
		ac, err := applyConfiguration(s, discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"))
		if err == nil {
			err = c.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
		}
		if err != nil {
			fail(fmt.Errorf("applying EndpointSlice %s: %w", name, err))
			failed[s.Labels[v1alpha1.LabelComponent]] = true
			continue
		}
		res.applied++
	}
	// A Service goes once its slices are gone, so that a member whose slice
	// deletion failed still shows the component and is looked at again.
	for component, svc := range stale {
		if failed[component] {
			continue
		}
		if err := deleteObject(ctx, c, svc); err != nil {
			fail(fmt.Errorf("deleting service %s: %w", svc.Name, err))
			continue
		}
		res.deleted++
	}
	return res
}

// syncHostedService applies svc, the Service of a component member mv
// hosts, over have. Errors go to fail, counts to res.
func syncHostedService(
	ctx context.Context, mv *memberView, fc *v1alpha1.FederationCluster, have, svc *corev1.Service, res *memberDiscovery, fail func(error),
) {
	c := mv.cluster.GetClient()
	wrote, err := syncService(ctx, c, fc, have, svc)
	if err != nil {
		fail(err)
	}
	if err == nil && wrote && have != nil && len(have.Spec.Selector) > 0 {
		// An earlier fedop's Service lost its selector: the endpoints
		// controller's Endpoints object is left behind (it marks it
		// skip-mirror, so no mirrored slice ever points at it), stale for
		// good.
		n, derr := deleteStaleEndpoints(ctx, c, mv.cluster.GetAPIReader(), have)
		res.deleted += n
		if derr != nil {
			fail(derr)
		}
	}
	res.applied += count(wrote)
}

func count(b bool) int {
	if b {
		return 1
	}
	return 0
}

// syncService applies want, a component's headless Service in a member,
// when have (the cached one) is missing or drifted: server-side, field
// manager fedop, so that fields other controllers set are left alone and
// the selector a Service of an earlier fedop carried is dropped. It
// reports whether it wrote.
func syncService(ctx context.Context, c client.Client, fc *v1alpha1.FederationCluster, have, want *corev1.Service) (bool, error) {
	if have != nil && !serviceDrifted(have, want) {
		return false, nil
	}
	if have == nil {
		if err := ensureNamespace(ctx, c, fc.Namespace); err != nil {
			return false, err
		}
	}
	ac, err := applyConfiguration(want, corev1.SchemeGroupVersion.WithKind("Service"))
	if err == nil {
		err = c.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
	}
	if err != nil {
		return false, fmt.Errorf("applying service %s: %w", want.Name, err)
	}
	return true, nil
}

// serviceDrifted reports whether the fields fedop owns in a Service differ
// from what it wants. Fields other controllers set are not compared.
func serviceDrifted(have, want *corev1.Service) bool {
	if have.Spec.ClusterIP != corev1.ClusterIPNone || !have.Spec.PublishNotReadyAddresses ||
		!equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) {
		return true
	}
	type port struct {
		name string
		port int32
	}
	var hp, wp []port
	for _, p := range have.Spec.Ports {
		hp = append(hp, port{p.Name, p.Port})
	}
	for _, p := range want.Spec.Ports {
		wp = append(wp, port{p.Name, p.Port})
	}
	return !slices.Equal(hp, wp)
}

// foreignSlices returns the slices of svc, a Service of fedop's, that
// kube-controller-manager wrote while svc had a selector, once it has none:
// the EndpointSlice controller's, which nothing updates any more, and
// those the mirroring controller makes from the endpoints controller's
// Endpoints object, which nothing updates either.
func foreignSlices(cached []*discoveryv1.EndpointSlice, svc *corev1.Service) []*discoveryv1.EndpointSlice {
	if svc == nil || len(svc.Spec.Selector) > 0 {
		return nil // while it has a selector, they are current and would come back
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range cached {
		if !isOurs(s) && s.Labels[discoveryv1.LabelServiceName] == svc.Name && s.DeletionTimestamp == nil {
			out = append(out, s)
		}
	}
	return out
}

// deleteForeignSlices deletes foreign, the foreignSlices of svc, and, if
// some were mirrored, the Endpoints object they mirror, or they would come
// back. Each deletion carries the object's UID. It returns how many
// deletions it issued.
func deleteForeignSlices(ctx context.Context, c client.Client, r client.Reader, foreign []*discoveryv1.EndpointSlice, svc *corev1.Service) (int, error) {
	n := 0
	var errs []error
	mirrored := false
	for _, s := range foreign {
		mirrored = mirrored || s.Labels[discoveryv1.LabelManagedBy] == mirroringController
		if err := deleteObject(ctx, c, s); err != nil {
			errs = append(errs, fmt.Errorf("deleting EndpointSlice %s: %w", s.Name, err))
			continue
		}
		n++
	}
	if mirrored {
		deleted, err := deleteStaleEndpoints(ctx, c, r, svc)
		if err != nil {
			errs = append(errs, err)
		}
		n += deleted
	}
	return n, errors.Join(errs...)
}

// deleteStaleEndpoints deletes the Endpoints object of svc that
// kube-controller-manager's endpoints controller made while svc had a
// selector, read past the cache (fedop caches no Endpoints). Only that
// controller's object carrying fedop's labels (copied from the Service) is
// deleted.
func deleteStaleEndpoints(ctx context.Context, c client.Client, r client.Reader, svc *corev1.Service) (int, error) {
	ep := &metav1.PartialObjectMetadata{}
	ep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
	if err := r.Get(ctx, client.ObjectKeyFromObject(svc), ep); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("reading Endpoints %s: %w", svc.Name, err)
	}
	if ep.Labels[labelEndpointsManagedBy] != endpointsController || ep.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy ||
		ep.Labels[v1alpha1.LabelInstance] != svc.Labels[v1alpha1.LabelInstance] {
		return 0, nil
	}
	if err := deleteObject(ctx, c, ep); err != nil {
		return 0, fmt.Errorf("deleting Endpoints %s: %w", svc.Name, err)
	}
	return 1, nil
}

// deleteObject deletes obj with its UID as precondition, so that a stale
// cache never deletes another object of the name. Gone already, or the
// name holding another object, counts as done.
func deleteObject(ctx context.Context, c client.Client, obj client.Object) error {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// cleanSlices deletes fedop's EndpointSlices of fc in one member (the
// finalizer's work, with cleanMember) and returns how many the cache still
// shows.
func cleanSlices(ctx context.Context, c client.Client, fc *v1alpha1.FederationCluster) (int, error) {
	var list discoveryv1.EndpointSliceList
	if err := c.List(ctx, &list, client.InNamespace(fc.Namespace), instanceSelector(fc)); err != nil {
		return 0, fmt.Errorf("listing EndpointSlices: %w", err)
	}
	n := 0
	var errs []error
	for i := range list.Items {
		s := &list.Items[i]
		if !isOurs(s) {
			continue // kube-controller-manager's go with their Service
		}
		n++
		if s.DeletionTimestamp != nil {
			continue
		}
		if err := deleteObject(ctx, c, s); err != nil {
			errs = append(errs, fmt.Errorf("deleting EndpointSlice %s: %w", s.Name, err))
		}
	}
	return n, errors.Join(errs...)
}
