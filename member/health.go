package member

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	ctrl "sigs.k8s.io/controller-runtime"
)

// run is the Registry's manager Runnable: it probes every member twice per
// ProbePeriod until ctx ends, then stops every member and waits for them.
func (r *Registry) run(ctx context.Context) error {
	defer r.stopAll()
	ctx = ctrl.LoggerInto(ctx, r.log)
	ticker := r.opts.Clock.NewTicker(r.opts.ProbePeriod / 2)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			r.probeAll(ctx)
			r.checkCredentials(ctx)
		}
	}
}

// probeAll probes every running member concurrently and returns when all
// probes are done. Each probe is bounded by half a ProbePeriod, so a round
// ends before the next tick and a dead member cannot delay the others'
// probes; and a live member answers at least once per ProbePeriod, which
// keeps it fresh.
func (r *Registry) probeAll(ctx context.Context) {
	r.mu.Lock()
	running := make([]*instance, 0, len(r.members))
	for _, m := range r.members {
		if m.inst != nil {
			running = append(running, m.inst)
		}
	}
	r.mu.Unlock()

	timeout := r.opts.ProbePeriod / 2
	var wg sync.WaitGroup
	for _, in := range running {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := r.opts.Clock.Now()
			err := in.probe(pctx)
			if ctx.Err() != nil {
				// Shutting down: a failure now says nothing of the member.
				return
			}
			now := r.opts.Clock.Now()
			probeDuration.WithLabelValues(in.name).Observe(now.Sub(start).Seconds())
			r.recordProbe(ctx, in, err, now)
		})
	}
	wg.Wait()
}

// probe GETs /readyz of the instance's API server: the endpoint that
// kube-apiserver meant for exactly this question, and one that any
// authenticated user may read (the system:public-info-viewer role).
func (in *instance) probe(ctx context.Context) error {
	if in.ctx.Err() != nil {
		return errors.New("the member cluster's cache stopped")
	}
	if err := in.prober.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
		return fmt.Errorf("GET /readyz: %w", err)
	}
	return nil
}

// cutOffFailures is the number of failed probes in a row (each half a
// ProbePeriod apart) after which the member counts as cut off: no answer
// for longer than a ProbePeriod, its cache resynced before it is trusted
// again. A probe that found the connection refused or reset is a cut at
// once.
const cutOffFailures = 2

// recordProbe records the result err of a probe of in, answered at now. A
// failure marks the member interrupted at once (it is no longer fresh),
// cut off after cutOffFailures failures in a row or a lost connection, and
// disconnected after FailureThreshold. A success after a cut (or a broken
// watch) starts a resync: a new cache, listed now, replaces the old one
// before the member counts as fresh, or as connected if it was
// disconnected. A success after a single slow or not-ok answer makes the
// member fresh again at once. A result for an instance that was replaced
// meanwhile is dropped.
func (r *Registry) recordProbe(ctx context.Context, in *instance, err error, now time.Time) {
	var disconnected, resync, fresh bool
	var message string
	r.mu.Lock()
	m, ok := r.members[in.name]
	if !ok || m.inst != in {
		r.mu.Unlock()
		return
	}
	m.state.LastProbeTime = now
	if err == nil {
		m.failures = 0
		switch {
		case m.interrupted && m.cutOff && !m.resyncing:
			m.resyncing, resync = true, true
			if !m.state.Connected {
				m.state.Reason, m.state.Message = ReasonResyncing, "the member answers again; listing it before trusting its cache"
			}
		case m.interrupted && !m.cutOff:
			m.interrupted = false
		}
		// Answering again after a pause longer than the bound, with a
		// caller waiting on it: tell the caller.
		fresh = !m.interrupted && m.staleSeen && m.state.Connected
		if fresh {
			m.staleSeen = false
		}
		m.answered = now
	} else {
		m.failures++
		m.interrupted = true
		if m.failures >= min(cutOffFailures, r.opts.FailureThreshold) || connectionLost(err) {
			m.cutOff = true // a disconnected member is always cut off
		}
		probeFailures.WithLabelValues(in.name, probeFailureReason(err)).Inc()
		if m.state.Connected && m.failures >= r.opts.FailureThreshold {
			message = fmt.Sprintf("%d probes in a row failed, the last: %v", m.failures, err)
			m.state.Connected, m.state.Reason, m.state.Message = false, ReasonProbeFailed, message
			disconnected = true
			memberConnected.WithLabelValues(in.name).Set(0)
		}
	}
	r.mu.Unlock()

	log := ctrl.LoggerFrom(ctx).WithValues("member", in.name)
	switch {
	case disconnected:
		log.Info("Member cluster disconnected", "reason", ReasonProbeFailed, "message", message)
		r.notify(in.name)
	case resync:
		log.Info("Member cluster answers again; resyncing its cache")
		r.notify(in.name)
		go r.resync(ctx, in)
	case fresh:
		r.notify(in.name)
	}
}

// interrupted records that in's cache may have missed events (a watch
// broke): the member is not fresh until a new cache has listed it.
func (r *Registry) interrupted(in *instance) {
	if in == nil {
		return // the cache is still being built: nothing listed yet
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.members[in.name]; ok && m.inst == in {
		m.interrupted, m.cutOff = true, true
	}
}

// resync starts a new instance of old's member from the same kubeconfig
// and, once its cache has listed the member, publishes it in old's place,
// as a rotation does (new before old). If old was replaced meanwhile (a
// rotation), the new instance is dropped; if it does not sync, the member
// stays interrupted and the next successful probe tries again.
func (r *Registry) resync(ctx context.Context, old *instance) {
	in, err := r.start(old.name, old.hash, old.cfg, old.namespaces)
	if err != nil {
		r.mu.Lock()
		if m, ok := r.members[old.name]; ok && m.inst == old {
			m.resyncing = false
		}
		r.mu.Unlock()
		ctrl.LoggerFrom(ctx).Info("Resyncing the member cluster's cache failed; trying again at the next probe", "member", old.name, "error", err.Error())
		return
	}
	in.creds = old.creds
	prev, ok := r.publish(old.name, in, old)
	if !ok {
		in.stop()
		return
	}
	if prev != nil {
		prev.stop()
	}
	ctrl.LoggerFrom(ctx).Info("Member cluster resynced", "member", old.name)
	r.notify(old.name)
}

// probeFailureReason sorts a probe error for the failures metric: a
// timeout, a refused or reset connection, or an answer that was not ok.
func probeFailureReason(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "Timeout"
	case connectionLost(err):
		return "Connection"
	default:
		return "NotReady"
	}
}

// connectionLost reports whether err says the connection to the member was
// refused, reset or cut short: the cache's watch streams, which share the
// probe's connection, broke with it.
func connectionLost(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}
