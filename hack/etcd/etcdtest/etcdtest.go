package etcdtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Member is one etcd member of a Cluster.
type Member struct {
	// Name is etcd's --name: m0, m1, ...
	Name string
	// DataDir is etcd's --data-dir; it outlives the member's process.
	DataDir string
	// ClientURL, PeerURL and HookURL are http://127.0.0.1:<port> for etcd's
	// clients, its peers and the agent's hooks.
	ClientURL, PeerURL, HookURL string
	// Version is the etcd version the member runs (or last ran).
	Version string

	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been waited for
	logPath string
}

// Cluster is a set of etcd members on 127.0.0.1, each an agent process with
// etcd as its child.
type Cluster struct {
	t       testing.TB
	bins    map[string]Binaries
	Members []*Member
}

// Start starts an n-member cluster of etcd version (a directory name under
// hack/etcd, such as "v3.6.16"), all members at once as a StatefulSet's
// pods would, and waits until every member is healthy. The members are
// stopped when the test ends, and their logs are shown if it failed.
func Start(t testing.TB, n int, version string) *Cluster {
	t.Helper()
	c := New(t, n, version)
	for i := range c.Members {
		c.StartMember(i, version)
	}
	for i := range c.Members {
		c.WaitHealthy(i)
	}
	return c
}

// New prepares an n-member cluster of etcd version without starting any
// member: a test starts them with StartMember, in the order it needs.
func New(t testing.TB, n int, version string) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bins: Build(t)}
	require.Contains(t, c.bins, version)
	ports := FreePorts(t, 3*n)
	dir := t.TempDir()
	for i := range n {
		c.Members = append(c.Members, &Member{
			Name:      fmt.Sprintf("m%d", i),
			DataDir:   filepath.Join(dir, fmt.Sprintf("m%d", i)),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[3*i]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+1]),
			HookURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[3*i+2]),
			logPath:   filepath.Join(dir, fmt.Sprintf("m%d.log", i)),
		})
	}
	t.Cleanup(c.cleanup)
	return c
}

// Endpoints returns the members' client URLs.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, 0, len(c.Members))
	for _, m := range c.Members {
		eps = append(eps, m.ClientURL)
	}
	return eps
}

// Client returns a client of all members, closed when the test ends.
func (c *Cluster) Client() *clientv3.Client {
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	require.NoError(c.t, err)
	c.t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// StartMember starts member i's agent (and so its etcd) with etcd version,
// on the member's data dir, with the flags doc.go of the agent gives for a
// pod. It does not wait for the member to be healthy.
func (c *Cluster) StartMember(i int, version string) {
	t, m := c.t, c.Members[i]
	require.Nil(t, m.cmd, "member %s already runs", m.Name)
	initial := make([]string, 0, len(c.Members))
	for _, o := range c.Members {
		initial = append(initial, o.Name+"="+o.PeerURL)
	}
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	defer func() { _ = logf.Close() }()
	_, _ = fmt.Fprintf(logf, "=== start %s with etcd %s\n", m.Name, version)
	cmd := exec.Command(c.bins[version].Agent,
		"--etcd="+c.bins[version].Etcd,
		"--listen="+strings.TrimPrefix(m.HookURL, "http://"),
		"--cluster-endpoints="+strings.Join(c.Endpoints(), ","),
		"--join-timeout=2s",
		"--",
		"--name="+m.Name,
		"--data-dir="+m.DataDir,
		"--listen-client-urls="+m.ClientURL,
		"--advertise-client-urls="+m.ClientURL,
		"--listen-peer-urls="+m.PeerURL,
		"--initial-advertise-peer-urls="+m.PeerURL,
		"--initial-cluster="+strings.Join(initial, ","),
		"--initial-cluster-state=new",
		"--initial-cluster-token=etcdtest",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that Kill reaches etcd too at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	m.cmd, m.exited, m.Version = cmd, make(chan struct{}), version
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
}

// StopMember sends SIGTERM to member i's agent, as the kubelet does, and
// returns the agent's exit code once it exited (at most 20 s).
func (c *Cluster) StopMember(i int) int {
	m := c.Members[i]
	require.NotNil(c.t, m.cmd, "member %s does not run", m.Name)
	require.NoError(c.t, m.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-m.exited:
	case <-time.After(20 * time.Second):
		c.t.Fatalf("member %s did not stop within 20s of SIGTERM", m.Name)
	}
	code := m.cmd.ProcessState.ExitCode()
	m.cmd = nil
	return code
}

// KillMember sends SIGKILL to member i's agent and etcd at once (a crash:
// nothing is flushed, no leadership is handed over) and waits until its
// client and peer ports are free again.
func (c *Cluster) KillMember(i int) {
	m := c.Members[i]
	require.NotNil(c.t, m.cmd, "member %s does not run", m.Name)
	require.NoError(c.t, syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL))
	<-m.exited
	m.cmd = nil
	c.poll(10*time.Second, "ports of "+m.Name+" free", func(context.Context) bool {
		return !listening(m.ClientURL) && !listening(m.PeerURL)
	})
}

// WaitHealthy waits (at most 60 s) until member i's agent answers 200 on
// /healthz, which relays etcd's own /health.
func (c *Cluster) WaitHealthy(i int) {
	m := c.Members[i]
	c.poll(60*time.Second, m.Name+" healthy", func(ctx context.Context) bool {
		code, _ := Get(ctx, m.HookURL+"/healthz")
		return code == http.StatusOK
	})
}

// Get sends GET url and returns the status code and body; a request that
// got no answer returns code 0 and the error as the body.
func Get(ctx context.Context, url string) (int, string) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		b.WriteString(s.Text())
	}
	return resp.StatusCode, b.String()
}

// poll waits until cond holds, checking every 100 ms for at most timeout,
// and fails the test with what when it never does.
func (c *Cluster) poll(timeout time.Duration, what string, cond func(context.Context) bool) {
	c.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(ctx context.Context) (bool, error) { return cond(ctx), nil })
	require.NoError(c.t, err, "waiting for %s", what)
}

// cleanup stops every member still running (SIGKILL after 20 s) and shows
// the tail of every member's log when the test failed.
func (c *Cluster) cleanup() {
	for _, m := range c.Members {
		if m.cmd == nil {
			continue
		}
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
			<-m.exited
		}
		m.cmd = nil
	}
	if !c.t.Failed() {
		return
	}
	for _, m := range c.Members {
		b, _ := os.ReadFile(m.logPath)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		c.t.Logf("last lines of %s's log (%s):\n%s", m.Name, m.logPath, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// listening says whether something accepts TCP connections at url's host.
func listening(url string) bool {
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// FreePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago.
func FreePorts(t testing.TB, n int) []int {
	ports := make([]int, 0, n)
	lns := make([]net.Listener, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

// Binaries are the programs a member runs, for one etcd version.
type Binaries struct {
	// Etcd and Agent are paths of the etcd and etcd-agent binaries.
	Etcd, Agent string
}

// Build returns the binaries of every pinned etcd version, by version
// ("v3.6.15"). With FEDOP_ETCD_BIN set to a directory hack/etcd/build.sh
// wrote, it takes them from there; otherwise it builds them with go build
// into the user's cache directory (fedop-etcdtest/), under a file lock so
// that test binaries running in parallel do not write the same file. The
// first build of an etcd version takes minutes; later ones take seconds.
func Build(t testing.TB) map[string]Binaries {
	t.Helper()
	root := repoRoot(t)
	mods, err := filepath.Glob(filepath.Join(root, "hack", "etcd", "v*", "go.mod"))
	require.NoError(t, err)
	require.NotEmpty(t, mods, "no etcd version pinned under hack/etcd")
	if dir := os.Getenv("FEDOP_ETCD_BIN"); dir != "" {
		bins := map[string]Binaries{}
		for _, mod := range mods {
			v := filepath.Base(filepath.Dir(mod))
			bins[v] = Binaries{Etcd: filepath.Join(dir, v, "etcd"), Agent: filepath.Join(dir, v, "etcd-agent")}
		}
		return bins
	}
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	out := filepath.Join(cache, "fedop-etcdtest")
	require.NoError(t, os.MkdirAll(out, 0o755))
	lock, err := os.OpenFile(filepath.Join(out, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	defer func() { _ = lock.Close() }()
	require.NoError(t, syscall.Flock(int(lock.Fd()), syscall.LOCK_EX))
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	agent := filepath.Join(out, "etcd-agent")
	goBuild(t, root, agent, "./hack/etcd/agent")
	bins := map[string]Binaries{}
	for _, mod := range mods {
		v := filepath.Base(filepath.Dir(mod))
		etcd := filepath.Join(out, v, "etcd")
		goBuild(t, filepath.Dir(mod), etcd, "go.etcd.io/etcd/server/v3")
		bins[v] = Binaries{Etcd: etcd, Agent: agent}
	}
	return bins
}

// goBuild runs go build -o out pkg in dir; go build leaves out alone when
// it is up to date.
func goBuild(t testing.TB, dir, out, pkg string) {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s in %s: %s", pkg, dir, b)
}

// repoRoot returns the root of fedop's module, from go env GOMOD.
func repoRoot(t testing.TB) string {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	gomod := strings.TrimSpace(string(b))
	if gomod == "" || gomod == os.DevNull {
		require.NoError(t, errors.New("not inside fedop's module"))
	}
	return filepath.Dir(gomod)
}

// Versions returns the pinned etcd versions, oldest first.
func Versions(bins map[string]Binaries) []string {
	return slices.SortedFunc(maps.Keys(bins), compareVersions)
}

// compareVersions orders "vMAJOR.MINOR.PATCH" numerically.
func compareVersions(a, b string) int {
	var x, y [3]int
	_, _ = fmt.Sscanf(a, "v%d.%d.%d", &x[0], &x[1], &x[2])
	_, _ = fmt.Sscanf(b, "v%d.%d.%d", &y[0], &y[1], &y[2])
	return slices.Compare(x[:], y[:])
}
