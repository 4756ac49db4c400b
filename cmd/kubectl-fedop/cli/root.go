package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/internal/version"
	"github.com/fedop-io/fedop/member"
)

// fieldManager is the field manager of every write kubectl fedop makes.
const fieldManager = "kubectl-fedop"

// Options is what every command shares: the host connection, the streams,
// the clock, and how to reach a member. Tests replace the functions.
type Options struct {
	genericiooptions.IOStreams
	// ConfigFlags are --kubeconfig, --context, -n and the rest, for the
	// host cluster.
	ConfigFlags *genericclioptions.ConfigFlags
	// FedopNamespace is the host namespace of the member Secrets
	// (fedop-manager's --member-namespace).
	FedopNamespace string
	// HostConfig returns the host cluster's client configuration (join
	// probes it and writes with it).
	HostConfig func() (*rest.Config, error)
	// Host returns a client of the host cluster.
	Host func() (client.WithWatch, error)
	// Member returns a client of the member cluster whose registration
	// Secret holds kubeconfig (plan reads the member's pods with it).
	Member func(name string, kubeconfig []byte) (client.Client, error)
	// Now is the clock.
	Now func() time.Time
	// IsTerminal says whether Out is a terminal (status -w redraws then).
	IsTerminal func() bool
}

// Scheme is the scheme of kubectl fedop's clients: client-go's types and
// fedop.io/v1alpha1.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// NewCommand returns the root command of kubectl fedop, writing to
// streams and reaching the host through the usual kubeconfig flags.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	// Every request names the plugin's version (version.UserAgent), in the
	// host's audit log and in the members'.
	userAgent := version.UserAgent("kubectl-fedop")
	flags := genericclioptions.NewConfigFlags(true).WithWrapConfigFn(func(c *rest.Config) *rest.Config {
		c.UserAgent = userAgent
		return c
	})
	o := &Options{IOStreams: streams, ConfigFlags: flags, FedopNamespace: member.DefaultNamespace, Now: time.Now}
	o.HostConfig = o.ConfigFlags.ToRESTConfig
	o.Host = func() (client.WithWatch, error) {
		cfg, err := o.HostConfig()
		if err != nil {
			return nil, err
		}
		return client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
	}
	o.Member = func(_ string, kubeconfig []byte) (client.Client, error) {
		cfg, err := member.ParseKubeconfig(kubeconfig, false)
		if err != nil {
			return nil, err
		}
		cfg = rest.CopyConfig(cfg)
		cfg.Timeout = 10 * time.Second
		cfg.UserAgent = userAgent
		return client.New(cfg, client.Options{Scheme: Scheme()})
	}
	o.IsTerminal = func() bool { return isTerminal(o.Out) }
	return o.NewRootCommand()
}

// NewRootCommand returns the root command for o.
func (o *Options) NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use: "kubectl-fedop",
		// Shown as kubectl shows plugins: "kubectl fedop join".
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl fedop"},
		Short:       "Join member clusters to fedop and see what fedop does",
		Long: `kubectl fedop joins member clusters to a fedop host with least-privilege,
self-renewing credentials, and shows FederationClusters: where each pod is,
which revision it runs, who holds the lock, and what fedop will do next.`,
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.SetOut(o.Out)
	root.SetErr(o.ErrOut)
	o.ConfigFlags.AddFlags(root.PersistentFlags())
	root.PersistentFlags().StringVar(&o.FedopNamespace, "fedop-namespace", o.FedopNamespace,
		"The host namespace of the member cluster Secrets (fedop-manager's --member-namespace).")
	root.AddCommand(o.newJoinCommand(), o.newUnjoinCommand(), o.newMembersCommand(), o.newStatusCommand(), o.newPlanCommand())
	root.AddCommand(o.newPauseCommand(true), o.newPauseCommand(false), o.newReleaseCommand(), o.newRestartCommand())
	return root
}

// namespace is the namespace -n names, else the kubeconfig context's.
func (o *Options) namespace() (string, error) {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace: %w", err)
	}
	return ns, nil
}

// getFC reads the FederationCluster name in -n's namespace.
func (o *Options) getFC(ctx context.Context, c client.Client, name string) (*v1alpha1.FederationCluster, error) {
	ns, err := o.namespace()
	if err != nil {
		return nil, err
	}
	var fc v1alpha1.FederationCluster
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &fc); err != nil {
		return nil, fmt.Errorf("reading FederationCluster %s/%s: %w", ns, name, err)
	}
	return &fc, nil
}
