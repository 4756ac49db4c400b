package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// floorLabel marks the floor controller's pods (value "floor"): neither
// fedop (no managed-by label) nor the StatefulSet (no app=ref) nor their
// observers select them.
const floorLabel = "bench.fedop.io/controller"

// floorLabels are the labels of the floor controller's pods.
func floorLabels() map[string]string { return map[string]string{floorLabel: floorName} }

// floorName names the floor controller: its systems in the report, its
// pods' label value and workload, its one group in items 1 and 2.
const floorName = "floor"

// floorDescription says what the floor controller does and does not do;
// the report prints it beside its figures.
const floorDescription = "The floor controller (`hack/bench/floor.go`) is a reference, not a competitor: " +
	"the least a cross-cluster, one-pod-at-a-time controller can do on this lab. It runs inside the benchmark process, " +
	"watches its own pods (label `" + floorLabel + "=floor`) in the members with client-go informers, and to roll its pods " +
	"deletes one (UID precondition), recreates it under the same name with the new image when its informer delivers the delete event, " +
	"waits for its informer to show the replacement Ready, and goes on to the next, alternating members. " +
	"It has no host cluster, no status, no acknowledgement before a deletion, no workqueue, no safety checks " +
	"(it never re-checks a step before acting, never looks at other pods' health, never guards against a second controller), " +
	"and it does not survive a restart: its progress lives only in its own goroutine. " +
	"It retries only an API call that failed transiently (client-go's retry.OnError, default backoff)."

// floorController is the floor of issue 19, measured beside fedop and the
// StatefulSet by the same observer: floorDescription says what it does
// and does not do. It rolls groups of pods, each group one pod at a time
// and the groups at once, as one controller of many workloads would:
// items 1 and 2 have one group, item 11 as many as its
// FederationClusters. A group's pods are named <group>-<i>, perMember of
// them in each member, labelled with the group as their instance, all
// created by it.
type floorController struct {
	members []string
	clients map[string]kubernetes.Interface
	listers map[string]listersv1.PodNamespaceLister
	w       *podwatch.Watch
	// orders are the groups' roll orders: (member, name) pairs alternating
	// members.
	orders [][][2]string
	pods   int

	// ctx is the controller's lifetime, ended by stop: a roll runs under
	// it, not under the context of the call that started it, which
	// runUpgrade ends as soon as the observer saw the last pod Ready,
	// possibly before the controller's own informer did.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards waiters, done and err: the roll of each group runs in a
	// goroutine of its own, as a controller's workers would.
	mu sync.Mutex
	// waiters are closed on the next event of their pod (member/name):
	// the roll waiting for it then looks at the lister again, which the
	// informer updates before it calls handlers.
	waiters map[string]chan struct{}
	done    chan struct{}
	err     error
	// remade counts replacements deleted before they were Ready and
	// created again (replace).
	remade atomic.Int64
}

// startFloor starts the floor controller's informers on members (name to
// config) and creates, for each of groups, its perMember pods in each at
// image, and returns without waiting for them to be Ready.
func startFloor(ctx context.Context, cfgs map[string]*rest.Config, clients map[string]kubernetes.Interface,
	groups []string, perMember int, image string) (*floorController, error) {
	f := &floorController{members: slices.Sorted(maps.Keys(cfgs)), clients: clients, listers: map[string]listersv1.PodNamespaceLister{},
		waiters: map[string]chan struct{}{}}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	notify := func(member string, obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		key := member + "/" + pod.Name
		f.mu.Lock()
		defer f.mu.Unlock()
		if ch := f.waiters[key]; ch != nil {
			close(ch)
			delete(f.waiters, key)
		}
	}
	var pods []toolscache.SharedIndexInformer
	var err error
	opts := podwatch.Options{Members: fastConfigs(cfgs), Namespace: namespace, Selector: func(string) string { return floorSelector() }}
	f.w, err = podwatch.StartInformers(ctx, opts,
		func(fac informers.SharedInformerFactory) toolscache.SharedIndexInformer {
			// Called once per member, in sorted order: f.members's.
			inf := fac.Core().V1().Pods().Informer()
			pods = append(pods, inf)
			return inf
		}, func(member string, obj any, _ bool, _ time.Time) { notify(member, obj) })
	if err != nil {
		f.cancel()
		return nil, err
	}
	for i, m := range f.members {
		f.listers[m] = listersv1.NewPodLister(pods[i].GetIndexer()).Pods(namespace)
	}
	for _, g := range groups {
		var order [][2]string
		for i := range perMember {
			for _, m := range f.members {
				order = append(order, [2]string{m, fmt.Sprintf("%s-%d", g, i)})
			}
		}
		f.orders = append(f.orders, order)
		f.pods += len(order)
	}
	for gi, order := range f.orders {
		for _, p := range order {
			_, err := clients[p[0]].CoreV1().Pods(namespace).Create(ctx, floorPod(groups[gi], p[1], image, 0), metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				f.stop()
				return nil, fmt.Errorf("floor controller: creating %s/%s: %w", p[0], p[1], err)
			}
		}
	}
	return f, nil
}

// floorPod is the floor controller's pod name of group at image, Ready
// delay after it is scheduled when delay is positive (the lab's kwok
// Stage).
func floorPod(group, name, image string, delay time.Duration) *corev1.Pod {
	t := podTemplate(floorLabels(), floorName, image)
	if delay > 0 {
		t.Annotations[delayAnnotation] = delay.String()
	}
	t.Labels[v1alpha1.LabelInstance] = group
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: t.Labels, Annotations: t.Annotations}, Spec: t.Spec}
}

// stop ends the informers; the pods stay (clearWorkloads or the lab's end
// removes them).
func (f *floorController) stop() {
	f.cancel()
	f.w.Stop()
}

// system returns the floor controller as a system under test, its pods
// watched by obs.
func (f *floorController) system(obs *observer) *system {
	return &system{
		name: floorName,
		pods: f.pods,
		obs:  obs,
		upgrade: func(_ context.Context, image string, delay time.Duration) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.done, f.err = make(chan struct{}), nil
			// The roll outlives the call, as a controller's work outlives
			// the spec write that started it.
			go func(done chan struct{}) {
				var wg sync.WaitGroup
				errs := make([]error, len(f.orders))
				for i, order := range f.orders {
					wg.Go(func() { errs[i] = f.roll(f.ctx, order, image, delay) })
				}
				wg.Wait()
				f.mu.Lock()
				f.err = errors.Join(errs...)
				f.mu.Unlock()
				close(done)
			}(f.done)
			return nil
		},
		settled: func(ctx context.Context) error {
			f.mu.Lock()
			done := f.done
			f.mu.Unlock()
			if done == nil {
				return nil
			}
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("floor controller: %w", ctx.Err())
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.err
		},
	}
}

// roll replaces every pod of one group not at image, one at a time in
// order.
func (f *floorController) roll(ctx context.Context, order [][2]string, image string, delay time.Duration) error {
	for _, p := range order {
		m, name := p[0], p[1]
		pods := f.clients[m].CoreV1().Pods(namespace)
		old, err := f.listers[m].Get(name)
		if err != nil {
			return fmt.Errorf("floor controller: %s/%s: %w", m, name, err)
		}
		if old.Spec.Containers[0].Image == image {
			continue
		}
		uid := old.UID
		// An API call that fails transiently (a loaded lab: item 11) is
		// retried; one whose retry finds the pod gone succeeded the first
		// time.
		err = retry.OnError(retry.DefaultBackoff, transient, func() error {
			err := pods.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("floor controller: deleting %s/%s: %w", m, name, err)
		}
		// The delete event: the name is free again.
		if err := f.waitFor(ctx, m, name, func(p *corev1.Pod) bool { return p == nil || p.UID != uid }); err != nil {
			return err
		}
		if err := f.replace(ctx, m, name, uid, floorPod(old.Labels[v1alpha1.LabelInstance], name, image, delay)); err != nil {
			return err
		}
	}
	return nil
}

// replace creates pod, the replacement of instance uid of name in member
// m, and returns once the informer shows it Ready. A replacement deleted
// before it is Ready is created again, as a controller would: the
// informer showed it, then its delete event. (In item 11 on a loaded lab,
// four replacements in one member were created and then deleted by none
// of the benchmark's code; the roll waited for them forever.)
func (f *floorController) replace(ctx context.Context, m, name string, uid types.UID, pod *corev1.Pod) error {
	pods := f.clients[m].CoreV1().Pods(namespace)
	for {
		// An API call that fails transiently is retried; one whose retry
		// finds the pod there succeeded the first time.
		err := retry.OnError(retry.DefaultBackoff, transient, func() error {
			_, err := pods.Create(ctx, pod.DeepCopy(), metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("floor controller: creating %s/%s: %w", m, name, err)
		}
		seen, gone := types.UID(""), false
		err = f.waitFor(ctx, m, name, func(p *corev1.Pod) bool {
			switch {
			case p != nil && p.UID != uid && seen == "":
				seen = p.UID
			case seen != "" && (p == nil || p.UID != seen):
				gone = true
				return true
			}
			return p != nil && p.UID == seen && podwatch.Ready(p)
		})
		if err != nil {
			return err
		}
		if !gone {
			return nil
		}
		f.remade.Add(1)
	}
}

// waitFor returns once ok holds for pod name of member m in the informer's
// cache (nil when absent), checked on every event of that pod.
func (f *floorController) waitFor(ctx context.Context, m, name string, ok func(*corev1.Pod) bool) error {
	key := m + "/" + name
	for {
		// The waiter is in place before the lister is read: an event
		// between the two closes it.
		wake := make(chan struct{})
		f.mu.Lock()
		f.waiters[key] = wake
		f.mu.Unlock()
		p, err := f.listers[m].Get(name)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if ok(p) {
			f.mu.Lock()
			delete(f.waiters, key)
			f.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("floor controller: waiting for %s/%s: %w", m, name, ctx.Err())
		case <-wake:
		}
	}
}

// transient reports whether an API call's error may pass if the call is
// made again: the server busy, timed out or failing for a while, or the
// connection lost.
func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || utilnet.IsConnectionReset(err) ||
		utilnet.IsProbableEOF(err)
}

// floorSelector selects the floor controller's pods.
func floorSelector() string {
	return labels.SelectorFromSet(floorLabels()).String()
}
