package member

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Watcher starts one watch on a member cluster's cache. Registry.Watch
// starts a Watcher of a given name at most once per connection of a
// member: a member whose cache is replaced (a new kubeconfig) starts with
// no watch, and the next Registry.Watch adds them again. This is Cluster
// API's clustercache contract.
type Watcher interface {
	// Name identifies the watch among a member's watches.
	Name() string
	// Watch starts the watch on c, a member's cache. It must not block.
	Watch(c cache.Cache) error
}

// SourceWatcher is what a Watcher needs of a controller: its Watch
// method, which a controller-runtime controller accepts after it started.
type SourceWatcher interface {
	Watch(src source.TypedSource[reconcile.Request]) error
}

// KindWatcher returns a Watcher named name that has ctrl watch objects of
// obj's kind in a member's cache through h, filtered by preds: a
// source.Kind on the member's cache. The informer replays the objects it
// already holds to h as creations, so a watch added late misses nothing.
func KindWatcher(name string, ctrl SourceWatcher, obj client.Object, h handler.EventHandler, preds ...predicate.Predicate) Watcher {
	return &kindWatcher{name: name, ctrl: ctrl, obj: obj, h: h, preds: preds}
}

type kindWatcher struct {
	name  string
	ctrl  SourceWatcher
	obj   client.Object
	h     handler.EventHandler
	preds []predicate.Predicate
}

func (w *kindWatcher) Name() string { return w.name }

func (w *kindWatcher) Watch(c cache.Cache) error {
	// Each member cache gets its own copy of the object.
	return w.ctrl.Watch(source.Kind(c, w.obj.DeepCopyObject().(client.Object), w.h, w.preds...))
}

// Watch starts w on member name's cache unless a watch of that name runs
// there already for the member's current connection. Callers call it on
// every reconcile that uses the member, as Cluster API's controllers do;
// after the first call for a connection it costs a map lookup. The error
// wraps ErrNotRegistered or ErrDisconnected when the member has no usable
// cache, or is w's.
func (r *Registry) Watch(_ context.Context, name string, w Watcher) error {
	r.mu.Lock()
	m, ok := r.members[name]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("member cluster %q: %w", name, ErrNotRegistered)
	}
	in := m.inst
	if in == nil || !m.state.Connected {
		r.mu.Unlock()
		return fmt.Errorf("member cluster %q: %w: %s", name, ErrDisconnected, m.state.Reason)
	}
	if in.watches[w.Name()] {
		r.mu.Unlock()
		return nil
	}
	// Claimed before it starts, so that concurrent reconciles start it
	// once; released if it fails.
	in.watches[w.Name()] = true
	r.mu.Unlock()

	if err := w.Watch(in.cluster.GetCache()); err != nil {
		r.mu.Lock()
		delete(in.watches, w.Name())
		r.mu.Unlock()
		return fmt.Errorf("member cluster %q: starting watch %s: %w", name, w.Name(), err)
	}
	return nil
}
