package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/internal/podwatch"
	"github.com/fedop-io/fedop/member"
)

// Members is what the reconciler needs of the member registry
// (*member.Registry satisfies it).
type Members interface {
	// Get returns a connected member's cluster, or an error wrapping
	// member.ErrNotRegistered or member.ErrDisconnected.
	Get(name string) (cluster.Cluster, error)
	// State returns what is known of a member's connection, its freshness
	// as of now.
	State(name string) member.State
	// Names returns every registered member, connected or not.
	Names() []string
	// Watch starts w on a connected member's cache, once per connection.
	Watch(ctx context.Context, name string, w member.Watcher) error
	// Source returns the source of member state changes, mapped to
	// requests by mapFunc.
	Source(mapFunc func(ctx context.Context, memberName string) []reconcile.Request) source.SyncingSource
}

// memberView is one member as this reconcile saw it.
type memberView struct {
	state member.State
	// cluster is nil unless the member is connected.
	cluster cluster.Cluster
}

// placementView is one placement: desired (spec is nil for a member the
// component no longer names) and observed.
type placementView struct {
	member   string
	spec     *v1alpha1.Placement
	template *corev1.PodTemplateSpec
	revision string
	pods     []*corev1.Pod
	// claims are fedop's claims of the component in this member, by name.
	claims map[string]*corev1.PersistentVolumeClaim
	// service is the component's headless Service in this member, if cached.
	service *corev1.Service
	// ordinals are what status records the placement to hold.
	ordinals []int
}

// componentView is one component: spec order first, then components the
// spec no longer names whose pods are still there; placements in topology
// order followed by members the component no longer names but still has
// pods or a Service in.
type componentView struct {
	name        string
	spec        *v1alpha1.Component
	placements  []*placementView
	nextOrdinal int
}

// forgotten is a member that no placement names and that cannot be seen:
// it leaves status, and the pods status last recorded there are reported.
type forgotten struct {
	member string
	pods   []string
}

// observation is everything one reconcile read, read once from the member
// caches and the registry, and never again during the reconcile (read and
// write are separate, as in the controllers of kube-controller-manager): every
// decision of the reconcile is made from it.
type observation struct {
	now        time.Time
	members    map[string]*memberView
	components []*componentView
	// slices are, by connected member, the EndpointSlices of fc's Services
	// in its cache (discovery.go).
	slices map[string][]*discoveryv1.EndpointSlice
	// ordinalsRecorded says that status records every component's ordinals
	// (or the FederationCluster is new).
	ordinalsRecorded bool
	// forgotten are the members leaving status.
	forgotten []forgotten
	// expandable says whether a claim in a member may grow: its
	// StorageClass allows expansion.
	expandable func(member string, claim *corev1.PersistentVolumeClaim) bool
}

// memberNames returns every member the spec names or status remembers,
// sorted.
func memberNames(fc *v1alpha1.FederationCluster) []string {
	var names []string
	for _, c := range fc.Spec.Components {
		for _, p := range c.Topology {
			names = append(names, p.Member)
		}
	}
	for _, c := range fc.Status.Components {
		for _, p := range c.Members {
			names = append(names, p.Member)
		}
	}
	for _, m := range fc.Status.Members {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// specMembers returns the members some placement of the spec names.
func specMembers(fc *v1alpha1.FederationCluster) map[string]bool {
	out := map[string]bool{}
	for _, c := range fc.Spec.Components {
		for _, p := range c.Topology {
			out[p.Member] = true
		}
	}
	return out
}

// observe reads fc's objects from the cache of every member the spec names
// or status remembers, and of every other connected member (a member
// dropped from the spec while it could not be seen may show pods when it
// comes back: they are drained). A member that is not connected is recorded
// as such, with no pods: its pods are unknown.
func (r *Reconciler) observe(ctx context.Context, fc *v1alpha1.FederationCluster) (*observation, error) {
	obs := &observation{now: r.clock.Now(), members: map[string]*memberView{}}
	obs.expandable = r.expansionChecker(ctx, obs)
	objs, err := r.readMembers(ctx, fc, obs)
	if err != nil {
		return nil, err
	}
	rec := readRecord(fc)
	obs.ordinalsRecorded = rec.complete
	a := &assembly{fc: fc, obs: obs, objs: objs, rec: rec, inSpec: specMembers(fc), lastKnown: map[string][]string{}}
	for i := range fc.Spec.Components {
		c := &fc.Spec.Components[i]
		cv := a.component(c.Name, c)
		named := map[string]bool{}
		for j := range c.Topology {
			named[c.Topology[j].Member] = true
			if err := a.add(cv, c.Topology[j].Member, &c.Topology[j]); err != nil {
				return nil, err
			}
		}
		for _, m := range drainable(c.Name, named, rec.ordinals, objs.present) {
			if err := a.add(cv, m, nil); err != nil {
				return nil, err
			}
		}
		obs.components = append(obs.components, cv)
	}
	// Components the spec no longer names: their pods are drained.
	for _, name := range droppedComponents(fc, objs.present) {
		cv := a.component(name, nil)
		for _, m := range drainable(name, nil, rec.ordinals, objs.present) {
			if err := a.add(cv, m, nil); err != nil {
				return nil, err
			}
		}
		if len(cv.placements) > 0 {
			obs.components = append(obs.components, cv)
		}
	}
	a.forget()
	// Discovery (discovery.go).
	if obs.slices, err = readSlices(ctx, fc, obs); err != nil {
		return nil, err
	}
	return obs, nil
}

// cacheShared is the list option of the reconcile's reads from member
// caches: the listed objects are the informers' own, shared with the
// cache and every other reconcile, and must never be modified (controller-
// runtime's UnsafeDisableDeepCopy). A list still allocates its items
// (shallow copies whose maps and slices are the cache's), not a deep copy
// of every object.
const cacheShared = client.UnsafeDisableDeepCopy

// memberObjects is what readMembers found of fc in the member caches.
type memberObjects struct {
	pods     map[string][]*corev1.Pod                            // member/component -> pods
	claims   map[string]map[string]*corev1.PersistentVolumeClaim // member/component -> claims by name
	services map[string]*corev1.Service                          // member/component -> Service
	present  map[string]map[string]bool                          // member -> components with objects there
}

// readMembers fills obs.members with the members to consider (those fc's
// spec or status names, and connected ones where fc has objects) and
// returns fc's objects in their caches, starting the controller's watches
// on every member it reads.
func (r *Reconciler) readMembers(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation) (*memberObjects, error) {
	objs := &memberObjects{
		pods: map[string][]*corev1.Pod{}, claims: map[string]map[string]*corev1.PersistentVolumeClaim{},
		services: map[string]*corev1.Service{}, present: map[string]map[string]bool{},
	}
	named := memberNames(fc)
	candidates := slices.Clone(named)
	for _, name := range r.members.Names() {
		if !slices.Contains(named, name) {
			candidates = append(candidates, name)
		}
	}
	for _, name := range candidates {
		mv := &memberView{state: r.members.State(name)}
		cl, err := r.members.Get(name)
		if err == nil {
			err = r.watch(ctx, name)
		}
		switch {
		case errors.Is(err, member.ErrNotRegistered), errors.Is(err, member.ErrDisconnected):
			mv.state.Connected, mv.state.Fresh = false, false
		case err != nil:
			return nil, err
		default:
			mv.cluster = cl
			if err := objs.read(ctx, cl.GetClient(), fc, name); err != nil {
				return nil, err
			}
		}
		if slices.Contains(named, name) || len(objs.present[name]) > 0 {
			obs.members[name] = mv
		}
	}
	return objs, nil
}

// read adds fc's pods and Services in member name's cache, those fedop
// created for that member.
//
// The objects read are the cache's own, not copies (cacheShared): every
// reconcile lists every pod of fc, and a deep copy of each was a large
// part of the garbage a reconcile made (BenchmarkListPods). They are therefore read-only, here and in
// everything the observation hands them to (planner views, the step
// clock, discovery, hooks, status); a writer copies first (expandClaim
// does).
func (o *memberObjects) read(ctx context.Context, c client.Reader, fc *v1alpha1.FederationCluster, name string) error {
	var podList corev1.PodList
	if err := c.List(ctx, &podList, append(ofInstance(fc), cacheShared)...); err != nil {
		return fmt.Errorf("listing pods of member %s from its cache: %w", name, err)
	}
	var svcList corev1.ServiceList
	if err := c.List(ctx, &svcList, append(ofInstance(fc), cacheShared)...); err != nil {
		return fmt.Errorf("listing services of member %s from its cache: %w", name, err)
	}
	var claimList corev1.PersistentVolumeClaimList
	if err := c.List(ctx, &claimList, append(ofInstance(fc), cacheShared)...); err != nil {
		return fmt.Errorf("listing claims of member %s from its cache: %w", name, err)
	}
	o.present[name] = map[string]bool{}
	for i := range claimList.Items {
		claim := &claimList.Items[i]
		if claim.Labels[v1alpha1.LabelMember] != name {
			continue
		}
		key := name + "/" + claim.Labels[v1alpha1.LabelComponent]
		if o.claims[key] == nil {
			o.claims[key] = map[string]*corev1.PersistentVolumeClaim{}
		}
		o.claims[key][claim.Name] = claim
	}
	for i := range podList.Items {
		pod := &podList.Items[i]
		if pod.Labels[v1alpha1.LabelMember] != name {
			continue // not created by fedop for this member
		}
		c := pod.Labels[v1alpha1.LabelComponent]
		o.pods[name+"/"+c] = append(o.pods[name+"/"+c], pod)
		o.present[name][c] = true
	}
	for i := range svcList.Items {
		svc := &svcList.Items[i]
		if svc.Labels[v1alpha1.LabelMember] != name {
			continue
		}
		c := svc.Labels[v1alpha1.LabelComponent]
		o.services[name+"/"+c] = svc
		o.present[name][c] = true
	}
	return nil
}

// record is what status records of the ordinals.
type record struct {
	ordinals map[string]map[string][]int // component -> member -> ordinals
	next     map[string]*int32
	// complete: every component in status has nextOrdinal (fedop recorded
	// them), or fc is new.
	complete bool
}

func readRecord(fc *v1alpha1.FederationCluster) record {
	rec := record{ordinals: map[string]map[string][]int{}, next: map[string]*int32{}}
	all := len(fc.Status.Components) > 0
	for _, cs := range fc.Status.Components {
		rec.next[cs.Name] = cs.NextOrdinal
		all = all && cs.NextOrdinal != nil
		rec.ordinals[cs.Name] = map[string][]int{}
		for _, ps := range cs.Members {
			// A malformed record (a status edited by hand) is read as
			// empty: the pods observed still say what they hold.
			set, _ := rollout.ParseOrdinals(ps.Ordinals)
			rec.ordinals[cs.Name][ps.Member] = set
		}
	}
	rec.complete = all || fc.Status.ObservedGeneration == 0
	return rec
}

// assembly builds the observation's components from what was read.
type assembly struct {
	fc     *v1alpha1.FederationCluster
	obs    *observation
	objs   *memberObjects
	rec    record
	inSpec map[string]bool
	// lastKnown holds, for each member leaving status, the pods status
	// recorded there.
	lastKnown map[string][]string
}

func (a *assembly) component(name string, spec *v1alpha1.Component) *componentView {
	cv := &componentView{name: name, spec: spec}
	if n := a.rec.next[name]; n != nil {
		cv.nextOrdinal = int(*n)
	}
	return cv
}

// add adds the placement of cv in memberName (spec nil: one the spec no
// longer has).
func (a *assembly) add(cv *componentView, memberName string, spec *v1alpha1.Placement) error {
	mv := a.obs.members[memberName]
	ords := a.rec.ordinals[cv.name][memberName]
	if spec == nil && (mv == nil || mv.cluster == nil) {
		// A placement the spec no longer has, in a member fedop cannot
		// see: its pods are unknown and not wanted. It leaves status; if
		// the member comes back with pods, they are drained then.
		if !a.inSpec[memberName] {
			for _, o := range ords {
				a.lastKnown[memberName] = append(a.lastKnown[memberName], rollout.PodName(a.fc.Name, cv.name, o))
			}
		}
		return nil
	}
	key := memberName + "/" + cv.name
	pv := &placementView{member: memberName, spec: spec, pods: a.objs.pods[key], claims: a.objs.claims[key], service: a.objs.services[key], ordinals: ords}
	if spec != nil {
		pv.template = EffectiveTemplate(cv.spec, spec)
		rev, err := Revision(pv.template)
		if err != nil {
			return err
		}
		pv.revision = rev
	} else if len(pv.pods) == 0 && pv.service == nil && len(ords) == 0 && (len(pv.claims) == 0 || !deletesScaledClaims(cv.spec)) {
		return nil // drained (claims kept by policy stay, unwatched)
	}
	cv.placements = append(cv.placements, pv)
	return nil
}

// forget takes out of the observation the members that no placement names
// and where fedop sees nothing of fc's: drained, or out of sight and no
// longer wanted (a cluster lost for good and removed from the topology).
// They block nothing any more; those that status recorded pods in are
// reported (observation.forgotten).
func (a *assembly) forget() {
	for name := range a.obs.members {
		if a.inSpec[name] || len(a.objs.present[name]) > 0 {
			continue
		}
		delete(a.obs.members, name)
		if len(a.lastKnown[name]) > 0 {
			a.obs.forgotten = append(a.obs.forgotten, forgotten{member: name, pods: a.lastKnown[name]})
		}
	}
	slices.SortFunc(a.obs.forgotten, func(x, y forgotten) int { return strings.Compare(x.member, y.member) })
}

// drainable returns, sorted, the members where component has something
// (recorded ordinals, or pods or a Service observed) but that its
// topology (named) does not name.
func drainable(component string, named map[string]bool, recorded map[string]map[string][]int, present map[string]map[string]bool) []string {
	var out []string
	for m := range recorded[component] {
		if !named[m] {
			out = append(out, m)
		}
	}
	for m, components := range present {
		if components[component] && !named[m] {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// droppedComponents returns, sorted, the components status or the member
// caches know that the spec does not name.
func droppedComponents(fc *v1alpha1.FederationCluster, present map[string]map[string]bool) []string {
	inSpec := map[string]bool{}
	for _, c := range fc.Spec.Components {
		inSpec[c.Name] = true
	}
	var out []string
	for _, cs := range fc.Status.Components {
		if !inSpec[cs.Name] {
			out = append(out, cs.Name)
		}
	}
	for _, components := range present {
		for c := range components {
			if !inSpec[c] {
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// watch starts the controller's watches on member name's cache, once per
// connection of the member: reading a member's cache and being woken by
// its events go together.
func (r *Reconciler) watch(ctx context.Context, name string) error {
	for _, w := range r.watchers {
		if err := r.members.Watch(ctx, name, w); err != nil {
			return err
		}
	}
	return nil
}

// memberStates returns the state of every observed member, Connected and
// Fresh only where this observation could read the member's cache.
func (o *observation) memberStates() map[string]member.State {
	out := make(map[string]member.State, len(o.members))
	for name, mv := range o.members {
		s := mv.state
		s.Connected = mv.cluster != nil
		s.Fresh = s.Fresh && s.Connected
		out[name] = s
	}
	return out
}

func (o *observation) component(name string) *componentView {
	for _, c := range o.components {
		if c.name == name {
			return c
		}
	}
	return nil
}

// hasClaims reports whether component's pods mount claims of their own
// (volumeClaimTemplates), which act creates before the pods.
func (o *observation) hasClaims(component string) bool {
	c := o.component(component)
	return c != nil && c.spec != nil && len(c.spec.VolumeClaimTemplates) > 0
}

func (o *observation) placement(component, memberName string) *placementView {
	if c := o.component(component); c != nil {
		for _, p := range c.placements {
			if p.member == memberName {
				return p
			}
		}
	}
	return nil
}

// rolloutState turns the observation into the planner's input. Pods whose
// names are not fedop's (<fc>-<component>-<ordinal>) are left out: fedop
// never acts on them. Pending expectations stand in for what the caches
// have not shown yet.
func (r *Reconciler) rolloutState(fc *v1alpha1.FederationCluster, obs *observation) rollout.State {
	s := rollout.State{
		Name:             fc.Name,
		Operation:        fc.Status.Operation,
		Paused:           fc.Spec.Paused,
		MinReady:         time.Duration(fc.Spec.MinReadySeconds) * time.Second,
		OrdinalsRecorded: obs.ordinalsRecorded,
		Release:          releaseRequested(fc),
		ReleaseNames:     releaseNames(fc),
		Now:              obs.now,
	}
	if d := fc.Spec.ProgressDeadlineSeconds; d != nil {
		s.ProgressDeadline = time.Duration(*d) * time.Second
	}
	key := client.ObjectKeyFromObject(fc)
	for _, cv := range obs.components {
		rc := rollout.Component{Name: cv.name, NextOrdinal: cv.nextOrdinal, Hooks: hooksOf(cv.spec)}
		for _, pv := range cv.placements {
			mv := obs.members[pv.member]
			rp := rollout.Placement{
				Member:    pv.member,
				Revision:  pv.revision,
				Connected: mv != nil && mv.cluster != nil,
				Ordinals:  pv.ordinals,
				Partition: partitionOf(cv.spec),
			}
			rp.Fresh = rp.Connected && mv.state.Fresh
			if pv.spec != nil {
				rp.Replicas = pv.spec.Replicas
			}
			for _, pod := range pv.pods {
				if rpod, ok := plannerPod(fc.Name, cv.name, pod); ok {
					rpod.Claims = obs.podClaims(cv, pv, pod.Name)
					rp.Pods = append(rp.Pods, rpod)
				}
			}
			rp.Pods = r.expectations.apply(key, pv.member, cv.name, rp.Pods, obs.now)
			rp.Retained = retainedOrdinals(fc, cv, pv, rp.Pods)
			rc.Placements = append(rc.Placements, rp)
		}
		s.Components = append(s.Components, rc)
	}
	return s
}

// pod returns the member and the cached pod ref names (the instance ref.UID
// names, when set), or a nil pod.
func (o *observation) pod(ref rollout.PodRef) (*memberView, *corev1.Pod) {
	mv := o.members[ref.Member]
	pv := o.placement(ref.Component, ref.Member)
	if mv == nil || mv.cluster == nil || pv == nil {
		return nil, nil
	}
	for _, pod := range pv.pods {
		if pod.Name == ref.Name && (ref.UID == "" || pod.UID == ref.UID) {
			return mv, pod
		}
	}
	return nil, nil
}

// plannerPod returns what the planner reads of pod, a pod of component
// of FederationCluster fc, without its claims; false when its name
// carries no ordinal of that component.
func plannerPod(fc, component string, pod *corev1.Pod) (rollout.Pod, bool) {
	ordinal, ok := rollout.ParseOrdinal(fc, component, pod.Name)
	if !ok {
		return rollout.Pod{}, false
	}
	ready, since := podwatch.ReadySince(pod)
	return rollout.Pod{
		Name:        pod.Name,
		UID:         pod.UID,
		Ordinal:     ordinal,
		Revision:    pod.Labels[v1alpha1.LabelRevision],
		Ready:       ready,
		ReadySince:  since,
		Terminating: pod.DeletionTimestamp != nil,
		Failed:      pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded,
		Created:     pod.CreationTimestamp.Time,
	}, true
}

// podClaims returns what the planner needs of the claims of pod, one per
// volumeClaimTemplate of cv that has a claim of fedop's in pv's member.
// The desired size is the template's; whether the claim may grow is
// obs.expandable's answer, asked only of claims smaller than that.
func (o *observation) podClaims(cv *componentView, pv *placementView, pod string) []rollout.Claim {
	if cv.spec == nil {
		return nil
	}
	var out []rollout.Claim
	for i := range cv.spec.VolumeClaimTemplates {
		vct := &cv.spec.VolumeClaimTemplates[i]
		claim := pv.claims[ClaimName(vct.Metadata.Name, pod)]
		if claim == nil {
			continue
		}
		desired, err := resource.ParseQuantity(vct.Spec.Resources.Requests.Storage)
		if err != nil {
			continue // admission checks it; nothing to grow to
		}
		requested := claim.Spec.Resources.Requests[corev1.ResourceStorage]
		capacity := claim.Status.Capacity[corev1.ResourceStorage]
		c := rollout.Claim{
			Name:      claim.Name,
			Requested: requested.Value(),
			Capacity:  capacity.Value(),
			Desired:   desired.Value(),
			Pending:   claim.Status.Phase != corev1.ClaimBound,
		}
		if c.Desired > c.Requested {
			c.Expandable = o.expandable(pv.member, claim)
		}
		out = append(out, c)
	}
	return out
}

// retainedOrdinals returns the ordinals whose claims (fedop's, not being
// deleted) pv's member keeps for cv but for which it holds neither an
// ordinal nor a pod: left by a scale-in with whenScaled Retain, for a
// scale-out to take back.
func retainedOrdinals(fc *v1alpha1.FederationCluster, cv *componentView, pv *placementView, pods []rollout.Pod) []int {
	var out []int
	for _, claim := range pv.claims {
		ordinal, ok := rollout.ParseOrdinal(fc.Name, cv.name, claim.Labels[v1alpha1.LabelPod])
		hasPod := slices.ContainsFunc(pods, func(p rollout.Pod) bool { return p.Ordinal == ordinal })
		if !ok || claim.DeletionTimestamp != nil || slices.Contains(pv.ordinals, ordinal) || hasPod {
			continue
		}
		out = append(out, ordinal)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// expansionChecker returns obs.expandable: whether a claim's StorageClass
// (as the claim names it; the member's default was filled in at creation)
// allows volume expansion, read from the member's API server (classes are
// cluster-scoped and not labelled fedop's, so no member cache holds them)
// once per class and reconcile. A class that cannot be read counts as not
// allowing it: nothing grows that might not.
func (r *Reconciler) expansionChecker(ctx context.Context, obs *observation) func(string, *corev1.PersistentVolumeClaim) bool {
	answers := map[string]bool{}
	return func(memberName string, claim *corev1.PersistentVolumeClaim) bool {
		class := ""
		if claim.Spec.StorageClassName != nil {
			class = *claim.Spec.StorageClassName
		}
		key := memberName + "/" + class
		if v, ok := answers[key]; ok {
			return v
		}
		allowed := false
		if mv := obs.members[memberName]; mv != nil && mv.cluster != nil && class != "" {
			var sc storagev1.StorageClass
			rctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
			err := mv.cluster.GetAPIReader().Get(rctx, client.ObjectKey{Name: class}, &sc)
			cancel()
			allowed = err == nil && sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		}
		answers[key] = allowed
		return allowed
	}
}
