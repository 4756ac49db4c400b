package federation

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
	"github.com/fedop-io/fedop/member"
)

// Members is what the reconciler needs of the member registry
// (*member.Registry satisfies it).
type Members interface {
	// Get returns a connected member's cluster, or an error wrapping
	// member.ErrNotRegistered or member.ErrDisconnected.
	Get(name string) (cluster.Cluster, error)
	// State returns what is known of a member's connection.
	State(name string) member.State
	// Watch starts w on a connected member's cache, once per connection.
	Watch(ctx context.Context, name string, w member.Watcher) error
	// Source returns the source of member state changes, mapped to
	// requests by mapFunc.
	Source(mapFunc func(ctx context.Context, member string) []reconcile.Request) source.SyncingSource
}

// memberView is one member as this reconcile saw it.
type memberView struct {
	state member.State
	// cluster is nil unless the member is connected.
	cluster cluster.Cluster
}

// placementView is one placement: desired (spec may be nil for a member the
// component no longer names) and observed.
type placementView struct {
	member   string
	spec     *v1alpha1.Placement
	template *corev1.PodTemplateSpec
	revision string
	pods     []*corev1.Pod
	// service is the component's headless Service in this member, if cached.
	service *corev1.Service
}

// componentView is one component, spec order, placements in topology order
// followed by members it no longer names but still has pods in.
type componentView struct {
	name       string
	spec       *v1alpha1.Component
	placements []*placementView
}

// observation is everything one reconcile read, read once from the member
// caches and the registry, and never again during the reconcile (read and
// write are separate, as in the controllers of kube-controller-manager): every
// decision of the reconcile is made from it.
type observation struct {
	now        time.Time
	members    map[string]*memberView
	components []*componentView
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
	slices.Sort(names)
	return slices.Compact(names)
}

// observe reads fc's objects from every member's cache. A member that is
// not connected is recorded as such, with no pods: its pods are unknown.
func (r *Reconciler) observe(ctx context.Context, fc *v1alpha1.FederationCluster) (*observation, error) {
	obs := &observation{now: r.clock.Now(), members: map[string]*memberView{}}
	pods := map[string][]*corev1.Pod{}       // member/component -> pods
	services := map[string]*corev1.Service{} // member/component -> Service
	for _, name := range memberNames(fc) {
		mv := &memberView{state: r.members.State(name)}
		obs.members[name] = mv
		cl, err := r.members.Get(name)
		if err != nil {
			mv.state.Connected = false
			continue
		}
		if err := r.watch(ctx, name); err != nil {
			return nil, err
		}
		mv.cluster = cl
		var podList corev1.PodList
		if err := cl.GetClient().List(ctx, &podList, client.InNamespace(fc.Namespace), instanceSelector(fc)); err != nil {
			return nil, fmt.Errorf("listing pods of member %s from its cache: %w", name, err)
		}
		for i := range podList.Items {
			pod := &podList.Items[i]
			if pod.Labels[v1alpha1.LabelMember] != name {
				continue // not created by fedop for this member
			}
			key := name + "/" + pod.Labels[v1alpha1.LabelComponent]
			pods[key] = append(pods[key], pod)
		}
		var svcList corev1.ServiceList
		if err := cl.GetClient().List(ctx, &svcList, client.InNamespace(fc.Namespace), instanceSelector(fc)); err != nil {
			return nil, fmt.Errorf("listing services of member %s from its cache: %w", name, err)
		}
		for i := range svcList.Items {
			svc := &svcList.Items[i]
			services[name+"/"+svc.Labels[v1alpha1.LabelComponent]] = svc
		}
	}

	seen := map[string]bool{}
	add := func(cv *componentView, memberName string, spec *v1alpha1.Placement) error {
		pv := &placementView{member: memberName, spec: spec, pods: pods[memberName+"/"+cv.name], service: services[memberName+"/"+cv.name]}
		seen[memberName+"/"+cv.name] = true
		if spec != nil {
			pv.template = EffectiveTemplate(cv.spec, spec)
			rev, err := Revision(pv.template)
			if err != nil {
				return err
			}
			pv.revision = rev
		}
		cv.placements = append(cv.placements, pv)
		return nil
	}
	for i := range fc.Spec.Components {
		c := &fc.Spec.Components[i]
		cv := &componentView{name: c.Name, spec: c}
		for j := range c.Topology {
			if err := add(cv, c.Topology[j].Member, &c.Topology[j]); err != nil {
				return nil, err
			}
		}
		obs.components = append(obs.components, cv)
	}
	// Pods the spec no longer asks for (a member dropped from a component's
	// topology, or a component dropped) are kept in view as placements of
	// zero replicas, so that scale-in drains them one at a time.
	for _, sc := range fc.Status.Components {
		cv := obs.component(sc.Name)
		if cv == nil {
			cv = &componentView{name: sc.Name}
			obs.components = append(obs.components, cv)
		}
		for _, sp := range sc.Members {
			if seen[sp.Member+"/"+sc.Name] {
				continue
			}
			if err := add(cv, sp.Member, nil); err != nil {
				return nil, err
			}
		}
	}
	return obs, nil
}

// memberStates returns the state of every observed member, Connected only
// where this observation could read the member's cache.
func (o *observation) memberStates() map[string]member.State {
	out := make(map[string]member.State, len(o.members))
	for name, mv := range o.members {
		s := mv.state
		s.Connected = mv.cluster != nil
		out[name] = s
	}
	return out
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

func (o *observation) component(name string) *componentView {
	for _, c := range o.components {
		if c.name == name {
			return c
		}
	}
	return nil
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
		Name:      fc.Name,
		Operation: fc.Status.Operation,
		Paused:    fc.Spec.Paused,
		MinReady:  time.Duration(fc.Spec.MinReadySeconds) * time.Second,
		Now:       obs.now,
	}
	key := client.ObjectKeyFromObject(fc)
	for _, cv := range obs.components {
		rc := rollout.Component{Name: cv.name}
		for _, pv := range cv.placements {
			rp := rollout.Placement{Member: pv.member, Revision: pv.revision, Connected: obs.members[pv.member].cluster != nil}
			if pv.spec != nil {
				rp.Replicas = pv.spec.Replicas
			}
			for _, pod := range pv.pods {
				ordinal, ok := rollout.ParseOrdinal(fc.Name, cv.name, pod.Name)
				if !ok {
					continue
				}
				ready, since := podReady(pod)
				rp.Pods = append(rp.Pods, rollout.Pod{
					Name:        pod.Name,
					UID:         pod.UID,
					Ordinal:     ordinal,
					Revision:    pod.Labels[v1alpha1.LabelRevision],
					Ready:       ready,
					ReadySince:  since,
					Terminating: pod.DeletionTimestamp != nil,
				})
			}
			rp.Pods = r.expectations.apply(key, pv.member, cv.name, rp.Pods, obs.now)
			rc.Placements = append(rc.Placements, rp)
		}
		s.Components = append(s.Components, rc)
	}
	return s
}

// podReady returns the pod's Ready condition and when it last changed.
func podReady(pod *corev1.Pod) (bool, time.Time) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}
