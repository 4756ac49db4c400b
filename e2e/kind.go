package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The kind provider: hack/kind/up.sh's clusters are kind clusters, one
// Docker container each. fedop-manager runs in the host cluster as the
// Deployment config/default describes, with leader election; a member's
// API server goes down with `docker pause` of its node container;
// registration is hack/register-member.sh with the member's address on the
// kind network, where the in-cluster manager reaches it.

// ProviderKind is the provider name of kind clusters (hack/kind/up.sh).
const ProviderKind = "kind"

// Where hack/kind/up.sh deploys fedop-manager in the host cluster
// (config/manager/manager.yaml).
const (
	kindManagerNamespace  = "fedop-system"
	kindManagerDeployment = "fedop-manager"
	kindManagerContainer  = "manager"
)

// kindPollInterval is how often the kind provider looks at what it waits
// for: pods, containers and logs are API or docker calls, dearer than the
// lab's /proc reads.
const kindPollInterval = 200 * time.Millisecond

func newKindProvider(cfg Config) (*Provider, error) {
	hostCfg, err := RESTConfig(cfg.HostKubeconfig)
	if err != nil {
		return nil, err
	}
	host, err := kubernetes.NewForConfig(hostCfg)
	if err != nil {
		return nil, fmt.Errorf("host: %w", err)
	}
	logPath := ""
	if cfg.LabDir != "" {
		logPath = filepath.Join(cfg.LabDir, "manager.log")
	}
	clients, err := readyzClients(cfg)
	if err != nil {
		return nil, err
	}
	members := &kindMembers{prefix: cfg.KindPrefix, clients: clients, host: host}
	return &Provider{
		Name:      ProviderKind,
		Manager:   &KindManager{Client: host, Namespace: kindManagerNamespace, Deployment: kindManagerDeployment, LogPath: logPath},
		Members:   members,
		Registrar: &kindRegistrar{cfg: cfg},
	}, nil
}

// nodeContainer is the Docker container of the single node of kind cluster
// <prefix><member>: kind names it <cluster>-control-plane.
func nodeContainer(prefix, member string) string {
	return prefix + member + "-control-plane"
}

// KindManager controls fedop-manager deployed in a cluster as a
// Deployment. Start scales it to one replica and waits for a pod whose
// manager has started its FederationCluster workers (after it won the
// leader election); Stop scales it to zero; Kill deletes the running pod
// with grace period 0, after which the Deployment's ReplicaSet creates the
// next one at once, as it would in production.
type KindManager struct {
	Client     kubernetes.Interface
	Namespace  string
	Deployment string
	// LogPath, if set, is a file to which the log of every manager pod is
	// appended before Kill or Stop removes it: a pod's log goes with the
	// pod, and a failed scenario's story is often in a killed manager's.
	LogPath string

	// mu serializes the methods: a start and a kill must not interleave.
	mu sync.Mutex
}

// Start scales the Deployment to one replica if it has none, and returns
// once one live pod of it logs that its FederationCluster workers started.
// It fails when that pod's manager container terminates while starting.
func (m *KindManager) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.scale(ctx, 1); err != nil {
		return err
	}
	var last string
	err := waitFor(ctx, kindPollInterval, func() (bool, error) {
		pods, err := m.livePods(ctx)
		if err != nil || len(pods) != 1 {
			last = fmt.Sprintf("%d live pods", len(pods))
			return false, nil
		}
		pod := &pods[0]
		if st := managerStatus(pod); st != nil {
			if t := st.State.Terminated; t != nil {
				return false, fmt.Errorf("fedop-manager in pod %s exited while starting: %s (exit code %d)", pod.Name, t.Reason, t.ExitCode)
			}
			if w := st.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				return false, fmt.Errorf("fedop-manager in pod %s is crash-looping", pod.Name)
			}
		}
		if pod.Status.Phase != corev1.PodRunning {
			last = fmt.Sprintf("pod %s is %s", pod.Name, pod.Status.Phase)
			return false, nil
		}
		logs, err := m.Client.CoreV1().Pods(m.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: kindManagerContainer}).DoRaw(ctx)
		if err != nil {
			last = fmt.Sprintf("logs of %s: %v", pod.Name, err)
			return false, nil
		}
		if logShowsWorkers(logs) {
			return true, nil
		}
		last = fmt.Sprintf("pod %s runs; its manager has not started its workers (leader election?)", pod.Name)
		return false, nil
	}, "the manager's workers to start")
	if err != nil {
		return fmt.Errorf("starting fedop-manager: %w (last seen: %s)", err, last)
	}
	return nil
}

// logShowsWorkers reports whether a manager log shows the FederationCluster
// controller's workers starting.
func logShowsWorkers(log []byte) bool {
	for line := range bytes.SplitSeq(log, []byte("\n")) {
		if bytes.Contains(line, []byte(`"msg":"Starting workers"`)) && bytes.Contains(line, []byte(`"controller":"federationcluster"`)) {
			return true
		}
	}
	return false
}

// Stop scales the Deployment to zero and returns once none of its pods is
// left: every pod was stopped with SIGTERM and its grace period.
func (m *KindManager) Stop(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if pods, err := m.livePods(ctx); err == nil {
		m.saveLogs(ctx, pods)
	}
	if err := m.scale(ctx, 0); err != nil {
		return err
	}
	return waitFor(ctx, kindPollInterval, func() (bool, error) {
		pods, err := m.pods(ctx)
		return err == nil && len(pods) == 0, nil
	}, "the manager's pods to be gone")
}

// Kill deletes the running manager pod with grace period 0 (the API object
// goes at once; the kubelet then stops the container) and returns once the
// pod is gone from the API. The container may outlive its pod object by
// the kubelet's minimum grace of a few seconds; the leader-election Lease,
// which it releases on exit, keeps its successor from acting before then.
func (m *KindManager) Kill(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods, err := m.livePods(ctx)
	if err != nil {
		return err
	}
	m.saveLogs(ctx, pods)
	zero := int64(0)
	for _, p := range pods {
		uid := p.UID
		err := m.Client.CoreV1().Pods(m.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero,
			Preconditions:      &metav1.Preconditions{UID: &uid},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting fedop-manager pod %s: %w", p.Name, err)
		}
	}
	return waitFor(ctx, kindPollInterval, func() (bool, error) {
		for _, p := range pods {
			got, err := m.Client.CoreV1().Pods(m.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err == nil && got.UID == p.UID {
				return false, nil
			}
			if err != nil && !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	}, "the killed manager pod to be gone")
}

// Restart stops the manager gracefully and starts it again.
func (m *KindManager) Restart(ctx context.Context) error {
	if err := m.Stop(ctx); err != nil {
		return err
	}
	return m.Start(ctx)
}

// Running reports whether one live pod runs the manager; its identifier is
// the pod's UID and the manager container's restart count, so that a
// container restarted in place counts as a new instance.
func (m *KindManager) Running(ctx context.Context) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods, err := m.livePods(ctx)
	if err != nil {
		return "", false, err
	}
	for _, p := range pods {
		st := managerStatus(&p)
		if p.Status.Phase == corev1.PodRunning && st != nil && st.State.Running != nil {
			return fmt.Sprintf("pod %s uid %s restarts %d", p.Name, p.UID, st.RestartCount), true, nil
		}
	}
	return "", false, nil
}

// saveLogs appends the manager logs of pods to LogPath, each under a
// header naming the pod. It is best effort: a log that cannot be read is
// noted in the file, and nothing fails because of it.
func (m *KindManager) saveLogs(ctx context.Context, pods []corev1.Pod) {
	if m.LogPath == "" {
		return
	}
	f, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	// The dump is best effort, for a person reading a failure: a write or
	// close error has nowhere better to go than the dump itself.
	defer func() { _ = f.Close() }()
	for _, p := range pods {
		_, _ = fmt.Fprintf(f, "=== e2e: log of pod %s (uid %s) at %s\n", p.Name, p.UID, time.Now().Format(time.RFC3339Nano))
		logs, err := m.Client.CoreV1().Pods(m.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: kindManagerContainer}).DoRaw(ctx)
		if err != nil {
			_, _ = fmt.Fprintf(f, "=== e2e: reading the log: %v\n", err)
			continue
		}
		_, _ = f.Write(logs)
	}
}

// scale sets the Deployment's replicas through its scale subresource.
func (m *KindManager) scale(ctx context.Context, replicas int32) error {
	deps := m.Client.AppsV1().Deployments(m.Namespace)
	sc, err := deps.GetScale(ctx, m.Deployment, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the scale of Deployment %s/%s (is fedop deployed? make kind-up): %w", m.Namespace, m.Deployment, err)
	}
	if sc.Spec.Replicas == replicas {
		return nil
	}
	sc.Spec.Replicas = replicas
	if _, err := deps.UpdateScale(ctx, m.Deployment, sc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("scaling Deployment %s/%s to %d: %w", m.Namespace, m.Deployment, replicas, err)
	}
	return nil
}

// pods lists the Deployment's pods, terminating ones included.
func (m *KindManager) pods(ctx context.Context) ([]corev1.Pod, error) {
	dep, err := m.Client.AppsV1().Deployments(m.Namespace).Get(ctx, m.Deployment, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list, err := m.Client.CoreV1().Pods(m.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// livePods lists the Deployment's pods that are not terminating.
func (m *KindManager) livePods(ctx context.Context) ([]corev1.Pod, error) {
	pods, err := m.pods(ctx)
	if err != nil {
		return nil, err
	}
	live := pods[:0]
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			live = append(live, p)
		}
	}
	return live, nil
}

func managerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == kindManagerContainer {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// kindMembers takes a member down with `docker pause` of its node
// container and up with `docker unpause`. A kind cluster has one node, so
// pausing it freezes the member's API server together with its kubelet,
// scheduler, controllers and pods: from fedop's side the API server stops
// answering, as in the lab, and nothing in the member changes meanwhile.
type kindMembers struct {
	prefix string
	// clients probe each member's /readyz (2s timeout per request).
	clients map[string]rest.Interface
	// host reads the host cluster's node, where the manager runs.
	host kubernetes.Interface
}

// partitionRules are the iptables rule specifications that cut the manager
// off a member: packets to the member's API server (port 6443) from the
// host's node and from the host's pod network are dropped, so the
// manager's connections hang; the member's own components, and the
// suite's connections through the ports Docker publishes, go on.
func (k *kindMembers) partitionRules(ctx context.Context) ([][]string, error) {
	hostNode := nodeContainer(k.prefix, "host")
	ip, err := docker(ctx, "inspect", "--format", "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}", hostNode)
	if err != nil {
		return nil, err
	}
	sources := strings.Fields(ip)
	nodes, err := k.host.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("host nodes: %w", err)
	}
	for _, n := range nodes.Items {
		sources = append(sources, n.Spec.PodCIDRs...)
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("no address found for the host's node %s", hostNode)
	}
	var rules [][]string
	for _, src := range sources {
		rules = append(rules, []string{"INPUT", "-p", "tcp", "--dport", "6443", "-s", src, "-j", "DROP"})
	}
	return rules, nil
}

// Partition inserts the partition rules in member's node container.
func (k *kindMembers) Partition(ctx context.Context, member string) error {
	rules, err := k.partitionRules(ctx)
	if err != nil {
		return err
	}
	name := nodeContainer(k.prefix, member)
	for _, r := range rules {
		if err := nodeIPTables(ctx, name, "-C", r); err == nil {
			continue // in place already
		}
		if err := nodeIPTables(ctx, name, "-I", r); err != nil {
			return err
		}
	}
	return nil
}

// nodeIPTables runs iptables op (-C checks, -I inserts, -D deletes) with
// rule in node container name.
func nodeIPTables(ctx context.Context, name, op string, rule []string) error {
	_, err := docker(ctx, append([]string{"exec", name, "iptables", op}, rule...)...)
	return err
}

// Heal deletes the partition rules from member's node container.
func (k *kindMembers) Heal(ctx context.Context, member string) error {
	rules, err := k.partitionRules(ctx)
	if err != nil {
		return err
	}
	name := nodeContainer(k.prefix, member)
	for _, r := range rules {
		for {
			if err := nodeIPTables(ctx, name, "-C", r); err != nil {
				break // not (or no longer) there
			}
			if err := nodeIPTables(ctx, name, "-D", r); err != nil {
				return err
			}
		}
	}
	return nil
}

// Down pauses member's node container and returns once Docker reports it
// paused.
func (k *kindMembers) Down(ctx context.Context, member string) error {
	name := nodeContainer(k.prefix, member)
	if _, err := docker(ctx, "pause", name); err != nil {
		return err
	}
	return waitFor(ctx, kindPollInterval, func() (bool, error) {
		out, err := docker(ctx, "inspect", "--format", "{{.State.Paused}}", name)
		return err == nil && out == "true", nil
	}, "node container %s to be paused", name)
}

// Up unpauses member's node container and returns once the member answers
// /readyz. Up on a member that is not paused only waits for /readyz.
func (k *kindMembers) Up(ctx context.Context, member string) error {
	name := nodeContainer(k.prefix, member)
	out, err := docker(ctx, "inspect", "--format", "{{.State.Paused}}", name)
	if err != nil {
		return err
	}
	if out == "true" {
		if _, err := docker(ctx, "unpause", name); err != nil {
			return err
		}
	}
	c, ok := k.clients[member]
	if !ok {
		return fmt.Errorf("member %s is not one of the suite's members", member)
	}
	return waitFor(ctx, kindPollInterval, func() (bool, error) {
		return c.Get().AbsPath("/readyz").Do(ctx).Error() == nil, nil
	}, "member %s to answer /readyz", member)
}

// kindRegistrar registers members with hack/register-member.sh. The
// manager runs inside the host cluster, so the Secret's kubeconfig names
// the member's API server by its node container's name on the kind
// network, not by the port published on this machine that the suite's own
// kubeconfigs use.
type kindRegistrar struct {
	cfg Config
}

func (r *kindRegistrar) Register(ctx context.Context, name, cluster string, opts RegisterOptions) error {
	m, ok := r.cfg.Member(cluster)
	if !ok {
		return fmt.Errorf("cluster %s is not one of the suite's members", cluster)
	}
	script := r.cfg.RepoRoot + "/hack/register-member.sh"
	args := []string{
		"--host-kubeconfig", r.cfg.HostKubeconfig,
		"--member-kubeconfig", m.Kubeconfig,
		"--name", name,
		"--server", "https://" + nodeContainer(r.cfg.KindPrefix, cluster) + ":6443",
	}
	if opts.RevokeOldTokens {
		args = append(args, "--revoke-old-tokens")
	}
	out, err := exec.CommandContext(ctx, script, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", script, strings.Join(args, " "), err, out)
	}
	return nil
}

// docker runs the docker CLI and returns its trimmed standard output.
func docker(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Compile-time checks that the kind types implement the suite's interfaces.
var (
	_ Manager      = (*KindManager)(nil)
	_ MemberFaults = (*kindMembers)(nil)
	_ Registrar    = (*kindRegistrar)(nil)
)
