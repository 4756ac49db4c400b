package member

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Source returns a source.Source for a controller on the host manager
// (builder's WatchesRawSource). Once started it enqueues:
//
//   - objMap(member, obj) for every add, update (old and new object) and
//     delete of an Options.Objects object in any member cache, including
//     the caches of members that connect, or are replaced, after the source
//     started. When it starts, and when a member's cache is replaced, the
//     objects already cached arrive as adds, like the initial list of a
//     controller-runtime Kind source.
//   - memberMap(member) whenever a member is registered, connected,
//     disconnected, replaced (new kubeconfig) or removed, or the Reason it
//     is not connected changes (State), and once for
//     every registered member when the source starts, so that a controller
//     started after those events still sees every member.
//
// Either function may be nil. Both run on informer and registry goroutines
// and must be quick and not block; obj comes from a cache and must not be
// mutated. Like a workqueue, the source may deliver a request more than
// once.
func (r *Registry) Source(objMap func(member string, obj client.Object) []reconcile.Request, memberMap func(member string) []reconcile.Request) source.Source {
	return &memberSource{r: r, objMap: objMap, memberMap: memberMap}
}

// memberSource is the source.Source that Source returns.
type memberSource struct {
	r         *Registry
	objMap    func(member string, obj client.Object) []reconcile.Request
	memberMap func(member string) []reconcile.Request
}

// String names the source in controller-runtime's logs.
func (s *memberSource) String() string {
	return "fedop member clusters"
}

// Start registers a sink for queue until ctx ends: it adds the sink's
// event handlers to every running member cache and enqueues memberMap for
// every registered member. It does not block, as source.Source requires.
func (s *memberSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	k := &sink{ctx: ctx, queue: queue, objMap: s.objMap, memberMap: s.memberMap}
	r := s.r

	r.mu.Lock()
	r.lastSink++
	id := r.lastSink
	r.sinks[id] = k
	// Instances published from now on compute their missing sinks with
	// this one included, so each instance gets the handlers exactly once:
	// from here if it is published already, from publish otherwise.
	var running []*instance
	names := make([]string, 0, len(r.members))
	for name, m := range r.members {
		names = append(names, name)
		if m.inst != nil {
			running = append(running, m.inst)
		}
	}
	r.mu.Unlock()

	for _, in := range running {
		in.attach(k)
	}
	for _, name := range names {
		k.member(name)
	}
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		delete(r.sinks, id)
		r.mu.Unlock()
	}()
	return nil
}

// WaitForSync makes memberSource a source.SyncingSource: a controller
// starts its workers only once every member registered at start has had
// its first connection attempt (see initialPass), or ctx ends.
func (s *memberSource) WaitForSync(ctx context.Context) error {
	select {
	case <-s.r.initial:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ source.SyncingSource = &memberSource{}

// sink is one started Source: where events of member clusters go.
type sink struct {
	// ctx ends when the controller that started the source stops; events
	// after that are dropped.
	ctx       context.Context
	queue     workqueue.TypedRateLimitingInterface[reconcile.Request]
	objMap    func(member string, obj client.Object) []reconcile.Request
	memberMap func(member string) []reconcile.Request
}

// object enqueues objMap(member, obj). obj is what an informer handed
// over: an object, or the tombstone of one whose delete was missed.
func (k *sink) object(member string, obj any) {
	if k.objMap == nil || k.ctx.Err() != nil {
		return
	}
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	for _, req := range k.objMap(member, o) {
		k.queue.Add(req)
	}
}

// member enqueues memberMap(member).
func (k *sink) member(member string) {
	if k.memberMap == nil || k.ctx.Err() != nil {
		return
	}
	for _, req := range k.memberMap(member) {
		k.queue.Add(req)
	}
}

// attach adds k's event handlers to every informer of in. An informer that
// has started replays its cached objects to a new handler as adds.
func (in *instance) attach(k *sink) {
	h := toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { k.object(in.name, obj) },
		// Both: a change can move an object from one request to another
		// (a label naming its owner, say), and both need reconciling.
		UpdateFunc: func(oldObj, newObj any) {
			k.object(in.name, oldObj)
			k.object(in.name, newObj)
		},
		DeleteFunc: func(obj any) { k.object(in.name, obj) },
	}
	for _, inf := range in.informers {
		// It fails only when the informer stopped, that is when the
		// instance was stopped: there are no events left to deliver.
		if _, err := inf.AddEventHandler(h); err != nil && in.ctx.Err() == nil {
			ctrl.LoggerFrom(in.ctx).Error(err, "Adding an event handler to a member informer")
		}
	}
}

// snapshotSinks returns the started sinks and the id of the last one.
func (r *Registry) snapshotSinks() ([]*sink, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sinks := make([]*sink, 0, len(r.sinks))
	for _, k := range r.sinks {
		sinks = append(sinks, k)
	}
	return sinks, r.lastSink
}

// notify enqueues memberMap(name) in every started sink.
func (r *Registry) notify(name string) {
	sinks, _ := r.snapshotSinks()
	for _, k := range sinks {
		k.member(name)
	}
}
