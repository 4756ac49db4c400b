package v1alpha1

import "k8s.io/apimachinery/pkg/labels"

// Labels fedop sets on every object it creates in a member cluster.
const (
	// LabelManagedBy marks fedop's objects; member caches are restricted to
	// objects carrying it with value ManagedBy.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is LabelManagedBy's value.
	ManagedBy = "fedop"
	// LabelInstance holds the FederationCluster's name.
	LabelInstance = "app.kubernetes.io/instance"
	// LabelComponent holds the component's name.
	LabelComponent = "app.kubernetes.io/component"
	// LabelMember holds the member cluster's name.
	LabelMember = "fedop.io/member"
	// LabelPodsMember, on EndpointSlices, names the member cluster whose
	// pods the slice lists; LabelMember names the member it is written in.
	LabelPodsMember = "fedop.io/pods-member"
	// EndpointSliceManagedBy is the endpointslice.kubernetes.io/managed-by
	// value of fedop's EndpointSlices: kube-controller-manager's
	// EndpointSlice controllers only touch slices carrying their own value.
	EndpointSliceManagedBy = "fedop.io"
	// LabelRevision, on pods, holds the hash of the placement's effective
	// pod template the pod was created from.
	LabelRevision = "fedop.io/revision"
	// LabelPod, on claims, holds the name of the pod the claim is for.
	LabelPod = "fedop.io/pod"
)

const (
	// Finalizer keeps a FederationCluster until fedop has deleted what it
	// created in every member.
	Finalizer = "fedop.io/cleanup"
	// AnnotationSkipUnreachableCleanup, set to "true" on a FederationCluster
	// being deleted, lets the finalizer go although some member could not be
	// cleaned because it is unreachable.
	AnnotationSkipUnreachableCleanup = "fedop.io/skip-unreachable-cleanup"
	// AnnotationReleaseOperation, set on a FederationCluster to the
	// startedTime of its status.operation (RFC 3339, as status shows it),
	// makes fedop drop that operation and its step, record who asked in an
	// Event, and plan again from what it observes: the safe way to release
	// the status-flag mutex by hand. A value naming another operation is
	// ignored, so a stale annotation is harmless.
	AnnotationReleaseOperation = "fedop.io/release-operation"
	// FieldManager is the server-side apply field manager of fedop's writes
	// to member objects.
	FieldManager = "fedop"
)

// ManagedBySelector selects the objects fedop created in a member cluster:
// the selector of every member cache (member.Options.CacheSelector), so
// that a member's other objects are never listed, watched or stored.
func ManagedBySelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{LabelManagedBy: ManagedBy})
}
