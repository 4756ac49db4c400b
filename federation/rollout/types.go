package rollout

import (
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Pod is what the planner needs to know of one observed pod.
type Pod struct {
	Name    string
	UID     types.UID
	Ordinal int
	// Revision is the pod's fedop.io/revision label.
	Revision string
	// Ready is the pod's Ready condition; ReadySince its last transition.
	Ready      bool
	ReadySince time.Time
	// Terminating is true once the pod has a deletionTimestamp.
	Terminating bool
	// Failed is true when the pod's phase is Failed or Succeeded: its
	// containers will not run again (an eviction, an OOM kill with
	// restartPolicy Never), so it is replaced, under the same name.
	Failed bool
	// Created is the pod's creationTimestamp.
	Created time.Time
	// Claims are the pod's claims, one per volumeClaimTemplate, as far as
	// they exist.
	Claims []Claim
}

// Claim is what the planner needs to know of one of a pod's claims.
type Claim struct {
	Name string
	// Requested is the claim's storage request, Capacity what its status
	// says it has, Desired its template's request; in bytes.
	Requested, Capacity, Desired int64
	// Expandable is true when the claim's StorageClass allows expansion.
	Expandable bool
	// Pending is true while the claim is not Bound.
	Pending bool
}

// Placement is one component's part in one member: desired and observed.
type Placement struct {
	Member string
	// Replicas is the desired number of pods. A member the component no
	// longer names but still has pods in is passed with Replicas 0.
	Replicas int32
	// Revision is the placement's update revision; empty for a member the
	// component no longer names.
	Revision string
	// Connected is true when the member is registered and its cache is
	// synced and usable. Pods of a disconnected member are unknown: Pods
	// is empty and says nothing.
	Connected bool
	// Fresh is true when the member has answered within the freshness
	// bound and its cache reflects a list made after its last
	// interruption. Only then may a pod anywhere be deleted, or a step in
	// this member count as done.
	Fresh bool
	// Ordinals are the ordinals the placement holds, as recorded in status
	// (sorted): the identities of its pods, kept across replacements and
	// partitions. Pods observed in the placement add theirs.
	Ordinals []int
	// Retained are ordinals the placement no longer holds whose claims it
	// kept (a scale-in with whenScaled Retain), sorted: a scale-out of the
	// placement takes them back first, so the new pod finds its
	// predecessor's data, as a StatefulSet's would. Only this placement
	// ever held them, so taking them back collides with nothing.
	Retained []int
	// Pods are the component's pods observed in the member, any order.
	Pods []Pod
	// Partition is the component's updateStrategy.partition: a pod with a
	// lower ordinal is not outdated, whatever its revision.
	Partition int
}

// Component is one component with its placements in topology order.
type Component struct {
	Name       string
	Placements []Placement
	// NextOrdinal is the first ordinal never handed out, as recorded in
	// status. New pods take ordinals from it up, so an ordinal that a
	// member out of sight may still hold is never handed out again.
	NextOrdinal int
	// Hooks are the component's lifecycle hooks.
	Hooks Hooks
}

// Hooks are what the planner needs to know of a component's lifecycle
// hooks (spec.components[].lifecycle).
type Hooks struct {
	// PreDelete is true when a preDelete hook is called before each
	// deletion; Undo when it names an undo call.
	PreDelete, Undo bool
	// PreDeleteTimeout bounds the preDelete hook's retries; Proceed is
	// true when the pod is deleted anyway past it (onTimeout Proceed).
	PreDeleteTimeout time.Duration
	Proceed          bool
	// PostReady is true when the component has a postReady gate;
	// ComponentScope when each step is verified on every pod of the
	// component rather than its own pod only.
	PostReady, ComponentScope bool
	// PostReadyTimeout bounds the wait for the gate after a step.
	PostReadyTimeout time.Duration
}

// Calls are the answers of the hook calls made for this observation. The
// planner asks for them (Plan.Check, Plan.Drain, Plan.Undo); the caller
// makes them, only for a stage status.operation already records, and
// calls Next again with their answers.
type Calls struct {
	// Health maps the pods whose postReady gate was called, as
	// "member/pod", to "" (it answered 2xx) or why it failed.
	Health map[string]string
	// Drained is true when the step's preDelete hook answered 2xx, Undone
	// when its undo did.
	Drained, Undone bool
	// Failed says why the step's preDelete hook or undo failed this time,
	// and Failures how many times in a row it has.
	Failed   string
	Failures int
}

// State is everything the planner decides from.
type State struct {
	// Name is the FederationCluster's name, the prefix of its pod names.
	Name string
	// Components in spec order.
	Components []Component
	// Operation is status.operation as read; nil when the mutex is free.
	Operation *v1alpha1.Operation
	Paused    bool
	// MinReady is spec.minReadySeconds.
	MinReady time.Duration
	// ProgressDeadline is spec.progressDeadlineSeconds; 0 disables it.
	ProgressDeadline time.Duration
	// OrdinalsRecorded is true when the components' Ordinals and
	// NextOrdinal come from status (fedop wrote them) or the
	// FederationCluster is new: they are then complete. Otherwise (a
	// status written before fedop recorded ordinals) they are derived from
	// what is observed, and no new ordinal is handed out while a member
	// that may hold pods is out of sight.
	OrdinalsRecorded bool
	// Release is true when a user asked, through the
	// fedop.io/release-operation annotation naming Operation's
	// startedTime, that the operation be dropped and planned again.
	Release bool
	// ReleaseNames is the start the fedop.io/release-operation annotation
	// names, whether or not Operation started then (zero without the
	// annotation, or when it is not an RFC 3339 time). An operation is
	// named by the second it started, so none is started in that second:
	// the annotation would release it at once, and again the next one.
	ReleaseNames time.Time
	// Now is the time of the observation.
	Now time.Time
	// Calls are the answers of this observation's hook calls.
	Calls Calls
}

// PodRef names a pod to act on.
type PodRef struct {
	Component string
	Member    string
	Name      string
	Ordinal   int
	// UID, for a deletion, is the precondition: only this instance may go.
	UID types.UID
	// Revision, for a creation, is the update revision to create it at.
	Revision string
}

// ClaimRef names a claim to act on: its pod's ref, and the claim's name
// and desired size in bytes.
type ClaimRef struct {
	Pod     PodRef
	Name    string
	Desired int64
}

// ComponentOrdinals is what status must record of one component's
// ordinals after a plan: the first ordinal never handed out, and what each
// placement holds.
type ComponentOrdinals struct {
	Component   string
	NextOrdinal int
	// Placements maps a member to its ordinals, sorted. A placement that
	// holds none is absent.
	Placements map[string][]int
}

// Plan is the next step.
type Plan struct {
	// Operation is the value status.operation must hold, written with a
	// resourceVersion precondition, before any action below is taken; nil
	// frees the mutex.
	Operation *v1alpha1.Operation
	// Ordinals is what status must record of every component's ordinals,
	// written with Operation: an ordinal is recorded before the pod that
	// takes it is created.
	Ordinals []ComponentOrdinals
	// Create lists pods to create. Creation is never disruptive.
	Create []PodRef
	// Replace lists failed pods to delete, to be created again under the
	// same name: they are down already, so this costs no availability and
	// does not count as the step's disruption.
	Replace []PodRef
	// Delete is the one disruptive action, if any.
	Delete *PodRef
	// Expand lists claims to grow to their template's size (an Expand
	// step): not disruptive.
	Expand []ClaimRef
	// Unexpandable lists claims smaller than their template whose
	// StorageClass does not allow expansion, as "claim in member".
	Unexpandable []string
	// Message says what the step does or waits for (Progressing message).
	Message string
	// RequeueAfter, when positive, is how soon something changes without an
	// event: a Ready pod reaching minReadySeconds, a pod reaching the
	// progress deadline.
	RequeueAfter time.Duration
	// Completed is the pod whose step this observation finished (replaced
	// and available, created and available, or removed), if any.
	Completed *PodRef
	// CompletedAt is when Completed became available or was seen gone.
	CompletedAt time.Time
	// Dropped says why the step status.operation named was dropped
	// without being taken (it no longer passed the checks of a new step),
	// or is empty.
	Dropped string
	// Released is true when the operation was dropped at a user's request
	// (State.Release).
	Released bool
	// Stuck is the pod that has not been available for longer than the
	// progress deadline, if any; StuckFor says for how long.
	Stuck    *PodRef
	StuckFor time.Duration
	// Check lists the pods whose postReady gate this plan depends on. When
	// one of them has no answer in State.Calls.Health, the plan only
	// waits: call the gates and plan again with their answers.
	Check []PodRef
	// Drain is the pod whose preDelete hook is to be called (the step's,
	// in stage Draining); Undo the pod whose undo is (stage Undoing). A
	// hook is called only once status.operation records its stage: when
	// the plan enters the stage, call it after the status write, in the
	// next reconcile.
	Drain, Undo *PodRef
	// Hook reports on the hooks: empty, or a condition reason
	// (HookFailing, HookTimedOut, HealthCheckFailed) for what the message
	// says.
	Hook string
	// Proceeded is true when a preDelete hook timed out with onTimeout
	// Proceed: the pod is deleted anyway.
	Proceeded bool
	// Undone is the pod whose called-off step was undone in this plan.
	Undone *PodRef
}

// PodName returns the name of ordinal's pod of component in the
// FederationCluster name: <name>-<component>-<ordinal>.
func PodName(name, component string, ordinal int) string {
	return name + "-" + component + "-" + strconv.Itoa(ordinal)
}

// ParseOrdinal returns the ordinal of podName when it is a pod name of
// component in the FederationCluster name, and false otherwise.
func ParseOrdinal(name, component, podName string) (int, bool) {
	rest, ok := strings.CutPrefix(podName, name+"-"+component+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n > MaxOrdinal {
		return 0, false
	}
	return n, true
}
