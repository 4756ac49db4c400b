package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Item 8: what the freshness gate costs: the /readyz probes each
// apiserver-only member serves and the manager's CPU while idle, over a
// window of each of item 5's manager starts; section 8 of the report
// (writeFreshnessDetails) says how. That a step pays no request for the
// gate is item 3's figure: the reads per step net of the idle probe rate.

const (
	// probePath is the non-resource path fedop's probe GETs; kube-apiserver
	// counts it with subresource set to the path.
	probePath = "/readyz"
	// probesPerPeriod is how many probes the registry sends each member per
	// --member-probe-period.
	probesPerPeriod = 2
	// probeRateTolerance is how far, as a share, the measured probe rate
	// may lie from probesPerPeriod per period.
	probeRateTolerance = 0.1
)

// idleRun is one manager watched idle by item 8.
type idleRun struct {
	members int
	// window is the CPU window; cpu the manager's CPU seconds per second
	// over it.
	window time.Duration
	cpu    float64
	// probes and others are, for each member, the /readyz GETs and the
	// other requests its kube-apiserver served per second, each over its
	// own window between two scrapes of its metrics.
	probes, others []float64
	// managerProbes is the manager's own count of probes
	// (fedop_member_probe_duration_seconds_count, all members) per second
	// per member over the CPU window.
	managerProbes float64
}

// apiserverRequests returns what a kube-apiserver's metrics count of the
// requests it served: GETs of probePath, and every other request but the
// benchmark's scrapes of /metrics.
func apiserverRequests(s scrape) (probes, others float64) {
	for _, x := range s.samples {
		if x.name != "apiserver_request_total" {
			continue
		}
		switch {
		case x.labels["verb"] == "GET" && x.labels["resource"] == "" && x.labels["subresource"] == probePath:
			probes += x.value
		case x.labels["resource"] == "" && x.labels["subresource"] == "/metrics":
		default:
			others += x.value
		}
	}
	return probes, others
}

// requestRates returns, for each pair of scrapes of one kube-apiserver
// (before[i], after[i]), its probe and other requests per second between
// them; a pair without time between them is left out.
func requestRates(before, after []scrape) (probes, others []float64) {
	for i := range min(len(before), len(after)) {
		secs := after[i].at.Sub(before[i].at).Seconds()
		if secs <= 0 {
			continue
		}
		p0, o0 := apiserverRequests(before[i])
		p1, o1 := apiserverRequests(after[i])
		probes = append(probes, (p1-p0)/secs)
		others = append(others, (o1-o0)/secs)
	}
	return probes, others
}

// scrapeFleet reads the metrics of each of members' kube-apiserver, in
// order.
func scrapeFleet(ctx context.Context, members []*apiMember) ([]scrape, error) {
	out := make([]scrape, 0, len(members))
	for _, m := range members {
		s, err := scrapeAPIServer(ctx, m.client.Discovery().RESTClient())
		if err != nil {
			return nil, fmt.Errorf("the metrics of %s: %w", m.name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// measureIdle watches manager m, connected to members and with nothing
// to do, for b.idleWindow: its CPU over the window, and the requests
// each member served between a scrape of its metrics before the window
// and one after.
func (b *bench) measureIdle(ctx context.Context, m *managerRun, members []*apiMember) (idleRun, error) {
	run := idleRun{members: len(members)}
	before, err := scrapeFleet(ctx, members)
	if err != nil {
		return run, err
	}
	mBefore, err := scrapeMetrics(ctx, m.metricsURL)
	if err != nil {
		return run, err
	}
	cpu0, err := cpuSeconds(m.proc.pid())
	if err != nil {
		return run, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return run, ctx.Err()
	case <-time.After(b.idleWindow):
	}
	cpu1, err := cpuSeconds(m.proc.pid())
	if err != nil {
		return run, err
	}
	run.window = time.Since(t0)
	run.cpu = (cpu1 - cpu0) / run.window.Seconds()
	mAfter, err := scrapeMetrics(ctx, m.metricsURL)
	if err != nil {
		return run, err
	}
	p0, _ := mBefore.sum("fedop_member_probe_duration_seconds_count", nil)
	p1, _ := mAfter.sum("fedop_member_probe_duration_seconds_count", nil)
	run.managerProbes = (p1 - p0) / mAfter.at.Sub(mBefore.at).Seconds() / float64(len(members))
	after, err := scrapeFleet(ctx, members)
	if err != nil {
		return run, err
	}
	run.probes, run.others = requestRates(before, after)
	return run, nil
}

// idleWith returns the idle runs of item 5's starts with n members.
func (r *membersResult) idleWith(n int) []idleRun {
	var out []idleRun
	for _, run := range r.runs {
		if run.members == n && run.idle != nil {
			out = append(out, *run.idle)
		}
	}
	return out
}

// idleCPU returns the median CPU per second of runs.
func idleCPU(runs []idleRun) float64 {
	out := make([]float64, 0, len(runs))
	for _, r := range runs {
		out = append(out, r.cpu)
	}
	return median(out)
}

// pooledRates returns every member's probe and other rates of runs.
func pooledRates(runs []idleRun) (probes, others []float64) {
	for _, r := range runs {
		probes = append(probes, r.probes...)
		others = append(others, r.others...)
	}
	return probes, others
}

// probeRateOK reports whether a probe rate per member per second matches
// probesPerPeriod per period.
func probeRateOK(rate float64, period time.Duration) bool {
	want := probesPerPeriod / period.Seconds()
	return rate >= want*(1-probeRateTolerance) && rate <= want*(1+probeRateTolerance)
}

// probePeriod returns the --member-probe-period of a manager's command
// line, or def when it has none.
func probePeriod(cmdline string, def time.Duration) (time.Duration, error) {
	args := strings.Fields(cmdline)
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name != "member-probe-period" || !strings.HasPrefix(a, "-") {
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return 0, fmt.Errorf("--member-probe-period without a value in %q", cmdline)
			}
			value = args[i+1]
		}
		return time.ParseDuration(value)
	}
	return def, nil
}

// defaultProbePeriod is fedop-manager's default --member-probe-period
// (cmd/fedop-manager/main.go).
const defaultProbePeriod = time.Second
