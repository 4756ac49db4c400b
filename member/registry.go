package member

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

const (
	// LabelMemberCluster is the label that marks a Secret in
	// Options.Namespace on the host as a member cluster registration. Its
	// value must be "true"; the Secret's name is the member's name.
	LabelMemberCluster = "fedop.io/member-cluster"
	// labelMemberClusterValue is LabelMemberCluster's only value.
	labelMemberClusterValue = "true"
	// KubeconfigKey is the Secret data key that holds the member's
	// kubeconfig. It wins over KubeconfigKeyValue when both are set.
	KubeconfigKey = "kubeconfig"
	// KubeconfigKeyValue is the Secret data key read when KubeconfigKey is
	// absent or empty: Cluster API writes a workload cluster's kubeconfig
	// Secret (<cluster>-kubeconfig) with the key "value", so such a Secret
	// can be copied and labelled as it is.
	KubeconfigKeyValue = "value"
	// DefaultNamespace is the host namespace searched for registration
	// Secrets when Options.Namespace is empty.
	DefaultNamespace = "fedop-system"
)

// Reasons are the values of State.Reason: one CamelCase word each, as the
// Kubernetes API conventions ask of condition reasons, so that callers can
// copy them into conditions as they are.
const (
	// ReasonNotRegistered: there is no registration Secret for the name.
	ReasonNotRegistered = "NotRegistered"
	// ReasonConnecting: the Secret was seen and the member's first cache is
	// being started; it lasts at most Options.SyncTimeout.
	ReasonConnecting = "Connecting"
	// ReasonInvalidName: the Secret's name is not a DNS-1123 label, which
	// member names must be because they are used in label values.
	ReasonInvalidName = "InvalidName"
	// ReasonInvalidKubeconfig: the Secret holds no kubeconfig, or one that
	// ParseKubeconfig cannot use (ErrInvalidKubeconfig).
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	// ReasonKubeconfigRefused: ParseKubeconfig refused the kubeconfig as
	// unsafe (ErrKubeconfigRefused).
	ReasonKubeconfigRefused = "KubeconfigRefused"
	// ReasonSyncFailed: the member's cache did not start and sync within
	// Options.SyncTimeout.
	ReasonSyncFailed = "SyncFailed"
	// ReasonProbeFailed: Options.FailureThreshold probes of /readyz in a row
	// failed.
	ReasonProbeFailed = "ProbeFailed"
	// ReasonResyncing: the member answers again after it had stopped, and
	// a new cache is listing it; until that list is done the old cache may
	// hold what was true before, so the member does not count as connected.
	ReasonResyncing = "Resyncing"
)

var (
	// ErrNotRegistered is wrapped by Registry.Get's error when no
	// registration Secret exists for the member.
	ErrNotRegistered = errors.New("member cluster not registered")
	// ErrDisconnected is wrapped by Registry.Get's error when the member is
	// registered but not connected: its kubeconfig is invalid or refused,
	// its cache did not sync, or its probes fail. The error's text carries
	// State.Reason and State.Message.
	ErrDisconnected = errors.New("member cluster not connected")
)

// The defaults of Options.
const (
	defaultProbePeriod      = time.Second
	defaultFailureThreshold = 10
	defaultSyncTimeout      = 30 * time.Second
)

// errNoCacheSelector is SetupWithManager's error for Options without a
// CacheSelector.
var errNoCacheSelector = errors.New("member.Options.CacheSelector is required: without it a member cache would hold every object of its kinds in the member")

// Options configures a Registry. CacheSelector is required; every other
// field has a default.
type Options struct {
	// Namespace is the host namespace holding registration Secrets.
	// Default DefaultNamespace.
	Namespace string
	// AllowExecKubeconfigs lets kubeconfigs use exec plugins, auth
	// providers, basic auth and file references (see ParseKubeconfig).
	// Default false: kubeconfigs are untrusted input.
	AllowExecKubeconfigs bool
	// ProbePeriod is the freshness bound: a member counts as fresh
	// (State.Fresh) only if it answered within the last ProbePeriod, a
	// /readyz probe or an event of its caches. To keep a healthy member
	// fresh, /readyz is probed twice per period, each probe bounded by half
	// a period. Default 1s: a member that stops answering stops every pod
	// deletion within a second.
	ProbePeriod time.Duration
	// FailureThreshold is the number of failed probes in a row (each half
	// a ProbePeriod apart) that mark a member disconnected
	// (ReasonProbeFailed): conditions and Events, not safety, which
	// freshness decides much sooner. Default 10, five seconds at the
	// default period.
	FailureThreshold int
	// SyncTimeout bounds the start and cache sync of one member cluster.
	// Default 30s.
	SyncTimeout time.Duration
	// Scheme is the scheme of every member cluster's cache and client.
	// Default client-go's scheme.Scheme.
	Scheme *runtime.Scheme
	// CacheSelector restricts every informer of every member cache (the
	// cache's DefaultLabelSelector): objects it does not match are never
	// listed, watched or stored. Required: the caller knows which labels
	// mark its objects (fedop: app.kubernetes.io/managed-by=fedop).
	CacheSelector labels.Selector
	// Objects are the kinds whose informers every member cache creates and
	// syncs before the member counts as connected. Default Pod, Service
	// and PersistentVolumeClaim. Other kinds can still be read through the member's client
	// or watched (Watch); their informers start on first use.
	Objects []client.Object
	// Transform, if set, is applied to every object before a member cache
	// stores it, after managedFields are stripped (federation.TrimPod keeps
	// of a pod only what the reconciler reads). Objects read from a member
	// cache are then partial: never write one back. Default none.
	Transform toolscache.TransformFunc
	// IndexFields are field indexes every member cache adds before it
	// starts (client.FieldIndexer.IndexField; each creates its kind's
	// informer, which then syncs with Objects'), so that a read of the
	// cache can select by them (client.MatchingFields) rather than match
	// every object of a namespace against a label selector. Default none.
	IndexFields []IndexField
	// Clock is the registry's source of time. Default the real clock.
	Clock clock.WithTicker
	// RenewFraction is the fraction of a token's lifetime after which the
	// registry renews it, for Secrets that name the member's
	// ServiceAccount (AnnotationServiceAccount); in (0, 1). Default 2/3.
	// Tests set it low to renew tokens the API server will not issue for
	// less than ten minutes.
	RenewFraction float64
}

// IndexField is one field index of every member cache: Extract returns
// the values under which an object of Object's kind is found by Field
// (client.MatchingFields{Field: value}, with client.InNamespace).
type IndexField struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// withDefaults returns o with every empty field set to its default.
func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.ProbePeriod <= 0 {
		o.ProbePeriod = defaultProbePeriod
	}
	if o.FailureThreshold <= 0 {
		o.FailureThreshold = defaultFailureThreshold
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = defaultSyncTimeout
	}
	if o.Scheme == nil {
		o.Scheme = clientgoscheme.Scheme
	}
	if len(o.Objects) == 0 {
		o.Objects = []client.Object{&corev1.Pod{}, &corev1.Service{}, &corev1.PersistentVolumeClaim{}}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.RenewFraction <= 0 || o.RenewFraction >= 1 {
		o.RenewFraction = defaultRenewFraction
	}
	return o
}

// State is what the Registry knows about one member cluster.
type State struct {
	// Name is the member's name: its registration Secret's name.
	Name string
	// Registered is true while a registration Secret exists.
	Registered bool
	// Connected is true while the member's cache is synced and its probes
	// pass; only then does Registry.Get return its cluster.
	Connected bool
	// Reason is one CamelCase word (the Reason* constants) saying why the
	// member is not connected; empty when it is.
	Reason string
	// Message is a human-readable detail of Reason. When connected it may
	// say that a newer kubeconfig failed and the previous one is in use.
	Message string
	// LastProbeTime is when /readyz was last probed; zero before the first
	// probe.
	LastProbeTime time.Time
	// LastHeard is when the member last answered: a successful probe, an
	// event of its cache, or the sync of a new cache.
	LastHeard time.Time
	// Fresh is true when the member is connected, answered within
	// Options.ProbePeriod and since its last failed probe, and its cache
	// reflects a list made after its last cut (a broken watch, or no
	// answer for longer than a ProbePeriod). A caller must not delete
	// anything on the word of a member that is not fresh.
	Fresh bool
	// CredentialsExpiry is when the credentials of the kubeconfig in use
	// expire (the token's exp claim or the client certificate's
	// NotAfter); zero when unknown or not connected.
	CredentialsExpiry time.Time
	// CredentialsReason is ReasonCredentialsExpiringSoon when less than a
	// tenth of the credentials' lifetime is left and renewing them failed
	// or is not possible, else empty; CredentialsMessage says when they
	// expire and why they were not renewed. Independent of Connected.
	CredentialsReason  string
	CredentialsMessage string
}

// Registry turns member cluster registration Secrets into one running
// cluster.Cluster per member, probes their health, starts watches on their
// caches for a controller (Watch) and tells it of member state changes
// (Source). Create it with NewRegistry and start it with SetupWithManager;
// its methods are safe for concurrent use.
type Registry struct {
	opts Options

	// ctx is the parent of every member's context and cancel cancels it:
	// the registry stops every member at once when the manager stops.
	ctx    context.Context
	cancel context.CancelFunc
	// running counts the goroutines running a member's cluster.Start or
	// renewing its token, so that shutdown returns only when every member
	// has stopped.
	running sync.WaitGroup

	// Set once by SetupWithManager, before the manager starts anything
	// that reads them. client writes renewed kubeconfigs into Secrets.
	reader   client.Reader
	client   client.Client
	recorder events.EventRecorder
	log      logr.Logger

	// mu guards members, the watches of their instances, events and
	// stopped, and keeps the fedop_member_connected gauge in step with
	// members. Nothing that can block or call out (starting, syncing,
	// cancelling or waiting for a cluster, starting a watch, sending an
	// event) happens while it is held.
	mu sync.Mutex
	// members holds every registered member, by name.
	members map[string]*member
	// events carry member state changes to the controllers that called
	// Source, one channel each.
	events []chan event.GenericEvent
	// stopped is set when the manager stops; no member starts after it.
	stopped bool

	// initial is closed once every registration Secret that existed when
	// the manager started has had its first connection attempt (or
	// SyncTimeout passed): until then a member's absence means "not read
	// yet", not "not registered". Source's controller waits for it.
	initial chan struct{}
}

// member is one registered member cluster.
type member struct {
	state State
	// failures is the number of failed probes in a row.
	failures int
	// inst is the running cluster; nil when none runs (never started,
	// failed, or stopped because its kubeconfig was refused).
	inst *instance
	// answered is when the member last answered a probe, or its cache
	// last synced.
	answered time.Time
	// interrupted is set when a probe failed or a watch of its cache
	// broke: the member is not fresh until it answers again.
	interrupted bool
	// cutOff is set when a watch of its cache broke, a probe found the
	// connection lost, or probes failed for longer than a ProbePeriod
	// (cutOffFailures in a row): what the cache holds may be from before,
	// and only a cache listed after the member answers again is trusted
	// (resync). A single probe that timed out or was answered not-ok,
	// followed by an answer, is a slow answer, not a cut: the cache's
	// watch streams share the probe's connection, which stayed up, so the
	// cache missed nothing; only freshness was lost meanwhile.
	cutOff bool
	// resyncing is set while that new cache is being started.
	resyncing bool
	// staleSeen is set when State reported the member not fresh while
	// connected: the caller is waiting, and is told (notify) when it is
	// fresh again.
	staleSeen bool
	// creds are inst's credentials and the state of their renewal.
	creds credentials
}

// lastHeard is when m last answered, its cache's events included.
func (m *member) lastHeard() time.Time {
	t := m.answered
	if m.inst != nil {
		if e := m.inst.lastEvent.Load(); e != 0 && time.Unix(0, e).After(t) {
			t = time.Unix(0, e)
		}
	}
	return t
}

// NewRegistry returns a Registry with opts, defaulted. Nothing runs until
// SetupWithManager's manager starts.
func NewRegistry(opts Options) *Registry {
	ctx, cancel := context.WithCancel(context.Background())
	return &Registry{
		opts:    opts.withDefaults(),
		ctx:     ctx,
		cancel:  cancel,
		log:     logr.Discard(),
		members: map[string]*member{},
		initial: make(chan struct{}),
	}
}

// Get returns the cluster of the connected member name: its client reads
// from the member's cache (restricted to Options.CacheSelector) and writes
// directly. The error wraps ErrNotRegistered when no Secret registers name,
// and ErrDisconnected (with the State's Reason and Message) when the member
// is registered but not connected. The cluster stops, and must not be used
// any more, once its kubeconfig is replaced or the member is removed; call
// Get again on each reconcile rather than keeping it.
func (r *Registry) Get(name string) (cluster.Cluster, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok {
		return nil, fmt.Errorf("member cluster %q: %w", name, ErrNotRegistered)
	}
	if !m.state.Connected || m.inst == nil {
		return nil, fmt.Errorf("member cluster %q: %w: %s: %s", name, ErrDisconnected, m.state.Reason, m.state.Message)
	}
	return m.inst.cluster, nil
}

// State returns what the registry knows of the member name, its freshness
// as of now. For a name without a Secret it is State{Name: name, Reason:
// ReasonNotRegistered}.
func (r *Registry) State(name string) State {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok {
		return State{Name: name, Reason: ReasonNotRegistered, Message: "no registration Secret"}
	}
	st := m.state
	st.LastHeard = m.lastHeard()
	st.Fresh = st.Connected && !m.interrupted && !m.resyncing && r.opts.Clock.Since(st.LastHeard) <= r.opts.ProbePeriod
	if st.Connected && !st.Fresh {
		m.staleSeen = true
	}
	return st
}

// Names returns the names of the registered members, connected or not,
// sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.members))
	for name := range r.members {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// register records that a Secret registers name, and returns true when the
// member is new.
func (r *Registry) register(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.members[name]; ok {
		return false
	}
	r.members[name] = &member{state: State{
		Name:       name,
		Registered: true,
		Reason:     ReasonConnecting,
		Message:    "starting the member cluster's cache",
	}}
	memberConnected.WithLabelValues(name).Set(0)
	return true
}

// runs reports whether name runs a cluster built from the kubeconfig
// whose sha256 is hash.
func (r *Registry) runs(name, hash string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	// An instance whose cache stopped on its own is not running: the
	// next reconcile of its Secret starts a new one.
	return ok && m.inst != nil && m.inst.hash == hash && m.inst.ctx.Err() == nil
}

// refuse records that name's registration cannot be used (reason,
// message). A running cluster is kept, as syncFailed keeps one: a Secret
// overwritten with a kubeconfig fedop refuses must not take down a working
// connection; the message says that the previous kubeconfig is still in
// use, and removing the Secret still stops it. Without a running cluster
// the member is disconnected with reason. It returns whether the member's
// Connected, Reason or Message changed.
func (r *Registry) refuse(name, reason, message string) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok {
		return false
	}
	if m.inst != nil && m.inst.ctx.Err() == nil {
		msg := fmt.Sprintf("the Secret's kubeconfig is refused (%s: %s); still using the previous one", reason, message)
		changed = m.state.Message != msg
		m.state.Message = msg
		return changed
	}
	changed = m.state.Connected || m.state.Reason != reason
	m.inst = nil
	m.failures = 0
	m.state = State{Name: name, Registered: true, Reason: reason, Message: message, LastProbeTime: m.state.LastProbeTime}
	memberConnected.WithLabelValues(name).Set(0)
	return changed
}

// current records that name's Secret holds the kubeconfig its running
// cluster was built from again: a message about a refused or failed newer
// one no longer applies. It returns whether the state changed.
func (r *Registry) current(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok || !m.state.Connected || m.state.Message == "" {
		return false
	}
	m.state.Message = ""
	return true
}

// syncFailed records that a new cluster for name did not sync, and returns
// whether the member's Reason changed. A running cluster is kept, as a
// transient failure to reach the member must not take down what works; the
// message says so.
func (r *Registry) syncFailed(name string, err error) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok {
		return false
	}
	if m.inst != nil {
		m.state.Message = fmt.Sprintf("the changed kubeconfig did not sync, still using the previous one: %v", err)
		return false
	}
	changed = m.state.Connected || m.state.Reason != ReasonSyncFailed
	m.state.Connected = false
	m.state.Reason = ReasonSyncFailed
	m.state.Message = err.Error()
	memberConnected.WithLabelValues(name).Set(0)
	return changed
}

// publish makes inst name's cluster and returns the one it replaces (to be
// stopped outside the lock). When only is set, inst replaces only that
// instance (a resync must not undo a rotation that came meanwhile). ok is
// false when inst must not run: the registry stopped, the member was
// removed, or only is no longer the member's instance.
func (r *Registry) publish(name string, inst, only *instance) (old *instance, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, found := r.members[name]
	if r.stopped || !found || (only != nil && m.inst != only) {
		return nil, false
	}
	old = m.inst
	m.inst = inst
	m.failures = 0
	m.interrupted, m.cutOff, m.resyncing, m.staleSeen = false, false, false, false
	m.answered = r.opts.Clock.Now()
	m.state = State{Name: name, Registered: true, Connected: true, LastProbeTime: m.state.LastProbeTime, CredentialsExpiry: inst.creds.notAfter}
	m.creds = inst.creds
	memberConnected.WithLabelValues(name).Set(1)
	if !inst.creds.notAfter.IsZero() {
		credentialsExpiry.WithLabelValues(name).Set(float64(inst.creds.notAfter.Unix()))
	} else {
		credentialsExpiry.DeleteLabelValues(name)
	}
	return old, true
}

// remove forgets name and returns its running cluster, for the caller to
// stop outside the lock; ok is false when name was not registered.
func (r *Registry) remove(name string) (old *instance, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.members[name]
	if !ok {
		return nil, false
	}
	delete(r.members, name)
	memberConnected.DeleteLabelValues(name)
	credentialsExpiry.DeleteLabelValues(name)
	probeDuration.DeleteLabelValues(name)
	probeFailures.DeletePartialMatch(prometheus.Labels{metricLabelMember: name})
	return m.inst, true
}

// stopAll stops every member and waits for their caches to stop. It runs
// once, when the manager stops; no member starts after it.
func (r *Registry) stopAll() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	// Every member's context is a child of r.ctx, including those still
	// starting.
	r.cancel()
	r.running.Wait()
}
