package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fedop-io/fedop/e2e"
)

// The report's rows and sections of items 5 and 6.

// measuredSizes returns the member counts item 5 measured, ascending.
func (r *membersResult) measuredSizes() []int {
	var out []int
	for _, run := range r.runs {
		if !slices.Contains(out, run.members) {
			out = append(out, run.members)
		}
	}
	slices.Sort(out)
	return out
}

func (r *results) membersRows() []row {
	var rows []row
	m := &r.members
	for _, n := range m.measuredSizes() {
		all := m.connectAll(n)
		target, met := "-", "-"
		if n == targetConnectSize {
			target, met = "<= "+targetConnect.String(), metStr(median(all) <= targetConnect)
		}
		rows = append(rows, row{"5", fmt.Sprintf("manager start to all %d apiserver-only members connected and synced (median of %d starts)", n, len(all)),
			fmt.Sprintf("%s (%s to %s)", ms(median(all)), ms(slices.Min(all)), ms(slices.Max(all))), target, met})
	}
	for _, s := range m.skipped {
		target := "-"
		if s.members == targetConnectSize {
			target = "<= " + targetConnect.String()
		}
		rows = append(rows, row{"5", fmt.Sprintf("manager start to all %d members connected and synced", s.members), "not measured: see section 5", target, "not measured"})
	}
	if sizes := m.measuredSizes(); len(sizes) > 0 {
		rss := make([]string, 0, len(sizes))
		for _, n := range sizes {
			rss = append(rss, mib(m.rssWith(n)))
		}
		figure := strings.Join(rss, " / ")
		if len(sizes) > 1 {
			lo, hi := sizes[0], sizes[len(sizes)-1]
			per := (m.rssWith(hi) - m.rssWith(lo)) / float64(hi-lo)
			figure += fmt.Sprintf(" (%+.0f KiB per member)", per/1024)
		}
		rows = append(rows, row{"5", fmt.Sprintf("manager RSS with %s members, all connected (median of starts)", joinInts(sizes, " / ")), figure, reported, "-"})
	}
	return rows
}

func (r *results) deadRows(o options) []row {
	d := &r.dead
	if len(d.before) == 0 {
		return []row{{"6", "a dead member", "not measured: the phase failed before the member was stopped", "", "NO"}}
	}
	base := d.baseline()
	b50, b90, b99 := median(roundPercentiles(base, 50)), median(roundPercentiles(base, 90)), median(roundPercentiles(base, 99))
	w50, w90, w99 := median(roundPercentiles(d.during, 50)), median(roundPercentiles(d.during, 90)), median(roundPercentiles(d.during, 99))
	x := ratio(w50, b50)
	figure := fmt.Sprintf("%s / %s / %s (every member up, %d rounds before the stop and %d after: %s / %s / %s; p50 ratio %.2f)",
		ms(w50), ms(w90), ms(w99), len(d.before), len(d.after), ms(b50), ms(b90), ms(b99), x)
	ok := len(d.during) >= 2 && d.failure == "" && x <= targetDeadRatio
	if d.failure != "" {
		figure = fmt.Sprintf("upgrades failed after %d rounds: see section 6; ", len(d.during)) + figure
	}
	pods := 0
	if len(d.before) > 0 {
		pods = d.before[0].steps.deletions
	}
	g := goroutineTrend(d.samples, d.stoppedAt)
	detected, back := "never", "never"
	if d.detectedInPeriod {
		detected = ms(d.detected)
	}
	if d.reconnectedOK {
		back = ms(d.reconnected)
	}
	rows := []row{
		{"6", fmt.Sprintf("step overhead of a FederationCluster (%d pods on %s) with %s of %d members SIGSTOPped for %s (p50/p90/p99, median of %d rounds)",
			pods, strings.Join(o.members[:2], ", "), d.dead, len(d.members), d.period.Round(time.Second), len(d.during)),
			figure, fmt.Sprintf("p50 <= %.1f x every member up", targetDeadRatio), metStr(ok)},
		{"6", fmt.Sprintf("manager goroutines with the member stopped (%d samples, every %s: first / last / max; last quarter's median minus the first's)", g.n, goroutineEvery),
			fmt.Sprintf("%.0f / %.0f / %.0f (%+.0f; %+.2f per minute)", g.first, g.last, g.maxCount, g.growth, g.perMinute),
			fmt.Sprintf("flat (growth <= %d)", goroutineTolerance), metStr(g.n >= 4 && g.growth <= goroutineTolerance)},
		{"6", "stopped member seen disconnected by the manager after / connected again after SIGCONT", detected + " / " + back, reported, "-"},
	}
	return rows
}

// baseline returns the upgrades with every member up.
func (d *deadResult) baseline() []rolloutResult {
	return append(slices.Clone(d.before), d.after...)
}

func joinInts(xs []int, sep string) string {
	s := make([]string, 0, len(xs))
	for _, x := range xs {
		s = append(s, fmt.Sprint(x))
	}
	return strings.Join(s, sep)
}

func (r *results) writeMembersDetails(b *strings.Builder, o options) {
	m := &r.members
	b.WriteString("\n## 5. Members\n\n")
	b.WriteString("Fifty full clusters do not fit two cores, and what fedop does to connect to a member touches only its API server " +
		"(discovery, a list and a watch of pods and of Services, `/readyz`), so these members are apiserver-only: one `bin/kube-apiserver` each, " +
		"all sharing one `bin/etcd`, each with its own `--etcd-prefix` and port. They serve the core API and the few groups kube-apiserver cannot start without, " +
		"with admission plugins other than NamespaceLifecycle, priority and fairness, and profiling off, and authorize everything (AlwaysAllow). " +
		"They all present one serving certificate (SAN 127.0.0.1) from a CA made by the benchmark with client-go's `util/cert`, and trust fedop's client certificate, self-signed (`--client-ca-file`); " +
		"each member's registration Secret carries a kubeconfig with the server, the CA and the client certificate inline, as `member.ParseKubeconfig` asks.\n\n")
	fmt.Fprintf(b, "For each size, the Secrets are in a host namespace of their own (`%s`) and a fresh `fedop-manager` (the same binary and defaults as the main manager, "+
		"`--member-namespace %s`) is started %d times; the main manager is stopped first. From just before each start, the benchmark reads the manager's metrics every %s: "+
		"a member counts as connected and synced when `fedop_member_connected` is 1, which the registry sets only once the member's cache has synced "+
		"(`member/registry.go`, `publish`). Times are when the scrape that showed it was received, so late by up to the poll interval plus a scrape. "+
		"RSS is read once every member is connected, when steady as in item 4.\n\n",
		membersNamespace, membersNamespace, o.memberRounds, connectPoll)
	if len(m.runs) > 0 {
		b.WriteString(mdHead("members", "start", "metrics up", "first member", "half", "all", "scrapes", "RSS", "live heap", "goroutines"))
		round := map[int]int{}
		for _, run := range m.runs {
			round[run.members]++
			b.WriteString(mdRow(fmt.Sprint(run.members), fmt.Sprint(round[run.members]), ms(run.up), ms(run.connected[0]), ms(run.percentileOf(0.5)), ms(run.all),
				fmt.Sprint(run.scrapes), mib(run.rss), mib(run.heapLive), fmt.Sprintf("%.0f", run.goroutines)))
		}
		b.WriteString("\n\"Metrics up\" is the first scrape the new process answered (controller-runtime serves metrics before it starts its caches and controllers). " +
			"The registry connects members from its Secret controller, 8 at a time (`maxConcurrentReconciles` in `member/secret_controller.go`).\n")
	}
	if st := m.fleet; st.members > 0 {
		fmt.Fprintf(b, "\nThe apiserver-only members (%d, measured after the last start, with no manager connected): RSS each median %s (%s to %s), etcd %s; "+
			"each took a median %s and %.2f CPU seconds from exec to `/readyz` (%d started at a time); idle, all of them and etcd used %.2f cores.\n",
			st.members, mib(st.rssMedian), mib(st.rssMin), mib(st.rssMax), mib(st.etcdRSS), ms(st.startup), st.startCPU, startParallel, st.idleCores)
	}
	for _, s := range m.skipped {
		fmt.Fprintf(b, "\n%d members were not measured: %s.\n", s.members, s.reason)
	}
}

func (r *results) writeDeadDetails(b *strings.Builder, o options) {
	d := &r.dead
	b.WriteString("\n## 6. A dead member\n\n")
	fmt.Fprintf(b, "A manager started for this item (`--member-namespace %s`) has %d members: the lab's %s (the Secrets `hack/lab.sh` registered, copied) "+
		"and apiserver-only members as in section 5; all were connected %s after its start. "+
		"FederationCluster `live` (components pd and tikv, %d pods each in %s) is upgraded once to warm up and %d times with every member up, then member %s's kube-apiserver "+
		"is SIGSTOPped (its sockets stay open and nothing answers: requests hang until a timeout) for %s, during which `live` is upgraded again and again; "+
		"after SIGCONT and the member connected again, it is upgraded %d times more. The baseline is the rounds before and after. "+
		"FederationCluster `dead` has %d pods in %s, never Ready (no scheduler there), and its template is changed right after the stop, so that its reconciles "+
		"have work in the stopped member. Step overheads come from the observer of item 1; the manager's goroutines (`go_goroutines`) and RSS are read every %s, "+
		"and whether it sees the member connected (`fedop_member_connected`) every %s.\n\n",
		deadNamespace, len(d.members), strings.Join(o.members[:2], " and "), ms(d.connect.all), o.perMember, strings.Join(o.members[:2], " and "), len(d.before), d.dead,
		d.period.Round(time.Second), len(d.after), deadPods, d.dead, goroutineEvery, samplePoll)
	fmt.Fprintf(b, "The stop lasts `--dead-duration` (%s in this run, 10 minutes by default): the goroutine check compares the median of the last quarter "+
		"of the samples with the first quarter's, against a tolerance of %d. The probes to the stopped member that wait for their timeouts ramp up over "+
		"the first minute, so a window of 3 minutes reads that ramp as growth (run of 2026-11-23 21:27: +32) where 10 minutes does not (+2).\n\n",
		o.deadDuration, goroutineTolerance)
	if len(d.before) == 0 {
		return
	}
	b.WriteString(mdHead("", "rounds", "steps", "p50 (median of rounds, min to max)", "p90", "p99 (median, max)", "max step", "steps >= "+ms(targetP99), "overlaps"))
	for _, ph := range []struct {
		name string
		rs   []rolloutResult
	}{{"every member up, before the stop", d.before}, {d.dead + " stopped", d.during}, {"every member up, after SIGCONT", d.after}} {
		if len(ph.rs) == 0 {
			continue
		}
		var all []time.Duration
		overlaps := 0
		for _, r := range ph.rs {
			all = append(all, r.steps.overheads...)
			overlaps += r.steps.overlaps
		}
		slow := countAtLeast(all, targetP99)
		p50s, p99s := roundPercentiles(ph.rs, 50), roundPercentiles(ph.rs, 99)
		b.WriteString(mdRow(ph.name, fmt.Sprint(len(ph.rs)), fmt.Sprint(len(all)),
			fmt.Sprintf("%s (%s to %s)", ms(median(p50s)), ms(slices.Min(p50s)), ms(slices.Max(p50s))),
			ms(median(roundPercentiles(ph.rs, 90))), fmt.Sprintf("%s (%s)", ms(median(p99s)), ms(slices.Max(p99s))),
			ms(e2e.Percentile(all, 100)), fmt.Sprint(slow), fmt.Sprint(overlaps)))
	}
	if len(r.stepFedop) > 0 {
		fmt.Fprintf(b, "\nFor comparison, item 1's fedop p50 in this run (main manager, two members): %s.\n", ms(median(roundPercentiles(r.stepFedop, 50))))
	}
	var gaps []time.Duration
	for _, r := range slices.Concat(d.before, d.during, d.after) {
		gaps = append(gaps, r.steps.overlapGaps...)
	}
	if len(gaps) > 0 {
		fmt.Fprintf(b, "\nAn overlap is a step whose deletion the observer saw before the previous replacement's Ready; here the deletion came first by %s at most "+
			"(0 means no Ready was seen). Such steps are left out of the overheads. When the Ready and the deletion are in different members, "+
			"the gap can be the order in which the observer's two watches delivered the events (the manager's own watch may have seen the Ready first) "+
			"rather than two pods replaced at once.\n", ms(slices.Max(gaps)))
	}
	if d.failure != "" {
		fmt.Fprintf(b, "\nThe upgrades stopped early: %s.\n", d.failure)
	}
	detected := "did not mark it disconnected while it was stopped"
	if d.detectedInPeriod {
		detected = fmt.Sprintf("marked it disconnected %s after the stop (three failed `/readyz` probes, one every 10 s by default)", ms(d.detected))
	}
	back := "did not see it connected again within 2 minutes of SIGCONT"
	if d.reconnectedOK {
		back = fmt.Sprintf("saw it connected again %s after SIGCONT", ms(d.reconnected))
	}
	fmt.Fprintf(b, "\nThe manager %s, and %s.", detected, back)
	if d.deadStatus != "" {
		fmt.Fprintf(b, " FederationCluster `dead` then had %s.", d.deadStatus)
	}
	b.WriteString("\n\n")

	g := goroutineTrend(d.samples, d.stoppedAt)
	fmt.Fprintf(b, "Goroutines: %.0f just before the stop; with the member stopped, %.0f first, %.0f last, %.0f at most over %d samples; "+
		"the median of the last quarter of the samples minus the first quarter's: %+.0f; least-squares slope %+.2f per minute. One sample a minute:\n\n",
		g.before, g.first, g.last, g.maxCount, g.n, g.growth, g.perMinute)
	b.WriteString(mdHead("since the stop", "goroutines", "RSS", "manager CPU so far", "sees the member connected"))
	next := time.Duration(0)
	for i, s := range d.samples {
		at := s.at.Sub(d.stoppedAt)
		when := at.Round(time.Second).String()
		switch {
		case at < 0:
			when = "just before"
		case at < next && i != len(d.samples)-1:
			continue
		default:
			next = at.Truncate(time.Minute) + time.Minute
		}
		if !s.scrape {
			b.WriteString(mdRow(when, "no answer", mib(s.rss), "-", "-"))
			continue
		}
		b.WriteString(mdRow(when, fmt.Sprintf("%.0f", s.goroutines), mib(s.rss), fmt.Sprintf("%.1f s", s.cpu), fmt.Sprint(s.deadConnected)))
	}
	b.WriteString("\nRSS grows with the steps taken, not with the time the member is stopped: the manager's events.k8s.io recorder " +
		"(client-go `tools/events`) keeps every Event it sent, to fold repeats into a series, and drops those older than 6 minutes " +
		"once every 6 minutes (`finishTime`), so it holds 6 to 12 minutes of Events. At this item's pace, one `PodReplaced` Event for each " +
		"of several steps a second, that is tens of MiB; at a real rollout's pace, a step per pod start, it is little.\n")
	if d.profile != nil {
		b.WriteString(d.profile.markdown())
	}
}

// writeMembersMissed explains a missed target of item 5 or 6.
func (r *results) writeMembersMissed(b *strings.Builder, rw row) {
	switch rw.item {
	case "5":
		m := &r.members
		var ups, firsts []time.Duration
		for _, run := range m.runs {
			if run.members == targetConnectSize {
				ups = append(ups, run.up)
				firsts = append(firsts, run.connected[0])
			}
		}
		if len(ups) > 0 {
			fmt.Fprintf(b, "Of that, the manager's own start (until its metrics answered) took a median %s and the first member connected after %s; "+
				"the rest is the members connecting, 8 at a time. Per-start figures are in section 5.\n", ms(median(ups)), ms(median(firsts)))
		}
		if m.profile != nil {
			b.WriteString(m.profile.markdown())
		} else if m.profileNote != "" {
			b.WriteString("\n" + m.profileNote + "\n")
		}
	case "6":
		d := &r.dead
		if d.failure != "" {
			fmt.Fprintf(b, "The upgrades of `live` stopped: %s.\n", d.failure)
		}
		if strings.HasPrefix(rw.measure, "manager goroutines") && d.profile == nil && d.profileNote != "" {
			b.WriteString(d.profileNote + "\n")
		}
		b.WriteString("Section 6 gives this run's figures behind it.\n")
	}
}
