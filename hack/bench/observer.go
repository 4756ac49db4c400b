package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// observerSyncTimeout bounds the initial list of an observer's watches.
const observerSyncTimeout = 30 * time.Second

// podRecord is one pod instance (one UID) as an observer saw it, with the
// observer's own receive time of each change.
type podRecord struct {
	cluster, name string
	uid           types.UID
	// image is the first container's image.
	image string
	ready bool
	// ip is the instance's first pod IP (status.podIP) seen, "" while it
	// has none.
	ip string
	// group is the pod's fedop instance label (its FederationCluster), ""
	// for other controllers' pods.
	group string
	// firstSeen is when the instance was first seen; scheduledAt when it
	// was first seen with spec.nodeName; readyAt when it was first seen
	// Ready; ipAt when it was first seen with an IP; deletedAt
	// when its deletionTimestamp (or its delete event, if no update showed
	// one) was first seen; goneAt when its delete event came.
	firstSeen, scheduledAt, readyAt, ipAt, deletedAt, goneAt time.Time
}

// live reports whether the instance is neither terminating nor gone.
func (r *podRecord) live() bool { return r.deletedAt.IsZero() && r.goneAt.IsZero() }

// watches are informers of one kind in one namespace of several
// clusters, started and stopped together.
type watches struct {
	factories []informers.SharedInformerFactory
	cancel    context.CancelFunc
}

// startWatches starts, in namespace ns of every cluster in clusters (name
// to config), the informer that informer takes from a factory whose lists
// and watches select selector, with the event handler on(cluster, obj,
// gone), and returns once each has listed what exists. what names the
// watches in errors.
func startWatches(ctx context.Context, what string, clusters map[string]*rest.Config, ns, selector string,
	informer func(informers.SharedInformerFactory) toolscache.SharedIndexInformer, on func(cluster string, obj any, gone bool)) (*watches, error) {
	wctx, cancel := context.WithCancel(context.Background())
	w := &watches{cancel: cancel}
	for _, name := range slices.Sorted(maps.Keys(clusters)) {
		cs, err := kubernetes.NewForConfig(fastConfig(clusters[name]))
		if err != nil {
			w.stop()
			return nil, fmt.Errorf("%s: cluster %s: %w", what, name, err)
		}
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0,
			informers.WithNamespace(ns),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = selector }))
		if _, err := informer(f).AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { on(name, obj, false) },
			UpdateFunc: func(_, obj any) { on(name, obj, false) },
			DeleteFunc: func(obj any) { on(name, obj, true) },
		}); err != nil {
			w.stop()
			return nil, fmt.Errorf("%s: cluster %s: %w", what, name, err)
		}
		f.Start(wctx.Done())
		w.factories = append(w.factories, f)
	}
	sctx, cancelSync := context.WithTimeout(ctx, observerSyncTimeout)
	defer cancelSync()
	for _, f := range w.factories {
		for typ, ok := range f.WaitForCacheSync(sctx.Done()) {
			if !ok {
				w.stop()
				return nil, fmt.Errorf("%s: the watch of %v did not sync within %s", what, typ, observerSyncTimeout)
			}
		}
	}
	return w, nil
}

// stop ends the watches and waits for them.
func (w *watches) stop() {
	w.cancel()
	for _, f := range w.factories {
		f.Shutdown()
	}
}

// observer watches the pods matching one label selector in one namespace
// of several clusters, with informers of its own, and stamps every event
// with the time it was received. It reads nothing but pods: neither
// fedop's status nor its metrics, nor the StatefulSet's status.
type observer struct {
	w *watches

	// mu guards recs: the informers of several clusters call in
	// concurrently.
	mu sync.Mutex
	// recs holds every instance seen, by cluster and UID, gone ones too:
	// steps are computed from them after a rollout.
	recs map[string]*podRecord
}

// startObserver starts an observer of the pods matching selector in
// namespace ns of every cluster in clusters (name to config), and returns
// once each watch has listed what exists.
//
//nolint:unparam // The namespace is the caller's to choose; today every caller watches the benchmark's.
func startObserver(ctx context.Context, clusters map[string]*rest.Config, ns, selector string) (*observer, error) {
	o := &observer{recs: map[string]*podRecord{}}
	w, err := startWatches(ctx, "observer", clusters, ns, selector,
		func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			return f.Core().V1().Pods().Informer()
		}, o.onPod)
	if err != nil {
		return nil, err
	}
	o.w = w
	return o, nil
}

// stop ends the observer's watches and waits for them.
func (o *observer) stop() { o.w.stop() }

func (o *observer) onPod(cluster string, obj any, gone bool) {
	at := time.Now()
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	key := cluster + "/" + string(pod.UID)
	rec := o.recs[key]
	if rec == nil {
		rec = &podRecord{cluster: cluster, name: pod.Name, uid: pod.UID, group: pod.Labels[v1alpha1.LabelInstance], firstSeen: at}
		if len(pod.Spec.Containers) > 0 {
			rec.image = pod.Spec.Containers[0].Image
		}
		o.recs[key] = rec
	}
	if !rec.goneAt.IsZero() {
		return // an event that lost the race with the delete event
	}
	if rec.scheduledAt.IsZero() && !gone && pod.Spec.NodeName != "" {
		rec.scheduledAt = at
	}
	if rec.ip == "" && !gone && pod.Status.PodIP != "" {
		rec.ip, rec.ipAt = pod.Status.PodIP, at
	}
	if ready := !gone && podReady(pod); ready != rec.ready {
		rec.ready = ready
		if ready && rec.readyAt.IsZero() {
			rec.readyAt = at
		}
	}
	if (gone || pod.DeletionTimestamp != nil) && rec.deletedAt.IsZero() {
		rec.deletedAt = at
	}
	if gone {
		rec.goneAt = at
	}
}

// records returns a copy of every record.
func (o *observer) records() []podRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]podRecord, 0, len(o.recs))
	for _, r := range o.recs {
		out = append(out, *r)
	}
	return out
}

// live returns the live instance of pod name in cluster, if one exists.
func (o *observer) live(cluster, name string) (podRecord, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.recs {
		if r.cluster == cluster && r.name == name && r.live() {
			return *r, true
		}
	}
	return podRecord{}, false
}

// rolledOut reports whether exactly want live instances exist, every one
// Ready and at image, and none of another image is left (terminating ones
// included); if so, it also returns when the last of them became Ready.
func (o *observer) rolledOut(image string, want int) (bool, time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	var last time.Time
	for _, r := range o.recs {
		if !r.goneAt.IsZero() {
			continue
		}
		if r.image != image || !r.live() || !r.ready {
			return false, time.Time{}
		}
		n++
		if r.readyAt.After(last) {
			last = r.readyAt
		}
	}
	return n == want, last
}

// waitRolledOut polls rolledOut every 20ms until it holds or ctx ends.
// The time it returns comes from the records, not from the poll.
func (o *observer) waitRolledOut(ctx context.Context, image string, want int) (time.Time, error) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if ok, last := o.rolledOut(image, want); ok {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("waiting for %d Ready pods at image %s: %w (%s)", want, image, ctx.Err(), o.describe())
		case <-t.C:
		}
	}
}

// describe summarises the live records by image and readiness, for errors.
func (o *observer) describe() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	count := map[string]int{}
	for _, r := range o.recs {
		switch {
		case !r.goneAt.IsZero():
		case !r.live():
			count[r.image+" terminating"]++
		case r.ready:
			count[r.image+" ready"]++
		default:
			count[r.image+" not ready"]++
		}
	}
	return fmt.Sprint(count)
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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
