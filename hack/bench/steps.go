package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/fedop-io/fedop/internal/podwatch"
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
	// overlapped describes the overlaps, for the log.
	overlapped []string
}

// computeSteps derives the steps of the rollout that started at start from
// recs (podwatch.Steps). Only a step whose previous replacement was seen
// Ready counts: in an upgrade every deleted pod is replaced, so a previous
// pod seen gone with no replacement yet is an overlap too.
func computeSteps(recs []podRecord, start time.Time) stepStats {
	steps := podwatch.Steps(recs, start)
	st := stepStats{deletions: len(podwatch.Deletions(recs, start))}
	for _, s := range steps {
		prev, next, repl := s.Prev, s.Next, s.Replacement
		if s.After != podwatch.AfterReady {
			st.overlaps++
			gap, what := time.Duration(0), "no replacement seen"
			if repl != nil {
				what = fmt.Sprintf("replacement %s first seen %s, Ready %s", repl.UID, clock(repl.FirstSeen), clock(repl.ReadyAt))
				if !repl.ReadyAt.IsZero() {
					gap = repl.ReadyAt.Sub(next.DeletedAt)
				}
			}
			st.overlapGaps = append(st.overlapGaps, gap)
			st.overlapped = append(st.overlapped, fmt.Sprintf("%s/%s %s deleted at %s (%s), then %s/%s deleted at %s",
				prev.Member, prev.Name, prev.UID, clock(prev.DeletedAt), what, next.Member, next.Name, clock(next.DeletedAt)))
			continue
		}
		st.overheads = append(st.overheads, s.Overhead)
	}
	return st
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

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

// collect returns, in order, the values f picks from xs: those it returns
// with true.
func collect[T, U any](xs []T, f func(T) (U, bool)) []U {
	var out []U
	for _, x := range xs {
		if u, ok := f(x); ok {
			out = append(out, u)
		}
	}
	return out
}
