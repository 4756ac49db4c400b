package v1alpha1

// Condition types of a FederationCluster, after the Kubernetes API
// conventions: adjectives or past participles, True meaning normal.
const (
	// ConditionReady is True when every desired pod exists and is available.
	ConditionReady = "Ready"
	// ConditionProgressing is True while an operation (Initialize, Scale,
	// Upgrade) is under way; its message names the pod being acted on or
	// waited for.
	ConditionProgressing = "Progressing"
	// ConditionMembersConnected is True when every member cluster the spec
	// names is registered and connected; when False its message names them.
	ConditionMembersConnected = "MembersConnected"
	// ConditionCleanedUp is set while the FederationCluster is being deleted:
	// False while fedop's objects remain in some member (its message names
	// unreachable members), True when every member is clean.
	ConditionCleanedUp = "CleanedUp"
)

// Condition reasons: one CamelCase word each.
const (
	ReasonAvailable          = "Available"
	ReasonPodsUnavailable    = "PodsUnavailable"
	ReasonMemberNotFound     = "MemberNotFound"
	ReasonMemberDisconnected = "MemberDisconnected"
	ReasonConnected          = "Connected"
	ReasonInitializing       = "Initializing"
	ReasonScaling            = "Scaling"
	ReasonUpgrading          = "Upgrading"
	ReasonWaiting            = "Waiting"
	ReasonComplete           = "Complete"
	ReasonPaused             = "Paused"
	ReasonCleaningUp         = "CleaningUp"
	ReasonMemberUnreachable  = "MemberUnreachable"
	ReasonCleanedUp          = "CleanedUp"
	ReasonApplyFailed        = "ApplyFailed"
)

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
	// LabelRevision, on pods, holds the hash of the placement's effective
	// pod template the pod was created from.
	LabelRevision = "fedop.io/revision"
)

const (
	// Finalizer keeps a FederationCluster until fedop has deleted what it
	// created in every member.
	Finalizer = "fedop.io/cleanup"
	// AnnotationSkipUnreachableCleanup, set to "true" on a FederationCluster
	// being deleted, lets the finalizer go although some member could not be
	// cleaned because it is unreachable.
	AnnotationSkipUnreachableCleanup = "fedop.io/skip-unreachable-cleanup"
	// FieldManager is the server-side apply field manager of fedop's writes
	// to member objects.
	FieldManager = "fedop"
)
