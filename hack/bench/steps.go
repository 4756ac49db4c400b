package main

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// stepStats is what one rollout's records say about its steps.
type stepStats struct {
	// deletions counts the instances whose deletion was seen in the window.
	deletions int
	// overheads holds, for each deletion after the first, the time from
	// the previous deletion's replacement becoming Ready to this deletion:
	// the time the controller added between two steps.
	overheads []time.Duration
	// overlaps counts deletions seen before the previous step's replacement
	// was Ready: a rollout that was not one pod at a time, or a deletion in
	// one member seen before the Ready event from the other member's
	// watch; overlapGaps holds by how much each came first (0 when no
	// replacement was seen Ready at all).
	overlaps    int
	overlapGaps []time.Duration
	// slow lists the steps whose overhead reached slowStep, and
	// overlapped the overlaps, for the log.
	slow, overlapped []string
}

// slowStep is the overhead from which computeSteps names a step in
// stepStats.slow: the p99 target.
const slowStep = 150 * time.Millisecond

// computeSteps derives the steps of the rollout that started at start from
// recs. Deletions are ordered by when they were seen. The replacement of a
// deleted instance is the first instance seen since its deletion with the
// same cluster and name: both fedop and the StatefulSet controller keep a
// pod's name across an upgrade.
func computeSteps(recs []podRecord, start time.Time) stepStats {
	var deleted []podRecord
	for _, r := range recs {
		if !r.deletedAt.IsZero() && !r.deletedAt.Before(start) {
			deleted = append(deleted, r)
		}
	}
	sort.Slice(deleted, func(i, j int) bool { return deleted[i].deletedAt.Before(deleted[j].deletedAt) })
	st := stepStats{deletions: len(deleted)}
	for i := 1; i < len(deleted); i++ {
		prev, next := deleted[i-1], deleted[i]
		var repl *podRecord
		for j := range recs {
			r := &recs[j]
			if r.cluster != prev.cluster || r.name != prev.name || r.uid == prev.uid || r.firstSeen.Before(prev.deletedAt) {
				continue
			}
			if repl == nil || r.firstSeen.Before(repl.firstSeen) {
				repl = r
			}
		}
		if repl == nil || repl.readyAt.IsZero() || repl.readyAt.After(next.deletedAt) {
			st.overlaps++
			gap := time.Duration(0)
			if repl != nil && !repl.readyAt.IsZero() {
				gap = repl.readyAt.Sub(next.deletedAt)
			}
			st.overlapGaps = append(st.overlapGaps, gap)
			what := "no replacement seen"
			if repl != nil {
				what = fmt.Sprintf("replacement %s first seen %s, Ready %s", repl.uid, repl.firstSeen.Format("15:04:05.000"), repl.readyAt.Format("15:04:05.000"))
			}
			st.overlapped = append(st.overlapped, fmt.Sprintf("%s/%s %s deleted at %s (%s), then %s/%s deleted at %s",
				prev.cluster, prev.name, prev.uid, prev.deletedAt.Format("15:04:05.000"), what, next.cluster, next.name, next.deletedAt.Format("15:04:05.000")))
			continue
		}
		d := next.deletedAt.Sub(repl.readyAt)
		st.overheads = append(st.overheads, d)
		if d >= slowStep {
			st.slow = append(st.slow, fmt.Sprintf("%s/%s Ready at %s, then %s/%s deleted at %s (%s)",
				repl.cluster, repl.name, repl.readyAt.Format("15:04:05.000"), next.cluster, next.name, next.deletedAt.Format("15:04:05.000"), d.Round(time.Millisecond)))
		}
	}
	return st
}

// median returns the median of xs (the mean of the two middle values for
// an even count), or 0 when xs is empty.
func median[T ~int64 | ~float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
