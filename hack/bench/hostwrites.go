package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// fcWriteWatch watches one FederationCluster on the host and stamps, on
// receipt, every change of its resourceVersion: each is one write that
// landed (status or spec; a write that changed nothing keeps the
// resourceVersion and is not seen). A write lands before its event
// arrives, so a stamp is late by the watch's delivery time.
type fcWriteWatch struct {
	cancel   context.CancelFunc
	informer dynamicinformer.DynamicSharedInformerFactory
	// mu guards writes, appended to by the informer's goroutine.
	mu     sync.Mutex
	writes []time.Time
}

// startFCWriteWatch starts watching FederationCluster name in ns on the
// host and returns once the watch has listed it.
func startFCWriteWatch(ctx context.Context, hostCfg *rest.Config, ns, name string) (*fcWriteWatch, error) {
	dc, err := dynamic.NewForConfig(fastConfig(hostCfg))
	if err != nil {
		return nil, err
	}
	gvr := schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "federationclusters"}
	wctx, cancel := context.WithCancel(context.Background())
	w := &fcWriteWatch{cancel: cancel}
	w.informer = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, ns, func(lo *metav1.ListOptions) {
		lo.FieldSelector = "metadata.name=" + name
	})
	inf := w.informer.ForResource(gvr).Informer()
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			at := time.Now()
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if !ok1 || !ok2 || o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			w.mu.Lock()
			w.writes = append(w.writes, at)
			w.mu.Unlock()
		},
	}); err != nil {
		cancel()
		return nil, err
	}
	w.informer.Start(wctx.Done())
	sctx, cancelSync := context.WithTimeout(ctx, podwatch.SyncTimeout)
	defer cancelSync()
	for _, ok := range w.informer.WaitForCacheSync(sctx.Done()) {
		if !ok {
			w.stop()
			return nil, fmt.Errorf("the watch of FederationCluster %s/%s did not sync within %s", ns, name, podwatch.SyncTimeout)
		}
	}
	return w, nil
}

// times returns the receive times of every write seen so far.
func (w *fcWriteWatch) times() []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

func (w *fcWriteWatch) stop() {
	w.cancel()
	w.informer.Shutdown()
}
