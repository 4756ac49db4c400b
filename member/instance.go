package member

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
)

// Client settings of every member cluster. client-go's defaults (5 QPS, 10
// burst) are sized for kubectl; one operator serving a member's
// reconciles needs more, but not enough to crowd out the member's own
// controllers.
const (
	memberQPS   = 50
	memberBurst = 100
)

// errStopped is returned when a member would start after the manager
// stopped.
var errStopped = errors.New("the member registry is stopped")

// instance is one running cluster.Cluster of a member, built from one
// kubeconfig. Its lifetime is its context's: cancel stops its cache.
// A member gets a new instance when its kubeconfig changes.
type instance struct {
	name string
	// hash is the hex sha256 of the kubeconfig bytes it was built from,
	// and cfg what was made of them: a resync builds the next instance
	// from the same.
	hash    string
	cfg     *rest.Config
	cluster cluster.Cluster
	// namespaces restrict its cache (AnnotationNamespaces); nil: all.
	namespaces []string
	// creds are the credentials of cfg, as the Secret describes them.
	creds credentials
	// informers are the informers of Options.Objects, in that order.
	informers []cache.Informer
	// prober sends the /readyz probes, over the cluster's HTTP client.
	prober rest.Interface
	// ctx is the instance's context; it ends when the instance stops.
	ctx    context.Context
	cancel context.CancelFunc
	// watches holds the names of the Watchers started on its cache
	// (Registry.Watch), guarded by the registry's mu.
	watches map[string]bool
	// lastEvent is when its cache last received an event, in Unix
	// nanoseconds: word from the member that costs no request.
	lastEvent atomic.Int64
}

// stop cancels the instance's context. It does not wait: the cache stops
// on its own and stopAll waits for it at shutdown.
func (in *instance) stop() {
	in.cancel()
}

// start builds, starts and syncs a new instance for member name from cfg,
// within Options.SyncTimeout, its cache restricted to namespaces (nil:
// every namespace). hash identifies the registration cfg came from. On
// error nothing of the instance keeps running.
func (r *Registry) start(name, hash string, cfg *rest.Config, namespaces []string) (*instance, error) {
	base := cfg
	cfg = rest.CopyConfig(cfg)
	// The member's audit log then says which member connection of fedop
	// made a request.
	cfg.UserAgent = "fedop-member-cluster/" + name
	cfg.QPS, cfg.Burst = memberQPS, memberBurst

	log := r.log.WithValues("member", name)
	// The member's context is a child of the registry's, not of the
	// reconcile's: the member outlives the reconcile that started it.
	mctx, cancel := context.WithCancel(ctrl.LoggerInto(r.ctx, log))
	var in *instance
	cl, err := cluster.New(cfg, func(o *cluster.Options) {
		o.Scheme = r.opts.Scheme
		o.Logger = log
		o.Cache.DefaultLabelSelector = r.opts.CacheSelector
		o.Cache.DefaultTransform = r.transform()
		if len(namespaces) > 0 {
			o.Cache.DefaultNamespaces = map[string]cache.Config{}
			for _, ns := range namespaces {
				o.Cache.DefaultNamespaces[ns] = cache.Config{}
			}
		}
		o.Cache.DefaultWatchErrorHandler = func(ctx context.Context, rf *toolscache.Reflector, err error) {
			// A watch that broke (other than a normal close) may have
			// missed events until it resumes or re-lists: the cache is
			// not trusted until a new one has listed the member.
			if !errors.Is(err, io.EOF) {
				r.interrupted(in)
			}
			toolscache.DefaultWatchErrorHandler(ctx, rf, err)
		}
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the cluster: %w", err)
	}
	prober, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, cl.GetHTTPClient())
	if err != nil {
		cancel()
		return nil, fmt.Errorf("creating the probe client: %w", err)
	}
	in = &instance{name: name, hash: hash, cfg: base, namespaces: namespaces, cluster: cl, prober: prober.RESTClient(),
		ctx: mctx, cancel: cancel, watches: map[string]bool{}}

	// Discovery (to map the Objects to resources) does not honour a
	// context, so the whole preparation runs aside and the wait for it is
	// what is bounded: a member that does not answer costs SyncTimeout, not
	// a TCP timeout per request.
	syncCtx, cancelSync := context.WithTimeout(mctx, r.opts.SyncTimeout)
	defer cancelSync()
	done := make(chan error, 1)
	go func() { done <- r.prepare(mctx, syncCtx, in) }()
	select {
	case err = <-done:
	case <-syncCtx.Done():
		err = fmt.Errorf("not started and synced within %s", r.opts.SyncTimeout)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return in, nil
}

// transform returns the member caches' transform: managedFields are large
// and fedop never reads them, then Options.Transform.
func (r *Registry) transform() toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	if r.opts.Transform == nil {
		return strip
	}
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return nil, err
		}
		return r.opts.Transform(obj)
	}
}

// prepare creates in's informers for Options.Objects, starts the cluster
// under mctx and waits, until syncCtx ends, for its cache to sync. The
// informers are created before the cache starts so that they are among
// what it syncs.
func (r *Registry) prepare(mctx, syncCtx context.Context, in *instance) error {
	c := in.cluster.GetCache()
	for _, ix := range r.opts.IndexFields {
		// IndexFields is shared by every member, like Objects.
		if err := c.IndexField(syncCtx, ix.Object.DeepCopyObject().(client.Object), ix.Field, ix.Extract); err != nil {
			return fmt.Errorf("adding the index %s of %T: %w", ix.Field, ix.Object, err)
		}
	}
	for _, obj := range r.opts.Objects {
		// Objects is shared by every member; the cache gets its own copy.
		inf, err := c.GetInformer(syncCtx, obj.DeepCopyObject().(client.Object))
		if err != nil {
			return fmt.Errorf("creating the informer for %T: %w", obj, err)
		}
		in.informers = append(in.informers, inf)
		// Every event is word from the member: it stamps lastEvent.
		stamp := func(any) { in.lastEvent.Store(r.opts.Clock.Now().UnixNano()) }
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    stamp,
			UpdateFunc: func(_, obj any) { stamp(obj) },
			DeleteFunc: stamp,
		}); err != nil {
			return fmt.Errorf("adding the freshness handler for %T: %w", obj, err)
		}
	}

	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return errStopped
	}
	// Added under the lock that stopAll takes before it waits, so that
	// the Add happens before the Wait.
	r.running.Add(1)
	r.mu.Unlock()
	go func() {
		defer r.running.Done()
		if err := in.cluster.Start(mctx); err != nil && mctx.Err() == nil {
			ctrl.LoggerFrom(mctx).Error(err, "Member cluster stopped")
			// Stop the instance so that a pending sync fails at once and
			// probes do not report a cache that no longer runs as healthy.
			in.cancel()
		}
	}()

	if !c.WaitForCacheSync(syncCtx) {
		if err := mctx.Err(); err != nil {
			return fmt.Errorf("the cache stopped before it synced: %w", err)
		}
		return fmt.Errorf("the cache did not sync within %s", r.opts.SyncTimeout)
	}
	return nil
}
