package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// memPoint is the manager's memory at one stage of item 4.
type memPoint struct {
	label              string
	managed, unrelated int
	// rss is VmRSS from /proc/<pid>/status, in bytes: the median of the
	// last samples once it was steady.
	rss float64
	// heapLive is go_gc_heap_live_bytes (the heap marked live by the last
	// GC); heapInuse go_memstats_heap_inuse_bytes.
	heapLive, heapInuse float64
	goroutines          float64
	// cpu is process_cpu_seconds_total at the sample.
	cpu float64
	// took is how long reaching this stage took (creating and waiting for
	// the pods).
	took time.Duration
}

// Steadiness of a memory sample: RSS is read every memSampleEvery; it is
// steady when memSteadyCount readings in a row lie within memSteadyRatio of
// their median, and is taken anyway after memSteadyTimeout.
const (
	memSampleEvery   = time.Second
	memSteadyCount   = 5
	memSteadyRatio   = 0.02
	memSteadyTimeout = 60 * time.Second
)

// sampleMemory waits for the manager's RSS to be steady and adds it to
// the results with the heap figures from its metrics.
func (b *bench) sampleMemory(ctx context.Context, label string, managed, unrelated int, took time.Duration) error {
	rss, err := steadyRSS(ctx, b.managerPID)
	if err != nil {
		return err
	}
	s, err := scrapeMetrics(ctx, b.metricsURL)
	if err != nil {
		return err
	}
	p := memPoint{label: label, managed: managed, unrelated: unrelated, rss: rss, took: took}
	p.heapLive, _ = s.sum("go_gc_heap_live_bytes", nil)
	p.heapInuse, _ = s.sum("go_memstats_heap_inuse_bytes", nil)
	p.goroutines, _ = s.sum("go_goroutines", nil)
	p.cpu, _ = s.sum("process_cpu_seconds_total", nil)
	b.logf("Memory %s: RSS %s, live heap %s, in-use heap %s, %0.f goroutines", label, mib(p.rss), mib(p.heapLive), mib(p.heapInuse), p.goroutines)
	b.res.memory = append(b.res.memory, p)
	return nil
}

// steadyRSS reads the RSS of process pid every memSampleEvery until
// memSteadyCount readings in a row are steady (or memSteadyTimeout passed)
// and returns their median.
func steadyRSS(ctx context.Context, pid int) (float64, error) {
	deadline := time.Now().Add(memSteadyTimeout)
	var window []float64
	err := wait.PollUntilContextCancel(ctx, memSampleEvery, true, func(context.Context) (bool, error) {
		rss, err := rssBytes(pid)
		if err != nil {
			return false, fmt.Errorf("reading the manager's RSS: %w", err)
		}
		window = append(window, rss)
		if len(window) > memSteadyCount {
			window = window[1:]
		}
		return len(window) == memSteadyCount && (steady(window) || time.Now().After(deadline)), nil
	})
	if err != nil {
		return 0, err
	}
	return median(window), nil
}

func steady(xs []float64) bool {
	m := median(xs)
	for _, x := range xs {
		if x < m*(1-memSteadyRatio) || x > m*(1+memSteadyRatio) {
			return false
		}
	}
	return true
}

func mib(bytes float64) string { return fmt.Sprintf("%.1f MiB", bytes/(1<<20)) }

// memoryFederation is one FederationCluster of item 4: one component with
// perMember pods in every member.
func memoryFederation(name string, members []string, perMember int32) *v1alpha1.FederationCluster {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	comp := v1alpha1.Component{Name: "m", Template: podTemplate(map[string]string{labelApp: name}, name, imagePrefix+"mem")}
	for _, m := range members {
		comp.Topology = append(comp.Topology, v1alpha1.Placement{Member: m, Replicas: perMember})
	}
	fc.Spec.Components = []v1alpha1.Component{comp}
	return fc
}

// waitFederationsReady waits until every FederationCluster named in keys
// reports all its pods Ready, polling the host every second.
func waitFederationsReady(ctx context.Context, host client.Client, keys []client.ObjectKey, want int32, logf func(string, ...any)) error {
	last, ready := time.Now(), int32(0)
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		ready = 0
		all := true
		for _, key := range keys {
			var fc v1alpha1.FederationCluster
			if err := host.Get(ctx, key, &fc); err != nil {
				return false, err
			}
			ready += fc.Status.ReadyReplicas
			all = all && fc.Status.ReadyReplicas == want && fc.Status.Replicas == want
		}
		if !all && time.Since(last) > 15*time.Second {
			logf("  %d of %d managed pods Ready", ready, int(want)*len(keys))
			last = time.Now()
		}
		return all, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d FederationClusters to be Ready (%d pods Ready): %w", len(keys), ready, err)
	}
	return nil
}

// unrelatedLabel is the only label of the pods fedop does not manage.
const unrelatedLabel = "bench.fedop.io/unrelated"

// createUnrelated creates n pods without any of fedop's labels in member
// cs, in the benchmark's namespace (fedop's own pods live there too), bound
// round-robin to its nodes by spec.nodeName: the scheduler's throughput is
// not what this measures. Requests run on workers goroutines; the first
// error (or ctx's end) stops them and is returned.
func createUnrelated(ctx context.Context, cs kubernetes.Interface, n, workers int) error {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(list.Items) == 0 {
		return errors.New("the member has no nodes")
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	workqueue.ParallelizeUntil(ctx, workers, n, func(i int) {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i), Namespace: namespace, Labels: map[string]string{unrelatedLabel: "true"}},
			Spec:       podTemplate(nil, "unrelated", imagePrefix+"unrelated").Spec,
		}
		pod.Spec.NodeName = list.Items[i%len(list.Items)].Name
		if _, err := cs.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			cancel(fmt.Errorf("creating pod %s: %w", pod.Name, err)) // the first error stops the rest
		}
	})
	return context.Cause(ctx)
}
