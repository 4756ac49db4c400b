package federation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
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

// act carries out plan in the members, after the status write recorded it
// or on the acknowledgement status already held (preAcknowledged; prev is
// the operation status held before: a completed step is counted in it):
// the one disruptive deletion first, then the creations of components
// without claims, then the claims, then the creations of components with
// claims, then the failed pods' deletions (repairs). A pod is created in a
// member only where its component's headless Service and EndpointSlices
// are in place already (discoveryInPlace), so that it finds its peers at
// once; the discovery controller writes them (reconcileDiscovery), and
// their creation wakes this controller. The deletion goes first because
// the planner has just checked it against the caches and it is the step's
// critical path. Creations and deletions are recorded as expectations, so
// a reconcile that runs before the caches catch up waits rather than
// writing again. Each member write has its own deadline, so a member that
// stopped answering costs its own writes only. What failed is kept for the
// next status (actIssues) and returned, for a rate-limited retry.
func (r *Reconciler) act(
	ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation, plan rollout.Plan, prev v1alpha1.OperationType, times *stepTimes,
) error {
	key := client.ObjectKeyFromObject(fc)
	var errs []error
	var issues actIssues
	failed := func(err error) {
		errs = append(errs, err)
		issues.failed = append(issues.failed, err.Error())
	}
	deleted := false
	if d := plan.Delete; d != nil {
		times.deleteSent = r.clock.Now()
		err := r.deletePod(ctx, fc, obs, *d)
		times.deleted = r.clock.Now()
		if err != nil {
			failed(err)
		} else {
			r.expectations.expectDelete(key, *d, obs.now)
			deleted = true
		}
	}
	create := func(ref rollout.PodRef) {
		err := r.createPod(ctx, fc, obs, ref)
		var taken *nameTakenError
		switch {
		case errors.As(err, &taken):
			issues.taken = append(issues.taken, taken.Error())
			if r.issues.firstTime(key, taken.Error()) {
				r.recorder.Eventf(fc, nil, corev1.EventTypeWarning, EventPodNameTaken, "Create", "%s; fedop does not adopt it: delete or rename it", taken)
			}
			errs = append(errs, err)
		case err != nil:
			failed(err)
		default:
			r.expectations.expectCreate(key, ref, obs.now)
		}
	}
	var later []rollout.PodRef
	for _, ref := range plan.Create {
		switch {
		case !obs.discoveryInPlace(fc, ref.Member, ref.Component):
			// Planned again once the discovery controller's slices are
			// in place.
		case obs.hasClaims(ref.Component):
			later = append(later, ref)
		default:
			create(ref)
		}
	}
	for _, err := range r.syncClaims(ctx, fc, obs, plan) {
		failed(err)
	}
	for _, ref := range later {
		create(ref)
	}
	for _, ref := range plan.Replace {
		if err := r.deletePod(ctx, fc, obs, ref); err != nil {
			failed(err)
			continue
		}
		r.expectations.expectDelete(key, ref, obs.now)
		r.recorder.Eventf(fc, nil, corev1.EventTypeNormal, EventFailedPodReplaced, "Delete",
			"Pod %s in member %s failed; deleted to come back under its name", ref.Name, ref.Member)
	}
	for _, c := range plan.Expand {
		if err := r.expandClaim(ctx, obs, c); err != nil {
			failed(err)
		}
	}
	r.steps.record(key, prev, plan, deleted, times)
	r.issues.set(key, issues)
	return errors.Join(errs...)
}

// deletePod deletes the pod instance ref names (UID precondition, so that
// a stale cache never deletes another instance of the name). Gone already,
// or the name holding another instance, counts as done: that instance is
// gone either way.
func (r *Reconciler) deletePod(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation, ref rollout.PodRef) error {
	mv := obs.members[ref.Member]
	if mv == nil || mv.cluster == nil {
		return fmt.Errorf("deleting pod %s: member %s is not connected", ref.Name, ref.Member)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: fc.Namespace}}
	uid := ref.UID
	wctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
	defer cancel()
	err := mv.cluster.GetClient().Delete(wctx, pod, client.Preconditions{UID: &uid})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting pod %s in member %s: %w", ref.Name, ref.Member, err)
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
	create := func(pod *corev1.Pod) error {
		// Its claims first: the pod mounts them, and a claim that waits for
		// its first consumer binds when the scheduler places the pod.
		for i := range cv.spec.VolumeClaimTemplates {
			if err := ensureClaim(ctx, c, fc, cv.spec, pv, &cv.spec.VolumeClaimTemplates[i], ref.Name); err != nil {
				return err
			}
		}
		return c.Create(ctx, pod, client.FieldOwner(v1alpha1.FieldManager))
	}
	err := create(pod)
	if apierrors.IsNotFound(err) {
		// The namespace does not exist in this member yet.
		if err := ensureNamespace(ctx, c, fc.Namespace); err != nil {
			return fmt.Errorf("member %s: %w", ref.Member, err)
		}
		err = create(desiredPod(fc, cv.spec, pv.spec, pv.template, pv.revision, ref.Name))
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

// actIssues are what one act could not do, for the next status to report:
// pods whose names another pod holds, and member writes that failed.
type actIssues struct {
	taken, failed []string
}

// issueStore keeps, per FederationCluster, the issues of the last act and
// of the last discovery reconcile, and what has had its Event.
type issueStore struct {
	// mu guards byFC, discovery and reported.
	mu        sync.Mutex
	byFC      map[client.ObjectKey]actIssues
	discovery map[client.ObjectKey][]string
	reported  map[client.ObjectKey]map[string]bool
}

func newIssueStore() *issueStore {
	return &issueStore{
		byFC: map[client.ObjectKey]actIssues{}, discovery: map[client.ObjectKey][]string{}, reported: map[client.ObjectKey]map[string]bool{},
	}
}

// firstTime reports whether msg is new for fc, noting it.
func (n *issueStore) firstTime(fc client.ObjectKey, msg string) bool {
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

// setDiscovery replaces fc's discovery issues (the discovery controller's
// failed writes) with msgs, and reports whether they changed.
func (n *issueStore) setDiscovery(fc client.ObjectKey, msgs []string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if slices.Equal(n.discovery[fc], msgs) {
		return false
	}
	if len(msgs) == 0 {
		delete(n.discovery, fc)
	} else {
		n.discovery[fc] = msgs
	}
	return true
}

// set replaces fc's issues with those the last act found.
func (n *issueStore) set(fc client.ObjectKey, issues actIssues) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(issues.taken) == 0 && len(issues.failed) == 0 {
		delete(n.byFC, fc)
		if len(issues.taken) == 0 {
			delete(n.reported, fc)
		}
		return
	}
	n.byFC[fc] = issues
}

// get returns fc's issues.
func (n *issueStore) get(fc client.ObjectKey) actIssues {
	n.mu.Lock()
	defer n.mu.Unlock()
	i := n.byFC[fc]
	return actIssues{taken: slices.Clone(i.taken), failed: slices.Concat(i.failed, n.discovery[fc])}
}

// forget drops fc.
func (n *issueStore) forget(fc client.ObjectKey) {
	n.set(fc, actIssues{})
	n.setDiscovery(fc, nil)
}

// ensureClaim creates the claim of template vct for pod unless it exists:
// whoever's it is, the pod mounts it (a claim made beforehand, for a
// volume prepared by hand, is used as a StatefulSet would), but only a
// claim fedop made is ever changed or deleted.
func ensureClaim(
	ctx context.Context, c client.Client, fc *v1alpha1.FederationCluster, comp *v1alpha1.Component,
	pv *placementView, vct *v1alpha1.VolumeClaimTemplate, pod string,
) error {
	name := ClaimName(vct.Metadata.Name, pod)
	if _, ok := pv.claims[name]; ok {
		return nil
	}
	claim, err := desiredClaim(fc, comp, pv.spec, vct, pod)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, claim, client.FieldOwner(v1alpha1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating claim %s in member %s: %w", name, pv.member, err)
	}
	return nil
}

// expandClaim grows claim ref to its template's size: a patch of its
// storage request, which the member's storage then carries out in place.
func (r *Reconciler) expandClaim(ctx context.Context, obs *observation, ref rollout.ClaimRef) error {
	mv := obs.members[ref.Pod.Member]
	pv := obs.placement(ref.Pod.Component, ref.Pod.Member)
	if mv == nil || mv.cluster == nil || pv == nil || pv.claims[ref.Name] == nil {
		return fmt.Errorf("expanding claim %s: member %s is not connected", ref.Name, ref.Pod.Member)
	}
	claim := pv.claims[ref.Name].DeepCopy()
	patch := client.MergeFrom(claim.DeepCopy())
	if claim.Spec.Resources.Requests == nil {
		claim.Spec.Resources.Requests = corev1.ResourceList{}
	}
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = *resource.NewQuantity(ref.Desired, resource.BinarySI)
	wctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
	defer cancel()
	if err := mv.cluster.GetClient().Patch(wctx, claim, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("expanding claim %s in member %s: %w", ref.Name, ref.Pod.Member, err)
	}
	return nil
}

// syncClaims deletes, for components whose claims go with a scale-in
// (whenScaled Delete), the claims of fedop's whose ordinal the placement no
// longer holds after plan and whose pod is gone, in members that answer:
// never a claim whose pod exists, never one fedop did not create.
func (r *Reconciler) syncClaims(ctx context.Context, fc *v1alpha1.FederationCluster, obs *observation, plan rollout.Plan) []error {
	held := map[string][]int{}
	for _, co := range plan.Ordinals {
		for m, set := range co.Placements {
			held[co.Component+"/"+m] = set
		}
	}
	var errs []error
	for _, cv := range obs.components {
		if !deletesScaledClaims(cv.spec) {
			continue
		}
		for _, pv := range cv.placements {
			mv := obs.members[pv.member]
			if mv == nil || mv.cluster == nil || !mv.state.Fresh {
				continue
			}
			for name, claim := range pv.claims {
				pod := claim.Labels[v1alpha1.LabelPod]
				ordinal, ok := rollout.ParseOrdinal(fc.Name, cv.name, pod)
				if !ok || slices.Contains(held[cv.name+"/"+pv.member], ordinal) || slices.ContainsFunc(pv.pods, func(p *corev1.Pod) bool { return p.Name == pod }) {
					continue
				}
				uid := claim.UID
				wctx, cancel := context.WithTimeout(ctx, memberWriteTimeout)
				err := mv.cluster.GetClient().Delete(wctx, claim, client.Preconditions{UID: &uid})
				cancel()
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					errs = append(errs, fmt.Errorf("deleting claim %s in member %s: %w", name, pv.member, err))
				}
			}
		}
	}
	return errs
}

// ensureNamespace creates namespace name in a member unless it exists. A
// member identity joined with namespaced Roles only (kubectl fedop join
// --namespaces) may not create namespaces: Forbidden is no error, as join
// created the namespaces it listed, and a write into one that is missing
// says so itself.
func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns, client.FieldOwner(v1alpha1.FieldManager)); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}
