package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fedop-io/fedop/e2e"
)

// The report's rows and section of item 7.

// formatCounts renders counts by key as "key value" pairs, sorted by key,
// or "none".
func formatCounts(counts map[string]float64) string {
	if len(counts) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(counts))
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, counts[k]))
	}
	return strings.Join(parts, ", ")
}

func (r *results) discoveryRows() []row {
	d := &r.discovery
	lat := d.latencies()
	target := "p99 < " + targetDiscoveryP99.String()
	if len(lat) == 0 {
		return []row{{"7", "discovery: a pod IP change in every member's EndpointSlices", "not measured: no replacement was measured (see the log)", target, "NO"}}
	}
	p99 := e2e.Percentile(lat, 99)
	total, byMember, byVerb := d.writesPerReplacement()
	return []row{
		{"7", fmt.Sprintf("pod IP change to the EndpointSlices of all %d members: the new IP first seen in the pod's member to listed in the last member's slices (p50 / p99 / max over %d replacements)",
			len(d.members), len(lat)),
			fmt.Sprintf("%s / %s / %s", ms(e2e.Percentile(lat, 50)), ms(p99), ms(e2e.Percentile(lat, 100))), target,
			metStr(len(lat) >= minReplacements && p99 < targetDiscoveryP99)},
		{"7", "EndpointSlice writes per replaced pod, all members (their kube-apiservers' apiserver_request_total, write verbs)",
			fmt.Sprintf("%.2f (%s; %s); %.0f in %s idle before", total, formatCounts(byMember), formatCounts(byVerb), sumWrites(d.idleWrites), d.idleWindow.Round(time.Second)),
			reported, "-"},
	}
}

func (r *results) writeDiscoveryDetails(b *strings.Builder, _ options) {
	d := &r.discovery
	b.WriteString("\n## 7. Discovery\n\n")
	fmt.Fprintf(b, "fedop writes, in every member that hosts a component, the EndpointSlices of the component's headless Service, listing its pods of every member "+
		"(`federation/discovery.go`; README, \"Discovery\"). FederationCluster `%s` (components pd and tikv, %d pods each in %s: %d pods) runs under the main manager; "+
		"its pods are replaced one at a time, in turn: the benchmark deletes a pod as `kubectl delete` does (its grace period, which the lab's kwok ends at once; "+
		"its UID as a precondition), fedop creates it again under its name, and kwok gives the new instance an IP from its member's pod CIDR (`hack/lab.sh`). "+
		"The next replacement starts once the new IP is in every member's slices and the FederationCluster's status has settled. "+
		"kwok v0.8.0's IP pool gives a pod an address freed earlier before a new one, so a pod replaced alone would get its old address back; "+
		"before the FederationCluster is created, the benchmark therefore creates %d pods of its own in each member, bound to nodes, and deletes them once kwok "+
		"gave them addresses: a replaced pod then draws one of %d free addresses (those left after the FederationCluster's own pods took theirs, and its old one), "+
		"its old one only by chance (such a replacement is not measured).\n\n",
		discoveryName, discoveryPerMember, strings.Join(d.members, " and "), d.pods, spareIPs, spareIPs-2*discoveryPerMember+1)
	fmt.Fprintf(b, "The benchmark watches, with informers of its own, the FederationCluster's pods in every member and fedop's slices of its Services in every member "+
		"(labels `kubernetes.io/service-name` in %s-pd, %s-tikv and `endpointslice.kubernetes.io/managed-by: fedop.io`), and stamps every event on receipt. "+
		"A replacement's latency is from the pod watch first seeing the new instance with an IP to the slice watch of each member first seeing that IP listed "+
		"for the pod's name; the largest over the members. A member whose slices showed the IP before the pod watch saw it counts 0 "+
		"(fedop's own watch of the pod was quicker than the benchmark's). "+
		"Writes are every member kube-apiserver's `apiserver_request_total{resource=\"endpointslices\"}` of the verbs %s "+
		"(a server-side apply, fedop's way of writing a slice, is counted as APPLY), read before the first replacement and %s after the last, "+
		"divided by the replacements; the same count over %s before the first replacement, with nothing changing, shows the members' background. "+
		"These are requests, applies that changed nothing included; e2e scenario 20 counts the slices' changes instead.\n\n",
		discoveryName, discoveryName, strings.Join(sliceWriteVerbs, ", "), eventGrace, d.idleWindow.Round(time.Second))
	if len(d.replacements) == 0 {
		return
	}
	own, other := d.memberLatencies(true), d.memberLatencies(false)
	early := 0
	for _, rp := range d.replacements {
		early += rp.early()
	}
	b.WriteString(mdHead("slices of", "p50", "p99", "max", "count"))
	for _, x := range []struct {
		name string
		ds   []time.Duration
	}{{"the pod's own member", own}, {"the other member", other}, {"the last member (the latency)", d.latencies()}} {
		b.WriteString(mdRow(x.name, ms(e2e.Percentile(x.ds, 50)), ms(e2e.Percentile(x.ds, 99)), ms(e2e.Percentile(x.ds, 100)), fmt.Sprint(len(x.ds))))
	}
	fmt.Fprintf(b, "\n%d times a member's slices listed the new IP before the pod watch saw it (counted 0).", early)
	if d.reused > 0 {
		fmt.Fprintf(b, " %d replacements gave the pod its old IP again and are not among the latencies (their writes are counted).", d.reused)
	}
	b.WriteString("\n\n")
	b.WriteString(mdHead("#", "pod", "old IP", "new IP", "latency", "per member"))
	for i, rp := range d.replacements {
		l, _ := rp.latency(d.members)
		per := make([]string, 0, len(d.members))
		for _, m := range d.members {
			ml, _ := rp.memberLatency(m)
			per = append(per, fmt.Sprintf("%s %s", m, ms(ml)))
		}
		b.WriteString(mdRow(fmt.Sprint(i+1), rp.member+"/"+rp.pod, rp.oldIP, rp.newIP, ms(l), strings.Join(per, ", ")))
	}
	b.WriteString("\n")
	b.WriteString(mdHead("writes", "member", "by verb", "per replaced pod"))
	n := float64(max(d.attempts(), 1))
	for _, m := range d.members {
		fmt.Fprint(b, mdRow(fmt.Sprintf("%d replacements in %s", d.attempts(), d.window.Round(time.Second)), m, formatCounts(d.writes[m]),
			fmt.Sprintf("%.2f", sumWrites(map[string]map[string]float64{m: d.writes[m]})/n)))
		fmt.Fprint(b, mdRow(fmt.Sprintf("idle, %s before", d.idleWindow.Round(time.Second)), m, formatCounts(d.idleWrites[m]), "-"))
	}
	total, _, _ := d.writesPerReplacement()
	fmt.Fprintf(b, "\nWhat the design leads one to expect (README: one write per changed slice per member, none while nothing changes): a replacement changes "+
		"what the slices say of the pod three times, when it starts terminating, when it goes, and when the new instance has an IP (kwok makes it Ready at the same time), "+
		"and each change is one slice in each of the %d members: %d writes. Measured: %.2f.\n", len(d.members), 3*len(d.members), total)
}
