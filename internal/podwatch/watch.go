package podwatch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
)

// SyncTimeout bounds the initial list of every member's watch.
const SyncTimeout = 30 * time.Second

// Options say which pods a Watch watches.
type Options struct {
	// Members maps each member name to a configuration of its cluster.
	// Two names may reach one cluster (Selector tells their pods apart).
	Members map[string]*rest.Config
	// Namespace is the namespace watched in every member; "" for all.
	Namespace string
	// Selector returns the label selector (in its string form, "" for
	// every pod) of member's list and watch; nil selects every pod.
	Selector func(member string) string
}

// Handler is called for every event of a Watch: pod in member, received at
// at; gone is true for a delete event. Handlers of several members run
// concurrently; a pod is a cache's object, never to be mutated.
type Handler func(member string, pod *corev1.Pod, gone bool, at time.Time)

// Watch is one informer per member, started and stopped together.
type Watch struct {
	factories []informers.SharedInformerFactory
	cancel    context.CancelFunc
}

// StartWatch starts one pod informer per member of opts, each calling on
// with the event's receive time, and returns once every one has listed
// what exists (within SyncTimeout), or an error. Stop it with Stop.
func StartWatch(ctx context.Context, opts Options, on Handler) (*Watch, error) {
	return StartInformers(ctx, opts, func(f informers.SharedInformerFactory) toolscache.SharedIndexInformer {
		return f.Core().V1().Pods().Informer()
	}, func(member string, obj any, gone bool, at time.Time) {
		if pod, ok := obj.(*corev1.Pod); ok {
			on(member, pod, gone, at)
		}
	})
}

// StartInformers is StartWatch for another kind: per member, the informer
// that informer takes from a factory scoped as opts says, calling on with
// each event's object (a tombstone unwrapped) and receive time. The
// benchmark watches EndpointSlices with it.
func StartInformers(ctx context.Context, opts Options, informer func(informers.SharedInformerFactory) toolscache.SharedIndexInformer,
	on func(member string, obj any, gone bool, at time.Time)) (*Watch, error) {
	wctx, cancel := context.WithCancel(context.Background())
	w := &Watch{cancel: cancel}
	fail := func(member string, err error) (*Watch, error) {
		w.Stop()
		return nil, fmt.Errorf("watch of member %s: %w", member, err)
	}
	for _, member := range slices.Sorted(maps.Keys(opts.Members)) {
		cs, err := kubernetes.NewForConfig(opts.Members[member])
		if err != nil {
			return fail(member, err)
		}
		selector := ""
		if opts.Selector != nil {
			selector = opts.Selector(member)
		}
		f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(opts.Namespace),
			informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = selector }))
		handle := func(obj any, gone bool) {
			at := time.Now()
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			on(member, obj, gone, at)
		}
		if _, err := informer(f).AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { handle(obj, false) },
			UpdateFunc: func(_, obj any) { handle(obj, false) },
			DeleteFunc: func(obj any) { handle(obj, true) },
		}); err != nil {
			return fail(member, err)
		}
		f.Start(wctx.Done())
		w.factories = append(w.factories, f)
	}
	sctx, cancelSync := context.WithTimeout(ctx, SyncTimeout)
	defer cancelSync()
	for _, f := range w.factories {
		for _, ok := range f.WaitForCacheSync(sctx.Done()) {
			if !ok {
				w.Stop()
				return nil, fmt.Errorf("watch: a member's list did not complete within %s: %w", SyncTimeout, context.Cause(sctx))
			}
		}
	}
	return w, nil
}

// Stop ends the watch and waits for its informers.
func (w *Watch) Stop() {
	w.cancel()
	for _, f := range w.factories {
		f.Shutdown()
	}
}

// Observer is a Watch feeding a Set: the records of every pod instance the
// members show, for callers that need no more than the records.
type Observer struct {
	w *Watch
	// mu guards set: the informers of several members call in
	// concurrently.
	mu  sync.Mutex
	set *Set
}

// StartObserver starts an Observer of the pods opts selects and returns
// once every member's watch has listed what exists. Stop it with Stop.
func StartObserver(ctx context.Context, opts Options) (*Observer, error) {
	o := &Observer{set: NewSet()}
	w, err := StartWatch(ctx, opts, func(member string, pod *corev1.Pod, gone bool, at time.Time) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.set.Observe(member, pod, gone, at)
	})
	if err != nil {
		return nil, err
	}
	o.w = w
	return o, nil
}

// Stop ends the Observer's watch. Records still works.
func (o *Observer) Stop() { o.w.Stop() }

// Records returns a copy of every Record seen, gone ones included.
func (o *Observer) Records() []Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.set.Records()
}
