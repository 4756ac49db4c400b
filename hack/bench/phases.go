package main

import (
	"slices"
	"sort"
	"time"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// stepTimes is one step of a rollout as the observer saw it: the times
// from the previous step's replacement seen Ready (the anchor; with a
// readiness delay D, the step's cycle includes D) to each part of this
// step. A part not seen is negative.
type stepTimes struct {
	// member and pod name this step's deleted pod.
	member, pod string
	// anchor is when the previous step's replacement was seen Ready;
	// deletedAt when this step's pod was seen with a deletionTimestamp;
	// deleteSent when its member's API server received the DELETE (zero:
	// unknown; matchDeletes).
	anchor, deletedAt, deleteSent time.Time
	// deletion is deletedAt - anchor (the step overhead); gone the delete
	// event; created the replacement first seen; scheduled its
	// spec.nodeName first seen; ready its Ready first seen.
	deletion, gone, created, scheduled, ready time.Duration
}

// replacementOf returns the replacement of deleted instance prev in recs
// with no bound in time (podwatch.Replacement), or nil: fedop, the
// StatefulSet and the floor controller keep a pod's name.
func replacementOf(recs []podRecord, prev podRecord) *podRecord {
	return podwatch.Replacement(recs, prev, time.Unix(1<<40, 0))
}

// computePhases returns the steps of the rollout that started at start
// (every deletion after the first), each with its parts, and how many
// steps were left out because the previous replacement was not seen Ready
// before the deletion (an overlap, as computeSteps counts them).
func computePhases(recs []podRecord, start time.Time) (steps []stepTimes, skipped int) {
	deleted := podwatch.Deletions(recs, start)
	since := func(anchor, t time.Time) time.Duration {
		if t.IsZero() {
			return -1
		}
		return t.Sub(anchor)
	}
	for i := 1; i < len(deleted); i++ {
		prev, next := deleted[i-1], deleted[i]
		pr := replacementOf(recs, prev)
		if pr == nil || pr.ReadyAt.IsZero() || pr.ReadyAt.After(next.DeletedAt) {
			skipped++
			continue
		}
		a := pr.ReadyAt
		st := stepTimes{member: next.Member, pod: next.Name, anchor: a, deletedAt: next.DeletedAt, deletion: next.DeletedAt.Sub(a), gone: since(a, next.GoneAt),
			created: -1, scheduled: -1, ready: -1}
		if nr := replacementOf(recs, next); nr != nil {
			st.created, st.scheduled, st.ready = since(a, nr.FirstSeen), since(a, nr.ScheduledAt), since(a, nr.ReadyAt)
		}
		steps = append(steps, st)
	}
	return steps, skipped
}

// phaseMedians is the median of each part over steps, parts not seen left
// out; n is the number of steps.
type phaseMedians struct {
	n                                         int
	deletion, gone, created, scheduled, ready time.Duration
}

func medianPhases(steps []stepTimes) phaseMedians {
	pick := func(f func(stepTimes) time.Duration) time.Duration {
		var ds []time.Duration
		for _, s := range steps {
			if d := f(s); d >= 0 {
				ds = append(ds, d)
			}
		}
		return median(ds)
	}
	return phaseMedians{
		n:         len(steps),
		deletion:  pick(func(s stepTimes) time.Duration { return s.deletion }),
		gone:      pick(func(s stepTimes) time.Duration { return s.gone }),
		created:   pick(func(s stepTimes) time.Duration { return s.created }),
		scheduled: pick(func(s stepTimes) time.Duration { return s.scheduled }),
		ready:     pick(func(s stepTimes) time.Duration { return s.ready }),
	}
}

// writeCount is how many host writes fell inside the steps' critical
// windows and how many outside them, within a rollout; insideSeen how
// many fell inside when a window ends at the deletion seen instead;
// unmatched how many steps' DELETEs the audit logs did not show (their
// windows end at the deletion seen).
type writeCount struct {
	steps, inside, outside, insideSeen, unmatched int
}

// windowEnd is where s's critical window ends: at deleteSent, or, when it
// is unknown, at deletedAt.
func (s stepTimes) windowEnd() time.Time {
	if s.deleteSent.IsZero() {
		return s.deletedAt
	}
	return s.deleteSent
}

// within reports whether t falls in s's window from anchor (inclusive) to
// end (exclusive).
func (s stepTimes) within(t, end time.Time) bool {
	return !t.Before(s.anchor) && t.Before(end)
}

// attributeWrites sorts the write times writes into the critical windows
// of steps (from anchor, inclusive, to windowEnd, exclusive: the previous
// replacement seen Ready to the next DELETE) and the rest of [from, to];
// writes outside [from, to] are not counted.
func attributeWrites(writes []time.Time, steps []stepTimes, from, to time.Time) writeCount {
	c := writeCount{steps: len(steps)}
	in := func(w time.Time, end func(stepTimes) time.Time) bool {
		return slices.ContainsFunc(steps, func(s stepTimes) bool { return s.within(w, end(s)) })
	}
	for _, w := range writes {
		if w.Before(from) || w.After(to) {
			continue
		}
		if in(w, stepTimes.windowEnd) {
			c.inside++
		} else {
			c.outside++
		}
		if in(w, func(s stepTimes) time.Time { return s.deletedAt }) {
			c.insideSeen++
		}
	}
	return c
}

// byInstance groups recs by their FederationCluster (instance label),
// each group in recs's order.
func byInstance(recs []podRecord) map[string][]podRecord {
	out := map[string][]podRecord{}
	for _, r := range recs {
		k := r.Labels[v1alpha1.LabelInstance]
		out[k] = append(out[k], r)
	}
	return out
}

// unavailability is one pod of a group unavailable: from its deletion
// seen to its replacement seen Ready (end zero: never seen Ready).
type unavailability struct {
	group, pod string
	start, end time.Time
}

// oneAtATimeViolations returns, for each group (FederationCluster) of
// recs, the instances deleted at or after start whose unavailability began
// while another pod of the same group was still unavailable: a rollout
// that was not one pod at a time, as the observer saw it.
func oneAtATimeViolations(recs []podRecord, start time.Time) []unavailability {
	var out []unavailability
	for group, deleted := range byInstance(podwatch.Deletions(recs, start)) {
		// deleted is in deletion order (podwatch.Deletions sorts).
		var busyUntil time.Time
		forever := false
		for i, r := range deleted {
			u := unavailability{group: group, pod: r.Member + "/" + r.Name, start: r.DeletedAt}
			if repl := replacementOf(recs, r); repl != nil {
				u.end = repl.ReadyAt
			}
			if i > 0 && (forever || u.start.Before(busyUntil)) {
				out = append(out, u)
			}
			if u.end.IsZero() {
				forever = true
			} else if u.end.After(busyUntil) {
				busyUntil = u.end
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}
