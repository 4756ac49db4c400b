package etcdcheck

import (
	"errors"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// Outcome is what the client learned about an operation.
type Outcome string

const (
	// Acknowledged: the operation succeeded.
	Acknowledged Outcome = "acknowledged"
	// Failed: the operation certainly had no effect (etcd rejected it
	// before proposing it to Raft).
	Failed Outcome = "failed"
	// Unknown: the operation may or may not have taken effect (a timeout, a
	// lost connection, any error that does not say).
	Unknown Outcome = "unknown"
)

// Op is one operation of the history: a put of Value to Key, or a
// linearizable get of Key that found Value (Found) or nothing.
type Op struct {
	// Client numbers the writer or reader that ran it, from 0.
	Client int
	// Put: a put; otherwise a get.
	Put bool
	// Key is the key, k/<seq> with seq zero-padded to 10 digits.
	Key string
	// Value is the value put, or the value the get found.
	Value string
	// Found says whether the get found the key.
	Found bool
	// Outcome is what the client learned.
	Outcome Outcome
	// Call and Return are when the client sent the operation and when it
	// got the answer (or gave up, for Unknown), since the run's start.
	Call, Return time.Duration
}

// definiteFailures are the errors etcd returns for a put it never proposed
// to Raft (before consensus, so the put cannot have happened). Any other
// error leaves the outcome unknown, as etcd's own robustness tests assume.
var definiteFailures = []error{
	rpctypes.ErrTooManyRequests,
	rpctypes.ErrRequestTooLarge,
	rpctypes.ErrNoSpace,
}

// outcome classifies a put's error: nil is Acknowledged, a definite
// failure (see definiteFailures, and Raft dropping the proposal) is
// Failed, anything else Unknown.
func outcome(err error) Outcome {
	switch {
	case err == nil:
		return Acknowledged
	case slices.ContainsFunc(definiteFailures, func(e error) bool { return errors.Is(err, e) }),
		rpctypes.ErrorDesc(err) == "raft proposal dropped":
		return Failed
	default:
		return Unknown
	}
}

// history collects operations from concurrent writers and readers.
type history struct {
	mu  sync.Mutex // guards ops
	ops []Op
}

// add records op.
func (h *history) add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
}

// snapshot returns a copy of the operations recorded so far.
func (h *history) snapshot() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}
