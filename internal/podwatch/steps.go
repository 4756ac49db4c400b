package podwatch

import (
	"sort"
	"time"
)

// How a step ended (Step.After).
const (
	// AfterReady: the deleted instance's replacement was seen Ready.
	AfterReady = "ready"
	// AfterGone: no replacement was seen and the instance was gone (a
	// scale-in's surplus pod, or one no longer desired).
	AfterGone = "gone"
)

// Step is one deletion Next of a one-pod-at-a-time rollout, seen at
// Next.DeletedAt, and how it follows the deletion before it, Prev.
type Step struct {
	Prev, Next Record
	// Replacement is Prev's replacement (see Replacement), nil when none
	// was seen by Next's deletion.
	Replacement *Record
	// After says what ended Prev's step by Next's deletion: AfterReady,
	// AfterGone, or "" when it had not ended (an overlap: a rollout that
	// was not one pod at a time, or two watches delivering out of order).
	After string
	// End is when Prev's step ended (Replacement.ReadyAt or Prev.GoneAt);
	// zero when After is "".
	End time.Time
	// Overhead is Next.DeletedAt - End: the time the controller added
	// between two steps, minReadySeconds included; 0 when After is "".
	Overhead time.Duration
}

// Replacement returns the replacement of the deleted instance prev as known
// at at: the first instance seen in [prev.DeletedAt, at] with prev's member
// and name and another UID, or nil. Both fedop and the StatefulSet
// controller keep a pod's name across an upgrade; bounding by at keeps a
// later pod of that name (a scale-out reusing an ordinal) from counting.
func Replacement(recs []Record, prev Record, at time.Time) *Record {
	var repl *Record
	for i := range recs {
		r := &recs[i]
		if r.Member != prev.Member || r.Name != prev.Name || r.UID == prev.UID || r.FirstSeen.Before(prev.DeletedAt) || r.FirstSeen.After(at) {
			continue
		}
		if repl == nil || r.FirstSeen.Before(repl.FirstSeen) {
			repl = r
		}
	}
	return repl
}

// StepOf returns the step from the deletion of prev to the deletion of
// next, as known at next.DeletedAt (recs: every instance seen).
func StepOf(recs []Record, prev, next Record) Step {
	at := next.DeletedAt
	s := Step{Prev: prev, Next: next, Replacement: Replacement(recs, prev, at)}
	switch {
	case s.Replacement != nil && !s.Replacement.ReadyAt.IsZero() && !s.Replacement.ReadyAt.After(at):
		s.After, s.End = AfterReady, s.Replacement.ReadyAt
	case s.Replacement == nil && !prev.GoneAt.IsZero() && !prev.GoneAt.After(at):
		s.After, s.End = AfterGone, prev.GoneAt
	default:
		return s
	}
	s.Overhead = at.Sub(s.End)
	return s
}

// Deletions returns the instances of recs whose deletion was seen at or
// after since, ordered by when it was seen.
func Deletions(recs []Record, since time.Time) []Record {
	var out []Record
	for _, r := range recs {
		if !r.DeletedAt.IsZero() && !r.DeletedAt.Before(since) {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].DeletedAt.Before(out[j].DeletedAt) })
	return out
}

// Steps returns the steps of the rollout that started at since: one per
// deletion seen since then after the first (Deletions), in order.
func Steps(recs []Record, since time.Time) []Step {
	del := Deletions(recs, since)
	out := make([]Step, 0, max(0, len(del)-1))
	for i := 1; i < len(del); i++ {
		out = append(out, StepOf(recs, del[i-1], del[i]))
	}
	return out
}
