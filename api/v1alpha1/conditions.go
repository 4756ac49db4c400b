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
	// False while fedop's objects remain in some member or a member cannot
	// be reached (its message names them). It is never True: once every
	// member is clean, fedop drops its finalizer and the object is gone.
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
	ReasonPodNameTaken       = "PodNameTaken"
)
