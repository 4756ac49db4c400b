//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/e2e/etcdcheck"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// The etcd scenarios (make e2e-etcd): fedop runs a real five-member etcd
// (config/samples/etcd) across three member clusters, and an etcdcheck Job
// in the first member writes and reads through the members' cross-cluster
// names all along, checking at the end that no acknowledged write is lost
// and that the history is linearizable. They need the kind provider, three
// members and the etcd images (Config.EtcdImage and friends); otherwise
// they are skipped.

const (
	etcdSampleFile = "config/samples/etcd/etcd.yaml"
	// etcdSettle bounds one rollout of five etcd members: each step drains,
	// deletes, waits for the new member to be Ready for minReadySeconds
	// and for every member's /healthz.
	etcdSettle = 10 * time.Minute
	// etcdMembers is the sample's size.
	etcdMembers = 5
)

// etcdFigures are the lines of docs/etcd-e2e.md, one per scenario run.
var etcdFigures []string

// etcdSample returns the etcd sample in the scenario's namespace, its
// members k8s-a, k8s-b and k8s-c replaced by the suite's first three, at
// the first etcd version.
func (s *scenario) etcdSample() *v1alpha1.FederationCluster {
	s.t.Helper()
	data, err := os.ReadFile(filepath.Join(suite.cfg.RepoRoot, etcdSampleFile))
	require.NoError(s.t, err)
	fc := &v1alpha1.FederationCluster{}
	require.NoError(s.t, yaml.UnmarshalStrict(data, fc), "decoding %s", etcdSampleFile)
	require.Equal(s.t, "etcd", fc.Name, "the sample's name is in its pods' names and flags")
	fc.Namespace = s.ns
	rename := map[string]string{"k8s-a": suite.cfg.Members[0].Name, "k8s-b": suite.cfg.Members[1].Name, "k8s-c": suite.cfg.Members[2].Name}
	c := &fc.Spec.Components[0]
	for i := range c.Topology {
		c.Topology[i].Member = rename[c.Topology[i].Member]
	}
	c.Template.Spec.Containers[0].Image = suite.cfg.EtcdImage + ":" + suite.cfg.EtcdVersions[0]
	return fc
}

// etcdEndpoints are the client URLs of the five members by their stable
// cross-cluster names.
func (s *scenario) etcdEndpoints() []string {
	var out []string
	for i := range etcdMembers {
		out = append(out, fmt.Sprintf("http://etcd-etcd-%d.etcd-etcd.%s.svc.cluster.local:2379", i, s.ns))
	}
	return out
}

// etcdRun is one run of the etcdcheck Job.
type etcdRun struct {
	s     *scenario
	name  string
	pod   string
	start time.Time
}

// startEtcdCheck starts the etcdcheck Job name in the first member and
// returns once it acknowledges writes.
func (s *scenario) startEtcdCheck(name string) *etcdRun {
	s.t.Helper()
	m := suite.cfg.Members[0].Name
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "etcdcheck", "run": name}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: ptr.To(int64(300)),
					Containers: []corev1.Container{{
						Name:            "etcdcheck",
						Image:           suite.cfg.EtcdCheckImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args: []string{
							"--endpoints=" + strings.Join(s.etcdEndpoints(), ","),
							"--listen=:8080", "--read-back-timeout=2m", "--check-timeout=3m",
						},
						Ports: []corev1.ContainerPort{{Name: "control", ContainerPort: 8080}},
					}},
				},
			},
		},
	}
	c := s.memberClient(m)
	require.NoError(s.t, c.Create(s.t.Context(), job), "creating Job %s in %s", name, m)
	r := &etcdRun{s: s, name: name, start: time.Now()}
	require.EventuallyWithT(s.t, func(col *assert.CollectT) {
		var pods corev1.PodList
		require.NoError(col, c.List(context.Background(), &pods, client.InNamespace(s.ns), client.MatchingLabels{"run": name}))
		require.Len(col, pods.Items, 1)
		r.pod = pods.Items[0].Name
		body, err := s.podGetPort(m, r.pod, 8080, "progress")
		require.NoError(col, err)
		var p etcdcheck.Progress
		require.NoError(col, json.Unmarshal([]byte(body), &p))
		assert.Positive(col, p.AcknowledgedWrites, "no write acknowledged yet")
	}, 3*time.Minute, time.Second, "etcdcheck %s does not write", name)
	s.t.Logf("etcdcheck %s writes (pod %s in %s)", name, r.pod, m)
	return r
}

// stop ends the run's writes and returns its report, once the Job is over.
func (r *etcdRun) stop() etcdcheck.Report {
	s := r.s
	s.t.Helper()
	m := suite.cfg.Members[0].Name
	c := s.memberClient(m)
	jobDone := func(col *assert.CollectT) bool {
		var job batchv1.Job
		require.NoError(col, c.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: r.name}, &job))
		return job.Status.Succeeded+job.Status.Failed > 0
	}
	// GET /stop through the member's pod proxy, until it answers or the
	// Job is over: a loaded API server may drop an answer, and the stop
	// may have gone ahead without it (it is idempotent).
	require.EventuallyWithT(s.t, func(col *assert.CollectT) {
		_, err := s.podGetPort(m, r.pod, 8080, "stop")
		if err != nil && !jobDone(col) {
			assert.NoError(col, err, "GET /stop of %s", r.pod)
		}
	}, 2*time.Minute, time.Second, "etcdcheck %s was not stopped", r.name)
	require.EventuallyWithT(s.t, func(col *assert.CollectT) {
		assert.True(col, jobDone(col), "Job %s still runs", r.name)
	}, 6*time.Minute, time.Second)
	cs, err := kubernetes.NewForConfig(suite.memberConfigs[s.clusters[m]])
	require.NoError(s.t, err)
	var logs []byte
	require.EventuallyWithT(s.t, func(col *assert.CollectT) {
		var err error
		logs, err = cs.CoreV1().Pods(s.ns).GetLogs(r.pod, &corev1.PodLogOptions{}).DoRaw(s.t.Context())
		assert.NoError(col, err, "the log of %s", r.pod)
	}, time.Minute, time.Second)
	lines := strings.Split(strings.TrimSpace(string(logs)), "\n")
	var rep etcdcheck.Report
	require.NoError(s.t, json.Unmarshal([]byte(lines[len(lines)-1]), &rep), "the last line of %s's log", r.pod)
	if len(lines) > 1 {
		s.t.Logf("etcdcheck %s: %s", r.name, lines[len(lines)-2])
	}
	return rep
}

// podGetPort is podGet on another port of the pod.
func (s *scenario) podGetPort(member, name string, port int, path string) (string, error) {
	cs, err := kubernetes.NewForConfig(suite.memberConfigs[s.clusters[member]])
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(s.t.Context(), 10*time.Second)
	defer cancel()
	body, err := cs.CoreV1().Pods(s.ns).ProxyGet("", name, fmt.Sprint(port), path, nil).DoRaw(ctx)
	return string(body), err
}

// drainCounts counts, per pod, the PodDrained Events of the scenario's
// FederationCluster (an Event repeated is one object with a series).
func (s *scenario) drainCounts(t require.TestingT) map[string]int {
	var list eventsv1.EventList
	require.NoError(t, suite.host.List(context.Background(), &list, client.InNamespace(s.ns)))
	out := map[string]int{}
	for _, e := range list.Items {
		if e.Regarding.Name != s.name || e.Reason != "PodDrained" {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		for i := range etcdMembers {
			if pod := fmt.Sprintf("etcd-etcd-%d", i); strings.Contains(e.Note, "pod "+pod+" ") {
				out[pod] += n
			}
		}
	}
	return out
}

// memberIDs are the report's member IDs by name.
func memberIDs(ms []etcdcheck.Member) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		out[m.Name] = m.ID
	}
	return out
}

// assertEtcd checks a run's report: no acknowledged write lost, the
// history linearizable, at least minHealthy members healthy in every
// sample, and the five members those of the start, by name and ID.
func assertEtcd(t *testing.T, rep etcdcheck.Report, ids map[string]string, minHealthy int) {
	t.Helper()
	assert.Empty(t, rep.Error, "the run did not complete")
	assert.Zero(t, rep.LostWrites, "acknowledged writes lost: %v", rep.LostKeys)
	assert.Equal(t, "Ok", string(rep.Linearizability), "linearizability (illegal keys %v)", rep.IllegalKeys)
	assert.True(t, rep.OK, "the checker's verdict")
	assert.Positive(t, rep.AcknowledgedWrites)
	assert.GreaterOrEqual(t, rep.MinHealthyMembers, minHealthy, "healthy members in the worst sample")
	assert.Equal(t, ids, memberIDs(rep.MembersStart), "members at the start")
	assert.Equal(t, ids, memberIDs(rep.MembersEnd), "members at the end: a replaced pod rejoins as itself, never re-added")
}

// recordEtcd keeps a scenario's figures for docs/etcd-e2e.md and logs them.
func recordEtcd(t *testing.T, scenario string, rep etcdcheck.Report, took time.Duration, extra string) {
	if rep.WorstSample != "" {
		extra = strings.TrimPrefix(extra+"; worst sample "+rep.WorstSample, "; ")
	}
	line := fmt.Sprintf("| %s | %d | %d | %.2f s | %d | %d | %s | %s | %s |",
		scenario, rep.AcknowledgedWrites, rep.LostWrites, rep.MaxWriteGapSeconds, rep.LeaderChanges, rep.MinHealthyMembers,
		rep.Linearizability, took.Round(time.Second), extra)
	t.Logf("figures: %s", line)
	etcdFigures = append(etcdFigures, line)
}

// writeEtcdFigures writes docs/etcd-e2e.md from the figures of this run.
func writeEtcdFigures(t *testing.T) {
	if len(etcdFigures) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# etcd across three clusters: figures of the last run\n\n")
	fmt.Fprintf(&b, "Generated by `make e2e-etcd` (e2e/etcd_test.go) on %s: fedop on kind,\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "members %s, a five-member etcd (config/samples/etcd, images %s:%s),\n",
		memberList(), suite.cfg.EtcdImage, strings.Join(suite.cfg.EtcdVersions, " and "))
	fmt.Fprintf(&b, "etcdcheck writing and reading through the cross-cluster names all along.\n")
	if t.Failed() {
		fmt.Fprintf(&b, "\n**This run failed**: see its log.\n")
	}
	b.WriteString(`
| scenario | writes acknowledged | lost | longest write gap | leader changes | min healthy | linearizability | duration | notes |
|---|---|---|---|---|---|---|---|---|
`)
	for _, l := range etcdFigures {
		b.WriteString(l + "\n")
	}
	path := filepath.Join(suite.cfg.RepoRoot, "docs", "etcd-e2e.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Errorf("writing %s: %v", path, err)
		return
	}
	t.Logf("wrote %s", path)
}

func memberList() string {
	var names []string
	for _, m := range suite.cfg.Members {
		names = append(names, m.Name)
	}
	return strings.Join(names, ", ")
}

// etcdUpgradeOrder is the deletion order of an upgrade of the sample:
// members take turns (a, b, c), highest ordinal first within a member.
func etcdUpgradeOrder() []string {
	a, b, c := suite.cfg.Members[0].Name, suite.cfg.Members[1].Name, suite.cfg.Members[2].Name
	return []string{a + "/etcd-etcd-1", b + "/etcd-etcd-3", c + "/etcd-etcd-4", a + "/etcd-etcd-0", b + "/etcd-etcd-2"}
}

// TestEtcd runs the six etcd scenarios in order on one FederationCluster:
// create; upgrade; upgrade back with the manager SIGKILLed five times; a
// member cluster paused for 60s mid-upgrade; a pod deleted by hand;
// credentials rotated mid-upgrade. Each prints one line of figures; the
// run writes docs/etcd-e2e.md.
func TestEtcd(t *testing.T) {
	if suite.cfg.Provider != ProviderKind || suite.cfg.EtcdImage == "" || len(suite.cfg.EtcdVersions) < 2 || suite.cfg.EtcdCheckImage == "" {
		t.Skip("the etcd scenarios need kind, three members and the etcd images: make e2e-etcd")
	}
	require.GreaterOrEqual(t, len(suite.cfg.Members), 3, "three member clusters")
	v1, v2 := suite.cfg.EtcdVersions[0], suite.cfg.EtcdVersions[1]
	s := begin(t, "etcd across three clusters", "etcd")
	c := suite.cfg.Members[2].Name
	s.clusters[c] = c
	t.Cleanup(func() { writeEtcdFigures(t) })

	// 1. Create: five members join and stay.
	start := time.Now()
	s.create(s.etcdSample())
	s.settleWithin(etcdSettle)
	s.checker.Reset()
	run := s.startEtcdCheck("check-create")
	time.Sleep(10 * time.Second) // a measured window of steady traffic
	rep := run.stop()
	ids := memberIDs(rep.MembersStart)
	require.Len(t, ids, etcdMembers, "members: %v", rep.MembersStart)
	for i := range etcdMembers {
		assert.NotEmpty(t, ids[fmt.Sprintf("etcd-etcd-%d", i)], "member etcd-etcd-%d", i)
	}
	assertEtcd(t, rep, ids, etcdMembers)
	recordEtcd(t, "1 create", rep, time.Since(start), "five members, all healthy")

	upgrade := func(t *testing.T, name, to string, during func()) etcdcheck.Report {
		s.t = t
		defer func() { s.t = t }()
		s.checker.Reset()
		drainedBefore := s.drainCounts(t)
		run := s.startEtcdCheck(name)
		s.setImages(to)
		if during != nil {
			during()
		}
		s.settleWithin(etcdSettle)
		r := s.checker.Report()
		s.assertOneAtATime(r)
		if during == nil {
			assertRolloutOrder(t, etcdUpgradeOrder(), r)
		} else {
			// Under a fault a pod may be unavailable when its member's turn
			// comes (its readiness follows etcd's health, which an election
			// touches); the planner then replaces it first, as replacing it
			// costs no availability (rollout's nextVictim). Each pod still
			// goes exactly once, one at a time.
			assert.ElementsMatch(t, etcdUpgradeOrder(), r.DeletionOrder(), "every pod replaced once")
			t.Logf("deletion order: %v", r.DeletionOrder())
		}
		rep := run.stop()
		// Every deleted pod's preDelete hook answered in this upgrade (the
		// hook answers only once the member does not lead).
		drained := s.drainCounts(t)
		for _, key := range etcdUpgradeOrder() {
			_, pod, _ := strings.Cut(key, "/")
			assert.Positive(t, drained[pod]-drainedBefore[pod], "%s was deleted without its drain answering", key)
		}
		assert.LessOrEqual(t, rep.LeaderChanges, len(etcdUpgradeOrder()), "leader changes: at most one per step")
		return rep
	}

	t.Run("2 upgrade", func(t *testing.T) {
		start := time.Now()
		rep := upgrade(t, "check-upgrade", v2, nil)
		assertEtcd(t, rep, ids, etcdMembers-1)
		recordEtcd(t, "2 upgrade "+v1+" to "+v2, rep, time.Since(start), "")
	})
	s.t = t

	t.Run("3 upgrade back, manager SIGKILLed x5", func(t *testing.T) {
		start := time.Now()
		seed := uint64(time.Now().UnixNano())
		rng := rand.New(rand.NewPCG(seed, seed>>1))
		t.Logf("random seed %d", seed)
		kills := 0
		rep := upgrade(t, "check-kill", v1, func() {
			mgr := suite.provider.Manager
			for kills < 5 {
				// A step under way: status.operation names a pod.
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					op := s.get(c).Status.Operation
					require.NotNil(c, op)
					assert.NotEmpty(c, op.Pod)
				}, etcdSettle, poll, "no step under way for kill %d", kills+1)
				time.Sleep(time.Duration(rng.Int64N(int64(4 * time.Second))))
				require.NoError(t, mgr.Kill(t.Context()))
				kills++
				t.Logf("kill %d: SIGKILL fedop-manager after %v", kills, s.checker.Report().DeletionOrder())
				require.NoError(t, mgr.Start(t.Context()))
			}
		})
		assertEtcd(t, rep, ids, etcdMembers-1)
		recordEtcd(t, "3 upgrade back, 5 SIGKILLs", rep, time.Since(start), fmt.Sprintf("%d kills", kills))
	})
	s.t = t

	t.Run("4 member cluster paused 60s mid-upgrade", func(t *testing.T) {
		start := time.Now()
		var downAt, upAt time.Time
		rep := upgrade(t, "check-pause", v2, func() {
			s.waitDeletions(1)
			// Between two steps: the first replacement is available, the
			// next deletion not issued.
			require.EventuallyWithT(t, func(col *assert.CollectT) {
				fc := s.get(col)
				assert.Equal(col, fc.Status.Replicas, fc.Status.ReadyReplicas)
			}, etcdSettle, poll)
			s.down(c)
			downAt = time.Now()
			time.Sleep(60 * time.Second) // the fault's length, as the scenario sets it
			s.up(c)
			upAt = time.Now()
		})
		r := s.checker.Report()
		// fedop may act on what it saw for the freshness bound after c
		// stopped answering (1s); nothing after that until c is back.
		for _, d := range r.Deletions {
			assert.False(t, d.At.After(downAt.Add(2*time.Second)) && d.At.Before(upAt), "%s deleted while %s was paused", d, c)
		}
		// Member c's etcd is unreachable for 60s: four of five serve.
		assertEtcd(t, rep, ids, etcdMembers-2)
		recordEtcd(t, "4 "+c+" paused 60 s mid-upgrade", rep, time.Since(start), "no deletion while paused")
	})
	s.t = t

	t.Run("5 kubectl delete pod", func(t *testing.T) {
		s.t = t
		defer func() { s.t = t }()
		start := time.Now()
		b := suite.cfg.Members[1].Name
		s.checker.Reset()
		claim := &corev1.PersistentVolumeClaim{}
		require.NoError(t, s.memberClient(b).Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: "data-etcd-etcd-2"}, claim))
		before := s.livePods(t)[b+"/etcd-etcd-2"]
		run := s.startEtcdCheck("check-delete")
		s.checker.External(b, "etcd-etcd-2")
		require.NoError(t, s.memberClient(b).Delete(t.Context(), &before))
		require.Eventually(t, func() bool {
			p, ok := s.livePods(t)[b+"/etcd-etcd-2"]
			return ok && p.UID != before.UID && podwatch.Ready(&p)
		}, etcdSettle, poll, "etcd-etcd-2 did not come back")
		s.settleWithin(etcdSettle)
		rep := run.stop()
		after := &corev1.PersistentVolumeClaim{}
		require.NoError(t, s.memberClient(b).Get(t.Context(), client.ObjectKey{Namespace: s.ns, Name: "data-etcd-etcd-2"}, after))
		assert.Equal(t, claim.UID, after.UID, "the claim of etcd-etcd-2")
		assertEtcd(t, rep, ids, etcdMembers-1)
		recordEtcd(t, "5 delete etcd-etcd-2 in "+b, rep, time.Since(start), "same name, claim and member ID")
	})
	s.t = t

	t.Run("6 credentials rotated mid-upgrade", func(t *testing.T) {
		start := time.Now()
		a := suite.cfg.Members[0].Name
		rep := upgrade(t, "check-rotate", v1, func() {
			s.waitDeletions(1)
			require.NoError(t, suite.provider.Registrar.Register(t.Context(), a, a, RegisterOptions{RevokeOldTokens: true}), "re-registering %s", a)
			t.Logf("re-registered %s with --revoke-old-tokens after %v", a, s.checker.Report().DeletionOrder())
		})
		assertEtcd(t, rep, ids, etcdMembers-1)
		recordEtcd(t, "6 "+a+" credentials rotated mid-upgrade", rep, time.Since(start), "")
	})
	s.t = t
	s.finish(windowFaults)
}
