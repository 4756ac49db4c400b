package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/member"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the output")

// now is the tests' clock.
var now = time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)

// golden compares got with testdata/name.golden, or writes it with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./cmd/kubectl-fedop/cli -update to create it")
	assert.Equal(t, string(want), got, "output differs from %s (go test -update rewrites it)", path)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader in two
// goroutines (status -w).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a host (a fake client) and members (fake clients by name).
type fixture struct {
	host    client.WithWatch
	members map[string]client.Client
	out     *syncBuffer
	opts    *Options
}

func newFixture(t *testing.T, hostObjs []client.Object, members map[string][]client.Object) *fixture {
	t.Helper()
	f := &fixture{members: map[string]client.Client{}, out: &syncBuffer{}}
	f.host = fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(hostObjs...).WithStatusSubresource(&v1alpha1.FederationCluster{}).Build()
	for name, objs := range members {
		f.members[name] = fake.NewClientBuilder().WithScheme(Scheme()).WithObjects(objs...).Build()
	}
	ns := "default"
	flags := genericclioptions.NewConfigFlags(true)
	flags.Namespace = &ns
	// No kubeconfig of this machine's is read.
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	f.opts = &Options{
		IOStreams:      genericiooptions.IOStreams{In: strings.NewReader(""), Out: f.out, ErrOut: f.out},
		ConfigFlags:    flags,
		FedopNamespace: member.DefaultNamespace,
		Host:           func() (client.WithWatch, error) { return f.host, nil },
		Member: func(name string, _ []byte) (client.Client, error) {
			if c, ok := f.members[name]; ok {
				return c, nil
			}
			return nil, assert.AnError
		},
		Now:        func() time.Time { return now },
		IsTerminal: func() bool { return false },
	}
	return f
}

// run runs kubectl fedop args and returns what it printed.
func (f *fixture) run(ctx context.Context, args ...string) (string, error) {
	cmd := f.opts.NewRootCommand()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return f.out.String(), err
}

// jwt returns an unsigned JWT with iat and exp: kubectl fedop reads the
// claims without verifying them.
func jwt(iat, exp time.Time) string {
	enc := base64.RawURLEncoding.EncodeToString
	payload := `{"iat":` + strconv.FormatInt(iat.Unix(), 10) + `,"exp":` + strconv.FormatInt(exp.Unix(),
		10) + `,"sub":"system:serviceaccount:fedop-system:fedop-member"}`
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(payload)) + ".c2ln"
}

func memberSecret(t *testing.T, name, server, token string, ann map[string]string) *corev1.Secret {
	t.Helper()
	kc, err := memberKubeconfig(name, server, []byte("ca"), token)
	require.NoError(t, err)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: member.DefaultNamespace, Name: name, Labels: map[string]string{member.LabelMemberCluster: "true"},
			Annotations: ann},
		Data: map[string][]byte{member.KubeconfigKey: kc},
	}
}

func component(name string, image string, a, b int32) v1alpha1.Component {
	return v1alpha1.Component{
		Name: name,
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: image}}},
		},
		Topology: []v1alpha1.Placement{{Member: "k8s-a", Replicas: a}, {Member: "k8s-b", Replicas: b}},
	}
}

// demo is a FederationCluster halfway through an upgrade of tikv: pd is
// done, tikv's pod 2 in k8s-b is being replaced.
func demo() *v1alpha1.FederationCluster {
	started := metav1.NewTime(now.Add(-3 * time.Minute))
	stage := metav1.NewTime(now.Add(-20 * time.Second))
	return &v1alpha1.FederationCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo", Generation: 4},
		Spec: v1alpha1.FederationClusterSpec{Components: []v1alpha1.Component{
			component("pd", "pd:v2", 2, 1), component("tikv", "tikv:v2", 2, 1),
		}},
		Status: v1alpha1.FederationClusterStatus{
			ObservedGeneration: 4, Replicas: 6, ReadyReplicas: 5, UpdatedReplicas: 4,
			Operation: &v1alpha1.Operation{Type: v1alpha1.OperationUpgrade, Component: "tikv", Member: "k8s-b", Pod: "demo-tikv-2",
				PodUID: "uid-2", TargetRevision: "7c1d2e3f4a", Stage: v1alpha1.StageWaitingReady, StageStartedTime: &stage,
				Holder: "fedop-manager-5d8f", StartedTime: started},
			Components: []v1alpha1.ComponentStatus{
				{Name: "pd", Rollout: v1alpha1.RolloutPhase("Done"), Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3,
					NextOrdinal: ptr.To[int32](3), Members: []v1alpha1.PlacementStatus{
						{Member: "k8s-a", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "a1b2c3d4e5", UpdateRevision: "a1b2c3d4e5", Ordinals: "0-1"},
						{Member: "k8s-b", Replicas: 1, ReadyReplicas: 1, UpdatedReplicas: 1, CurrentRevision: "a1b2c3d4e5", UpdateRevision: "a1b2c3d4e5", Ordinals: "2"},
					}},
				{Name: "tikv", Rollout: v1alpha1.RolloutPhase("InProgress"), Replicas: 3, ReadyReplicas: 2,
					UpdatedReplicas: 1, NextOrdinal: ptr.To[int32](3), Members: []v1alpha1.PlacementStatus{
						{Member: "k8s-a", Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, CurrentRevision: "0f9e8d7c6b", UpdateRevision: "7c1d2e3f4a", Ordinals: "0-1"},
						{Member: "k8s-b", Replicas: 1, ReadyReplicas: 0, UpdatedReplicas: 0, CurrentRevision: "0f9e8d7c6b", UpdateRevision: "7c1d2e3f4a", Ordinals: "2"},
					}},
			},
			Members: []v1alpha1.MemberStatus{
				{Name: "k8s-a", Connected: true, LastProbeTime: &metav1.Time{Time: now.Add(-time.Second)}},
				{Name: "k8s-b", Connected: true, LastProbeTime: &metav1.Time{Time: now.Add(-2 * time.Second)}},
			},
			Conditions: []metav1.Condition{
				{Type: "Ready", Status: metav1.ConditionFalse, Reason: "PodsNotReady", Message: "1 of 6 pods not ready",
					LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Second))},
				{Type: "Progressing", Status: metav1.ConditionTrue, Reason: "Upgrading", Message: "waiting for pod demo-tikv-2 in k8s-b to be ready",
					LastTransitionTime: started},
				{Type: "MembersConnected", Status: metav1.ConditionTrue, Reason: "AllConnected", Message: "2 of 2 members connected",
					LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			},
		},
	}
}

func hostObjects(t *testing.T) []client.Object {
	iat := now.Add(-16 * time.Hour)
	return []client.Object{
		demo(),
		memberSecret(t, "k8s-a", "https://k8s-a.example:6443", jwt(iat, iat.Add(24*time.Hour)),
			map[string]string{member.AnnotationServiceAccount: "fedop-system/fedop-member", member.AnnotationNamespaces: "default"}),
		memberSecret(t, "k8s-b", "https://k8s-b.example:6443", jwt(iat, iat.Add(24*time.Hour)), nil),
		memberSecret(t, "k8s-c", "https://k8s-c.example:6443", jwt(now.Add(-25*time.Hour), now.Add(-time.Hour)), nil),
		&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: member.DefaultNamespace, Name: "k8s-a.1"}, Reason: "Connected", Action: "Connect",
			EventTime: metav1.NewMicroTime(now.Add(-2 * time.Hour)), Regarding: corev1.ObjectReference{Kind: "Secret",
				Namespace: member.DefaultNamespace, Name: "k8s-a"}},
		&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: member.DefaultNamespace, Name: "k8s-c.0"}, Reason: member.ReasonCredentialsExpiringSoon,
			Type: corev1.EventTypeWarning, Action: "Renew", Note: "the member's credentials expire at 2026-11-23T07:00:00Z",
			EventTime: metav1.NewMicroTime(now.Add(-4 * time.Hour)),
			Regarding: corev1.ObjectReference{Kind: "Secret", Namespace: member.DefaultNamespace, Name: "k8s-c"}},
		&eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: member.DefaultNamespace, Name: "k8s-a.0"}, Reason: "Connected", Action: "Connect",
			EventTime: metav1.NewMicroTime(now.Add(-5 * time.Hour)), Regarding: corev1.ObjectReference{Kind: "Secret",
				Namespace: member.DefaultNamespace, Name: "k8s-a"}},
	}
}

func TestMembers(t *testing.T) {
	for _, format := range []string{"", "json", "yaml"} {
		t.Run("output="+format, func(t *testing.T) {
			f := newFixture(t, hostObjects(t), nil)
			args := []string{"members"}
			if format != "" {
				args = append(args, "-o", format)
			}
			out, err := f.run(context.Background(), args...)
			require.NoError(t, err)
			golden(t, "members"+suffix(format), out)
		})
	}
}

func suffix(format string) string {
	if format == "" {
		return ""
	}
	return "-" + format
}

func TestStatus(t *testing.T) {
	for _, format := range []string{"", "json", "yaml"} {
		t.Run("output="+format, func(t *testing.T) {
			f := newFixture(t, hostObjects(t), nil)
			args := []string{"status", "demo"}
			if format != "" {
				args = append(args, "-o", format)
			}
			out, err := f.run(context.Background(), args...)
			require.NoError(t, err)
			golden(t, "status"+suffix(format), out)
		})
	}
	t.Run("color on a terminal", func(t *testing.T) {
		f := newFixture(t, hostObjects(t), nil)
		f.opts.IsTerminal = func() bool { return true }
		out, err := f.run(context.Background(), "status", "demo")
		require.NoError(t, err)
		assert.Contains(t, out, colorGreen+"2/2/2"+colorReset)
		assert.Contains(t, out, colorRed+"0/0/1"+colorReset)
		f.out.b.Reset()
		out, err = f.run(context.Background(), "status", "demo", "--no-color")
		require.NoError(t, err)
		assert.NotContains(t, out, "\x1b[")
	})
	t.Run("unknown FederationCluster", func(t *testing.T) {
		f := newFixture(t, hostObjects(t), nil)
		_, err := f.run(context.Background(), "status", "nope")
		assert.ErrorContains(t, err, "default/nope")
	})
}

// TestStatusWatch: without a terminal, status -w prints one line per
// change of a step, not per status write.
func TestStatusWatch(t *testing.T) {
	f := newFixture(t, hostObjects(t), nil)
	// status -w prints its first line before it starts its watch, and the
	// fake client's watch delivers only the changes made after it started
	// (no list from a resourceVersion, as an API server's would): the test
	// writes status only once the watch is there, or the writes are lost.
	watching := make(chan struct{})
	host := interceptor.NewClient(f.host, interceptor.Funcs{
		Watch: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error) {
			w, err := c.Watch(ctx, list, opts...)
			close(watching)
			return w, err
		},
	})
	f.opts.Host = func() (client.WithWatch, error) { return host, nil }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := f.run(ctx, "status", "demo", "-w")
		done <- err
	}()
	lines := func() int { return strings.Count(f.out.String(), "\n") }
	select {
	case <-watching:
	case err := <-done:
		t.Fatalf("status -w returned before it watched: %v", err)
	}
	require.Equal(t, 1, lines(), "the first line, before the watch")

	setStatus := func(change func(*v1alpha1.FederationCluster)) {
		var fc v1alpha1.FederationCluster
		require.NoError(t, f.host.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, &fc))
		change(&fc)
		require.NoError(t, f.host.Status().Update(ctx, &fc))
	}
	// A status write that changes no count and no step: no line.
	setStatus(func(fc *v1alpha1.FederationCluster) { fc.Status.Members[0].LastProbeTime = &metav1.Time{Time: now} })
	// The replacement is ready; the next step is taken.
	setStatus(func(fc *v1alpha1.FederationCluster) {
		fc.Status.Components[1].Members[1].ReadyReplicas, fc.Status.Components[1].Members[1].UpdatedReplicas = 1, 1
		fc.Status.Operation.Pod, fc.Status.Operation.Member, fc.Status.Operation.Stage = "demo-tikv-1", "k8s-a", v1alpha1.StageDeleting
	})
	require.Eventually(t, func() bool { return lines() == 2 }, 10*time.Second, 10*time.Millisecond)
	setStatus(func(fc *v1alpha1.FederationCluster) { fc.Status.Operation = nil })
	require.Eventually(t, func() bool { return lines() == 3 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	golden(t, "status-watch", f.out.String())
}

// planFixture is a FederationCluster whose tikv template changed: every
// tikv pod is at the old revision, every pod is Ready, no operation.
func planFixture(t *testing.T) (*v1alpha1.FederationCluster, map[string][]client.Object) {
	fc := demo()
	fc.Status.Operation = nil
	members := map[string][]client.Object{}
	uid := 0
	for _, c := range fc.Spec.Components {
		ordinal := 0
		for _, p := range c.Topology {
			rev, err := federation.Revision(federation.EffectiveTemplate(&c, &p))
			require.NoError(t, err)
			if c.Name == "tikv" {
				rev = "0f9e8d7c6b"
			}
			for range p.Replicas {
				uid++
				name := c.Name + "-" + strconv.Itoa(ordinal)
				ordinal++
				members[p.Member] = append(members[p.Member], &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo-" + name, UID: types.UID(strconv.Itoa(uid)),
						CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
						Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: "demo",
							v1alpha1.LabelComponent: c.Name, v1alpha1.LabelMember: p.Member, v1alpha1.LabelRevision: rev}},
					Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
						{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}},
				})
			}
		}
	}
	return fc, members
}

func TestPlan(t *testing.T) {
	fc, members := planFixture(t)
	host := append([]client.Object{fc}, hostObjects(t)[1:]...)
	for _, format := range []string{"", "json", "yaml"} {
		t.Run("output="+format, func(t *testing.T) {
			f := newFixture(t, host, members)
			args := []string{"plan", "demo"}
			if format != "" {
				args = append(args, "-o", format)
			}
			out, err := f.run(context.Background(), args...)
			require.NoError(t, err)
			golden(t, "plan"+suffix(format), out)
		})
	}
	t.Run("a member out of sight", func(t *testing.T) {
		f := newFixture(t, host, map[string][]client.Object{"k8s-a": members["k8s-a"]})
		out, err := f.run(context.Background(), "plan", "demo")
		require.NoError(t, err)
		golden(t, "plan-out-of-sight", out)
	})
	t.Run("paused", func(t *testing.T) {
		paused := fc.DeepCopy()
		paused.Spec.Paused = true
		f := newFixture(t, append([]client.Object{paused}, hostObjects(t)[1:]...), members)
		out, err := f.run(context.Background(), "plan", "demo")
		require.NoError(t, err)
		golden(t, "plan-paused", out)
	})
}

func TestPauseResumeReleaseRestart(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, hostObjects(t), nil)
	get := func() *v1alpha1.FederationCluster {
		var fc v1alpha1.FederationCluster
		require.NoError(t, f.host.Get(ctx, client.ObjectKey{Namespace: "default", Name: "demo"}, &fc))
		return &fc
	}
	_, err := f.run(ctx, "pause", "demo")
	require.NoError(t, err)
	assert.True(t, get().Spec.Paused)
	_, err = f.run(ctx, "resume", "demo")
	require.NoError(t, err)
	assert.False(t, get().Spec.Paused)

	_, err = f.run(ctx, "release", "demo")
	require.NoError(t, err)
	assert.Equal(t, now.Add(-3*time.Minute).Format(time.RFC3339), get().Annotations[v1alpha1.AnnotationReleaseOperation])

	before := get()
	revision := func(fc *v1alpha1.FederationCluster, ci int) string {
		rev, err := federation.Revision(federation.EffectiveTemplate(&fc.Spec.Components[ci], &fc.Spec.Components[ci].Topology[0]))
		require.NoError(t, err)
		return rev
	}
	_, err = f.run(ctx, "restart", "demo", "--component", "tikv")
	require.NoError(t, err)
	after := get()
	assert.Equal(t, revision(before, 0), revision(after, 0), "pd was not to be restarted")
	assert.NotEqual(t, revision(before, 1), revision(after, 1), "the restart annotation must make a new revision")
	assert.Equal(t, now.Format(time.RFC3339), after.Spec.Components[1].Template.Annotations[AnnotationRestartedAt])

	_, err = f.run(ctx, "restart", "demo", "--component", "tidb")
	assert.ErrorContains(t, err, `no component "tidb"`)
	golden(t, "actions", f.out.String())

	// The lock free: nothing to release.
	fc := get()
	fc.Status.Operation = nil
	require.NoError(t, f.host.Status().Update(ctx, fc))
	_, err = f.run(ctx, "release", "demo")
	assert.ErrorIs(t, err, errNoOperation)
}

func TestUnjoinRefusesWhileInUse(t *testing.T) {
	f := newFixture(t, hostObjects(t), nil)
	_, err := f.run(context.Background(), "unjoin", "k8s-b")
	require.Error(t, err)
	golden(t, "unjoin-in-use", err.Error()+"\n")
	var s corev1.Secret
	assert.NoError(t, f.host.Get(context.Background(), client.ObjectKey{Namespace: member.DefaultNamespace, Name: "k8s-b"}, &s), "the Secret was deleted")

	// k8s-c is used by no one: its Secret goes.
	f.out.b.Reset()
	out, err := f.run(context.Background(), "unjoin", "k8s-c")
	require.NoError(t, err)
	golden(t, "unjoin", out)
	err = f.host.Get(context.Background(), client.ObjectKey{Namespace: member.DefaultNamespace, Name: "k8s-c"}, &s)
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the Secret is still there: %v", err)
}

func TestJoinDryRun(t *testing.T) {
	kc, err := memberKubeconfig("admin", "https://127.0.0.1:6443", []byte("member-ca"), "admin-token")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "member.kubeconfig")
	require.NoError(t, os.WriteFile(path, kc, 0o600))
	for name, args := range map[string][]string{
		"join-dry-run-namespaces":   {"--namespaces", "db,cache,db", "--server", "https://k8s-a-control-plane:6443"},
		"join-dry-run-cluster-wide": {"--cluster-wide", "--token-duration", "720h"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			out, err := f.run(context.Background(), append([]string{"join", "k8s-a", "--member-kubeconfig", path, "--dry-run"}, args...)...)
			require.NoError(t, err)
			golden(t, name, out)
		})
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"join", "K8S", "--member-kubeconfig", path, "--cluster-wide"}, "DNS-1123"},
		{[]string{"join", "k8s-a", "--member-kubeconfig", path}, "--namespaces"},
		{[]string{"join", "k8s-a", "--member-kubeconfig", path, "--cluster-wide", "--namespaces", "db"}, "exclude"},
		{[]string{"join", "k8s-a", "--member-kubeconfig", path, "--cluster-wide", "--server", "http://x"}, "https"},
		{[]string{"join", "k8s-a", "--member-kubeconfig", path, "--cluster-wide", "--token-duration", "5m"}, "10m"},
		{[]string{"join", "k8s-a", "--member-kubeconfig", path, "--namespaces", "Bad_NS"}, "not a namespace"},
		{[]string{"members", "-o", "wide"}, "unknown output format"},
	} {
		f := newFixture(t, nil, nil)
		_, err := f.run(context.Background(), tt.args...)
		assert.ErrorContains(t, err, tt.want, "%v", tt.args)
	}
}

// TestLockWords: the operation in words, with the step acknowledged next.
func TestLockWords(t *testing.T) {
	now := time.Date(2026, 11, 23, 21, 0, 0, 0, time.UTC)
	assert.Equal(t, "free", lock(now, nil))
	op := &v1alpha1.Operation{
		Type: v1alpha1.OperationUpgrade, Component: "pd", Member: "k8s-a", Pod: "demo-pd-1", Stage: v1alpha1.StageWaitingReady,
		StageStartedTime: &metav1.Time{Time: now.Add(-3 * time.Second)}, TargetRevision: "abc", NextPod: "demo-pd-2",
		Holder: "fedop-manager-1", StartedTime: metav1.NewTime(now.Add(-time.Minute)),
	}
	got := lock(now, op)
	assert.Contains(t, got, "Upgrade pd, pod demo-pd-1 in k8s-a, stage WaitingReady for 3s, to revision abc, next pod demo-pd-2; held by fedop-manager-1")
}
