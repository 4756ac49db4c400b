package testenv

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// assetsEnv is the variable envtest reads the binaries' directory from.
const assetsEnv = "KUBEBUILDER_ASSETS"

// Cluster is one running API server: the host or a member.
type Cluster struct {
	// Name is "host" for the host and the member's name for a member.
	Name string
	// Config is an admin (system:masters) REST config for the API server.
	Config *rest.Config
	// Kubeconfig is Config as a self-contained kubeconfig file: server, CA
	// data and client certificate inline, the shape fedop reads from member
	// Secrets.
	Kubeconfig []byte
	// Client is a controller-runtime client built from Config with the
	// scheme given in Options. It talks to the API server directly, not
	// through Proxy.
	Client client.Client
	// Proxy, for members, forwards to the API server; ProxiedKubeconfig
	// points at it. Sever it to make the member unreachable. Nil for the
	// host.
	Proxy *Proxy
	// ProxiedKubeconfig is Kubeconfig with the server address replaced by
	// Proxy's: give it to fedop so that a test can cut fedop off.
	ProxiedKubeconfig []byte

	env *envtest.Environment
}

// Federation is a host cluster and its members, each a separate API server
// with its own etcd.
type Federation struct {
	Host    *Cluster
	Members []*Cluster
}

// Member returns the member named name, or nil.
func (f *Federation) Member(name string) *Cluster {
	for _, m := range f.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Options says what to start.
type Options struct {
	// Members are the member clusters' names. Empty means k8s-a and k8s-b,
	// the lab's defaults.
	Members []string
	// HostCRDDirectoryPaths are directories of CRD manifests installed in the
	// host before Start returns (fedop's config/crd/bases).
	HostCRDDirectoryPaths []string
	// Scheme is given to every cluster's Client; nil means client-go's.
	Scheme *runtime.Scheme
}

// HostName is the Name of the host Cluster.
const HostName = "host"

// AssetsDirectory returns the directory holding etcd and kube-apiserver:
// $KUBEBUILDER_ASSETS when set, else bin/ at the repository root (found by
// walking up from the working directory to go.mod). It returns an error that
// says to run `make tools` when the binaries are missing.
func AssetsDirectory() (string, error) {
	dir := os.Getenv(assetsEnv)
	if dir == "" {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", fmt.Errorf("%s not found in %s (run 'make tools'): %w", bin, dir, err)
		}
	}
	return dir, nil
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "hack", "tools")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root not found above the working directory")
		}
		dir = parent
	}
}

// Start starts the host and every member concurrently and returns when all
// of them serve requests. On error, whatever did start is stopped again.
// The caller stops the Federation with Stop.
func Start(opts Options) (*Federation, error) {
	assets, err := AssetsDirectory()
	if err != nil {
		return nil, err
	}
	members := opts.Members
	if len(members) == 0 {
		members = []string{"k8s-a", "k8s-b"}
	}
	sch := opts.Scheme
	if sch == nil {
		sch = scheme.Scheme
	}

	f := &Federation{Host: &Cluster{Name: HostName}}
	f.Host.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     opts.HostCRDDirectoryPaths,
		ErrorIfCRDPathMissing: len(opts.HostCRDDirectoryPaths) > 0,
		Scheme:                sch,
	}
	all := []*Cluster{f.Host}
	for _, name := range members {
		m := &Cluster{Name: name, env: &envtest.Environment{BinaryAssetsDirectory: assets, Scheme: sch}}
		f.Members = append(f.Members, m)
		all = append(all, m)
	}

	// Each API server takes seconds to start; start them side by side.
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, c := range all {
		wg.Go(func() { errs[i] = c.start(sch, c != f.Host) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, errors.Join(err, f.Stop())
	}
	return f, nil
}

func (c *Cluster) start(sch *runtime.Scheme, proxied bool) error {
	cfg, err := c.env.Start()
	if err != nil {
		return fmt.Errorf("starting %s: %w", c.Name, err)
	}
	c.Config = cfg
	c.Kubeconfig = c.env.KubeConfig
	if c.Client, err = client.New(cfg, client.Options{Scheme: sch}); err != nil {
		return fmt.Errorf("client for %s: %w", c.Name, err)
	}
	if !proxied {
		return nil
	}
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return fmt.Errorf("server address of %s: %w", c.Name, err)
	}
	if c.Proxy, err = NewProxy(u.Host); err != nil {
		return fmt.Errorf("proxy for %s: %w", c.Name, err)
	}
	kc, err := clientcmd.Load(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig of %s: %w", c.Name, err)
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + c.Proxy.Addr()
	}
	if c.ProxiedKubeconfig, err = clientcmd.Write(*kc); err != nil {
		return fmt.Errorf("kubeconfig of %s: %w", c.Name, err)
	}
	return nil
}

// Stop stops every API server and etcd that Start started. It is safe to
// call on a partly started Federation.
func (f *Federation) Stop() error {
	var errs []error
	for _, c := range append([]*Cluster{f.Host}, f.Members...) {
		if c == nil {
			continue
		}
		if c.Proxy != nil {
			if err := c.Proxy.Close(); err != nil {
				errs = append(errs, fmt.Errorf("stopping the proxy of %s: %w", c.Name, err))
			}
			c.Proxy = nil
		}
		if c.env == nil {
			continue
		}
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", c.Name, err))
		}
		c.env = nil
	}
	return errors.Join(errs...)
}

// StartForTest starts a Federation for t and stops it when t ends. It fails
// t, rather than skipping it, when the binaries are missing: a skipped
// integration test is not a passing one.
func StartForTest(t testing.TB, opts Options) *Federation {
	t.Helper()
	f, err := Start(opts)
	if err != nil {
		t.Fatalf("starting the test federation: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the test federation: %v", err)
		}
	})
	return f
}
