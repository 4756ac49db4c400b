package etcdcheck

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// maxListed bounds the keys a report lists (lostKeys, illegalKeys).
const maxListed = 20

// Member is an etcd member as the report names it.
type Member struct {
	// ID is the member ID in hex, as etcdctl prints it.
	ID string `json:"id"`
	// Name is the member's --name (empty for a member that never started).
	Name string `json:"name"`
}

// Report is the checker's verdict, printed as one JSON line at the end of a
// run. Times are seconds; offsets are since Start.
type Report struct {
	// OK is true when the read-back completed, no acknowledged write was
	// lost and the history is linearizable.
	OK bool `json:"ok"`
	// Error says why the run could not complete (the start, or the
	// read-back, failed); empty otherwise.
	Error string `json:"error,omitempty"`
	// Start is when the writers started; DurationSeconds how long they ran.
	Start           time.Time `json:"start"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Endpoints are the client URLs the checker used.
	Endpoints []string `json:"endpoints"`

	// AcknowledgedWrites, FailedWrites and UnknownWrites count the puts by
	// Outcome; UnknownWritesApplied counts the unknown ones the read-back
	// found.
	AcknowledgedWrites   int `json:"acknowledgedWrites"`
	FailedWrites         int `json:"failedWrites"`
	UnknownWrites        int `json:"unknownWrites"`
	UnknownWritesApplied int `json:"unknownWritesApplied"`
	// Reads counts the linearizable gets that succeeded during the run
	// (the read-back not included), FailedReads the others.
	Reads       int `json:"reads"`
	FailedReads int `json:"failedReads"`
	// LostWrites counts acknowledged puts whose value the read-back did
	// not find; LostKeys lists the first 20 of their keys. Must be 0.
	LostWrites int      `json:"lostWrites"`
	LostKeys   []string `json:"lostKeys,omitempty"`
	// Linearizability is porcupine's verdict on the whole history,
	// read-back included: "Ok", "Illegal", or "Unknown" (the check timed
	// out). IllegalKeys lists the first 20 keys whose history is not
	// linearizable.
	Linearizability porcupine.CheckResult `json:"linearizability"`
	IllegalKeys     []string              `json:"illegalKeys,omitempty"`
	// MaxWriteGapSeconds is the longest time without an acknowledged put
	// while the writers ran (from their start to the first acknowledgement,
	// between two, or from the last to their end), and
	// MaxWriteGapStartSeconds when it began.
	MaxWriteGapSeconds      float64 `json:"maxWriteGapSeconds"`
	MaxWriteGapStartSeconds float64 `json:"maxWriteGapStartSeconds"`

	// LeaderChanges counts changes of the leader the members report
	// (Status, sampled every 200 ms).
	LeaderChanges int `json:"leaderChanges"`
	// MinHealthyMembers is the fewest healthy members in one sample: a
	// member is healthy when it answers 200 on /health, or when it is up
	// (answers Status) and /health says only that it has no leader, for
	// at most 2 s (a leadership transfer or an election in progress; see
	// electionGrace). HealthSamples is the number of samples, and
	// ElectingSamples those in which a member counted healthy that way.
	MinHealthyMembers int `json:"minHealthyMembers"`
	HealthSamples     int `json:"healthSamples"`
	ElectingSamples   int `json:"electingSamples"`
	// WorstSample says when the sample with the fewest healthy members
	// began (seconds after the writers started) and why each unhealthy
	// member of it was not healthy: "at 41.9s: etcd-etcd-2: no answer
	// within 1s; etcd-etcd-4: 503 Service Unavailable". Empty when every
	// member was healthy in it.
	WorstSample string `json:"worstSample,omitempty"`
	// MembersStart and MembersEnd are the member lists before the writers
	// started and after they stopped.
	MembersStart []Member `json:"membersStart"`
	MembersEnd   []Member `json:"membersEnd"`
}

// Analyze fills the history's part of a report: counts by outcome, lost
// writes, the longest write gap over [0, end] (end: when the writers
// stopped), and porcupine's verdict on history plus readBack, within
// checkTimeout (0: no limit). readBack holds one acknowledged get per key
// the run put, taken after the writers stopped. It returns porcupine's
// details too, for a visualization.
func Analyze(history, readBack []Op, end, checkTimeout time.Duration) (Report, porcupine.LinearizationInfo) {
	var r Report
	final := map[string]Op{}
	for _, op := range readBack {
		final[op.Key] = op
	}
	var acks []time.Duration
	for _, op := range history {
		if !op.Put {
			if op.Outcome == Acknowledged {
				r.Reads++
			} else {
				r.FailedReads++
			}
			continue
		}
		got := final[op.Key]
		applied := got.Found && got.Value == op.Value
		switch op.Outcome {
		case Acknowledged:
			r.AcknowledgedWrites++
			acks = append(acks, op.Return)
			if !applied {
				r.LostWrites++
				if len(r.LostKeys) < maxListed {
					r.LostKeys = append(r.LostKeys, op.Key)
				}
			}
		case Failed:
			r.FailedWrites++
		case Unknown:
			r.UnknownWrites++
			if applied {
				r.UnknownWritesApplied++
			}
		}
	}
	gap, at := maxGap(acks, end)
	r.MaxWriteGapSeconds, r.MaxWriteGapStartSeconds = gap.Seconds(), at.Seconds()

	all := append(slices.Clip(history), readBack...)
	var info porcupine.LinearizationInfo
	r.Linearizability, info = checkLinearizable(all, checkTimeout)
	if r.Linearizability == porcupine.Illegal {
		r.IllegalKeys = illegalKeys(all, checkTimeout)
	}
	return r, info
}

// maxGap returns the longest interval of [0, end] that holds none of times,
// and where it starts.
func maxGap(times []time.Duration, end time.Duration) (gap, at time.Duration) {
	times = slices.Sorted(slices.Values(times))
	prev := time.Duration(0)
	for _, t := range append(times, end) {
		if t-prev > gap {
			gap, at = t-prev, prev
		}
		prev = max(prev, t)
	}
	return gap, at
}

// illegalKeys checks each key's history on its own and returns the first
// maxListed keys (in key order) that are not linearizable.
func illegalKeys(history []Op, timeout time.Duration) []string {
	byKey := map[string][]Op{}
	for _, op := range history {
		byKey[op.Key] = append(byKey[op.Key], op)
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		if res, _ := checkLinearizable(byKey[k], timeout); res == porcupine.Illegal {
			keys = append(keys, k)
			if len(keys) == maxListed {
				break
			}
		}
	}
	return keys
}

// Summary is the report in one line, for people.
func (r Report) Summary() string {
	verdict := "OK"
	if !r.OK {
		verdict = "FAILED"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "etcdcheck %s: %d writes acknowledged (%d failed, %d unknown of which %d applied), %d lost; %d reads; "+
		"linearizability %s; longest write gap %.2fs at %.1fs; %d leader changes; "+
		"at least %d healthy members in %d samples (%d with a member between leaders); members %d at start, %d at end",
		verdict, r.AcknowledgedWrites, r.FailedWrites, r.UnknownWrites, r.UnknownWritesApplied, r.LostWrites, r.Reads,
		r.Linearizability, r.MaxWriteGapSeconds, r.MaxWriteGapStartSeconds, r.LeaderChanges,
		r.MinHealthyMembers, r.HealthSamples, r.ElectingSamples, len(r.MembersStart), len(r.MembersEnd))
	if r.WorstSample != "" {
		fmt.Fprintf(&b, " (worst %s)", r.WorstSample)
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "; error: %s", r.Error)
	}
	return b.String()
}
