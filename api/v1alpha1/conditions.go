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
	// ConditionStorageExpanded is set when a component has
	// volumeClaimTemplates: True when every claim has its template's size,
	// False while claims grow (Expanding) or when a claim's StorageClass
	// does not allow expansion (ExpansionUnsupported; its message names the
	// claims). fedop never deletes a claim to resize it.
	ConditionStorageExpanded = "StorageExpanded"
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
	// ReasonProgressDeadlineExceeded: a pod has not been available for
	// longer than spec.progressDeadlineSeconds (Progressing=False).
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	// ReasonReplacingFailedPods: pods in phase Failed or Succeeded are
	// being deleted, to come back under their names.
	ReasonReplacingFailedPods = "ReplacingFailedPods"
	// ReasonMemberWriteFailed: a write to a member cluster failed in the
	// last reconcile; the message names the member and the error.
	ReasonMemberWriteFailed = "MemberWriteFailed"
	// ReasonMemberSilent: a member in use has not answered within the
	// freshness bound, so no pod is deleted anywhere until it does.
	ReasonMemberSilent = "MemberSilent"
	// ReasonClaimPending: the pod past the progress deadline waits for a
	// claim that is not Bound (Progressing=False); the message names it.
	ReasonClaimPending = "ClaimPending"
	// ReasonExpanded, ReasonExpanding, ReasonExpansionUnsupported: the
	// reasons of StorageExpanded.
	ReasonExpanded             = "Expanded"
	ReasonExpanding            = "Expanding"
	ReasonExpansionUnsupported = "ExpansionUnsupported"
	// ReasonHookFailing: a hook call of the step failed and is retried
	// with backoff (Progressing=True); the message names pod, hook and
	// error.
	ReasonHookFailing = "HookFailing"
	// ReasonHookTimedOut: a preDelete hook with onTimeout Halt, or a
	// postReady gate after a step, has not succeeded within its
	// timeoutSeconds (Progressing=False).
	ReasonHookTimedOut = "HookTimedOut"
	// ReasonHealthCheckFailed: a component's postReady gate fails on a pod
	// before a deletion, which waits for it (Progressing=True).
	ReasonHealthCheckFailed = "HealthCheckFailed"
)
