package main

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/fedop-io/fedop/e2e"
)

// machineInfo names the machine and the versions a run used.
type machineInfo struct {
	cpus                                                                        int
	memory, cpuModel, kernel, goVersion, kubeVersion, kwokVersion, commit, date string
	// loadStart and loadEnd are /proc/loadavg's first fields when the
	// measurements started and ended; othersStart and othersEnd count the
	// kube-apiservers of other labs running then.
	loadStart, loadEnd     string
	othersStart, othersEnd int
}

type phaseTime struct {
	name string
	took time.Duration
}

// windowResult is one measured upgrade: what the observer saw, and the
// manager's requests over the window.
type windowResult struct {
	rollout  rolloutResult
	window   time.Duration
	requests map[reqKey]float64
	// phases are the rollout's steps part by part (phases.go), skipped the
	// steps left out of them; writes the host writes to the
	// FederationCluster in and out of the steps' critical windows (fedop
	// only).
	phases  []stepTimes
	skipped int
	writes  writeCount
}

func (w windowResult) overheads() []time.Duration { return w.rollout.overheads() }

// results is everything a run measured.
type results struct {
	machine machineInfo
	phases  []phaseTime
	total   time.Duration

	fedop, sts, floor *system
	stsMember         string
	observers         []*observer

	stepFedop, stepSTS, delayFedop, delaySTS []windowResult
	// stepFloor and delayFloor are the floor controller's upgrades,
	// interleaved with the others'.
	stepFloor, delayFloor []windowResult
	// operatorSteps and operatorMean are the manager's own account of the
	// step-overhead rounds (fedop_rollout_step_overhead_seconds), beside
	// the observer's.
	operatorSteps float64
	operatorMean  time.Duration
	// stepPhases split the manager's step overhead by phase
	// (fedop_rollout_step_phase_seconds) over the same rounds.
	stepPhases []phaseMean
	// delayWrites are the manager's host status writes over item 2's
	// rounds (fedop_status_write_seconds), by when they were made.
	delayWrites []phaseMean

	memory   []memPoint
	profiles []profile
	micro    string

	members   membersResult
	dead      deadResult
	discovery discoveryResult
	restart   restartResult
	many      manyResult

	// managerCmdline is the main manager's command line, and
	// managerProbePeriod the freshness bound it runs with.
	managerCmdline     string
	managerProbePeriod time.Duration
}

// Targets of issue 5.
const (
	targetRatio       = 0.5
	targetP99         = 150 * time.Millisecond
	targetEfficiency  = 0.95
	targetWrites      = 3.0
	targetBytesPerPod = 8 * 1024
	// unrelatedShare is the most an unrelated pod may cost, as a share of
	// a managed pod's cost, for "adds nothing" to hold: below it the
	// difference is within the noise of reading RSS.
	unrelatedShare = 0.05
)

// row is one line of the results table.
type row struct {
	item, measure, figure, target, met string
}

// roundPercentiles returns, for each round (a windowResult or a
// rolloutResult), the p-th percentile of its step overheads.
func roundPercentiles[R interface{ overheads() []time.Duration }](rounds []R, p float64) []time.Duration {
	out := make([]time.Duration, 0, len(rounds))
	for _, r := range rounds {
		out = append(out, e2e.Percentile(r.overheads(), p))
	}
	return out
}

func pooled(ws []windowResult) []time.Duration {
	var out []time.Duration
	for _, w := range ws {
		out = append(out, w.rollout.steps.overheads...)
	}
	return out
}

func efficiencies(ws []windowResult, pods int, delay time.Duration) []float64 {
	out := make([]float64, 0, len(ws))
	for _, w := range ws {
		out = append(out, float64(time.Duration(pods)*delay)/float64(w.rollout.total()))
	}
	return out
}

// requestCounts sums a window's requests: writes and reads, on the host
// and on the members.
type requestCounts struct {
	hostWrites, memberWrites, hostReads, memberReads float64
}

func countRequests(reqs map[reqKey]float64) requestCounts {
	var c requestCounts
	for k, v := range reqs {
		host := k.cluster == hostCluster
		switch {
		case isWrite(k.method) && host:
			c.hostWrites += v
		case isWrite(k.method):
			c.memberWrites += v
		case host:
			c.hostReads += v
		default:
			c.memberReads += v
		}
	}
	return c
}

// idleRequests returns the manager's reads per second, reads and writes
// while it had nothing to do (the StatefulSet's upgrades), and how long
// that was. The reads are the members' /readyz probes, which client-go
// counts as GETs like any other.
func (r *results) idleRequests() (readRate, reads, writes float64, window time.Duration) {
	for _, w := range slices.Concat(r.stepSTS, r.delaySTS) {
		c := countRequests(w.requests)
		reads += c.hostReads + c.memberReads
		writes += c.hostWrites + c.memberWrites
		window += w.window
	}
	if window > 0 {
		readRate = reads / window.Seconds()
	}
	return readRate, reads, writes, window
}

// apiPerStep returns, for each fedop round of items 1 and 3, writes and
// reads per replaced pod, reads with the idle rate's expectation for the
// window taken off.
func (r *results) apiPerStep() (writes, hostWrites, memberWrites, reads, readsNet []float64) {
	rate, _, _, _ := r.idleRequests()
	for _, w := range r.stepFedop {
		c := countRequests(w.requests)
		n := float64(r.fedop.pods)
		writes = append(writes, (c.hostWrites+c.memberWrites)/n)
		hostWrites = append(hostWrites, c.hostWrites/n)
		memberWrites = append(memberWrites, c.memberWrites/n)
		rd := c.hostReads + c.memberReads
		reads = append(reads, rd/n)
		readsNet = append(readsNet, max(0, rd-rate*w.window.Seconds())/n)
	}
	return
}

func metStr(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// memoryPoint returns the memory sample labelled label, or nil.
func (r *results) memoryPoint(label string) *memPoint {
	for i := range r.memory {
		if r.memory[i].label == label {
			return &r.memory[i]
		}
	}
	return nil
}

// memLabel is the label of the memory sample with managed and unrelated
// pods.
func memLabel(managed, unrelated int) string {
	if unrelated == 0 {
		return fmt.Sprintf("%d managed", managed)
	}
	return fmt.Sprintf("%d managed + %d unrelated", managed, unrelated)
}

// notMeasured is the row of items this run left out (--items).
func notMeasured(item, what string) row {
	return row{item, what, "not measured in this run (--items)", "", "-"}
}

// rows computes the results table: each item's rows, or one saying it was
// not measured in this run.
func (r *results) rows(o options) []row {
	var rows []row
	for _, it := range []struct {
		item, what string
		measured   bool
		rows       func() []row
	}{
		{"1-3", "step overhead, rollout efficiency, API cost per step", r.fedop != nil && r.sts != nil,
			func() []row { return append(r.stepRows(o), r.floorRows(o)...) }},
		{"4", "memory per managed pod", o.items[4], func() []row { return r.memoryRows(o) }},
		{"5", "time to connect and sync 10 and 50 members", o.items[5], r.membersRows},
		{"6", "a dead member: step overhead and goroutines", o.items[6], func() []row { return r.deadRows(o) }},
		{"7", "discovery: a pod IP change in every member's EndpointSlices", o.items[7], r.discoveryRows},
		{"8", "freshness: probe requests and manager CPU while idle, round trips per step", o.items[8], r.freshnessRows},
		{"10", "manager start to first step after a SIGKILL", o.items[10], func() []row { return r.restartRows(o) }},
		{"11", "FederationClusters upgraded at once: one pod at a time, step overhead p99, steps per second", o.items[11], r.manyRows},
	} {
		if it.measured {
			rows = append(rows, it.rows()...)
		} else {
			rows = append(rows, notMeasured(it.item, it.what))
		}
	}
	return rows
}

// stepRows are the rows of items 1 to 3.
func (r *results) stepRows(o options) []row {
	var rows []row
	fp50, fp90, fp99 := median(roundPercentiles(r.stepFedop, 50)), median(roundPercentiles(r.stepFedop, 90)), median(roundPercentiles(r.stepFedop, 99))
	sp50, sp90, sp99 := median(roundPercentiles(r.stepSTS, 50)), median(roundPercentiles(r.stepSTS, 90)), median(roundPercentiles(r.stepSTS, 99))
	rounds := len(r.stepFedop)
	rows = append(rows,
		row{"1", fmt.Sprintf("step overhead, fedop (%d pods, 2 components x 2 members; p50/p90/p99, median of %d rounds)", r.fedop.pods, rounds),
			fmt.Sprintf("%s / %s / %s", ms(fp50), ms(fp90), ms(fp99)), "p99 < " + ms(targetP99), metStr(fp99 < targetP99)},
		row{"1", fmt.Sprintf("step overhead, StatefulSet (%d pods in %s; p50/p90/p99, median of %d rounds)", r.sts.pods, r.stsMember, len(r.stepSTS)),
			fmt.Sprintf("%s / %s / %s", ms(sp50), ms(sp90), ms(sp99)), referenceTarget, "-"},
	)
	x := ratio(fp50, sp50)
	rows = append(rows, row{"1", "ratio fedop / StatefulSet (p50)", fmt.Sprintf("%.2f", x), fmt.Sprintf("<= %.1f", targetRatio), metStr(sp50 > 0 && x <= targetRatio)})

	if len(r.delayFedop) == 0 {
		rows = append(rows, notMeasured("2", "rollout efficiency"))
	}
	fe := median(efficiencies(r.delayFedop, r.fedop.pods, o.delay))
	se := median(efficiencies(r.delaySTS, r.sts.pods, o.delay))
	ft := make([]time.Duration, 0, len(r.delayFedop))
	for _, w := range r.delayFedop {
		ft = append(ft, w.rollout.total())
	}
	if len(r.delayFedop) > 0 {
		rows = append(rows,
			row{"2", fmt.Sprintf("rollout efficiency, fedop: N x D / total (N=%d, D=%s; median of %d rounds)", r.fedop.pods, o.delay, len(r.delayFedop)),
				fmt.Sprintf("%.3f (%s for %s)", fe, ms(median(ft)), time.Duration(r.fedop.pods)*o.delay), fmt.Sprintf(">= %.2f", targetEfficiency), metStr(fe >= targetEfficiency)},
			row{"2", fmt.Sprintf("rollout efficiency, StatefulSet (N=%d, D=%s)", r.sts.pods, o.delay), fmt.Sprintf("%.3f", se), referenceTarget, "-"},
		)
	}

	writes, hostW, memberW, reads, readsNet := r.apiPerStep()
	rows = append(rows,
		row{"3", fmt.Sprintf("API writes per step (POST/PUT/PATCH/DELETE; median of %d rounds)", len(writes)),
			fmt.Sprintf("%.2f (host %.2f, members %.2f)", median(writes), median(hostW), median(memberW)), fmt.Sprintf("<= %.0f", targetWrites), metStr(median(writes) <= targetWrites)},
		row{"3", "API reads per step (GET/LIST; raw, and without the idle /readyz probe rate)",
			fmt.Sprintf("%.2f raw, %.2f net", median(reads), median(readsNet)), "0", metStr(median(readsNet) < 0.05)},
	)
	return rows
}

// memoryRows are the rows of item 4, the last against issue 19's target.
func (r *results) memoryRows(o options) []row {
	var rows []row
	base, unrel, full := r.memoryPoint(memLabel(o.memBase, 0)), r.memoryPoint(memLabel(o.memBase, o.unrelated)), r.memoryPoint(memLabel(o.memTotal, o.unrelated))
	if base != nil && unrel != nil && full != nil {
		perPod := (full.rss - unrel.rss) / float64(o.memTotal-o.memBase)
		livePerPod := (full.heapLive - unrel.heapLive) / float64(o.memTotal-o.memBase)
		rows = append(rows,
			row{"4", fmt.Sprintf("manager RSS: %d managed / + %d unrelated / %d managed + %d unrelated", o.memBase, o.unrelated, o.memTotal, o.unrelated),
				fmt.Sprintf("%s / %s / %s", mib(base.rss), mib(unrel.rss), mib(full.rss)), "", ""},
			row{"4", "RSS per managed pod (live heap per pod)", fmt.Sprintf("%.2f KiB (%.2f KiB)", perPod/1024, livePerPod/1024), "<= 8 KiB", metStr(perPod <= targetBytesPerPod)},
		)
		du := (unrel.rss - base.rss)
		dl := (unrel.heapLive - base.heapLive)
		limit := unrelatedShare * max(perPod, 0) * float64(o.unrelated)
		rows = append(rows, row{"4", fmt.Sprintf("%d unrelated pods in %s: RSS change (live heap change)", o.unrelated, o.members[len(o.members)-1]),
			fmt.Sprintf("%+.1f MiB (%+.1f MiB)", du/(1<<20), dl/(1<<20)), fmt.Sprintf("~0 (< %.1f MiB)", limit/(1<<20)), metStr(du < limit)},
			row{"4", "RSS per managed pod, issue 19's target (the row above's figure)", fmt.Sprintf("%.2f KiB", perPod/1024),
				"<= 4 KiB", metStr(perPod <= targetBytesPerPod19)})
	}
	return rows
}

// textTable renders rows as an aligned plain-text table.
func textTable(rows []row) string {
	head := row{"#", "measurement", "figure", "target", "met"}
	all := append([]row{head}, rows...)
	w := [5]int{}
	for _, r := range all {
		for i, c := range []string{r.item, r.measure, r.figure, r.target, r.met} {
			w[i] = max(w[i], len(c))
		}
	}
	var b strings.Builder
	for i, r := range all {
		fmt.Fprintf(&b, "%-*s  %-*s  %-*s  %-*s  %s\n", w[0], r.item, w[1], r.measure, w[2], r.figure, w[3], r.target, r.met)
		if i == 0 {
			fmt.Fprintf(&b, "%s\n", strings.Repeat("-", w[0]+w[1]+w[2]+w[3]+w[4]+8))
		}
	}
	return b.String()
}

func mdRow(cells ...string) string {
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// mdHead returns a Markdown table's header row and the separator under it.
func mdHead(cells ...string) string {
	return mdRow(cells...) + mdRow(slices.Repeat([]string{"---"}, len(cells))...)
}

// formatRequests renders a window's requests as cluster METHOD count
// (non-2xx codes named), sorted.
func formatRequests(reqs map[reqKey]float64) string {
	parts := make([]string, 0, len(reqs))
	for k, v := range reqs {
		s := fmt.Sprintf("%s %s %.0f", k.cluster, k.method, v)
		if !strings.HasPrefix(k.code, "2") {
			s += " (" + k.code + ")"
		}
		parts = append(parts, s)
	}
	slices.Sort(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// markdown renders the report written to docs/benchmarks.md.
func (r *results) markdown(o options, rows []row) string {
	var b strings.Builder
	m := r.machine
	b.WriteString("# Benchmarks\n\n")
	b.WriteString("Generated by `make bench` (`hack/bench.sh`, `hack/bench/`): do not edit by hand, run it again.\n")
	fmt.Fprintf(&b, "This run: %s, %s in all.\n\n", m.date, r.total.Round(time.Second))

	b.WriteString("## Machine and versions\n\n")
	b.WriteString(mdHead("", ""))
	b.WriteString(mdRow("CPUs (nproc)", fmt.Sprintf("%d (%s)", m.cpus, m.cpuModel)))
	b.WriteString(mdRow("memory", m.memory))
	b.WriteString(mdRow("kernel", m.kernel))
	b.WriteString(mdRow("Go", m.goVersion))
	b.WriteString(mdRow("Kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler)", m.kubeVersion))
	b.WriteString(mdRow("kwok", m.kwokVersion))
	b.WriteString(mdRow("fedop commit", "`"+m.commit+"`"))
	b.WriteString(mdRow("load average (1, 5, 15 min) at start / end", m.loadStart+" / "+m.loadEnd))
	b.WriteString(mdRow("other labs' kube-apiservers running at start / end", fmt.Sprintf("%d / %d", m.othersStart, m.othersEnd)))
	b.WriteString("\nThe lab (`hack/lab.sh`, in `.lab/bench`): a host and members " + strings.Join(o.members, ", ") +
		", each a kwokctl cluster of real control-plane processes with fake kwok nodes, all on this machine. " +
		"The manager is `bin/fedop-manager` built from the tree, run with its default flags. " +
		"Items 5 and 6 stop it and start managers of their own (the same binary and defaults, each with a member namespace of its own), " +
		"with apiserver-only members beside the lab's (section 5).\n\n")

	b.WriteString("## Results\n\n")
	b.WriteString(mdHead("#", "measurement", "figure", "target", "met"))
	for _, rw := range rows {
		met := rw.met
		if met == "NO" {
			met = "**no**"
		}
		b.WriteString(mdRow(rw.item, rw.measure, rw.figure, rw.target, met))
	}

	r.writeMissed(&b, o, rows)
	if r.fedop != nil && r.sts != nil {
		r.writeStepDetails(&b, o)
		if len(r.delayFedop) > 0 {
			r.writeDelayDetails(&b, o)
		}
		r.writeAPIDetails(&b)
		r.writeFloorDetails(&b, o)
	}
	for _, d := range []struct {
		when  bool
		write func(*strings.Builder, options)
	}{
		{len(r.memory) > 0, r.writeMemoryDetails}, {o.items[5], r.writeMembersDetails}, {o.items[6], r.writeDeadDetails},
		{o.items[7], r.writeDiscoveryDetails}, {o.items[8], r.writeFreshnessDetails}, {o.items[10], r.writeRestartDetails},
		{o.items[11], r.writeManyDetails},
	} {
		if d.when {
			d.write(&b, o)
		}
	}

	if r.micro != "" {
		b.WriteString("\n## Go micro-benchmarks\n\n`go test -run '^$' -bench . -benchmem` of `federation/bench_test.go` (the revision hash) and `federation/rollout/bench_test.go` (one planning decision in the middle of an upgrade):\n\n```\n")
		for line := range strings.Lines(r.micro) {
			if strings.HasPrefix(line, "Benchmark") || strings.HasPrefix(line, "cpu:") || strings.HasPrefix(line, "pkg:") {
				b.WriteString(line)
			}
		}
		b.WriteString("```\n")
	}

	b.WriteString("\n## Phases of this run\n\n")
	b.WriteString(mdHead("phase", "time"))
	for _, p := range r.phases {
		b.WriteString(mdRow(p.name, p.took.Round(time.Second).String()))
	}
	if o.scriptStart > 0 {
		fmt.Fprintf(&b, "\n`hack/bench.sh` had run %s (build, micro-benchmarks, lab, CRD, manager, the phases above) when this report was written; taking the lab down follows.\n",
			time.Since(time.Unix(o.scriptStart, 0)).Round(time.Second))
	}
	return b.String()
}

func (r *results) writeStepDetails(b *strings.Builder, o options) {
	b.WriteString("\n## 1. Step overhead\n\n")
	fmt.Fprintf(b, "Both systems are upgraded in turn in the same run: fedop's FederationCluster `step` (components pd and tikv, %d pods each in %s) "+
		"and the StatefulSet `ref` (%d replicas in %s, OrderedReady, RollingUpdate with partition 0), kwok making every pod Ready as soon as it is scheduled. "+
		"An observer in the benchmark process watches the pods in every member with its own informers and stamps each event on receipt; "+
		"a step's overhead is the time from the previous deleted pod's replacement being seen Ready to the next pod being seen with a deletionTimestamp. "+
		"An upgrade of N pods has N-1 steps. "+
		"Terminating pods are finished by the lab's kwok pod-delete Stage, which skips pods whose grace period is already 0: "+
		"kwok v0.8.0 deletes by name, and its default Stage played twice per pod, which could delete the fresh same-name replacement "+
		"of either controller (hack/lab.sh, kwok_stages).\n\n",
		o.perMember, strings.Join(o.members[:2], " and "), r.sts.pods, r.stsMember)
	if r.managerCmdline != "" {
		fmt.Fprintf(b, "The main manager runs as `%s`: with the freshness gate on, so before each deletion it checked that every member involved had answered "+
			"within %s (`--member-probe-period`); item 8 shows what that costs.\n\n", r.managerCmdline, r.managerProbePeriod)
	}
	b.WriteString(mdHead("round", "system", "rollout", "steps", "p50", "p90", "p99", "max", "steps >= "+ms(targetP99), "overlaps"))
	sets := [][]windowResult{r.stepFedop, r.stepSTS, r.stepFloor}
	for i := range r.stepFedop {
		for _, ws := range sets {
			if i >= len(ws) {
				continue
			}
			w := ws[i]
			s := w.rollout.steps
			b.WriteString(mdRow(fmt.Sprint(i+1), w.rollout.system, ms(w.rollout.total()), fmt.Sprint(len(s.overheads)),
				ms(e2e.Percentile(s.overheads, 50)), ms(e2e.Percentile(s.overheads, 90)), ms(e2e.Percentile(s.overheads, 99)), ms(e2e.Percentile(s.overheads, 100)),
				fmt.Sprint(countAtLeast(s.overheads, targetP99)), fmt.Sprint(s.overlaps)))
		}
	}
	var all []string
	for _, ws := range sets {
		if p := pooled(ws); len(ws) > 0 {
			all = append(all, fmt.Sprintf("%s p50 %s, p90 %s, p99 %s over %d steps", ws[0].rollout.system,
				ms(e2e.Percentile(p, 50)), ms(e2e.Percentile(p, 90)), ms(e2e.Percentile(p, 99)), len(p)))
		}
	}
	fmt.Fprintf(b, "\nAll rounds pooled: %s.\n", strings.Join(all, "; "))
	var lags []string
	for _, ws := range sets {
		if l := deleteLags(ws); len(l) > 0 {
			lags = append(lags, fmt.Sprintf("%s p50 %s, p99 %s, max %s over %d steps", ws[0].rollout.system,
				ms(e2e.Percentile(l, 50)), ms(e2e.Percentile(l, 99)), ms(e2e.Percentile(l, 100)), len(l)))
		}
	}
	if len(lags) > 0 {
		fmt.Fprintf(b, "How late the observer saw each step's deletion, from its member's receipt of the DELETE by the member's audit log (item 9) "+
			"to the observer's receipt of the pod's deletionTimestamp, the same rounds: %s. "+
			"A step's overhead carries the observer's lag at both ends, the Ready seen and the deletion seen; "+
			"the API servers' audit events do not say when a pod became Ready, so the lag at that end is not known.\n", strings.Join(lags, "; "))
	}
	if r.operatorSteps > 0 {
		fmt.Fprintf(b, "The manager's own histogram (`fedop_rollout_step_overhead_seconds`) counted %.0f steps over the same rounds, mean %s. "+
			"It measures, in the manager, from the member event that first showed the replacement Ready (or from the Ready condition's "+
			"lastTransitionTime plus minReadySeconds, if later) to the delete call returning; it is reported for comparison only, the figures above are the observer's.\n",
			r.operatorSteps, ms(r.operatorMean))
	}
	if len(r.stepPhases) > 0 {
		b.WriteString("\nWhere fedop's step goes, by the manager's spans around each phase of the reconcile that deletes the next pod " +
			"(`fedop_rollout_step_phase_seconds`, mean per step over the same rounds): queue is from the member event that showed the replacement Ready " +
			"to the reconcile's start (the event's delivery and the workqueue), observe reads the caches, plan runs the planner and computes status, " +
			"status is the status write before the act (0 when the step was acknowledged already, as `status.operation.nextPod` in the write that recorded the previous deletion), " +
			"act is member writes before the deletion, delete is the deletion's round trip.\n\n")
		b.WriteString(mdHead("phase", "mean", "steps"))
		var total time.Duration
		for _, p := range r.stepPhases {
			total += p.mean
			b.WriteString(mdRow(p.phase, fmt.Sprintf("%.2fms", float64(p.mean.Microseconds())/1000), fmt.Sprintf("%.0f", p.steps)))
		}
		b.WriteString(mdRow("sum", fmt.Sprintf("%.2fms", float64(total.Microseconds())/1000), ""))
	}
}

func (r *results) writeDelayDetails(b *strings.Builder, o options) {
	b.WriteString("\n## 2. Rollout efficiency\n\n")
	fmt.Fprintf(b, "The same two workloads, upgraded again with the pod annotation `%s: %s`, on which the lab's extra kwok Stage `bench-pod-ready-after-delay` keys: "+
		"each new pod becomes Ready %s after kwok first sees it scheduled. Total is from just before the upgrade is written to the last new pod seen Ready; "+
		"the floor is N x D.\n\n", delayAnnotation, o.delay, o.delay)
	b.WriteString(mdHead("round", "system", "total", "floor N x D", "efficiency", "step overhead p50", "p99"))
	for i := range r.delayFedop {
		for _, x := range []struct {
			ws  []windowResult
			sys *system
		}{{r.delayFedop, r.fedop}, {r.delaySTS, r.sts}, {r.delayFloor, r.floor}} {
			if i >= len(x.ws) {
				continue
			}
			w := x.ws[i]
			floor := time.Duration(x.sys.pods) * o.delay
			s := w.rollout.steps
			b.WriteString(mdRow(fmt.Sprint(i+1), w.rollout.system, ms(w.rollout.total()), floor.String(),
				fmt.Sprintf("%.3f", float64(floor)/float64(w.rollout.total())), ms(e2e.Percentile(s.overheads, 50)), ms(e2e.Percentile(s.overheads, 99))))
		}
	}
	b.WriteString("\nWhat separates a step from D is the whole pod cycle, not only the controller's overhead: the deletion, kwok removing the pod, " +
		"the controller creating the replacement, the scheduler binding it, kwok's Stage timer, and the Ready status reaching the controller.\n")
	if len(r.delayFedop) > 0 {
		fmt.Fprintf(b, "Median time per step beyond D: fedop %s, StatefulSet %s.\n",
			ms(beyondD(r.delayFedop, r.fedop.pods, o.delay)), ms(beyondD(r.delaySTS, r.sts.pods, o.delay)))
	}
}

// countAtLeast returns how many of ds are at least limit.
func countAtLeast(ds []time.Duration, limit time.Duration) int {
	n := 0
	for _, d := range ds {
		if d >= limit {
			n++
		}
	}
	return n
}

// fastMedian returns the median of the durations of ds shorter than limit.
func fastMedian(ds []time.Duration, limit time.Duration) time.Duration {
	return median(collect(ds, func(d time.Duration) (time.Duration, bool) { return d, d < limit }))
}

// beyondD returns the median over rounds of the time each step took beyond
// the readiness delay: (total - N x D) / N.
func beyondD(ws []windowResult, pods int, delay time.Duration) time.Duration {
	per := make([]time.Duration, 0, len(ws))
	for _, w := range ws {
		per = append(per, (w.rollout.total()-time.Duration(pods)*delay)/time.Duration(pods))
	}
	return median(per)
}

func (r *results) writeAPIDetails(b *strings.Builder) {
	b.WriteString("\n## 3. API cost per step\n\n")
	b.WriteString("The manager's `rest_client_requests_total{code,host,method}` (client-go's counter, on its metrics endpoint), scraped just before each fedop upgrade of item 1 " +
		"and after its status showed the upgrade complete plus one second for the events it writes in the background; hosts are mapped to clusters by the lab's kubeconfigs. " +
		"A step is one replaced pod. client-go counts a LIST or a watch as a GET; the manager's /readyz probes of each member are GETs too, so the reads are also given net of " +
		"the rate seen while the manager had nothing to do (the StatefulSet's upgrades, in which fedop's caches see no event).\n\n")
	b.WriteString(mdHead("round", "window", "requests (cluster, method, count; non-2xx codes in brackets)"))
	for i, w := range r.stepFedop {
		b.WriteString(mdRow(fmt.Sprint(i+1), ms(w.window), formatRequests(w.requests)))
	}
	rate, total, idleWrites, window := r.idleRequests()
	fmt.Fprintf(b, "\nIdle (StatefulSet upgrades, %s in all): %.0f reads, %.3f per second; %.0f writes.\n", window.Round(time.Millisecond), total, rate, idleWrites)
	writes, hostW, memberW, reads, readsNet := r.apiPerStep()
	b.WriteString("\n")
	b.WriteString(mdHead("round", "writes per step", "host", "members", "reads per step", "net of idle"))
	for i := range writes {
		b.WriteString(mdRow(fmt.Sprint(i+1), fmt.Sprintf("%.2f", writes[i]), fmt.Sprintf("%.2f", hostW[i]), fmt.Sprintf("%.2f", memberW[i]),
			fmt.Sprintf("%.2f", reads[i]), fmt.Sprintf("%.2f", readsNet[i])))
	}
	if len(r.delayFedop) > 0 {
		b.WriteString("\nThe same count over item 2's upgrades (readiness delay):\n\n")
		b.WriteString(mdHead("round", "window", "requests"))
		for i, w := range r.delayFedop {
			b.WriteString(mdRow(fmt.Sprint(i+1), ms(w.window), formatRequests(w.requests)))
		}
	}
}

func (r *results) writeMemoryDetails(b *strings.Builder, o options) {
	b.WriteString("\n## 4. Memory\n\n")
	fmt.Fprintf(b, "Managed pods come from FederationClusters `mem-*` of one component with %d pods in each member (kwok makes them Ready at once); "+
		"the unrelated pods are created by the benchmark in member %s, in the same namespace as fedop's pods, without fedop's labels, bound to nodes by spec.nodeName. "+
		"RSS is VmRSS of the manager's process, read every second until %d readings lie within %.0f%% of their median (the median is kept); "+
		"the heap figures are the manager's Go runtime metrics at that moment. Per-pod figures divide the change between the two managed counts, both with the unrelated pods present.\n\n",
		1000/len(o.members), o.members[len(o.members)-1], memSteadyCount, memSteadyRatio*100)
	b.WriteString(mdHead("stage", "pods counted as managed", "unrelated", "reached in", "RSS", "live heap", "in-use heap", "goroutines", "manager CPU so far"))
	for _, p := range r.memory {
		took := "-"
		if p.took > 0 {
			took = p.took.Round(time.Second).String()
		}
		b.WriteString(mdRow(p.label, fmt.Sprint(p.managed), fmt.Sprint(p.unrelated), took, mib(p.rss), mib(p.heapLive), mib(p.heapInuse), fmt.Sprintf("%.0f", p.goroutines), fmt.Sprintf("%.1f s", p.cpu)))
	}
	for _, p := range r.profiles {
		b.WriteString(p.markdown())
	}
}

// requestRole says what the manager's requests of one cluster and method
// are, in this code: on the host it creates only Events and updates only
// FederationClusters (their status, and once the finalizer); in members,
// during an upgrade, it creates and deletes pods.
func requestRole(cluster, method string) string {
	host := cluster == hostCluster
	switch {
	case host && method == http.MethodPost:
		return "Events"
	case host && method == http.MethodPut:
		return "FederationCluster status writes"
	case host && method == http.MethodPatch:
		return "Event series updates"
	case method == http.MethodPost:
		return "pod creations"
	case method == http.MethodDelete:
		return "pod deletions"
	case method == http.MethodGet:
		return "reads: /readyz probes, LISTs, watches"
	}
	return ""
}

// writeMissed explains each missed target with the run's own evidence.
func (r *results) writeMissed(b *strings.Builder, o options, rows []row) {
	var missed []row
	for _, rw := range rows {
		if rw.met == "NO" {
			missed = append(missed, rw)
		}
	}
	if len(missed) == 0 {
		return
	}
	b.WriteString("\n## Targets missed\n")
	for _, rw := range missed {
		fmt.Fprintf(b, "\n**%s. %s**: %s against %s.\n\n", rw.item, rw.measure, rw.figure, rw.target)
		switch {
		case rw.item == "5" || rw.item == "6":
			r.writeMembersMissed(b, rw)
		case strings.HasPrefix(rw.measure, "API writes"):
			r.writeWritesMissed(b)
		case strings.HasPrefix(rw.measure, "RSS per managed pod ("):
			b.WriteString("The live heap per pod (what the last GC found reachable) is the size of the cached pods and their indexes; " +
				"RSS also holds the garbage the Go runtime lets accumulate before its next collection (GOGC=100: up to the live heap again) " +
				"and what it has not yet returned to the kernel, and creating thousands of pods produces a lot of it (every reconcile lists " +
				"the FederationCluster's pods from the cache, which deep-copies them).\n")
			if len(r.profiles) == 0 {
				b.WriteString("\nfedop-manager serves no pprof endpoint (controller-runtime's `PprofBindAddress` is not set from a flag), so no profile was taken; " +
					"hack/bench.sh takes a CPU and a heap profile when `fedop-manager --help` lists `--pprof-bind-address`.\n")
			}
		case strings.HasPrefix(rw.measure, "step overhead, fedop"), strings.HasPrefix(rw.measure, "ratio"):
			var slow []time.Duration
			for _, w := range r.stepFedop {
				for _, d := range w.rollout.steps.overheads {
					if d >= targetP99 {
						slow = append(slow, d)
					}
				}
			}
			conflicts := 0.0
			for _, w := range r.stepFedop {
				for k, v := range w.requests {
					if k.cluster == hostCluster && k.code == "409" {
						conflicts += v
					}
				}
			}
			all := len(pooled(r.stepFedop))
			if len(slow) > 0 {
				fmt.Fprintf(b, "%d of %d steps took %s or more, from %s to %s; the others' median is %s. "+
					"Over the same upgrades the manager's writes to the host were answered 409 Conflict %.0f times "+
					"(a reconcile that reads the FederationCluster from its cache before the cache shows the manager's own last status write loses the write). "+
					"fedop requeues a reconcile that lost a conflict after 200 ms (`conflictRequeue` in federation/reconciler.go), "+
					"the size of the gap between the two groups of steps.\n",
					len(slow), all, ms(targetP99), ms(slices.Min(slow)), ms(slices.Max(slow)), ms(fastMedian(pooled(r.stepFedop), targetP99)), conflicts)
			}
			b.WriteString("\nPer-round figures are in section 1 below.\n")
		case strings.HasPrefix(rw.measure, "rollout efficiency, fedop"):
			cf, cs := beyondD(r.delayFedop, r.fedop.pods, o.delay), beyondD(r.delaySTS, r.sts.pods, o.delay)
			fmt.Fprintf(b, "Each step took D plus %s (median of rounds; the StatefulSet: D plus %s). "+
				"With c that time beyond D, the efficiency is D / (D + c), so %.2f needs D of at least %.0f c: %s here. "+
				"Of c, the controller's own part is the step overhead (Ready seen to the next deletion seen): p50 %s for fedop against %s for the StatefulSet over these rounds. "+
				"fedop acknowledges each step (the status-flag mutex, which lets the operation survive a restart) with a resourceVersion-checked status write to the host, "+
				"a round trip to another API server that the in-cluster controller does not make: it is written once per step, after the deletion returned "+
				"(naming the next pod, `status.operation.nextPod`), not between a Ready and the next deletion, but the reconcile that sees the pod gone "+
				"waits for it when the pod goes sooner (section 2 of where a step's time goes: pod gone to created); the rest of c is the pod's own cycle "+
				"(deletion, kwok removing it, creation, scheduling, the Ready status reaching the watchers).\n",
				ms(cf), ms(cs), targetEfficiency, targetEfficiency/(1-targetEfficiency), ms(time.Duration(float64(cf)*targetEfficiency/(1-targetEfficiency))),
				ms(e2e.Percentile(pooled(r.delayFedop), 50)), ms(e2e.Percentile(pooled(r.delaySTS), 50)))
		default:
			// The item's section below has the run's own evidence.
			fmt.Fprintf(b, "Section %s gives this run's figures behind it.\n", rw.item)
		}
	}
}

// writeWritesMissed explains a missed API writes target: the writes per
// step by cluster, method and code.
func (r *results) writeWritesMissed(b *strings.Builder) {
	per := map[reqKey][]float64{}
	for _, w := range r.stepFedop {
		for k, v := range w.requests {
			per[k] = append(per[k], v/float64(r.fedop.pods))
		}
	}
	keys := slices.SortedFunc(maps.Keys(per), func(a, b reqKey) int {
		return strings.Compare(a.cluster+a.method+a.code, b.cluster+b.method+b.code)
	})
	b.WriteString(mdHead("cluster", "method", "code", "per step (median of rounds)", "what"))
	status, conflicts, events := 0.0, 0.0, 0.0
	for _, k := range keys {
		m := median(per[k])
		b.WriteString(mdRow(k.cluster, k.method, k.code, fmt.Sprintf("%.2f", m), requestRole(k.cluster, k.method)))
		switch {
		case k.cluster == hostCluster && k.method == http.MethodPut:
			status += m
			if k.code == "409" {
				conflicts += m
			}
		case k.cluster == hostCluster && k.method == http.MethodPost:
			events += m
		}
	}
	fmt.Fprintf(b, "\nA step needs at least three writes: a pod deletion and a pod creation in a member, and one status write naming the next pod "+
		"(acknowledge, then act). Beyond them this run spent, per step, %.2f status writes more than one (%.2f of all status writes answered 409 Conflict) "+
		"and %.2f Events (one `PodReplaced` per pod, and the operation's start and end).\n", max(0, status-1), conflicts, events)
}
