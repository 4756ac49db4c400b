package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fedop-io/fedop/internal/testenv"
)

// The lab provider: hack/lab.sh's clusters are kwokctl clusters run as
// plain processes on this machine, so the manager is a local process,
// "member down" is SIGSTOP of the member's kube-apiserver process (it stops
// answering but keeps its connections, like a hung or partitioned server)
// and registration is hack/register-member.sh. The manager reaches every
// member through a TCP proxy of the suite's (members are registered with
// the proxy's address), so that a partition can cut the manager off a
// member that goes on running: the proxy freezes.

// labPollInterval is how often the lab provider looks at a process or an
// endpoint it waits for.
const labPollInterval = 50 * time.Millisecond

// LabManagerArgs are the flags the lab runs fedop-manager with: a 1s member
// probe period (three failed probes mark a member down within seconds),
// debug logs (the log tail is what a failed scenario shows), no metrics or
// probe listener (nothing scrapes them, and a fixed port could clash with a
// developer's manager on the same machine).
var LabManagerArgs = []string{
	"--member-probe-period=1s",
	"--metrics-bind-address=0",
	"--health-probe-bind-address=0",
	"--zap-log-level=debug",
}

func newLabProvider(cfg Config) (*Provider, error) {
	if cfg.LabDir == "" {
		return nil, errors.New("lab provider: no lab directory")
	}
	if _, err := os.Stat(cfg.ManagerBinary); err != nil {
		return nil, fmt.Errorf("lab provider: fedop-manager binary: %w (go build -o bin/fedop-manager ./cmd/fedop-manager)", err)
	}
	script := filepath.Join(cfg.RepoRoot, "hack", "register-member.sh")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("lab provider: %w", err)
	}
	clients, err := readyzClients(cfg)
	if err != nil {
		return nil, err
	}
	members := &labMembers{kwokDir: filepath.Join(cfg.LabDir, "kwok"), clients: clients, proxies: map[string]*testenv.Proxy{}}
	for _, m := range cfg.Members {
		rc, err := RESTConfig(m.Kubeconfig)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(rc.Host)
		if err != nil {
			return nil, fmt.Errorf("member %s: server %q: %w", m.Name, rc.Host, err)
		}
		p, err := testenv.NewProxy(u.Host)
		if err != nil {
			return nil, fmt.Errorf("member %s: proxy: %w", m.Name, err)
		}
		members.proxies[m.Name] = p
	}
	return &Provider{
		Name: ProviderLab,
		Manager: &LabManager{
			Binary:         cfg.ManagerBinary,
			Args:           LabManagerArgs,
			HostKubeconfig: cfg.HostKubeconfig,
			LogPath:        filepath.Join(cfg.LabDir, "manager.log"),
			PIDPath:        filepath.Join(cfg.LabDir, "manager.pid"),
		},
		Members:   members,
		Registrar: &labRegistrar{script: script, cfg: cfg, proxies: members.proxies},
	}, nil
}

// LabManager runs fedop-manager as a child process of the suite. Its output
// is appended to LogPath, and its pid is written to PIDPath, where
// `hack/lab.sh down` finds it should the suite die without stopping it.
type LabManager struct {
	Binary         string
	Args           []string
	HostKubeconfig string
	LogPath        string
	PIDPath        string

	// mu guards proc and done, and serializes the methods: a start and a
	// kill must not interleave.
	mu   sync.Mutex
	proc *os.Process
	// done is closed when proc has exited and been reaped.
	done chan struct{}
}

// Start starts fedop-manager unless it runs, and returns once the log shows
// the FederationCluster controller's workers started. It refuses to start
// a second manager when PIDPath names a live fedop-manager it did not
// start: two managers on one lab would race, and that process is not the
// suite's to end.
func (m *LabManager) Start(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.running() {
		return nil
	}
	if pid, ok := liveManagerFromPIDFile(m.PIDPath, m.Binary); ok {
		return fmt.Errorf("a fedop-manager (pid %d, from %s) already runs against this lab; stop it first (hack/lab.sh down does)", pid, m.PIDPath)
	}
	log, err := os.OpenFile(m.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	// The manager holds its own descriptor of the log once started; this
	// one only writes the header below.
	defer func() { _ = log.Close() }()
	if _, err := fmt.Fprintf(log, "=== e2e: starting %s %s at %s\n", m.Binary, strings.Join(m.Args, " "), time.Now().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	offset, err := log.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	cmd := exec.Command(m.Binary, m.Args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+m.HostKubeconfig)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting fedop-manager: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	m.proc, m.done = cmd.Process, done
	if err := os.WriteFile(m.PIDPath, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}

	tick := time.NewTicker(labPollInterval)
	defer tick.Stop()
	for {
		if workersStarted(m.LogPath, offset) {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("fedop-manager exited while starting; see %s", m.LogPath)
		case <-ctx.Done():
			return fmt.Errorf("fedop-manager did not start its workers: %w; see %s", ctx.Err(), m.LogPath)
		case <-tick.C:
		}
	}
}

// workersStarted reports whether the log at path, from offset on, shows
// the FederationCluster controller's workers starting.
func workersStarted(path string, offset int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read only
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return false
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return false
	}
	for line := range strings.SplitSeq(buf.String(), "\n") {
		if strings.Contains(line, `"msg":"Starting workers"`) && strings.Contains(line, `"controller":"federationcluster"`) {
			return true
		}
	}
	return false
}

// liveManagerFromPIDFile returns the pid in path when that process is a
// running fedop-manager: its program is named fedop-manager or like binary.
func liveManagerFromPIDFile(path, binary string) (int, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	argv, err := cmdline(pid)
	if err != nil || len(argv) == 0 {
		return 0, false
	}
	name := filepath.Base(argv[0])
	return pid, name == "fedop-manager" || name == filepath.Base(binary)
}

// running reports whether the started process has not exited. m.mu is held.
func (m *LabManager) running() bool {
	if m.proc == nil {
		return false
	}
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits for the manager to exit; after 30s (or when
// ctx ends first) it sends SIGKILL.
func (m *LabManager) Stop(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.signal(ctx, syscall.SIGTERM, 30*time.Second)
}

// Kill sends SIGKILL and waits for the manager to exit.
func (m *LabManager) Kill(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.signal(ctx, syscall.SIGKILL, 0)
}

// signal sends sig to the manager and waits until it exited, escalating to
// SIGKILL after grace (or when ctx ends). m.mu is held.
func (m *LabManager) signal(ctx context.Context, sig syscall.Signal, grace time.Duration) error {
	if !m.running() {
		return nil
	}
	if err := m.proc.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling fedop-manager (pid %d): %w", m.proc.Pid, err)
	}
	if sig != syscall.SIGKILL {
		select {
		case <-m.done:
		case <-time.After(grace):
		case <-ctx.Done():
		}
		if m.running() {
			_ = m.proc.Signal(syscall.SIGKILL)
		}
	}
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("fedop-manager (pid %d) did not exit after SIGKILL", m.proc.Pid)
	}
	_ = os.Remove(m.PIDPath)
	return nil
}

// Restart stops the manager gracefully and starts it again.
func (m *LabManager) Restart(ctx context.Context) error {
	if err := m.Stop(ctx); err != nil {
		return err
	}
	return m.Start(ctx)
}

// Running reports whether the manager the suite started still runs; its
// identifier is the pid.
func (m *LabManager) Running(context.Context) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.running() {
		return "", false, nil
	}
	return strconv.Itoa(m.proc.Pid), true, nil
}

// labMembers takes lab members down with SIGSTOP of their kube-apiserver
// process and up with SIGCONT. The member's scheduler and controller
// manager run without leader election in the lab, so they survive it.
type labMembers struct {
	// kwokDir is the kwokctl workdir: every lab process's command line
	// holds <kwokDir>/clusters/<name>/.
	kwokDir string
	// clients probe each member's /readyz (2s timeout per request).
	clients map[string]rest.Interface
	// proxies stand between the manager and each member.
	proxies map[string]*testenv.Proxy
}

// Partition freezes the proxy between the manager and member: bytes stop
// in both directions and connections hang, as when packets are dropped.
func (l *labMembers) Partition(_ context.Context, member string) error {
	p, ok := l.proxies[member]
	if !ok {
		return fmt.Errorf("member %s is not one of the suite's members", member)
	}
	p.Freeze()
	return nil
}

// Heal lets the proxy's bytes through again.
func (l *labMembers) Heal(_ context.Context, member string) error {
	p, ok := l.proxies[member]
	if !ok {
		return fmt.Errorf("member %s is not one of the suite's members", member)
	}
	p.Thaw()
	return nil
}

// apiserverPID returns the pid of member's kube-apiserver: the one process
// named kube-apiserver whose command line holds the member's kwok cluster
// directory (what `pgrep -f "kube-apiserver.*<kwok>/clusters/<member>/"`
// finds).
func (l *labMembers) apiserverPID(member string) (int, error) {
	dir := l.kwokDir + "/clusters/" + member + "/"
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		argv, err := cmdline(pid)
		if err != nil || len(argv) == 0 || filepath.Base(argv[0]) != "kube-apiserver" {
			continue
		}
		if strings.Contains(strings.Join(argv, " "), dir) {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		return 0, fmt.Errorf("member %s: want one kube-apiserver process under %s, found %v", member, dir, pids)
	}
	return pids[0], nil
}

// Down stops member's kube-apiserver with SIGSTOP and returns once the
// kernel reports it stopped.
func (l *labMembers) Down(ctx context.Context, member string) error {
	pid, err := l.apiserverPID(member)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("SIGSTOP kube-apiserver of %s (pid %d): %w", member, pid, err)
	}
	return waitFor(ctx, labPollInterval, func() (bool, error) {
		st, err := processState(pid)
		return st == 'T', err
	}, "kube-apiserver of %s (pid %d) to stop", member, pid)
}

// Up resumes member's kube-apiserver with SIGCONT and returns once it
// answers /readyz. Up on a member that is not down only waits for /readyz.
func (l *labMembers) Up(ctx context.Context, member string) error {
	pid, err := l.apiserverPID(member)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		return fmt.Errorf("SIGCONT kube-apiserver of %s (pid %d): %w", member, pid, err)
	}
	c, ok := l.clients[member]
	if !ok {
		return fmt.Errorf("member %s is not one of the suite's members", member)
	}
	return waitFor(ctx, labPollInterval, func() (bool, error) {
		return c.Get().AbsPath("/readyz").Do(ctx).Error() == nil, nil
	}, "member %s to answer /readyz", member)
}

// cmdline returns the argv of process pid.
func cmdline(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), nil
}

// processState returns the state letter of process pid (R, S, T, ...)
// from /proc/<pid>/stat, whose second field (the command, in parentheses)
// may itself hold spaces and parentheses.
func processState(pid int) (byte, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return data[i+2], nil
}

// labRegistrar registers members with hack/register-member.sh, the script a
// user runs, with the address of the suite's proxy to the member (--server),
// which listens on this machine, where the manager runs too.
type labRegistrar struct {
	script  string
	cfg     Config
	proxies map[string]*testenv.Proxy
}

func (r *labRegistrar) Register(ctx context.Context, name, cluster string, opts RegisterOptions) error {
	m, ok := r.cfg.Member(cluster)
	if !ok {
		return fmt.Errorf("cluster %s is not one of the suite's members", cluster)
	}
	args := []string{"--host-kubeconfig", r.cfg.HostKubeconfig, "--member-kubeconfig", m.Kubeconfig, "--name", name}
	if p, ok := r.proxies[cluster]; ok {
		args = append(args, "--server", "https://"+p.Addr())
	}
	if opts.RevokeOldTokens {
		args = append(args, "--revoke-old-tokens")
	}
	out, err := exec.CommandContext(ctx, r.script, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", r.script, strings.Join(args, " "), err, out)
	}
	return nil
}
