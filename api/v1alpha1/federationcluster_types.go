package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Bounds of the API. They keep every pod name fedop derives,
// <federationcluster>-<component>-<ordinal>, a DNS-1123 label (at most 63
// characters), so it can serve as the pod's hostname under its component's
// headless Service.
const (
	// MaxComponents is the most components a FederationCluster may have.
	MaxComponents = 16
	// MaxPlacements is the most placements (members) a component may have.
	MaxPlacements = 32
	// MaxReplicasPerPlacement is the most pods one placement may ask for.
	MaxReplicasPerPlacement = 1000
	// MaxComponentNameLength is the longest component name.
	MaxComponentNameLength = 20
	// MaxOrdinalDigits is the width of the largest ordinal a component can
	// reach: MaxPlacements * MaxReplicasPerPlacement - 1 = 31999.
	MaxOrdinalDigits = 5
	// MaxNameAndComponentLength bounds len(metadata.name) + len(component
	// name): 63 - two dashes - MaxOrdinalDigits.
	MaxNameAndComponentLength = 56
	// MaxOrdinalRanges is the most ranges a placement's ordinals may take
	// in status (PlacementStatus.Ordinals): with at most 12 characters a
	// range, 64 ranges fit in its 1024 characters. fedop hands a placement
	// no new ordinal that would need more.
	MaxOrdinalRanges = 64
	// MaxStatusComponents and MaxStatusPlacements bound status: the spec's
	// components and placements, plus as many again still being drained
	// (a component or member removed from the spec whose pods are not all
	// gone). Draining entries past the bound are left out of status; fedop
	// still drains them.
	MaxStatusComponents = 2 * MaxComponents
	MaxStatusPlacements = 2 * MaxPlacements
)

// FederationClusterSpec is the desired state: the components of one
// stateful system and, for each, how many pods go to which member cluster.
type FederationClusterSpec struct {
	// paused stops every disruptive action (no pod is deleted) while true.
	// Status is still observed and written. Default false; always written
	// (false is a choice, not an absence).
	// +optional
	Paused bool `json:"paused"`

	// minReadySeconds is how long, in seconds, a created or replaced pod must
	// stay Ready before it counts as available and the coordinator takes the
	// next step. As for Deployments, it is counted from the Ready condition's
	// lastTransitionTime, which has one-second resolution: a pod counts as
	// available between minReadySeconds-1 and minReadySeconds seconds after
	// it became Ready. 0 to 3600; default 0 (available as soon as Ready);
	// always written.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	MinReadySeconds int32 `json:"minReadySeconds"`

	// progressDeadlineSeconds is how long, in seconds, a pod may stay
	// unavailable (counted from its creation or its last Ready transition,
	// whichever is later) before fedop reports the rollout stuck:
	// Progressing=False with reason ProgressDeadlineExceeded naming the pod,
	// and a Warning Event. No pod is deleted while one is unavailable, so
	// the rollout waits; changing the spec (reverting a bad image, say)
	// replaces the stuck pod at once. As for Deployments. 0 disables it; 0
	// to 86400; default 600.
	// +optional
	// +default=600
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// components are the parts of the system, 1 to 16 with unique names.
	// They are initialized and rolled in this order.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Components []Component `json:"components,omitempty"`
}

// Component is one part of the system (for TiDB: pd, tikv or tidb): a base
// pod template and its heterogeneous topology over member clusters.
//
// +kubebuilder:validation:XValidation:rule=`(has(self.volumeClaimTemplates) ? size(self.volumeClaimTemplates) : 0) == (has(oldSelf.volumeClaimTemplates) ? size(oldSelf.volumeClaimTemplates) : 0) && (!has(self.volumeClaimTemplates) || self.volumeClaimTemplates.all(t, oldSelf.volumeClaimTemplates.exists(o, o.metadata.name == t.metadata.name && o.spec.accessModes == t.spec.accessModes && (has(o.spec.storageClassName) ? o.spec.storageClassName : "") == (has(t.spec.storageClassName) ? t.spec.storageClassName : "") && (has(o.spec.volumeMode) ? o.spec.volumeMode : "") == (has(t.spec.volumeMode) ? t.spec.volumeMode : "") && quantity(t.spec.resources.requests.storage).compareTo(quantity(o.spec.resources.requests.storage)) >= 0)))`,message="volumeClaimTemplates are immutable, except that resources.requests.storage may grow"
type Component struct {
	// name identifies the component: a DNS-1035 label of at most 20
	// characters. It appears in pod names (<fc>-<name>-<ordinal>), Service
	// names (<fc>-<name>) and the app.kubernetes.io/component label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`

	// template is the component's base pod. Each placement's overrides are
	// applied over it to make that placement's effective pod template, whose
	// hash is the placement's update revision.
	// +required
	Template corev1.PodTemplateSpec `json:"template"`

	// topology lists where the component's pods run: 1 to 32 placements, at
	// most one per member. During an upgrade, members take turns in this
	// order.
	// +required
	// +listType=map
	// +listMapKey=member
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Topology []Placement `json:"topology,omitempty"`

	// volumeClaimTemplates are the component's per-pod volumes, as a
	// StatefulSet's: for template data and pod demo-tikv-3, fedop creates
	// PersistentVolumeClaim data-demo-tikv-3 in the pod's member and
	// namespace before the pod, and the pod mounts it as volume data
	// (containers refer to it in volumeMounts by that name). A replaced pod
	// mounts the same claim, so its data survives upgrades, failures and
	// deletions. 0 to 8, names unique. Immutable once set, except that
	// resources.requests.storage may grow: fedop then expands each claim in
	// place, one pod at a time, where the member's StorageClass allows it.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.metadata.name == a.metadata.name))",message="volumeClaimTemplates names must be unique"
	VolumeClaimTemplates []VolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`

	// persistentVolumeClaimRetentionPolicy says what becomes of the claims
	// of volumeClaimTemplates when their pod is removed by a scale-in
	// (whenScaled) or the FederationCluster is deleted (whenDeleted): Retain
	// (the default for both) or Delete, as for StatefulSets (KEP-1847). A
	// claim fedop did not create is never deleted.
	// +optional
	PersistentVolumeClaimRetentionPolicy *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`

	// lifecycle names the HTTP endpoints of the component's pods that fedop
	// calls around each step: preDelete before it deletes a pod, postReady
	// after a replacement is available and before the next deletion. fedop
	// reaches them through the member API server's pod proxy, so no
	// network path from the host cluster to pod IPs is needed.
	// +optional
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`

	// updateStrategy holds the component's partition, as a StatefulSet's
	// rollingUpdate.partition.
	// +optional
	UpdateStrategy *UpdateStrategy `json:"updateStrategy,omitempty"`
}

// Lifecycle holds a component's hooks.
type Lifecycle struct {
	// preDelete is called on a pod before fedop deletes it in an upgrade or
	// a scale-in (not before a failed pod is replaced: it cannot answer).
	// +optional
	PreDelete *PreDeleteHook `json:"preDelete,omitempty"`

	// postReady is the component's health gate: called after a replaced
	// or added pod is available for minReadySeconds, before the next step
	// anywhere, and on the component's pods before any of them is
	// deleted.
	// +optional
	PostReady *PostReadyHook `json:"postReady,omitempty"`
}

// HTTPGetHook is an HTTP GET on a pod, made through the member API
// server's pod proxy (GET /api/v1/namespaces/<ns>/pods/<pod>:<port>/proxy<path>).
// A 2xx answer is success; anything else, or no answer within 10 seconds,
// is a failure.
//
// +kubebuilder:validation:XValidation:rule="type(self.port) == int ? (self.port >= 1 && self.port <= 65535) : (size(self.port) >= 1 && size(self.port) <= 15)",message="port must be 1-65535 or the name of a container port (at most 15 characters)"
type HTTPGetHook struct {
	// path is the request path, starting with "/": at most 1024
	// characters, no query.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^?#]*$`
	Path string `json:"path,omitempty"`

	// port is the pod's port: a number (1-65535) or the name of a
	// container port of the pod.
	// +required
	// +kubebuilder:validation:XIntOrString
	Port intstr.IntOrString `json:"port"`
}

// HookTimeoutAction says what fedop does when a preDelete hook has not
// succeeded within its timeout.
// +kubebuilder:validation:Enum=Halt;Proceed
type HookTimeoutAction string

const (
	// HookTimeoutHalt stops the rollout before the deletion and reports it
	// (Progressing=False, reason HookTimedOut). The pod is not deleted;
	// changing the spec or pausing calls the step off (and undoes the
	// hook), releasing the operation (fedop.io/release-operation) tries
	// again.
	HookTimeoutHalt HookTimeoutAction = "Halt"
	// HookTimeoutProceed deletes the pod anyway, and says so in a Warning
	// Event.
	HookTimeoutProceed HookTimeoutAction = "Proceed"
)

// PreDeleteHook is called on a pod before fedop deletes it: the place to
// move leaders away, put a broker in maintenance, or drain a node of the
// database.
type PreDeleteHook struct {
	// httpGet is the call. It is retried, with exponential backoff, until
	// it answers 2xx or timeoutSeconds pass; it may be called again after
	// it answered when the manager dies before recording the answer, so
	// it must be idempotent.
	// +required
	HTTPGet HTTPGetHook `json:"httpGet,omitzero"`

	// undo is called on the pod when its deletion is called off after
	// httpGet was called (the step is no longer wanted: the spec changed,
	// the FederationCluster was paused, the operation was released), before
	// fedop plans anything else; retried until it answers 2xx or the pod
	// is gone.
	// +optional
	Undo *HTTPGetHook `json:"undo,omitempty"`

	// timeoutSeconds bounds the retries of httpGet, from the first call:
	// 1 to 86400, default 120.
	// +optional
	// +default=120
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`

	// onTimeout is what happens when httpGet has not succeeded within
	// timeoutSeconds: Halt (the default) or Proceed.
	// +optional
	// +default="Halt"
	OnTimeout HookTimeoutAction `json:"onTimeout,omitempty"`
}

// HookScope says which pods a postReady gate calls.
// +kubebuilder:validation:Enum=Pod;Component
type HookScope string

const (
	// HookScopePod: after a step, only the replaced or added pod.
	HookScopePod HookScope = "Pod"
	// HookScopeComponent: after a step, every pod of the component, in
	// every member.
	HookScopeComponent HookScope = "Component"
)

// PostReadyHook is a component's health gate.
type PostReadyHook struct {
	// httpGet is the health call. After a step it is retried, with
	// exponential backoff, until it answers 2xx or timeoutSeconds pass.
	// +required
	HTTPGet HTTPGetHook `json:"httpGet,omitzero"`

	// scope is Component (the default: every pod of the component must
	// answer 2xx after each step) or Pod (only the replaced or added pod).
	// Before a deletion the gate always calls every pod of the component
	// but the one to be deleted: fedop does not take a replica down from
	// a system that says it is unhealthy.
	// +optional
	// +default="Component"
	Scope HookScope `json:"scope,omitempty"`

	// timeoutSeconds bounds the wait after a step: past it, fedop halts
	// and reports it (Progressing=False, reason HookTimedOut), and goes on
	// once the gate passes. 1 to 86400, default 300.
	// +optional
	// +default=300
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	TimeoutSeconds int32 `json:"timeoutSeconds,omitempty"`
}

// UpdateStrategy is how a component's pods move to a new revision.
type UpdateStrategy struct {
	// partition is the ordinal below which pods keep their revision during
	// an upgrade (a canary: set it to the highest ordinal, watch, lower
	// it), as for StatefulSets. updatedReplicas and the rollout phase
	// count what the partition allows. A pod below the partition that must
	// be created again (deleted, failed) is created at the update
	// revision: fedop keeps no history of templates. Default 0: every pod
	// is updated.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Partition *int32 `json:"partition,omitempty"`
}

// VolumeClaimTemplate is one per-pod volume of a component.
type VolumeClaimTemplate struct {
	// metadata names the template (and the pod volume): a DNS-1123 label,
	// the prefix of its claims' names. Labels and annotations are copied to
	// the claims.
	// +required
	Metadata ClaimMetadata `json:"metadata,omitzero"`

	// spec is the claims' spec. A placement's storageClassName, when set,
	// replaces spec.storageClassName in that member.
	// +required
	Spec ClaimSpec `json:"spec,omitzero"`
}

// ClaimSpec is the part of a PersistentVolumeClaim's spec a template sets:
// the fields a database's volumes need, each bounded so that the
// immutability rule above stays cheap to evaluate.
type ClaimSpec struct {
	// accessModes are the claim's access modes (ReadWriteOnce, say), 1 to
	// 4.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:Enum=ReadWriteOnce;ReadOnlyMany;ReadWriteMany;ReadWriteOncePod
	// +kubebuilder:validation:items:MaxLength=16
	AccessModes []string `json:"accessModes,omitempty"`

	// storageClassName is the claims' StorageClass; empty: the member's
	// default. At most 253 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`

	// volumeMode is Filesystem (the default) or Block.
	// +optional
	// +kubebuilder:validation:Enum=Filesystem;Block
	// +kubebuilder:validation:MaxLength=16
	VolumeMode string `json:"volumeMode,omitempty"`

	// resources holds the claims' request: requests.storage is the size
	// of each claim. It may grow after creation (expanded in place where
	// the StorageClass allows it), never shrink.
	// +required
	Resources ClaimResources `json:"resources"`
}

// ClaimResources holds a claim's requested size.
type ClaimResources struct {
	// requests holds storage, the size of each claim, a quantity (10Gi).
	// +required
	Requests ClaimRequests `json:"requests"`
}

// ClaimRequests holds the storage request.
type ClaimRequests struct {
	// storage is the requested size, a quantity written as a string
	// ("10Gi"). At most 64 characters.
	// +required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))",message="storage must be a positive quantity, such as 10Gi"
	Storage string `json:"storage"`
}

// ClaimMetadata is the part of a claim's metadata a template sets.
type ClaimMetadata struct {
	// name is the template's name: a DNS-1123 label of at most 63
	// characters.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name,omitempty"`
	// labels are set on every claim; fedop's own labels win. At most 32.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Labels map[string]string `json:"labels,omitempty"`
	// annotations are set on every claim. At most 32.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Placement is the part of a component that runs in one member cluster,
// with the overrides that make it heterogeneous.
type Placement struct {
	// member names a registered member cluster: the name of its Secret in the
	// operator's member namespace. A DNS-1123 label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Member string `json:"member,omitempty"`

	// replicas is the number of pods of the component in this member, 0 to
	// 1000.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Replicas int32 `json:"replicas"`

	// nodeSelector is merged over the template's node selector; a key set
	// here wins. At most 32 entries.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// labels are merged into the pods' labels; a key set here wins over the
	// template, fedop's own labels win over both. At most 64 entries.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are merged into the pods' annotations; a key set here wins.
	// At most 64 entries.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Annotations map[string]string `json:"annotations,omitempty"`

	// env is set on every container (init containers included), replacing
	// a variable of the same name. At most 64 variables.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Env []corev1.EnvVar `json:"env,omitempty"`

	// image replaces, when set, the image of the template's first
	// container. 1 to 512 characters.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// storageClassName is, when set, the StorageClass of this placement's
	// claims (every volumeClaimTemplate's): clusters name their storage
	// differently. At most 253 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	StorageClassName *string `json:"storageClassName,omitempty"`
}

// OperationType names one of the mutually exclusive operations.
// +kubebuilder:validation:Enum=Initialize;Scale;Upgrade;Expand
type OperationType string

const (
	// OperationInitialize creates a new FederationCluster's pods, component
	// by component, each component's pods at once.
	OperationInitialize OperationType = "Initialize"
	// OperationScale creates missing pods and deletes surplus ones, one pod
	// at a time.
	OperationScale OperationType = "Scale"
	// OperationUpgrade replaces outdated pods, one pod at a time.
	OperationUpgrade OperationType = "Upgrade"
	// OperationExpand grows the claims of a volumeClaimTemplate whose
	// storage request grew, one pod's claims at a time, in place.
	OperationExpand OperationType = "Expand"
)

// Operation is the status-flag mutex: the operation in progress. It is
// taken with a status write that carries the object's resourceVersion
// before the first action, rewritten to name the pod before each disruptive
// action (acknowledge, then act), and cleared when the goal is observed.
// Because it lives in status, an operation survives operator restarts.
type Operation struct {
	// type is the operation: Initialize, Scale, Upgrade or Expand.
	// +required
	Type OperationType `json:"type,omitempty"`

	// component is the component being worked on.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	Component string `json:"component,omitempty"`

	// member is the member cluster of the latest step. During an upgrade the
	// next step goes to the next member in topology order.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Member string `json:"member,omitempty"`

	// pod is the pod being acted on now; empty between steps.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Pod string `json:"pod,omitempty"`

	// podUID is the UID of the pod instance being replaced or removed. A pod
	// named pod with this UID is the old instance; any other UID is its
	// replacement. Deletes carry it as a precondition, so a stale cache never
	// deletes a second instance.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	PodUID types.UID `json:"podUID,omitempty"`

	// targetRevision is the update revision the current step moves pod to.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	TargetRevision string `json:"targetRevision,omitempty"`

	// stage is where the step on pod stands, written before each stage
	// begins, so that a manager that restarts resumes it: Draining (the
	// preDelete hook is being called), Deleting, WaitingReady (for the
	// replacement or the new pod), Verifying (the postReady gate), or
	// Undoing (the step was called off after its preDelete hook; its undo
	// is being called).
	// +optional
	Stage StepStage `json:"stage,omitempty"`

	// stageStartedTime is when stage began: the hooks' timeouts count
	// from it. It is stored to the whole second, so they count from the
	// second after it: a timeout may end up to 1 s late, never early.
	// +optional
	StageStartedTime *metav1.Time `json:"stageStartedTime,omitempty"`

	// nextPod is the pod the upgrade's next step will replace, recorded
	// while the current step's pod comes up: the acknowledgement of that
	// step, written off the critical path. When the current pod is
	// available and nextPod, with nextPodUID, is still the step to take,
	// its deletion is sent without another status write first, and is
	// recorded in pod and stage right after. The step is re-checked
	// (availability, freshness, gates) before it acts, like any step, and
	// the deletion carries nextPodUID as a precondition. Empty when no step
	// is known to follow, and never set for a component with a preDelete
	// hook, whose Draining stage is recorded before its hook is called.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	NextPod string `json:"nextPod,omitempty"`

	// nextPodUID is the UID of nextPod's instance that the next step
	// replaces.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	NextPodUID types.UID `json:"nextPodUID,omitempty"`

	// holder identifies the manager that last wrote the operation.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Holder string `json:"holder,omitempty"`

	// startedTime is when the operation was taken.
	// +required
	StartedTime metav1.Time `json:"startedTime"`
}

// StepStage is the stage of the step on status.operation.pod.
// +kubebuilder:validation:Enum=Draining;Deleting;WaitingReady;Verifying;Undoing
type StepStage string

// Step stages, in the order a step goes through them (Undoing instead of
// Deleting when the step is called off).
const (
	StageDraining     StepStage = "Draining"
	StageDeleting     StepStage = "Deleting"
	StageWaitingReady StepStage = "WaitingReady"
	StageVerifying    StepStage = "Verifying"
	StageUndoing      StepStage = "Undoing"
)

// RolloutPhase is a component's rollout progress, derived from the
// generation and the revisions as in the StatefulSet pattern.
// +kubebuilder:validation:Enum=NotStarted;InProgress;Done;Unknown
type RolloutPhase string

const (
	// RolloutNotStarted: some pods are outdated and none of them has been
	// replaced yet.
	RolloutNotStarted RolloutPhase = "NotStarted"
	// RolloutInProgress: some pods are at the update revision, some are not.
	RolloutInProgress RolloutPhase = "InProgress"
	// RolloutDone: every desired pod exists at its update revision.
	RolloutDone RolloutPhase = "Done"
	// RolloutUnknown: the spec has not been observed yet, or a member of the
	// component cannot be observed.
	RolloutUnknown RolloutPhase = "Unknown"
)

// PlacementStatus is what was observed of one placement.
type PlacementStatus struct {
	// member is the placement's member cluster.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Member string `json:"member"`
	// replicas is the number of pods desired in this member.
	// +optional
	Replicas int32 `json:"replicas"`
	// readyReplicas is the number of the placement's pods with Ready=True.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// updatedReplicas is the number of the placement's pods at updateRevision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// currentRevision is the revision of the placement's outdated pods (the
	// most common one), or updateRevision when none is outdated.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	CurrentRevision string `json:"currentRevision,omitempty"`
	// updateRevision is the hash of the placement's effective pod template.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	UpdateRevision string `json:"updateRevision,omitempty"`
	// ordinals are the ordinals the placement holds, as ranges ("0-2,5"):
	// the identities of its pods. A pod keeps its name, ordinal and member
	// for life: one deleted by anyone comes back under its name here, and
	// no other placement is ever given one of these ordinals, even while
	// this member cannot be seen. At most 64 ranges; absent when the
	// placement holds none.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*$`
	Ordinals string `json:"ordinals,omitempty"`
	// boundClaims is the number of the placement's claims (of its pods'
	// ordinals and volumeClaimTemplates) that are Bound; absent when none
	// is.
	// +optional
	// +kubebuilder:validation:Minimum=1
	BoundClaims int32 `json:"boundClaims,omitempty"`
}

// ComponentStatus is what was observed of one component.
type ComponentStatus struct {
	// name is the component's name.
	// +required
	// +kubebuilder:validation:MaxLength=20
	Name string `json:"name"`
	// rollout is the component's rollout phase.
	// +optional
	Rollout RolloutPhase `json:"rollout,omitempty"`
	// replicas is the number of pods desired, all members.
	// +optional
	Replicas int32 `json:"replicas"`
	// readyReplicas is the number of the component's pods with Ready=True.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`
	// updatedReplicas is the number of the component's pods at their
	// placement's update revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// nextOrdinal is the first ordinal never handed out: new pods of the
	// component take ordinals from it up, so a name that a member out of
	// sight may still hold is never given again. Absent in a status
	// written before fedop recorded ordinals.
	// +optional
	// +kubebuilder:validation:Minimum=0
	NextOrdinal *int32 `json:"nextOrdinal,omitempty"`
	// members holds one entry per placement, in topology order, then the
	// members the component no longer names that still hold its pods
	// (being drained), at most 64 in all.
	// +optional
	// +listType=map
	// +listMapKey=member
	// +kubebuilder:validation:MaxItems=64
	Members []PlacementStatus `json:"members,omitempty"`
}

// MemberStatus is the connection state of one member cluster the
// FederationCluster uses.
type MemberStatus struct {
	// name is the member cluster's name.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// connected is true while the operator reaches the member and its cache
	// is synced.
	// +required
	Connected bool `json:"connected"`
	// message says why the member is not connected; empty when it is.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
	// lastProbeTime is when the operator last probed the member.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
}

// FederationClusterStatus is the observed state.
type FederationClusterStatus struct {
	// conditions are Ready, Progressing and MembersConnected, and while the
	// object is being deleted, CleanedUp.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// observedGeneration is the metadata.generation this status was computed
	// from. It is written only by a reconcile that observed every member it
	// could and planned without error. Absent until then; a generation
	// starts at 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// replicas is the number of pods desired, all components and members.
	// +optional
	Replicas int32 `json:"replicas"`

	// readyReplicas is the number of pods with Ready=True.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// updatedReplicas is the number of pods at their placement's update
	// revision.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// operation is the status-flag mutex: the operation in progress, absent
	// when none is.
	// +optional
	Operation *Operation `json:"operation,omitempty"`

	// components holds one entry per component, in spec order, then the
	// components the spec no longer names whose pods are being drained, at
	// most 32 in all.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Components []ComponentStatus `json:"components,omitempty"`

	// members holds one entry per member cluster the spec names or that
	// holds pods being drained, sorted by name. A member that no placement
	// names and that cannot be seen leaves: its last known pods are
	// reported in an Event.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=512
	Members []MemberStatus `json:"members,omitempty"`

	// connectedMembers is "<connected>/<total>" of the members in members,
	// for `kubectl get` (column MEMBERS).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=16
	ConnectedMembers string `json:"connectedMembers,omitempty"`
}

// FederationCluster runs one stateful, multi-component system across member
// clusters. The operator creates pods <name>-<component>-<ordinal> in the
// members its topology names and rolls them one pod at a time for the whole
// federation.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fc,categories=fedop
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.status.connectedMembers`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready-Pods",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Operation",type=string,JSONPath=`.status.operation.type`
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.status.operation.stage`,priority=1
// +kubebuilder:printcolumn:name="Pod",type=string,JSONPath=`.status.operation.pod`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Progressing")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label: it prefixes Service names"
// +kubebuilder:validation:XValidation:rule="self.spec.components.all(c, size(self.metadata.name) + size(c.name) <= 56)",message="metadata.name and a component name together may have at most 56 characters, so that pod names <name>-<component>-<ordinal> stay within 63"
type FederationCluster struct {
	metav1.TypeMeta `json:",inline"`

	// metadata is the object's metadata; metadata.name prefixes the names
	// of the pods and Services fedop creates.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state.
	// +required
	Spec FederationClusterSpec `json:"spec,omitzero"`

	// status is the observed state. (encoding/json never omits a struct,
	// so omitempty here would change nothing.)
	// +optional
	Status FederationClusterStatus `json:"status"`
}

// FederationClusterList is a list of FederationClusters.
//
// +kubebuilder:object:root=true
type FederationClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederationCluster `json:"items"`
}
