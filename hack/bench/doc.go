// Command bench measures fedop against the targets of issue 5 (items 1 to
// 6), of the Discovery and Freshness issues (items 7 and 8) and of the
// Performance issue (the floor, items 9 to 11) on a running lab, and
// writes the report docs/benchmarks.md. hack/bench.sh (`make bench`)
// brings the lab up, starts bin/fedop-manager and runs it; run by hand, it
// needs the lab's kubeconfigs (--lab-dir), the manager's pid and its
// metrics endpoint.
//
// Where each item is: items 1 to 3 and the floor controller in main.go,
// workloads.go, floor.go and phases.go (a step split into its parts);
// item 4 in memory.go; 5 in members.go with the apiserver-only members of
// apiservers.go; 6 in deadmember.go; 7 in discovery.go; 8 in freshness.go;
// 9 in hostwrites.go; 10 in restart.go; 11 in many.go. The report is
// report*.go. Every pod is watched with internal/podwatch (observer.go),
// the package the e2e and integration checkers use too: a step's overhead
// is the time from the previous replacement seen Ready to the next pod
// seen with a deletionTimestamp, each stamped on receipt.
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
