package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// podRecord is one pod instance as an observer saw it, with the
// observer's own receive time of each change.
type podRecord = podwatch.Record

// observer watches the pods matching one label selector in one namespace
// of several clusters with podwatch (informers of its own, every event
// stamped on receipt). It reads nothing but pods: neither fedop's status
// nor its metrics, nor the StatefulSet's status.
type observer struct{ *podwatch.Observer }

// startObserver starts an observer of the pods matching selector in the
// benchmark's namespace of every cluster in clusters (name to config), and
// returns once each watch has listed what exists.
func startObserver(ctx context.Context, clusters map[string]*rest.Config, selector string) (*observer, error) {
	opts := podwatch.Options{Members: fastConfigs(clusters), Namespace: namespace, Selector: func(string) string { return selector }}
	o, err := podwatch.StartObserver(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	return &observer{o}, nil
}

// labConfigs returns the REST configs of the lab's first two members, by
// name: where items 1, 2, 6, 7, 10 and 11 run their workloads.
func (b *bench) labConfigs() map[string]*rest.Config {
	out := map[string]*rest.Config{}
	for _, m := range b.options.members[:2] {
		out[m] = b.memberCfgs[m]
	}
	return out
}

// observeFederation starts an observer of the pods of FederationCluster
// name in the lab's first two members.
func (b *bench) observeFederation(ctx context.Context, name string) (*observer, error) {
	sel := labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: name})
	return startObserver(ctx, b.labConfigs(), sel.String())
}

// live returns the live instance of pod name in cluster, if one exists.
func (o *observer) live(cluster, name string) (podRecord, bool) {
	for _, r := range o.Records() {
		if r.Member == cluster && r.Name == name && r.Live() {
			return r, true
		}
	}
	return podRecord{}, false
}

// readyCount returns the number of live Ready instances.
func (o *observer) readyCount() int {
	n := 0
	for _, r := range o.Records() {
		if r.Available() {
			n++
		}
	}
	return n
}

// rolledOut reports whether exactly want live instances exist, every one
// Ready and at image, and none of another image is left (terminating ones
// included); if so, it also returns when the last of them became Ready.
func (o *observer) rolledOut(image string, want int) (bool, time.Time) {
	n := 0
	var last time.Time
	for _, r := range o.Records() {
		if !r.GoneAt.IsZero() {
			continue
		}
		if r.Image != image || !r.Available() {
			return false, time.Time{}
		}
		n++
		if r.ReadyAt.After(last) {
			last = r.ReadyAt
		}
	}
	return n == want, last
}

// waitRolledOut polls rolledOut every 20ms until it holds or ctx ends.
// The time it returns comes from the records, not from the poll.
func (o *observer) waitRolledOut(ctx context.Context, image string, want int) (time.Time, error) {
	var last time.Time
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (ok bool, _ error) {
		ok, last = o.rolledOut(image, want)
		return ok, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("waiting for %d Ready pods at image %s: %w (%s)", want, image, err, o.describe())
	}
	return last, nil
}

// describe summarises the live records by image and readiness, for errors.
func (o *observer) describe() string {
	count := map[string]int{}
	for _, r := range o.Records() {
		switch {
		case !r.GoneAt.IsZero():
		case !r.Live():
			count[r.Image+" terminating"]++
		case r.Ready:
			count[r.Image+" ready"]++
		default:
			count[r.Image+" not ready"]++
		}
	}
	return fmt.Sprint(count)
}

// fastConfig returns a copy of cfg whose client-side rate limit does not
// slow the benchmark's own requests down: the observer's list and the
// creation of unrelated pods.
func fastConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 2000, 4000
	c.UserAgent = "fedop-bench"
	return c
}

// fastConfigs returns fastConfig of every config in cfgs, by the same names.
func fastConfigs(cfgs map[string]*rest.Config) map[string]*rest.Config {
	out := make(map[string]*rest.Config, len(cfgs))
	for name, cfg := range cfgs {
		out[name] = fastConfig(cfg)
	}
	return out
}
