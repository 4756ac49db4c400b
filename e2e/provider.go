package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Manager controls the fedop-manager under test: one manager, pointed at
// the host cluster, run with a short member probe period (1s) so that a
// member fault is noticed within seconds. Every method waits until what it
// did has taken effect, bounded by ctx.
type Manager interface {
	// Start starts the manager unless it is running, and returns once it
	// reconciles (its FederationCluster controller's workers started). It
	// fails when the manager exits while starting.
	Start(ctx context.Context) error
	// Stop stops the manager gracefully (SIGTERM, or the platform's
	// equivalent) and returns once it has exited.
	Stop(ctx context.Context) error
	// Kill kills the manager without warning (SIGKILL: no deferred code,
	// no cache flush, no released lock) and returns once it has exited.
	Kill(ctx context.Context) error
	// Restart is Stop then Start.
	Restart(ctx context.Context) error
	// Running reports whether the manager runs and, if it does, an
	// identifier of the running instance (a pid, a pod UID and restart
	// count) that changes whenever it is started again: a test compares two
	// identifiers to prove the manager was not restarted in between.
	Running(ctx context.Context) (id string, running bool, err error)
}

// MemberFaults takes a member cluster's API server down and brings it up
// again. Down means the API server stops answering (requests hang; it is
// not a clean refusal), while what runs around it (its scheduler, its
// nodes, the pods) is left alone. Both methods take a member name from
// Config.Members and return once the change has taken effect.
type MemberFaults interface {
	// Down takes the member's API server down.
	Down(ctx context.Context, member string) error
	// Up brings it back and returns once it answers /readyz.
	Up(ctx context.Context, member string) error
	// Partition cuts the manager off member: from the manager's side the
	// member's API server stops answering (its packets are dropped, its
	// connections hang), while the member, its pods and the suite's own
	// connections to it go on. Heal undoes it.
	Partition(ctx context.Context, member string) error
	Heal(ctx context.Context, member string) error
}

// RegisterOptions are the options of a registration.
type RegisterOptions struct {
	// RevokeOldTokens makes every credential issued to fedop in the member
	// before this registration invalid (hack/register-member.sh
	// --revoke-old-tokens).
	RevokeOldTokens bool
}

// Registrar registers member clusters on the host, as a user would.
type Registrar interface {
	// Register writes the registration Secret name on the host for the
	// member cluster cluster (a name from Config.Members): fresh
	// credentials, least privilege, and the API address at which the
	// manager reaches that cluster. Registering one cluster under a second
	// name is allowed: fedop then sees two members. Registering an existing
	// name again rotates its credentials.
	Register(ctx context.Context, name, cluster string, opts RegisterOptions) error
}

// Provider bundles the fault interfaces of one kind of environment.
type Provider struct {
	// Name is the provider's name, as in Config.Provider.
	Name      string
	Manager   Manager
	Members   MemberFaults
	Registrar Registrar
}

// NewProvider returns the provider cfg names. cfg must be Complete.
func NewProvider(cfg Config) (*Provider, error) {
	switch cfg.Provider {
	case ProviderLab:
		return newLabProvider(cfg)
	case ProviderKind:
		return newKindProvider(cfg)
	default:
		return nil, fmt.Errorf("unknown provider %q (known: %s, %s)", cfg.Provider, ProviderLab, ProviderKind)
	}
}

// readyzClients returns, for every member in cfg, a client for probing its
// /readyz with a 2s timeout per request: MemberFaults.Up waits on it.
func readyzClients(cfg Config) (map[string]rest.Interface, error) {
	clients := map[string]rest.Interface{}
	for _, m := range cfg.Members {
		rc, err := RESTConfig(m.Kubeconfig)
		if err != nil {
			return nil, err
		}
		rc.Timeout = 2 * time.Second
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.Name, err)
		}
		clients[m.Name] = cs.Discovery().RESTClient()
	}
	return clients, nil
}

// waitFor polls cond every interval, at once first, until it is true, it
// fails, or ctx ends. Ending with ctx, the error says what was awaited.
func waitFor(ctx context.Context, interval time.Duration, cond func() (bool, error), format string, args ...any) error {
	err := wait.PollUntilContextCancel(ctx, interval, true, func(context.Context) (bool, error) {
		return cond()
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("waiting for %s: %w", fmt.Sprintf(format, args...), err)
	}
	return err
}
