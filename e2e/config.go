package e2e

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment variables the suite reads; a flag of the same meaning wins
// over its variable.
const (
	// EnvProvider names the provider: "lab" (the default) or "kind".
	EnvProvider = "E2E_PROVIDER"
	// EnvHostKubeconfig is the path of the host cluster's kubeconfig.
	EnvHostKubeconfig = "E2E_HOST_KUBECONFIG"
	// EnvMemberKubeconfigs lists the member clusters as name=path pairs,
	// separated by commas, in the order the suite uses them: the first two
	// take the places of k8s-a and k8s-b in the sample.
	EnvMemberKubeconfigs = "E2E_MEMBER_KUBECONFIGS"
	// EnvLabDir is the environment's state directory: for the lab its
	// kubeconfigs, kwok workdir, manager log and pid (default: the host
	// kubeconfig's directory); for kind, where the logs of the manager pods
	// the suite kills or stops are saved (default: none saved).
	EnvLabDir = "E2E_LAB_DIR"
	// EnvManagerBinary is the fedop-manager binary the lab provider runs.
	// Default: <repository>/bin/fedop-manager.
	EnvManagerBinary = "E2E_MANAGER_BINARY"
	// EnvRepoRoot is the repository root (samples, hack/ scripts). Default:
	// the nearest directory above the working directory holding fedop's
	// go.mod.
	EnvRepoRoot = "E2E_REPO_ROOT"
	// EnvKindPrefix is the prefix of the kind clusters' names (kind
	// provider): member k8s-a is kind cluster <prefix>k8s-a. Default
	// "fedop-", as hack/kind/up.sh names them.
	EnvKindPrefix = "E2E_KIND_PREFIX"
	// EnvWorkloadImage is the image repository (no tag) that every pod of
	// the suite runs instead of the sample's images, keeping their tags:
	// where pods really run, the images must exist on the nodes. Default
	// empty: the sample's images, which fake nodes never pull.
	EnvWorkloadImage = "E2E_WORKLOAD_IMAGE"
	// EnvWorkloadPort is the port of the workload image's HTTP server; with
	// a workload image, every container gets an HTTP readiness probe of
	// path / on it, so that Ready means a container really answered.
	// Default 8080.
	EnvWorkloadPort = "E2E_WORKLOAD_PORT"
	// EnvEtcdImage is the repository of fedop's etcd image
	// (hack/kind/etcd-images.sh) and EnvEtcdVersions its two tags, the
	// versions an upgrade moves between, comma-separated; EnvEtcdCheckImage
	// is the etcdcheck image with its tag. Without them the etcd scenarios
	// are skipped (make e2e-etcd sets them).
	EnvEtcdImage      = "E2E_ETCD_IMAGE"
	EnvEtcdVersions   = "E2E_ETCD_VERSIONS"
	EnvEtcdCheckImage = "E2E_ETCDCHECK_IMAGE"
)

// ProviderLab is the provider name of the local lab (hack/lab.sh).
const ProviderLab = "lab"

// Defaults of the kind provider and the workload.
const (
	DefaultKindPrefix   = "fedop-"
	DefaultWorkloadPort = 8080
)

// MemberCluster is one member cluster given to the suite: its name (the
// name fedop knows it by, its registration Secret's name) and the path of
// an administrator's kubeconfig for it.
type MemberCluster struct {
	Name       string
	Kubeconfig string
}

// Config is what the suite is given. Fill it with RegisterFlags (flags,
// defaulted from the environment) and check it with Complete.
type Config struct {
	// Provider names the Provider implementation: ProviderLab, or another
	// that NewProvider knows.
	Provider string
	// HostKubeconfig is the path of the host cluster's kubeconfig.
	HostKubeconfig string
	// Members are the member clusters, in order; at least two.
	Members []MemberCluster
	// RepoRoot is the repository root: config/samples and hack/ live there.
	RepoRoot string
	// LabDir is the state directory (EnvLabDir): the lab's, or where the kind
	// provider saves manager logs.
	LabDir string
	// ManagerBinary is the fedop-manager binary (lab provider only).
	ManagerBinary string
	// KindPrefix is the prefix of the kind clusters' names (kind provider
	// only): member m is kind cluster KindPrefix+m.
	KindPrefix string
	// WorkloadImage, if set, is the image repository every pod of the suite
	// runs, with the sample's tags; WorkloadPort is its HTTP port, probed
	// for readiness.
	WorkloadImage string
	WorkloadPort  int
	// EtcdImage (repository), EtcdVersions (at least two tags) and
	// EtcdCheckImage (with its tag) are the etcd scenarios' images; empty:
	// those scenarios are skipped.
	EtcdImage      string
	EtcdVersions   []string
	EtcdCheckImage string
}

// RegisterFlags defines the suite's flags on fs, each defaulted from its
// environment variable. Call it before fs is parsed (flag.Parse in
// TestMain), then Complete.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Provider, "e2e.provider", envOr(EnvProvider, ProviderLab), "Provider of the fault interfaces: lab or kind. Env "+EnvProvider+".")
	fs.StringVar(&c.HostKubeconfig, "e2e.host-kubeconfig", os.Getenv(EnvHostKubeconfig), "Path of the host cluster's kubeconfig. Env "+EnvHostKubeconfig+".")
	fs.Func("e2e.member-kubeconfigs", "Member clusters as name=path[,name=path...], in order. Env "+EnvMemberKubeconfigs+".", func(s string) error {
		m, err := ParseMembers(s)
		c.Members = m
		return err
	})
	fs.StringVar(&c.RepoRoot, "e2e.repo-root", os.Getenv(EnvRepoRoot), "Repository root. Env "+EnvRepoRoot+"; default: found from the working directory.")
	fs.StringVar(&c.LabDir, "e2e.lab-dir", os.Getenv(EnvLabDir), "Lab state directory (lab provider). Env "+EnvLabDir+"; default: the host kubeconfig's directory.")
	fs.StringVar(&c.KindPrefix, "e2e.kind-prefix", envOr(EnvKindPrefix, DefaultKindPrefix), "Prefix of the kind clusters' names (kind provider). Env "+EnvKindPrefix+".")
	fs.StringVar(&c.WorkloadImage, "e2e.workload-image", os.Getenv(EnvWorkloadImage), "Image repository (no tag) every pod runs instead of the sample's images, keeping their tags. Env "+EnvWorkloadImage+".")
	port, _ := strconv.Atoi(envOr(EnvWorkloadPort, strconv.Itoa(DefaultWorkloadPort)))
	fs.IntVar(&c.WorkloadPort, "e2e.workload-port", port, "HTTP port of the workload image, probed for readiness. Env "+EnvWorkloadPort+".")
	fs.StringVar(&c.EtcdImage, "e2e.etcd-image", os.Getenv(EnvEtcdImage), "Repository of the etcd image (no tag). Env "+EnvEtcdImage+".")
	fs.Func("e2e.etcd-versions", "Tags of the etcd image, comma-separated, the first the one created. Env "+EnvEtcdVersions+".", func(v string) error {
		c.EtcdVersions = strings.Split(v, ",")
		return nil
	})
	if v := os.Getenv(EnvEtcdVersions); v != "" {
		c.EtcdVersions = strings.Split(v, ",")
	}
	fs.StringVar(&c.EtcdCheckImage, "e2e.etcdcheck-image", os.Getenv(EnvEtcdCheckImage), "The etcdcheck image, with its tag. Env "+EnvEtcdCheckImage+".")
	fs.StringVar(&c.ManagerBinary, "e2e.manager-binary", os.Getenv(EnvManagerBinary), "fedop-manager binary (lab provider). Env "+EnvManagerBinary+"; default: <repo>/bin/fedop-manager.")
	// fs.Func has no default: take the environment's now, so that a flag
	// given on the command line replaces it.
	if v := os.Getenv(EnvMemberKubeconfigs); v != "" {
		if m, err := ParseMembers(v); err == nil {
			c.Members = m
		}
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// ParseMembers parses a member list: name=path pairs separated by commas.
// Names must be unique and paths non-empty.
func ParseMembers(s string) ([]MemberCluster, error) {
	var out []MemberCluster
	seen := map[string]bool{}
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, path, ok := strings.Cut(item, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("member %q: want name=path", item)
		}
		if seen[name] {
			return nil, fmt.Errorf("member %q is listed twice", name)
		}
		seen[name] = true
		out = append(out, MemberCluster{Name: name, Kubeconfig: path})
	}
	return out, nil
}

// Complete checks c and fills its defaults: RepoRoot from the working
// directory, LabDir and ManagerBinary for the lab provider. The errors say
// which setting is missing and which flag or variable sets it.
func (c *Config) Complete() error {
	var errs []error
	if c.HostKubeconfig == "" {
		errs = append(errs, fmt.Errorf("no host kubeconfig: set -e2e.host-kubeconfig or %s", EnvHostKubeconfig))
	} else if _, err := os.Stat(c.HostKubeconfig); err != nil {
		errs = append(errs, fmt.Errorf("host kubeconfig: %w", err))
	}
	if len(c.Members) < 2 {
		errs = append(errs, fmt.Errorf("%d member clusters given, the suite needs two: set -e2e.member-kubeconfigs or %s to name=path,name=path",
			len(c.Members), EnvMemberKubeconfigs))
	}
	for _, m := range c.Members {
		if _, err := os.Stat(m.Kubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("member %s kubeconfig: %w", m.Name, err))
		}
	}
	if c.RepoRoot == "" {
		root, err := findRepoRoot()
		if err != nil {
			errs = append(errs, err)
		}
		c.RepoRoot = root
	}
	if c.WorkloadImage != "" {
		if strings.Contains(c.WorkloadImage[strings.LastIndex(c.WorkloadImage, "/")+1:], ":") || strings.Contains(c.WorkloadImage, "@") {
			errs = append(errs, fmt.Errorf("workload image %q: give a repository without tag or digest; the sample's tags are kept", c.WorkloadImage))
		}
		if c.WorkloadPort < 1 || c.WorkloadPort > 65535 {
			errs = append(errs, fmt.Errorf("workload port %d: want 1-65535", c.WorkloadPort))
		}
	}
	if c.Provider == ProviderKind && c.KindPrefix == "" {
		c.KindPrefix = DefaultKindPrefix
	}
	if c.Provider == ProviderLab {
		if c.LabDir == "" && c.HostKubeconfig != "" {
			c.LabDir = filepath.Dir(c.HostKubeconfig)
		}
		if c.ManagerBinary == "" && c.RepoRoot != "" {
			c.ManagerBinary = filepath.Join(c.RepoRoot, "bin", "fedop-manager")
		}
	}
	return errors.Join(errs...)
}

// Member returns the member cluster called name.
func (c *Config) Member(name string) (MemberCluster, bool) {
	for _, m := range c.Members {
		if m.Name == name {
			return m, true
		}
	}
	return MemberCluster{}, false
}

// RESTConfig loads a kubeconfig file into a rest.Config with rates fit for
// a test driving several clusters at once (client-go's 5 QPS would make
// the suite, not fedop, the slow part).
func RESTConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "fedop-e2e"
	return cfg, nil
}

// findRepoRoot returns the nearest directory at or above the working
// directory whose go.mod declares fedop's module.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(data), "module github.com/fedop-io/fedop\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no fedop go.mod above the working directory: set -e2e.repo-root or %s", EnvRepoRoot)
		}
		dir = parent
	}
}
