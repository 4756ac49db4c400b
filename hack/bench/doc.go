// Command bench measures fedop against the targets of issue 5 (items 1 to
// 6), of the Discovery and Freshness issues (items 7 and 8) and of the
// Performance issue (the floor, items 9 to 11) on a running
// lab, and writes the report docs/benchmarks.md. hack/bench.sh (`make
// bench`) brings the lab up, starts bin/fedop-manager and runs it; run by
// hand, it needs the lab's kubeconfigs (--lab-dir), the manager's pid and
// its metrics endpoint.
//
// What it measures, and how:
//
//   - Step overhead (item 1): a FederationCluster of 24 pods (2 components
//     x 2 members) and a 24-replica StatefulSet in the first member
//     (OrderedReady, RollingUpdate), upgraded in turn, several rounds each,
//     with pods Ready as soon as kwok sees them scheduled. An observer with
//     its own informers on every member stamps each pod event on receipt;
//     a step's overhead is the time from the previous replacement seen
//     Ready to the next pod seen with a deletionTimestamp.
//   - Rollout efficiency (item 2): the same upgrades with every new pod
//     Ready only after a delay D (a pod annotation the lab's extra kwok
//     Stage keys on); N x D over the total.
//   - API cost (item 3): the manager's client-go request counter
//     (rest_client_requests_total) over each fedop upgrade, by cluster and
//     method, per replaced pod; the StatefulSet's upgrades are the
//     manager's idle windows, which give the rate of its /readyz probes.
//   - Memory (item 4): the manager's RSS (VmRSS) and Go heap with 1,000
//     and 10,000 managed pods, and before and after 10,000 pods it does not
//     manage are created in a member.
//   - Members (item 5): apiserver-only members (apiservers.go: one etcd,
//     one kube-apiserver per member under its own --etcd-prefix, TLS from
//     a CA made here) registered in a host namespace of their own; a
//     fedop-manager started for each round, its fedop_member_connected
//     gauge read every 50ms from the process's start until every member is
//     connected, then its RSS.
//   - A dead member (item 6): a manager with the lab's two members and
//     apiserver-only ones; one of those is SIGSTOPped while a
//     FederationCluster on the lab's members is upgraded again and again;
//     its step overhead (the observer's, as in item 1) against rounds with
//     every member up, and the manager's go_goroutines every 10s.
//   - Discovery (item 7): a FederationCluster on the lab's two members
//     whose pods are replaced one at a time (deleted; fedop creates each
//     again under its name, kwok gives it a new IP); the time from the new
//     IP first seen by the observer's pod watch to that IP listed for the
//     pod in the EndpointSlices of every member, seen by watches of the
//     slices (discovery.go); and the EndpointSlice writes per replaced pod
//     that the members' kube-apiservers count (apiserver_request_total).
//     It runs before item 4 and deletes its FederationCluster when done.
//   - Freshness (item 8): each of item 5's managers is watched idle once
//     every member is connected: its CPU (/proc/<pid>/stat) and the
//     /readyz probes and other requests each apiserver-only member's
//     kube-apiserver served per second (freshness.go); and item 3's reads
//     per step, taken with the freshness gate on, say what the gate adds to
//     a step.
//   - The floor (issue 19, beside items 1 and 2): a floor controller
//     (floor.go: delete a pod, recreate it when its delete event comes,
//     wait for it Ready, next; no host, no status, no workqueue) rolls
//     24 pods of its own over the same two members, its upgrades taking
//     turns with fedop's and the StatefulSet's, watched by an observer of
//     its own; each step of all three split into its parts (deletion
//     seen, pod gone, replacement created, scheduled, Ready; phases.go).
//   - Host writes on the critical path (item 9, with items 1 and 2): a
//     watch of item 1's FederationCluster stamps each resourceVersion
//     change on receipt; each falls inside a step's critical window
//     (previous replacement seen Ready to next deletion seen) or outside.
//   - Restart (item 10): a manager of its own SIGKILLed mid-rollout and
//     started again; its start to the next deletion seen, with the lab's
//     members and with item 5's apiserver-only members registered too.
//   - Many (item 11): 200 FederationClusters of 6 pods upgraded at once
//     by the main manager; the observer checks each stayed one pod at a
//     time, and gives the pooled step overhead and the steps per second.
//
// Before items 5, 10 and 6 it stops the main manager (--manager-pid) and
// deletes items 1 to 4's workloads, so that no two managers reconcile the
// same FederationClusters. Every process it starts (etcd, apiservers,
// managers) is ended when it ends, also on error or interrupt, and dies
// with it if it is killed.
//
// It reads fedop's status only to know when a rollout is recorded complete
// (so that the requests that record it are counted) and when memory pods
// exist; every timing comes from its own watches. It must not change
// anything in the lab but its own workloads and registrations (and the
// main manager, which it stops for items 5 and 6), and must not decide a
// figure from the operator's own metrics, which are reported beside the
// observer's for comparison only, except where the item is about the
// manager itself: members connected, goroutines, memory.
package main
