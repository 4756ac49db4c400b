package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The report's rows and section of item 8.

// freshnessRows are the rows of item 8.
func (r *results) freshnessRows() []row {
	m := &r.members
	sizes := m.measuredSizes()
	var rows []row
	if len(sizes) == 0 || len(m.idleWith(sizes[len(sizes)-1])) == 0 {
		rows = append(rows, row{"8", "freshness probes and manager CPU while idle", "not measured: item 5 measured no size (see section 5)", "", "-"})
	} else {
		largest := sizes[len(sizes)-1]
		idle := m.idleWith(largest)
		probes, others := pooledRates(idle)
		p := median(probes)
		_, baseOthers := pooledRates([]idleRun{m.baseline})
		rows = append(rows, row{"8",
			fmt.Sprintf("freshness probes while idle: GET %s per second per member, seen by each of %d apiserver-only members' kube-apiserver (median of %d member windows)",
				probePath, largest, len(probes)),
			fmt.Sprintf("%.2f (%.2f to %.2f); other requests %.2f per s per member, %.2f with no manager connected",
				p, slices.Min(probes), slices.Max(probes), median(others), median(baseOthers)),
			fmt.Sprintf("%d per --member-probe-period (%s)", probesPerPeriod, defaultProbePeriod), metStr(probeRateOK(p, defaultProbePeriod))})
		cpus := make([]string, 0, len(sizes))
		for _, n := range sizes {
			cpus = append(cpus, fmt.Sprintf("%.3f", idleCPU(m.idleWith(n))))
		}
		figure := strings.Join(cpus, " / ")
		if len(sizes) > 1 {
			lo := sizes[0]
			per := (idleCPU(idle) - idleCPU(m.idleWith(lo))) / float64(largest-lo)
			figure += fmt.Sprintf(" (%+.4f per member)", per)
		}
		rows = append(rows, row{"8", fmt.Sprintf("manager CPU while idle with %s apiserver-only members connected (CPU seconds per second, /proc/<pid>/stat; median of %d starts)",
			joinInts(sizes, " / "), len(idle)), figure, reported, "-"})
	}
	if r.fedop == nil {
		rows = append(rows, row{"8", "network round trips the freshness gate adds to a step", "not measured in this run: it is item 3's figure (--items 1)", "0", "-"})
		return rows
	}
	_, _, _, reads, readsNet := r.apiPerStep()
	rows = append(rows, row{"8", "network round trips the freshness gate adds to a step: item 1's steps ran with the gate on; item 3's reads per step net of the idle probes",
		fmt.Sprintf("%.2f (%.2f raw)", median(readsNet), median(reads)), "0", metStr(median(readsNet) < 0.05)})
	return rows
}

// writeFreshnessDetails writes section 8.
func (r *results) writeFreshnessDetails(b *strings.Builder, o options) {
	m := &r.members
	b.WriteString("\n## 8. Freshness\n\n")
	fmt.Fprintf(b, "Before a disruptive step (a pod deletion, a step counted done) fedop requires word from every member involved within `--member-probe-period` "+
		"(default %s): a `GET %s` that the registry sends each member %d times per period, each bounded by half a period (`member/health.go`), "+
		"or an event of the member's caches (`member/instance.go`). The gate is `Registry.State` (`member/registry.go`), which compares the time of the last word "+
		"with the clock under the registry's lock: it sends no request. What it costs is the probes, whether the manager has work or not.\n\n",
		defaultProbePeriod, probePath, probesPerPeriod)
	fmt.Fprintf(b, "Each of item 5's manager starts, once every member is connected and its RSS read, is left idle for %s (no FederationCluster exists then). "+
		"Over that window the manager's CPU (utime + stime of `/proc/<pid>/stat`, through prometheus/procfs) is read; and every apiserver-only member's "+
		"`apiserver_request_total` (its kube-apiserver's `/metrics`, parsed with Prometheus's expfmt) is read just before and just after, "+
		"giving each member's `GET %s` (counted with `subresource=\"%s\"`) and other requests per second over its own window. "+
		"Nothing but the manager and the benchmark talks to these members; the other requests are also read once with no manager connected "+
		"(after the last start, over section 5's idle window), which is what the kube-apiservers do by themselves.\n\n",
		o.idleWindow, probePath, probePath)
	if len(m.runs) > 0 && m.runs[0].idle != nil {
		b.WriteString(mdHead("members", "start", "window", "manager CPU s/s", "GET /readyz per s per member: median (min to max)", "manager's own count", "other requests per s per member"))
		round := map[int]int{}
		for _, run := range m.runs {
			round[run.members]++
			if run.idle == nil {
				continue
			}
			i := run.idle
			b.WriteString(mdRow(fmt.Sprint(run.members), fmt.Sprint(round[run.members]), i.window.Round(100*time.Millisecond).String(), fmt.Sprintf("%.3f", i.cpu),
				fmt.Sprintf("%.2f (%.2f to %.2f)", median(i.probes), slices.Min(i.probes), slices.Max(i.probes)),
				fmt.Sprintf("%.2f", i.managerProbes), fmt.Sprintf("%.2f", median(i.others))))
		}
		if bl := m.baseline; len(bl.others) > 0 {
			fmt.Fprintf(b, "\nWith no manager connected (%d members): GET %s %.2f per s per member, other requests %.2f.\n",
				bl.members, probePath, median(bl.probes), median(bl.others))
		}
		b.WriteString("\n\"The manager's own count\" is its `fedop_member_probe_duration_seconds_count` over the window, per member: the probes it sent, " +
			"for comparison with what the members served.\n")
	}
	b.WriteString("\n**The gate and a step.** ")
	if r.managerCmdline != "" && r.fedop != nil {
		fmt.Fprintf(b, "Items 1 to 3 ran with the main manager as `%s` (its command line, from `/proc`), so with the freshness gate on and a bound of %s: "+
			"every step of item 1 was taken only after the gate found every member involved fresh. ", r.managerCmdline, r.managerProbePeriod)
	}
	if r.fedop != nil {
		_, _, _, reads, readsNet := r.apiPerStep()
		rate, _, _, _ := r.idleRequests()
		period := cmp.Or(r.managerProbePeriod, defaultProbePeriod)
		fmt.Fprintf(b, "Item 3 counted the manager's reads (client-go's GETs, LISTs and watches) per step: %.2f raw, %.2f net of the idle rate of %.3f reads per second "+
			"(the lab's %d members' probes, %d per %s each, make %.3f of it). A gate that asked a member before each step would add at least one read per step; "+
			"the step overhead of item 1 carries no such round trip.\n", median(reads), median(readsNet), rate,
			len(o.members), probesPerPeriod, period, float64(len(o.members)*probesPerPeriod)/period.Seconds())
	} else {
		b.WriteString("Items 1 and 3 were not measured in this run, so the reads per step are not shown here.\n")
	}
	if len(m.runs) > 0 {
		sizes := m.measuredSizes()
		if idle := m.idleWith(sizes[len(sizes)-1]); len(idle) > 0 {
			probes, _ := pooledRates(idle)
			n := sizes[len(sizes)-1]
			fmt.Fprintf(b, "\nAt the default period, a manager with %d members sends about %.0f probes per second in all.\n", n, median(probes)*float64(n))
		}
	}
}
