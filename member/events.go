package member

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// eventBuffer is how many member state changes may wait for the
// controller that consumes them; past it, the registry waits too.
const eventBuffer = 1024

// Source returns the source of member state changes for one controller
// (builder's WatchesRawSource): it enqueues mapFunc(member) whenever a
// member is registered, connected, disconnected, replaced (a new
// kubeconfig) or removed, or the reason it is not connected changes. The
// events of members registered before the controller started wait in a
// buffered channel, so a controller started late still sees every member.
// Behind it is a channel of generic events and controller-runtime's
// source.Channel, as Kueue's MultiKueue and Cluster API's clustercache
// deliver remote cluster events; each event's object is the member's
// registration Secret (namespace and name only).
//
// The source is a SyncingSource: the controller starts its workers only
// once every member registered at start has had its first connection
// attempt, so that a first reconcile does not take "not read yet" for
// "not registered". Each call returns a source with a channel of its own:
// every controller that asks sees every change.
func (r *Registry) Source(mapFunc func(ctx context.Context, member string) []reconcile.Request) source.SyncingSource {
	ch := make(chan event.GenericEvent, eventBuffer)
	r.mu.Lock()
	r.events = append(r.events, ch)
	r.mu.Unlock()
	h := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		return mapFunc(ctx, obj.GetName())
	})
	return &initialPassSource{Source: source.Channel(ch, h), initial: r.initial}
}

// initialPassSource is a source.Channel that syncs when the registry's
// initial pass is done.
type initialPassSource struct {
	source.Source
	initial <-chan struct{}
}

func (s *initialPassSource) WaitForSync(ctx context.Context) error {
	select {
	case <-s.initial:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// notify sends a state change of member name to every Source's
// controller. It waits while a channel is full, until the registry stops;
// it must not be called with r.mu held.
func (r *Registry) notify(name string) {
	r.mu.Lock()
	chs := slices.Clone(r.events)
	r.mu.Unlock()
	ev := event.GenericEvent{Object: &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.opts.Namespace, Name: name}}}
	for _, ch := range chs {
		select {
		case ch <- ev:
		case <-r.ctx.Done():
			return
		}
	}
}
