package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// SliceWatch measures discovery for one FederationCluster: how long after
// a pod changes in its member (it gets an IP, becomes Ready, starts
// terminating, goes) the EndpointSlices of every member that lists the
// pod's component show it, and how many slice writes that took. It has
// watches of its own on every member, the pods of the FederationCluster
// and fedop's slices of its Services (label
// endpointslice.kubernetes.io/managed-by=fedop.io), and stamps every event
// with its own receive time; it reads nothing of fedop's.
//
// A pod's change is what the slices should then say of it, keyed by the
// pod's name (unique in the federation): its addresses, whether it is
// serving (Ready) and terminating, or that it is not listed (no IP yet,
// finished, gone). The change is seen in a member when that member's
// slices say exactly that; its latency is from the pod event to the last
// member's matching slice event (0 for a member that showed it before the
// pod event came). A change overtaken by the next change of the same pod
// before every member showed it is counted as superseded. A member "lists"
// a component when it holds a slice of it.
//
// Writes are the slice events (creations, updates, deletions of fedop's
// slices) after the watches listed what existed: each is one write that
// changed a slice (an apply that changes nothing makes no event).
type SliceWatch struct {
	cancel  context.CancelFunc
	watches sync.WaitGroup

	// mu guards everything below.
	mu sync.Mutex
	// synced turns on once every watch listed what existed: writes are
	// counted from then on.
	synced bool
	// slices are fedop's slices by member, then name.
	slices map[string]map[string]*discoveryv1.EndpointSlice
	// want is what the slices should say of each pod (by name), and
	// addrs its last addresses, to tell an IP change.
	want  map[string]endpointRecord
	addrs map[string][]string
	// pending are the changes not yet seen in every member, by pod name.
	pending map[string]*sliceChange
	report  SliceReport
}

// endpointRecord is what the slices say, or should say, of one pod.
type endpointRecord struct {
	listed               bool
	addresses            []string
	serving, terminating bool
}

type sliceChange struct {
	component string
	want      endpointRecord
	at        time.Time
	ipChange  bool
	seen      map[string]time.Time // member -> when its slices showed it
}

// SliceReport is what a SliceWatch measured.
type SliceReport struct {
	// Changes are the pod changes every member showed, and Latencies how
	// long each took (to the last member); IPChanges and IPLatencies those
	// of them that gave the pod's name a new address.
	Changes, IPChanges     int
	Latencies, IPLatencies []time.Duration
	// Superseded changes were overtaken by the pod's next change; Pending
	// ones are not shown everywhere yet.
	Superseded, Pending int
	// Writes counts slice writes in all members; Deletions the pod
	// instances seen deleted.
	Writes, Deletions int
}

// SliceWatchOptions configures a SliceWatch.
type SliceWatchOptions struct {
	// Members are the member clusters' configs, by member name.
	Members map[string]*rest.Config
	// Namespace and Name are the FederationCluster's.
	Namespace, Name string
}

// StartSliceWatch starts a SliceWatch and returns once every watch has
// listed what exists. Stop it with Stop.
func StartSliceWatch(ctx context.Context, opts SliceWatchOptions) (*SliceWatch, error) {
	wctx, cancel := context.WithCancel(context.Background())
	w := &SliceWatch{
		cancel: cancel, slices: map[string]map[string]*discoveryv1.EndpointSlice{},
		want: map[string]endpointRecord{}, addrs: map[string][]string{}, pending: map[string]*sliceChange{},
	}
	names := make([]string, 0, len(opts.Members))
	for name := range opts.Members {
		names = append(names, name)
	}
	sort.Strings(names)
	// Every member's map exists before any cache starts: the handlers of
	// one member's informers read them all (under w.mu), while the loop
	// below would still be adding the next member's.
	for _, name := range names {
		w.slices[name] = map[string]*discoveryv1.EndpointSlice{}
	}
	var caches []cache.Cache
	for _, name := range names {
		mc, err := cache.New(opts.Members[name], cache.Options{
			Scheme:            Scheme,
			DefaultNamespaces: map[string]cache.Config{opts.Namespace: {}},
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Pod{}: {Label: labels.SelectorFromSet(labels.Set{
					v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: opts.Name, v1alpha1.LabelMember: name,
				})},
				&discoveryv1.EndpointSlice{}: {Label: labels.SelectorFromSet(labels.Set{
					v1alpha1.LabelInstance: opts.Name, v1alpha1.LabelMember: name, discoveryv1.LabelManagedBy: v1alpha1.EndpointSliceManagedBy,
				})},
			},
		})
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("slice watch: member %s cache: %w", name, err)
		}
		for _, h := range []struct {
			obj client.Object
			on  func(obj any, gone bool)
		}{
			{&corev1.Pod{}, func(obj any, gone bool) { w.onPod(obj, gone) }},
			{&discoveryv1.EndpointSlice{}, func(obj any, gone bool) { w.onSlice(name, obj, gone) }},
		} {
			inf, err := mc.GetInformer(wctx, h.obj)
			if err == nil {
				_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
					AddFunc:    func(obj any) { h.on(obj, false) },
					UpdateFunc: func(_, obj any) { h.on(obj, false) },
					DeleteFunc: func(obj any) { h.on(obj, true) },
				})
			}
			if err != nil {
				w.Stop()
				return nil, fmt.Errorf("slice watch: member %s: %w", name, err)
			}
		}
		w.watches.Go(func() { _ = mc.Start(wctx) })
		caches = append(caches, mc)
	}
	sctx, cancelSync := context.WithTimeout(ctx, checkerSyncTimeout)
	defer cancelSync()
	for _, c := range caches {
		if !c.WaitForCacheSync(sctx) {
			w.Stop()
			return nil, fmt.Errorf("slice watch: a watch did not sync within %s", checkerSyncTimeout)
		}
	}
	w.mu.Lock()
	w.synced = true
	w.mu.Unlock()
	return w, nil
}

// Stop stops the watches and waits for them. Report still works.
func (w *SliceWatch) Stop() {
	w.cancel()
	w.watches.Wait()
}

// Report returns what was measured so far.
func (w *SliceWatch) Report() SliceReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.report
	r.Latencies, r.IPLatencies = slices.Clone(r.Latencies), slices.Clone(r.IPLatencies)
	r.Pending = len(w.pending)
	return r
}

// Summary is a one-line account of r.
func (r SliceReport) Summary() string {
	return fmt.Sprintf("%d pod changes seen in every member: p50 %s p99 %s max %s; %d IP changes: p50 %s p99 %s max %s; "+
		"%d superseded, %d pending; %d slice writes for %d pod deletions (%.1f per replaced pod)",
		r.Changes, pctOf(r.Latencies, 50), pctOf(r.Latencies, 99), pctOf(r.Latencies, 100),
		r.IPChanges, pctOf(r.IPLatencies, 50), pctOf(r.IPLatencies, 99), pctOf(r.IPLatencies, 100),
		r.Superseded, r.Pending, r.Writes, r.Deletions, float64(r.Writes)/float64(max(r.Deletions, 1)))
}

func pctOf(ds []time.Duration, p float64) string {
	if len(ds) == 0 {
		return "-"
	}
	return fmtDuration(Percentile(ds, p))
}

func (w *SliceWatch) onPod(obj any, gone bool) {
	at := time.Now()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	want := endpointRecord{}
	if !gone && pod.Status.Phase != corev1.PodFailed && pod.Status.Phase != corev1.PodSucceeded {
		for _, ip := range pod.Status.PodIPs {
			want.addresses = append(want.addresses, ip.IP)
		}
		slices.Sort(want.addresses)
		want.listed = len(want.addresses) > 0
		if want.listed {
			want.serving, want.terminating = podwatch.Ready(pod), pod.DeletionTimestamp != nil
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if gone && w.synced {
		w.report.Deletions++
	}
	if prev, ok := w.want[pod.Name]; ok && prev.equal(want) {
		return
	}
	w.want[pod.Name] = want
	if !w.synced {
		if want.listed {
			w.addrs[pod.Name] = want.addresses
		}
		return // what existed before the measurement is not a change
	}
	if w.pending[pod.Name] != nil {
		w.report.Superseded++
	}
	ch := &sliceChange{component: pod.Labels[v1alpha1.LabelComponent], want: want, at: at, seen: map[string]time.Time{}}
	if want.listed {
		ch.ipChange = !slices.Equal(w.addrs[pod.Name], want.addresses)
		w.addrs[pod.Name] = want.addresses
	}
	w.pending[pod.Name] = ch
	for member := range w.slices {
		w.check(member, pod.Name, ch, at)
	}
}

func (w *SliceWatch) onSlice(member string, obj any, gone bool) {
	at := time.Now()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.synced {
		w.report.Writes++
	}
	if gone {
		delete(w.slices[member], s.Name)
	} else {
		w.slices[member][s.Name] = s
	}
	for name, ch := range w.pending {
		w.check(member, name, ch, at)
	}
}

// check notes when member's slices show pending change ch of pod name, and
// completes ch once every member listing its component does. w.mu is held.
func (w *SliceWatch) check(member, name string, ch *sliceChange, at time.Time) {
	if _, ok := ch.seen[member]; !ok && w.view(member, ch.component, name).equal(ch.want) {
		ch.seen[member] = at
	}
	var last time.Time
	for m, byName := range w.slices {
		if !listsComponent(byName, ch.component) {
			continue
		}
		t, ok := ch.seen[m]
		if !ok {
			return
		}
		if t.After(last) {
			last = t
		}
	}
	if last.IsZero() {
		return // no member lists the component yet
	}
	delete(w.pending, name)
	d := max(last.Sub(ch.at), 0)
	w.report.Changes++
	w.report.Latencies = append(w.report.Latencies, d)
	if ch.ipChange {
		w.report.IPChanges++
		w.report.IPLatencies = append(w.report.IPLatencies, d)
	}
}

// view returns what member's slices of component say of pod name.
func (w *SliceWatch) view(member, component, name string) endpointRecord {
	var r endpointRecord
	for _, s := range w.slices[member] {
		if s.Labels[v1alpha1.LabelComponent] != component {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Hostname == nil || *ep.Hostname != name {
				continue
			}
			r.listed = true
			r.addresses = append(r.addresses, ep.Addresses...)
			r.serving = ep.Conditions.Serving != nil && *ep.Conditions.Serving
			r.terminating = ep.Conditions.Terminating != nil && *ep.Conditions.Terminating
		}
	}
	slices.Sort(r.addresses)
	return r
}

func listsComponent(byName map[string]*discoveryv1.EndpointSlice, component string) bool {
	for _, s := range byName {
		if s.Labels[v1alpha1.LabelComponent] == component {
			return true
		}
	}
	return false
}

func (r endpointRecord) equal(o endpointRecord) bool {
	return r.listed == o.listed && slices.Equal(r.addresses, o.addresses) && r.serving == o.serving && r.terminating == o.terminating
}

// CheckSlices compares, in every member, fedop's EndpointSlices of
// FederationCluster fc with the pods of every member, read through
// members (by member name), and returns the differences, none when they
// match. For each component, a member that hosts it (a placement with
// replicas) must have its headless Service without a selector, no slice of
// it but fedop's, and fedop's slices listing every pod of the component
// that has an IP and has not finished, in every member: one slice per member whose pods it
// lists, named <fc>-<component>.<member>.ipv4, each endpoint with the
// pod's IP, its name as hostname, ready, serving as the pod is Ready,
// terminating as it is being deleted, the pod's zone (its label, else its
// node selector's), and only in the pod's own member its node and a
// reference to it. A member that does not host a component has neither
// Service nor slices of it.
func CheckSlices(ctx context.Context, fc *v1alpha1.FederationCluster, members map[string]client.Reader) ([]string, error) {
	var diffs []string
	pods := map[string][]corev1.Pod{} // member -> pods
	for m, c := range members {
		var list corev1.PodList
		if err := c.List(ctx, &list, client.InNamespace(fc.Namespace), client.MatchingLabels{
			v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fc.Name, v1alpha1.LabelMember: m,
		}); err != nil {
			return nil, fmt.Errorf("listing pods in %s: %w", m, err)
		}
		pods[m] = list.Items
	}
	for m, c := range members {
		var list discoveryv1.EndpointSliceList
		if err := c.List(ctx, &list, client.InNamespace(fc.Namespace), client.MatchingLabels{v1alpha1.LabelInstance: fc.Name}); err != nil {
			return nil, fmt.Errorf("listing EndpointSlices in %s: %w", m, err)
		}
		for _, comp := range fc.Spec.Components {
			svcName := fc.Name + "-" + comp.Name
			hosts := slices.ContainsFunc(comp.Topology, func(p v1alpha1.Placement) bool { return p.Member == m && p.Replicas > 0 })
			var svc corev1.Service
			err := c.Get(ctx, client.ObjectKey{Namespace: fc.Namespace, Name: svcName}, &svc)
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading Service %s in %s: %w", svcName, m, err)
			}
			got := map[string]discoveryv1.Endpoint{}
			for _, s := range list.Items {
				if s.Labels[discoveryv1.LabelServiceName] != svcName {
					continue
				}
				source := s.Labels[v1alpha1.LabelPodsMember]
				switch {
				case s.Labels[discoveryv1.LabelManagedBy] != v1alpha1.EndpointSliceManagedBy:
					diffs = append(diffs, fmt.Sprintf("%s: slice %s of %s is %s's", m, s.Name, svcName, s.Labels[discoveryv1.LabelManagedBy]))
					continue
				case s.Name != svcName+"."+source+".ipv4":
					diffs = append(diffs, fmt.Sprintf("%s: slice %s lists the pods of %q", m, s.Name, source))
				}
				for _, e := range s.Endpoints {
					got[source+"/"+ptrString(e.Hostname)] = e
				}
			}
			if !hosts {
				if err == nil || len(got) > 0 {
					diffs = append(diffs, fmt.Sprintf("%s does not host %s but has its Service (%v) or endpoints (%d)", m, comp.Name, err == nil, len(got)))
				}
				continue
			}
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("%s: no Service %s", m, svcName))
			} else if len(svc.Spec.Selector) > 0 {
				diffs = append(diffs, fmt.Sprintf("%s: Service %s has a selector %v", m, svcName, svc.Spec.Selector))
			}
			want := map[string]discoveryv1.Endpoint{}
			for source, list := range pods {
				for i := range list {
					pod := &list[i]
					finished := pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded
					if pod.Labels[v1alpha1.LabelComponent] == comp.Name && pod.Status.PodIP != "" && !finished {
						want[source+"/"+pod.Name] = expectedEndpoint(pod, source == m)
					}
				}
			}
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if g, ok := got[k]; !ok || !equality.Semantic.DeepEqual(g, want[k]) {
					diffs = append(diffs, fmt.Sprintf("%s: endpoint of %s in %s's slices:\n  got  %s\n  want %s",
						m, k, svcName, endpointString(got[k], ok), endpointString(want[k], true)))
				}
			}
			for _, k := range slices.Sorted(maps.Keys(got)) {
				if _, ok := want[k]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s: endpoint of %s in %s's slices, which is no pod with an IP", m, k, svcName))
				}
			}
		}
	}
	slices.Sort(diffs)
	return diffs, nil
}

// expectedEndpoint is pod's endpoint in the slices of a member, the pod's
// own (local) or another.
func expectedEndpoint(pod *corev1.Pod, local bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{
		Addresses: []string{pod.Status.PodIP},
		Hostname:  ptr.To(pod.Name),
		Conditions: discoveryv1.EndpointConditions{
			Ready: ptr.To(true), Serving: ptr.To(podwatch.Ready(pod)), Terminating: ptr.To(pod.DeletionTimestamp != nil),
		},
	}
	if z := cmp.Or(pod.Labels[corev1.LabelTopologyZone], pod.Spec.NodeSelector[corev1.LabelTopologyZone]); z != "" {
		e.Zone = ptr.To(z)
	}
	if local {
		if pod.Spec.NodeName != "" {
			e.NodeName = ptr.To(pod.Spec.NodeName)
		}
		e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
	}
	return e
}

func endpointString(e discoveryv1.Endpoint, ok bool) string {
	if !ok {
		return "none"
	}
	c := e.Conditions
	s := fmt.Sprintf("%v ready=%v serving=%v terminating=%v zone=%s node=%s", e.Addresses, ptrBool(c.Ready), ptrBool(c.Serving), ptrBool(c.Terminating),
		ptrString(e.Zone), ptrString(e.NodeName))
	if e.TargetRef != nil {
		s += " pod=" + string(e.TargetRef.UID)
	}
	return s
}

func ptrString(p *string) string { return ptr.Deref(p, "<nil>") }

func ptrBool(p *bool) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
