package podwatch

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Ready reports whether pod's Ready condition is True.
func Ready(pod *corev1.Pod) bool {
	ready, _ := ReadySince(pod)
	return ready
}

// ReadySince returns whether pod's Ready condition is True and its
// lastTransitionTime (zero when the pod has no Ready condition).
func ReadySince(pod *corev1.Pod) (bool, time.Time) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue, c.LastTransitionTime.Time
		}
	}
	return false, time.Time{}
}

// Record is one pod instance (one UID) in one member as a watcher saw it.
// Every time is the watcher's own receive time of the event that showed
// the change, never a timestamp from the pod.
type Record struct {
	Member, Name string
	UID          types.UID
	// Labels are the instance's labels when first seen.
	Labels map[string]string
	// Image is the first container's image.
	Image string
	// IP is the first pod IP (status.podIP) seen, "" while it has none.
	IP string
	// Ready is the instance's readiness as last seen (false once gone).
	Ready bool
	// FirstSeen is when the instance was first seen; ScheduledAt when it
	// was first seen with spec.nodeName; ReadyAt when it was first seen
	// Ready; UnreadyAt when it was last seen turning not Ready
	// while not being deleted (it crashed or failed); IPAt when it was
	// first seen with an IP; DeletedAt when its deletionTimestamp (or its
	// delete event, if no update showed one) was first seen; GoneAt when
	// its delete event came. Zero: not seen (yet).
	FirstSeen, ScheduledAt, ReadyAt, UnreadyAt, IPAt, DeletedAt, GoneAt time.Time
}

// Live reports whether the instance is neither terminating nor gone.
func (r *Record) Live() bool { return r.DeletedAt.IsZero() && r.GoneAt.IsZero() }

// Available reports whether the instance is Ready and live.
func (r *Record) Available() bool { return r.Ready && r.Live() }

// Change is a bit set of what one event changed in a Record.
type Change uint8

// The changes an event can make; an event can make several.
const (
	Created Change = 1 << iota
	BecameReady
	BecameUnready
	Deleted
	Gone
)

// Set holds the Records of every instance seen, gone ones included (steps
// are matched against them). It is not safe for concurrent use: its owner
// locks around it (Observer does).
type Set struct {
	// KeepReady keeps an instance Ready once seen Ready, until it goes: for
	// a watcher that also learns readiness from a source ahead of its
	// watch (the integration tests' kubelet), whose notice a watch event
	// older than it must not undo.
	KeepReady bool
	recs      map[types.UID]*Record
}

// NewSet returns an empty Set.
func NewSet() *Set { return &Set{recs: map[types.UID]*Record{}} }

// Observe records an event about pod in member received at at; gone is
// true for its delete event. It returns the instance's Record (owned by
// the Set: read it, do not keep it past the owner's lock) and what the
// event changed. Events about an instance already gone change nothing:
// they lost a race with its delete event.
func (s *Set) Observe(member string, pod *corev1.Pod, gone bool, at time.Time) (*Record, Change) {
	var ch Change
	r := s.recs[pod.UID]
	if r == nil {
		r = &Record{Member: member, Name: pod.Name, UID: pod.UID, Labels: pod.Labels, FirstSeen: at}
		if len(pod.Spec.Containers) > 0 {
			r.Image = pod.Spec.Containers[0].Image
		}
		s.recs[pod.UID] = r
		ch |= Created
	}
	if !r.GoneAt.IsZero() {
		return r, ch
	}
	if r.ScheduledAt.IsZero() && !gone && pod.Spec.NodeName != "" {
		r.ScheduledAt = at
	}
	if r.IP == "" && !gone && pod.Status.PodIP != "" {
		r.IP, r.IPAt = pod.Status.PodIP, at
	}
	if ready := Ready(pod) || (s.KeepReady && r.Ready); !gone && ready != r.Ready {
		r.Ready = ready
		if ready {
			ch |= BecameReady
			if r.ReadyAt.IsZero() {
				r.ReadyAt = at
			}
		} else {
			ch |= BecameUnready
			if pod.DeletionTimestamp == nil {
				r.UnreadyAt = at
			}
		}
	}
	if (gone || pod.DeletionTimestamp != nil) && r.DeletedAt.IsZero() {
		r.DeletedAt = at
		ch |= Deleted
	}
	if gone {
		r.GoneAt, r.Ready = at, false
		ch |= Gone
	}
	return r, ch
}

// Get returns the Record of uid, or nil.
func (s *Set) Get(uid types.UID) *Record { return s.recs[uid] }

// Records returns a copy of every Record, in no order.
func (s *Set) Records() []Record {
	out := make([]Record, 0, len(s.recs))
	for _, r := range s.recs {
		out = append(out, *r)
	}
	return out
}

// Available counts the available instances (Record.Available) by
// key(record): a placement, say member/component.
func (s *Set) Available(key func(*Record) string) map[string]int {
	out := map[string]int{}
	for _, r := range s.recs {
		if r.Available() {
			out[key(r)]++
		}
	}
	return out
}
