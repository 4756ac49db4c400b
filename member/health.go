package member

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// run is the Registry's manager Runnable: it probes every member each
// ProbePeriod until ctx ends, then stops every member and waits for them.
func (r *Registry) run(ctx context.Context) error {
	defer r.stopAll()
	ctx = ctrl.LoggerInto(ctx, r.log)
	ticker := time.NewTicker(r.opts.ProbePeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			r.probeAll(ctx)
		}
	}
}

// probeAll probes every running member concurrently and returns when all
// probes are done. Each probe is bounded by four fifths of ProbePeriod, so
// a round ends before the next tick and a dead member cannot delay the
// others' probes.
func (r *Registry) probeAll(ctx context.Context) {
	r.mu.Lock()
	running := make([]*instance, 0, len(r.members))
	for _, m := range r.members {
		if m.inst != nil {
			running = append(running, m.inst)
		}
	}
	r.mu.Unlock()

	timeout := r.opts.ProbePeriod * 4 / 5
	var wg sync.WaitGroup
	for _, in := range running {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := in.probe(pctx)
			if ctx.Err() != nil {
				// Shutting down: a failure now says nothing of the member.
				return
			}
			r.recordProbe(ctx, in, err, time.Now())
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

// recordProbe records the result err of a probe of in made at now. It
// marks the member disconnected after FailureThreshold failures in a row,
// connected again after a success that follows, and enqueues the member in
// every sink when that changes. A result for an instance that was replaced
// meanwhile is dropped.
func (r *Registry) recordProbe(ctx context.Context, in *instance, err error, now time.Time) {
	var changed, connected bool
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
		if !m.state.Connected && m.state.Reason == ReasonProbeFailed {
			m.state.Connected, m.state.Reason, m.state.Message = true, "", ""
			changed, connected = true, true
			memberConnected.WithLabelValues(in.name).Set(1)
		}
	} else {
		m.failures++
		if m.state.Connected && m.failures >= r.opts.FailureThreshold {
			message = fmt.Sprintf("%d probes in a row failed, the last: %v", m.failures, err)
			m.state.Connected, m.state.Reason, m.state.Message = false, ReasonProbeFailed, message
			changed = true
			memberConnected.WithLabelValues(in.name).Set(0)
		}
	}
	r.mu.Unlock()

	if !changed {
		return
	}
	log := ctrl.LoggerFrom(ctx).WithValues("member", in.name)
	if connected {
		log.Info("Member cluster connected again")
	} else {
		log.Info("Member cluster disconnected", "reason", ReasonProbeFailed, "message", message)
	}
	r.notify(in.name)
}
