package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

const (
	// namespace holds the benchmark's workloads, on the host and in every
	// member.
	namespace = "bench"
	// hostCluster is the lab's host cluster: its kubeconfig's name, and how
	// the report and the request counts name it.
	hostCluster = "host"
	// loopback is the address the benchmark's own API servers bind to.
	loopback = "127.0.0.1"
	// labelApp is the pod label the benchmark's workloads select on.
	labelApp = "app"
	// labelMember is the member label of fedop_member_connected.
	labelMember = "member"
	// delayAnnotation is the pod annotation the lab's extra kwok Stage
	// (hack/bench.sh) keys on: a pod carrying it becomes Ready that long
	// (a Go duration) after it was scheduled, instead of at once.
	delayAnnotation = "bench.fedop.io/ready-delay"
	// workloadAnnotation marks the benchmark's pod templates; it also makes
	// sure each template has an annotations map that a JSON patch can add
	// delayAnnotation to.
	workloadAnnotation = "bench.fedop.io/workload"
	// imagePrefix is the image of every benchmark pod, tagged per upgrade.
	// kwok never pulls it.
	imagePrefix = "registry.invalid/fedop-bench:"
)

// components are the components of the FederationClusters of items 1, 6
// and 7, named as a database's would be.
var components = []string{"pd", "tikv"}

// reported is the target of a figure that has none: it is reported.
const reported = "reported"

// podTemplate is the pod template of every benchmark workload: one
// container with one port, as small as a real component's spec.
func podTemplate(labels map[string]string, workload, image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{workloadAnnotation: workload}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  labelApp,
			Image: image,
			Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}},
		}}},
	}
}

// stepFederation is the FederationCluster of items 1 to 3: components
// names, each with perMember pods in every member.
func stepFederation(name string, components, members []string, perMember int32, image string) *v1alpha1.FederationCluster {
	fc := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	for _, c := range components {
		comp := v1alpha1.Component{Name: c, Template: podTemplate(map[string]string{labelApp: name + "-" + c}, name, image)}
		for _, m := range members {
			comp.Topology = append(comp.Topology, v1alpha1.Placement{Member: m, Replicas: perMember})
		}
		fc.Spec.Components = append(fc.Spec.Components, comp)
	}
	return fc
}

// referenceStatefulSet is the in-cluster reference: replicas pods rolled
// one at a time by kube-controller-manager (OrderedReady, RollingUpdate
// with partition 0, no minReadySeconds).
func referenceStatefulSet(name string, replicas int32, image string) *appsv1.StatefulSet {
	labels := map[string]string{labelApp: name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:         name,
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
			},
			Template: podTemplate(labels, name, image),
		},
	}
}

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// templatePatch returns the operations that set the image of the pod
// template at prefix and, when delay is positive, the readiness delay
// annotation.
func templatePatch(prefix, image string, delay time.Duration) []jsonPatchOp {
	ops := []jsonPatchOp{{Op: "replace", Path: prefix + "/spec/containers/0/image", Value: image}}
	if delay > 0 {
		key := strings.ReplaceAll(strings.ReplaceAll(delayAnnotation, "~", "~0"), "/", "~1")
		ops = append(ops, jsonPatchOp{Op: "add", Path: prefix + "/metadata/annotations/" + key, Value: delay.String()})
	}
	return ops
}

// system is one controller under test: fedop with a FederationCluster, or
// kube-controller-manager with a StatefulSet.
type system struct {
	name string
	// pods is the number of pods, each replaced once per upgrade.
	pods int
	obs  *observer
	// upgrade writes the new image (and readiness delay) to the workload.
	upgrade func(ctx context.Context, image string, delay time.Duration) error
	// settled returns once the controller has recorded the rollout as
	// complete, so that the requests it makes to say so are counted.
	settled func(ctx context.Context) error
}

// fedopSystem returns the system of FederationCluster fc, created by the
// caller, its pods watched by obs.
func fedopSystem(host client.Client, fc *v1alpha1.FederationCluster, obs *observer) *system {
	pods := 0
	for _, c := range fc.Spec.Components {
		for _, p := range c.Topology {
			pods += int(p.Replicas)
		}
	}
	key := client.ObjectKeyFromObject(fc)
	return &system{
		name: "fedop",
		pods: pods,
		obs:  obs,
		upgrade: func(ctx context.Context, image string, delay time.Duration) error {
			ops := make([]jsonPatchOp, 0, len(fc.Spec.Components))
			for i := range fc.Spec.Components {
				ops = append(ops, templatePatch(fmt.Sprintf("/spec/components/%d/template", i), image, delay)...)
			}
			data, err := json.Marshal(ops)
			if err != nil {
				return err
			}
			obj := &v1alpha1.FederationCluster{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
			return host.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data))
		},
		settled: func(ctx context.Context) error { return waitFederationSettled(ctx, host, key, int32(pods)) },
	}
}

// waitFederationSettled waits until the FederationCluster's status
// describes its current generation with no operation held and want pods
// updated and Ready. It reads the API server directly, every 100ms.
func waitFederationSettled(ctx context.Context, host client.Client, key client.ObjectKey, want int32) error {
	var fc v1alpha1.FederationCluster
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := host.Get(ctx, key, &fc)
		return err == nil && fc.Status.ObservedGeneration == fc.Generation && fc.Status.Operation == nil &&
			fc.Status.Replicas == want && fc.Status.ReadyReplicas == want && fc.Status.UpdatedReplicas == want, nil
	})
	if err != nil {
		return fmt.Errorf("FederationCluster %s did not settle: %w (generation %d, status %+v)", key, err, fc.Generation, statusSummary(&fc.Status))
	}
	return nil
}

func statusSummary(st *v1alpha1.FederationClusterStatus) string {
	op := "none"
	if st.Operation != nil {
		op = fmt.Sprintf("%s %s/%s", st.Operation.Type, st.Operation.Member, st.Operation.Pod)
	}
	return fmt.Sprintf("observedGeneration %d, replicas %d, ready %d, updated %d, operation %s",
		st.ObservedGeneration, st.Replicas, st.ReadyReplicas, st.UpdatedReplicas, op)
}

// statefulSetSystem returns the system of StatefulSet sts in the member
// cs, created by the caller, its pods watched by obs.
func statefulSetSystem(cs kubernetes.Interface, sts *appsv1.StatefulSet, obs *observer) *system {
	return &system{
		name: "StatefulSet",
		pods: int(*sts.Spec.Replicas),
		obs:  obs,
		upgrade: func(ctx context.Context, image string, delay time.Duration) error {
			data, err := json.Marshal(templatePatch("/spec/template", image, delay))
			if err != nil {
				return err
			}
			_, err = cs.AppsV1().StatefulSets(sts.Namespace).Patch(ctx, sts.Name, types.JSONPatchType, data, metav1.PatchOptions{})
			return err
		},
		settled: func(context.Context) error { return nil },
	}
}

// ensureNamespace creates namespace name unless it exists.
func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// rolloutResult is one upgrade of one system, as its observer saw it.
type rolloutResult struct {
	system string
	// start is just before the upgrade was written; end when the last new
	// pod was seen Ready.
	start, end time.Time
	steps      stepStats
}

func (r rolloutResult) total() time.Duration { return r.end.Sub(r.start) }

func (r rolloutResult) overheads() []time.Duration { return r.steps.overheads }

// runUpgrade upgrades s to image (with readiness delay) and returns what
// its observer saw once every pod is replaced and Ready.
func runUpgrade(ctx context.Context, s *system, image string, delay time.Duration, timeout time.Duration) (rolloutResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	if err := s.upgrade(ctx, image, delay); err != nil {
		return rolloutResult{}, fmt.Errorf("%s: upgrading to %s: %w", s.name, image, err)
	}
	end, err := s.obs.waitRolledOut(ctx, image, s.pods)
	if err != nil {
		return rolloutResult{}, fmt.Errorf("%s: %w", s.name, err)
	}
	res := rolloutResult{system: s.name, start: start, end: end, steps: computeSteps(s.obs.Records(), start)}
	if res.steps.deletions != s.pods {
		return res, fmt.Errorf("%s: %d deletions seen in an upgrade of %d pods; what the observer saw:\n%s",
			s.name, res.steps.deletions, s.pods, timeline(s.obs.Records(), start))
	}
	return res, nil
}

// timeline renders the records changed since start in time order, for an
// error that needs the evidence.
func timeline(recs []podRecord, start time.Time) string {
	type ev struct {
		at   time.Time
		what string
	}
	var evs []ev
	for _, r := range recs {
		id := fmt.Sprintf("%s/%s %s (%s)", r.Member, r.Name, r.UID, r.Image)
		for _, e := range []ev{{r.FirstSeen, "created"}, {r.ReadyAt, "ready"}, {r.DeletedAt, "deleted"}, {r.GoneAt, "gone"}} {
			if !e.at.IsZero() && !e.at.Before(start) {
				evs = append(evs, ev{e.at, e.what + " " + id})
			}
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s %s\n", e.at.Format("15:04:05.000"), e.what)
	}
	return b.String()
}
