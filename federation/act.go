package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation/rollout"
)

// memberWriteTimeout bounds each write to a member. Reads come from caches
// and never block, but a write to a member whose API server stopped
// answering would otherwise hold this reconcile (and the FederationCluster)
// until the TCP connection gives up; bounded, the reconcile fails, is
// retried with backoff, and meanwhile sees the member marked disconnected
// by the registry's probes.
const memberWriteTimeout = 10 * time.Second

// act carries out plan in the members, after the status write recorded it:
// headless Services first (pods find each other through them), then the
// planned creations, then the one deletion. Creations and the deletion are
// recorded as expectations, so a reconcile that runs before the caches
// catch up waits rather than writing again.
func (r *Reconciler) act(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation, plan rollout.Plan) error {
	var errs []error
	if err := r.syncServices(ctx, fc, obs); err != nil {
		errs = append(errs, err)
	}
	key := client.ObjectKeyFromObject(fc)
	deleted := false
	var taken []string
	for _, ref := range plan.Create {
		err := r.createPod(ctx, fc, obs, ref)
		var foreign *nameTakenError
		switch {
		case errors.As(err, &foreign):
			taken = append(taken, foreign.Error())
			if r.nameConflicts.add(key, foreign.Error()) {
				r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventPodNameTaken, "Create", "%s; fedop does not adopt it: delete or rename it", foreign)
			}
			errs = append(errs, err)
		case err != nil:
			errs = append(errs, err)
		default:
			r.expectations.expectCreate(key, ref, obs.now)
		}
	}
	r.nameConflicts.set(key, taken)
	if d := plan.Delete; d != nil {
		mv := obs.members[d.Member]
		if mv == nil || mv.cluster == nil {
			return errors.Join(append(errs, fmt.Errorf("deleting pod %s: member %s is not connected", d.Name, d.Member))...)
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: fc.Namespace}}
		uid := d.UID
		wctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
		err := mv.cluster.GetClient().Delete(wctx, pod, client.Preconditions{UID: &uid})
		cancel()
		switch {
		case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone already, or the name now holds another instance: this
			// instance is gone either way.
			r.expectations.expectDelete(key, *d, obs.now)
			deleted = true
		default:
			errs = append(errs, fmt.Errorf("deleting pod %s in member %s: %w", d.Name, d.Member, err))
		}
	}
	r.steps.record(plan, deleted)
	return errors.Join(errs...)
}

// createPod creates one planned pod. Pods are created, never applied: an
// apply sent on a stale cache's word to a pod that still exists would change
// it in place (a new image restarts its container), a disruption no step
// accounted for. A pod that already exists is left as it is: when it is
// fedop's (the cache has not shown it yet) that is success; when it is not
// (someone else created a pod by that name), fedop does not adopt it, as
// the sample-controller does not adopt a Deployment it does not own, and
// the error is a *nameTakenError.
func (r *Reconciler) createPod(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation, ref rollout.PodRef) error {
	pv := obs.placement(ref.Component, ref.Member)
	mv := obs.members[ref.Member]
	if pv == nil || pv.spec == nil || mv == nil || mv.cluster == nil {
		return fmt.Errorf("creating pod %s: placement %s/%s is not available", ref.Name, ref.Component, ref.Member)
	}
	cv := obs.component(ref.Component)
	pod := desiredPod(fc, cv.spec, pv.spec, pv.template, pv.revision, ref.Name)
	c := mv.cluster.GetClient()
	ctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
	defer cancel()
	err := c.Create(ctx, pod, client.FieldOwner(v1alpha1.FieldManager))
	if apierrors.IsNotFound(err) {
		// The namespace does not exist in this member yet.
		if err := ensureNamespace(ctx, c, fc.Namespace); err != nil {
			return fmt.Errorf("member %s: %w", ref.Member, err)
		}
		pod = desiredPod(fc, cv.spec, pv.spec, pv.template, pv.revision, ref.Name)
		err = c.Create(ctx, pod, client.FieldOwner(v1alpha1.FieldManager))
	}
	if apierrors.IsAlreadyExists(err) {
		return ownsExisting(ctx, mv.cluster.GetAPIReader(), fc, ref)
	}
	if err != nil {
		return fmt.Errorf("creating pod %s in member %s: %w", ref.Name, ref.Member, err)
	}
	return nil
}

// nameTakenError says that a pod fedop would create exists in its member
// and is not fedop's.
type nameTakenError struct{ member, pod string }

func (e *nameTakenError) Error() string {
	return fmt.Sprintf("pod %s in member %s exists and was not created by fedop", e.pod, e.member)
}

// ownsExisting reads, past the cache (which holds fedop's pods only), the
// pod ref names that a create found existing, and returns nil when it is
// fedop's pod of that placement, a *nameTakenError when it is not.
func ownsExisting(ctx context.Context, c client.Reader, fc *v1alpha1.FederationCluster, ref rollout.PodRef) error {
	existing := &metav1.PartialObjectMetadata{}
	existing.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: fc.Namespace, Name: ref.Name}, existing); err != nil {
		return fmt.Errorf("reading pod %s in member %s, which a create found existing: %w", ref.Name, ref.Member, err)
	}
	l := existing.Labels
	if l[v1alpha1.LabelManagedBy] == v1alpha1.ManagedBy && l[v1alpha1.LabelInstance] == fc.Name &&
		l[v1alpha1.LabelComponent] == ref.Component && l[v1alpha1.LabelMember] == ref.Member {
		return nil
	}
	return &nameTakenError{member: ref.Member, pod: ref.Name}
}

// nameConflicts remembers, per FederationCluster, the pods fedop could not
// create because another pod holds the name, as found by the last act: the
// next status reports them, and each is recorded as an Event once.
type nameConflicts struct {
	// mu guards byFC.
	mu   sync.Mutex
	byFC map[client.ObjectKey][]string
	// reported holds what has had its Event, by FederationCluster.
	reported map[client.ObjectKey]map[string]bool
}

func newNameConflicts() *nameConflicts {
	return &nameConflicts{byFC: map[client.ObjectKey][]string{}, reported: map[client.ObjectKey]map[string]bool{}}
}

// add reports whether msg is new for fc, noting it.
func (n *nameConflicts) add(fc client.ObjectKey, msg string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.reported[fc] == nil {
		n.reported[fc] = map[string]bool{}
	}
	if n.reported[fc][msg] {
		return false
	}
	n.reported[fc][msg] = true
	return true
}

// set replaces fc's conflicts with those the last act found.
func (n *nameConflicts) set(fc client.ObjectKey, msgs []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(msgs) == 0 {
		delete(n.byFC, fc)
		delete(n.reported, fc)
		return
	}
	n.byFC[fc] = msgs
}

// get returns fc's conflicts.
func (n *nameConflicts) get(fc client.ObjectKey) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.byFC[fc])
}

// forget drops fc.
func (n *nameConflicts) forget(fc client.ObjectKey) { n.set(fc, nil) }

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns, client.FieldOwner(v1alpha1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// syncServices keeps one headless Service per component in every connected
// member that hosts it, applied (server-side, field manager fedop) only when
// missing or drifted, so a steady federation costs no writes. A Service of a
// component a member no longer hosts is deleted once its pods are gone.
func (r *Reconciler) syncServices(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation) error {
	var errs []error
	ctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
	defer cancel()
	for _, cv := range obs.components {
		for _, pv := range cv.placements {
			mv := obs.members[pv.member]
			if mv.cluster == nil {
				continue
			}
			c := mv.cluster.GetClient()
			hosts := pv.spec != nil && pv.spec.Replicas > 0
			switch {
			case hosts && (pv.service == nil || serviceDrifted(pv.service, desiredService(fc, cv.spec, pv.member))):
				if pv.service == nil {
					if err := ensureNamespace(ctx, c, fc.Namespace); err != nil {
						errs = append(errs, fmt.Errorf("member %s: %w", pv.member, err))
						continue
					}
				}
				ac, err := applyConfiguration(desiredService(fc, cv.spec, pv.member), corev1.SchemeGroupVersion.WithKind("Service"))
				if err == nil {
					err = c.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("applying service %s in member %s: %w", ServiceName(fc, cv.name), pv.member, err))
				}
			case !hosts && pv.service != nil && len(pv.pods) == 0:
				uid := pv.service.UID
				err := c.Delete(ctx, pv.service, client.Preconditions{UID: &uid})
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					errs = append(errs, fmt.Errorf("deleting service %s in member %s: %w", pv.service.Name, pv.member, err))
				}
			}
		}
	}
	return errors.Join(errs...)
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
