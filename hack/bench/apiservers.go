package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/client-go/util/workqueue"
)

// The apiserver-only members of items 5, 6 and 10: one kube-apiserver
// each, all sharing one etcd under their own --etcd-prefix (section 5 of
// the report says why). envtest's APIServer and Etcd (controller-runtime
// v0.24) would start the processes, but do not fit: they keep the process
// unexported (item 6 SIGSTOPs a member; section 5 reads each one's RSS and
// CPU by pid), wait for /healthz where fedop needs /readyz, and start children without Pdeathsig, which here must die with
// the benchmark. What is taken from libraries: certificates from
// client-go's util/cert, polls from apimachinery's wait.

// apiserverDisabledAdmission lists kube-apiserver 1.36's default admission
// plugins except NamespaceLifecycle. Most of them need a controller or an
// API group the members do not have (ServiceAccount refuses every pod of a
// namespace whose "default" ServiceAccount, made by kube-controller-manager,
// does not exist), and none of them changes what fedop does in a member.
var apiserverDisabledAdmission = []string{
	"LimitRanger", "ServiceAccount", "TaintNodesByCondition", "PodSecurity", "Priority", "DefaultTolerationSeconds",
	"DefaultStorageClass", "StorageObjectInUseProtection", "PodGroupProtection", "PersistentVolumeClaimResize", "RuntimeClass",
	"CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
	"PodTopologyLabels", "PodGroupWorkloadExists", "NodeDeclaredFeatureValidator", "JobValidation", "PodResizeValidator",
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota",
}

// apiserverRuntimeConfig serves the core API and only the groups that
// kube-apiserver's own controllers cannot start without (it refuses to
// start without apiregistration, and stays unready without the others):
// each API group costs memory and start-up time, and fedop reads only
// core/v1. Measured on this machine: about 185 MiB RSS and 0.6 s of CPU to
// start, against 265 MiB and 1.2 s with every default group.
const apiserverRuntimeConfig = "api/all=false,api/v1=true,apiregistration.k8s.io/v1=true,apiextensions.k8s.io/v1=true," +
	"coordination.k8s.io/v1=true,networking.k8s.io/v1=true,discovery.k8s.io/v1=true"

// memberMemoryEstimate is what the memory check before starting
// apiservers assumes each takes until one has been measured.
const memberMemoryEstimate = 250 << 20

// memoryMargin is the memory left available to everything else (the lab,
// the manager, the other work on this machine) when apiservers are added.
const memoryMargin = 3 << 30

// errNoMemory is returned by fleet.grow when the machine has not the
// memory for the apiservers asked for.
var errNoMemory = errors.New("not enough memory available")

// proc is a process the benchmark started and must end.
type proc struct {
	name string
	cmd  *exec.Cmd
	// done is closed once the process exited; err is then its exit error.
	done chan struct{}
	err  error
	log  string
}

// startProc starts argv with its output in logPath. The process is killed
// if the benchmark dies without cleaning up (Pdeathsig): nothing it starts
// may outlive it.
func startProc(name, logPath string, env []string, argv ...string) (*proc, error) {
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = out.Close() }()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process: SIGCONT first (a stopped process cannot act on
// SIGTERM), SIGTERM, and SIGKILL after grace. It returns once it exited.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// logTail returns the last n lines of the process's log, for an error.
func (p *proc) logTail(n int) string {
	data, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process can take it before the caller binds it; starting an
// apiserver retries with another port then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// apiMember is one apiserver-only member.
type apiMember struct {
	name string
	proc *proc
	// kubeconfig is what fedop gets in the member's registration Secret:
	// server, CA and client certificate inline, as ParseKubeconfig asks.
	kubeconfig []byte
	cfg        *rest.Config
	client     kubernetes.Interface
	// startup is the time from exec to /readyz answering 200, startCPU the
	// CPU the process had used then.
	startup  time.Duration
	startCPU float64
	// stopped is set while the process is SIGSTOPped.
	stopped bool
}

// fleet is the apiserver-only members and their etcd: everything lives in
// dir (certificates, etcd's data, logs), removed by close.
type fleet struct {
	dir, binDir string
	logf        func(string, ...any)
	etcd        *proc
	etcdURL     string
	// The certificates, PEM: the CA of the serving certificate every
	// apiserver presents (SAN 127.0.0.1), and fedop's client certificate
	// and key.
	caPEM, clientCertPEM, clientKeyPEM []byte
	members                            []*apiMember
}

// newFleet creates the fleet's directory under parent, its certificates,
// and starts its etcd.
func newFleet(ctx context.Context, parent, binDir string, logf func(string, ...any)) (*fleet, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "members-")
	if err != nil {
		return nil, err
	}
	f := &fleet{dir: dir, binDir: binDir, logf: logf}
	if err := f.writeCerts(); err != nil {
		f.close()
		return nil, err
	}
	if err := f.startEtcd(ctx); err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// writeCerts makes the fleet's certificates with client-go's util/cert
// and writes the files kube-apiserver reads: a serving certificate for
// 127.0.0.1 and its CA (GenerateSelfSignedCertKey), the same for every
// apiserver since they differ only in port and TLS names no port; fedop's
// client certificate, self-signed and the members' --client-ca-file; and
// the service account key (ECDSA; kube-apiserver requires one though no
// token is ever issued here, and takes the private key for both flags).
func (f *fleet) writeCerts() error {
	servingPEM, servingKeyPEM, err := cert.GenerateSelfSignedCertKey(loopback, nil, []string{"localhost"})
	if err != nil {
		return err
	}
	chain, err := cert.ParseCertsPEM(servingPEM) // the serving certificate, then its CA
	if err != nil {
		return err
	}
	if f.caPEM, err = cert.EncodeCertificates(chain[len(chain)-1]); err != nil {
		return err
	}
	if f.clientKeyPEM, err = keyutil.MakeEllipticPrivateKeyPEM(); err != nil {
		return err
	}
	key, err := keyutil.ParsePrivateKeyPEM(f.clientKeyPEM)
	if err != nil {
		return err
	}
	// fedop's identity in every member. The members authorize everything
	// (AlwaysAllow), so the group only says what the identity is meant as.
	client, err := cert.NewSelfSignedCACert(cert.Config{CommonName: "fedop-bench", Organization: []string{"system:masters"}}, key.(crypto.Signer))
	if err != nil {
		return err
	}
	if f.clientCertPEM, err = cert.EncodeCertificates(client); err != nil {
		return err
	}
	saKeyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"client-ca.crt": f.clientCertPEM,
		"serving.crt":   servingPEM,
		"serving.key":   servingKeyPEM,
		"sa.key":        saKeyPEM,
	} {
		if err := os.WriteFile(filepath.Join(f.dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// startEtcd starts the etcd every apiserver shares and waits for it to
// answer /health.
func (f *fleet) startEtcd(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		client, err1 := freePort()
		peer, err2 := freePort()
		err := errors.Join(err1, err2)
		if err != nil {
			return err
		}
		f.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", client)
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
		data := filepath.Join(f.dir, "etcd")
		_ = os.RemoveAll(data)
		// --unsafe-no-fsync: the members' state is thrown away after the
		// run, and fsyncs on a shared disk would add noise, not realism,
		// to what is measured: fedop's side of the connection.
		f.etcd, err = startProc("etcd", filepath.Join(f.dir, "etcd.log"), os.Environ(),
			filepath.Join(f.binDir, "etcd"),
			"--name", "bench-members", "--data-dir", data,
			"--listen-client-urls", f.etcdURL, "--advertise-client-urls", f.etcdURL,
			"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "bench-members="+peerURL,
			"--unsafe-no-fsync", "--log-level", "warn")
		if err != nil {
			return err
		}
		err = waitReady(ctx, f.etcd, "/health", 30*time.Second, httpOK(http.DefaultClient, f.etcdURL+"/health"))
		if err == nil {
			return nil
		}
		f.etcd.stop(5 * time.Second)
		if attempt == 3 || !strings.Contains(f.etcd.logTail(20), "address already in use") {
			return fmt.Errorf("etcd: %w\n%s", err, f.etcd.logTail(20))
		}
	}
}

// waitReady calls ready every 100ms, each call bounded to 2s, until it
// returns nil, p exits, or timeout passes.
func waitReady(ctx context.Context, p *proc, what string, timeout time.Duration, ready func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, fmt.Errorf("%s exited: %v", p.name, p.err)
		}
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		last = ready(ctx)
		return last == nil, nil
	})
	if err != nil && !p.exited() {
		return fmt.Errorf("%s did not answer %s within %s: %w (last error: %v)", p.name, what, timeout, err, last)
	}
	return err
}

// httpOK returns a readiness check for waitReady: a GET of url with c
// answered 200.
func httpOK(c *http.Client, url string) func(context.Context) error {
	return func(ctx context.Context) error {
		resp, err := getOK(ctx, c, url, "", "GET")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
}

// grow starts apiservers until the fleet has n, at most parallel starting
// at once (each takes most of a core for about a second, and the lab runs
// on the same two cores), and returns once every one answers /readyz. It
// returns errNoMemory, starting nothing, when MemAvailable does not cover
// them and memoryMargin.
func (f *fleet) grow(ctx context.Context, n, parallel int) error {
	add := n - len(f.members)
	if add <= 0 {
		return nil
	}
	avail, err := memAvailable()
	if err != nil {
		return err
	}
	each := float64(memberMemoryEstimate)
	if rss := f.medianRSS(); rss > 0 {
		each = rss * 1.2 // they grow a little once fedop watches them
	}
	if need := float64(add)*each + memoryMargin; avail < need {
		return fmt.Errorf("%w: %d more apiservers need about %s with a margin of %s, and %s is available",
			errNoMemory, add, mib(need-memoryMargin), mib(memoryMargin), mib(avail))
	}
	start := time.Now()
	news := make([]*apiMember, add)
	for i := range news {
		news[i] = &apiMember{name: fmt.Sprintf("bench-m%02d", len(f.members)+i)}
	}
	errs := make([]error, add, add+1)
	workqueue.ParallelizeUntil(ctx, parallel, add, func(i int) { errs[i] = f.startMember(ctx, news[i]) })
	errs = append(errs, ctx.Err()) // an end of ctx leaves members unstarted, without an error of their own
	for _, m := range news {
		if m.proc != nil {
			// Started or not, close must stop it.
			f.members = append(f.members, m)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var startups []time.Duration
	for _, m := range news {
		startups = append(startups, m.startup)
	}
	f.logf("Started %d apiserver-only members in %s (each: median %s to ready), %d in all", add, ms(time.Since(start)), ms(median(startups)), len(f.members))
	return nil
}

// startMember starts m's kube-apiserver and waits for its /readyz, on
// another port if the first was taken meanwhile.
func (f *fleet) startMember(ctx context.Context, m *apiMember) error {
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		if err := f.connectTo(m, port); err != nil {
			return err
		}
		file := func(name string) string { return filepath.Join(f.dir, name) }
		args := []string{
			filepath.Join(f.binDir, "kube-apiserver"),
			"--etcd-servers", f.etcdURL,
			"--etcd-prefix", "/" + m.name,
			"--bind-address", loopback,
			"--advertise-address", loopback,
			"--secure-port", strconv.Itoa(port),
			"--tls-cert-file", file("serving.crt"),
			"--tls-private-key-file", file("serving.key"),
			"--client-ca-file", file("client-ca.crt"),
			"--service-account-issuer", "https://" + m.name + ".bench.invalid",
			"--service-account-key-file", file("sa.key"),
			"--service-account-signing-key-file", file("sa.key"),
			"--service-cluster-ip-range", "10.96.0.0/16",
			// A benchmark member: whoever holds fedop's client certificate
			// may do anything.
			"--authorization-mode", "AlwaysAllow",
			"--runtime-config", apiserverRuntimeConfig,
			"--disable-admission-plugins", strings.Join(apiserverDisabledAdmission, ","),
			// Priority and fairness keeps a dozen informers and config
			// objects per server; a member serving one client needs none.
			"--enable-priority-and-fairness=false",
			// Nothing here needs: the endpoints of the default "kubernetes"
			// Service, profiling, or a count of objects polled every minute.
			"--endpoint-reconciler-type", "none",
			"--profiling=false",
			"--etcd-count-metric-poll-period", "0",
		}
		// A plain GET per poll with the kubeconfig's TLS (client-go's REST
		// client would retry within one call, hiding when it became ready).
		c, err := rest.HTTPClientFor(m.cfg)
		if err != nil {
			return err
		}
		begin := time.Now()
		m.proc, err = startProc(m.name, file(m.name+".log"), os.Environ(), args...)
		if err != nil {
			return err
		}
		err = waitReady(ctx, m.proc, "/readyz", 2*time.Minute, httpOK(c, m.cfg.Host+"/readyz"))
		c.CloseIdleConnections()
		if err == nil {
			m.startup = time.Since(begin)
			m.startCPU, _ = cpuSeconds(m.proc.pid())
			return nil
		}
		m.proc.stop(5 * time.Second)
		if attempt == 3 || !strings.Contains(m.proc.logTail(30), "address already in use") {
			return fmt.Errorf("apiserver %s: %w\n%s", m.name, err, m.proc.logTail(15))
		}
	}
}

// connectTo sets m's kubeconfig, REST config and client for an apiserver
// on port: the kubeconfig is what fedop gets in the member's registration
// Secret, server, CA and client certificate inline, as
// member.ParseKubeconfig asks.
func (f *fleet) connectTo(m *apiMember, port int) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[m.name] = &clientcmdapi.Cluster{Server: fmt.Sprintf("https://127.0.0.1:%d", port), CertificateAuthorityData: f.caPEM}
	kc.AuthInfos["fedop"] = &clientcmdapi.AuthInfo{ClientCertificateData: f.clientCertPEM, ClientKeyData: f.clientKeyPEM}
	kc.Contexts[m.name] = &clientcmdapi.Context{Cluster: m.name, AuthInfo: "fedop"}
	kc.CurrentContext = m.name
	var err error
	if m.kubeconfig, err = clientcmd.Write(*kc); err != nil {
		return err
	}
	if m.cfg, err = clientcmd.RESTConfigFromKubeConfig(m.kubeconfig); err != nil {
		return err
	}
	m.client, err = kubernetes.NewForConfig(fastConfig(m.cfg))
	return err
}

// kubeconfigs returns the kubeconfigs of the first n members, by name.
func (f *fleet) kubeconfigs(n int) map[string][]byte {
	out := map[string][]byte{}
	for _, m := range f.members[:n] {
		out[m.name] = m.kubeconfig
	}
	return out
}

// shrink stops the apiservers beyond the first n.
func (f *fleet) shrink(n int) {
	if n >= len(f.members) {
		return
	}
	var wg sync.WaitGroup
	for _, m := range f.members[n:] {
		wg.Go(func() { m.proc.stop(10 * time.Second) })
	}
	wg.Wait()
	f.members = f.members[:n]
}

// close stops every apiserver (SIGCONT first: one may be stopped) and
// etcd, and removes the fleet's directory.
func (f *fleet) close() {
	f.shrink(0)
	if f.etcd != nil {
		f.etcd.stop(10 * time.Second)
	}
	if err := os.RemoveAll(f.dir); err != nil {
		f.logf("Removing %s: %v", f.dir, err)
	}
}

// rssOf returns the RSS of every running member, in member order.
func (f *fleet) rssOf() []float64 {
	var out []float64
	for _, m := range f.members {
		if rss, err := rssBytes(m.proc.pid()); err == nil {
			out = append(out, rss)
		}
	}
	return out
}

func (f *fleet) medianRSS() float64 { return median(f.rssOf()) }

// cpuOf returns the CPU seconds used so far by every member and etcd.
func (f *fleet) cpuOf() float64 {
	total := 0.0
	for _, p := range append(f.procs(), f.etcd) {
		if c, err := cpuSeconds(p.pid()); err == nil {
			total += c
		}
	}
	return total
}

func (f *fleet) procs() []*proc {
	out := make([]*proc, 0, len(f.members))
	for _, m := range f.members {
		out = append(out, m.proc)
	}
	return out
}

// fleetStats is what the fleet cost, for the report.
type fleetStats struct {
	members int
	// rss is each apiserver's RSS (median, min, max) and etcd's.
	rssMedian, rssMin, rssMax, etcdRSS float64
	// startup is the median time from exec to ready; startCPU the median
	// CPU used by then.
	startup  time.Duration
	startCPU float64
	// idleCores is the CPU all apiservers and etcd used per second of a
	// quiet window (no manager connected).
	idleCores float64
}

// stats measures the fleet's memory now and its CPU over window, with no
// manager connected.
func (f *fleet) stats(ctx context.Context, window time.Duration) (fleetStats, error) {
	s := fleetStats{members: len(f.members)}
	cpu0 := f.cpuOf()
	select {
	case <-ctx.Done():
		return s, ctx.Err()
	case <-time.After(window):
	}
	s.idleCores = (f.cpuOf() - cpu0) / window.Seconds()
	rss := f.rssOf()
	if len(rss) > 0 {
		s.rssMedian, s.rssMin, s.rssMax = median(rss), slices.Min(rss), slices.Max(rss)
	}
	s.etcdRSS, _ = rssBytes(f.etcd.pid())
	var startups []time.Duration
	var cpus []float64
	for _, m := range f.members {
		startups = append(startups, m.startup)
		cpus = append(cpus, m.startCPU)
	}
	s.startup, s.startCPU = median(startups), median(cpus)
	return s, nil
}

// signal sends sig to member m's apiserver: SIGSTOP makes it a dead member
// (its sockets stay open, nothing answers), SIGCONT brings it back.
func (m *apiMember) signal(sig syscall.Signal) error {
	if err := m.proc.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%s to %s: %w", sig, m.name, err)
	}
	m.stopped = sig == syscall.SIGSTOP
	return nil
}
