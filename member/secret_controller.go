package member

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// controllerName names the Secret controller and the events it records.
const controllerName = "fedop-member-cluster"

// maxConcurrentReconciles lets that many members start at once: a start
// can take SyncTimeout when a member does not answer, and such members
// must not hold up the others.
const maxConcurrentReconciles = 8

// maxEventNote is the length an event's note is cut to: the events API
// rejects notes over 1 kB.
const maxEventNote = 1000

// SetupWithManager registers the registry with mgr, the host cluster's
// manager: a controller for the registration Secrets (those in
// Options.Namespace labelled LabelMemberCluster=true), and a Runnable that
// probes the members and, when mgr stops, stops them all.
//
// The controller reads Secrets through mgr's cache, so that cache must be
// allowed to list and watch Secrets in Options.Namespace (RBAC, and the
// cache's DefaultNamespaces or ByObject if they restrict it). Restricting
// the cache's Secrets to that namespace and label (ByObject) is advised:
// otherwise the manager caches every Secret it can see. Events are
// recorded on the Secrets with mgr's event recorder. It returns an error
// when Options.CacheSelector is missing or the controller or the Runnable
// cannot be added.
func (r *Registry) SetupWithManager(mgr ctrl.Manager) error {
	if r.opts.CacheSelector == nil {
		return errNoCacheSelector
	}
	r.reader = mgr.GetClient()
	r.client = mgr.GetClient()
	r.recorder = mgr.GetEventRecorder(controllerName)
	r.log = mgr.GetLogger().WithName("member")
	if err := mgr.Add(manager.RunnableFunc(r.run)); err != nil {
		return fmt.Errorf("adding the member probes: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(r.initialPass)); err != nil {
		return fmt.Errorf("adding the initial member pass: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(controllerName).
		For(&corev1.Secret{}, builder.WithPredicates(r.registrationPredicate())).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrentReconciles}).
		Complete(reconcile.Func(r.reconcileSecret))
	if err != nil {
		return fmt.Errorf("adding the member cluster Secret controller: %w", err)
	}
	return nil
}

// registrationPredicate passes the events of registration Secrets. An
// update passes when the old or the new Secret is one, so that removing
// the label reaches the reconciler, which then forgets the member.
func (r *Registry) registrationPredicate() predicate.Predicate {
	is := func(o client.Object) bool {
		return o != nil && o.GetNamespace() == r.opts.Namespace && o.GetLabels()[LabelMemberCluster] == labelMemberClusterValue
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return is(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return is(e.ObjectOld) || is(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return is(e.Object) },
		GenericFunc: func(e event.GenericEvent) bool { return is(e.Object) },
	}
}

// isRegistration reports whether s registers a member: labelled, in the
// namespace, and not being deleted.
func (r *Registry) isRegistration(s *corev1.Secret) bool {
	return s.Namespace == r.opts.Namespace && s.Labels[LabelMemberCluster] == labelMemberClusterValue && s.DeletionTimestamp.IsZero()
}

// reconcileSecret makes the member named by the Secret req match it:
// forgotten when the Secret is gone or no longer a registration, refused
// when its name or kubeconfig cannot be used, and otherwise running a
// cluster built from the current kubeconfig. Errors that only a new Secret
// can fix are terminal; a member that does not sync returns an error, for
// the controller's rate-limited requeue to retry.
func (r *Registry) reconcileSecret(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	name := req.Name
	log := ctrl.LoggerFrom(ctx).WithValues("member", name)
	ctx = ctrl.LoggerInto(ctx, log)
	if req.Namespace != r.opts.Namespace {
		return reconcile.Result{}, nil
	}

	var secret corev1.Secret
	err := r.reader.Get(ctx, req.NamespacedName, &secret)
	if apierrors.IsNotFound(err) || (err == nil && !r.isRegistration(&secret)) {
		if old, ok := r.remove(name); ok {
			if old != nil {
				old.stop()
			}
			log.Info("Member cluster removed")
			r.notify(name)
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("getting the registration Secret: %w", err)
	}

	if r.register(name) {
		log.Info("Member cluster registered")
		r.notify(name)
	}

	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return r.refuseSecret(ctx, &secret, ReasonInvalidName,
			fmt.Sprintf("the Secret's name is the member's name and must be a DNS-1123 label: %s", strings.Join(errs, "; ")))
	}
	data, key := kubeconfigOf(&secret)
	if data == nil {
		return r.refuseSecret(ctx, &secret, ReasonInvalidKubeconfig,
			fmt.Sprintf("no kubeconfig in data key %q or %q", KubeconfigKey, KubeconfigKeyValue))
	}
	hash := registrationHash(data, &secret)
	if r.runs(name, hash) {
		if r.current(name) {
			r.notify(name)
		}
		return reconcile.Result{}, nil
	}
	cfg, err := ParseKubeconfig(data, r.opts.AllowExecKubeconfigs)
	if err != nil {
		reason := ReasonInvalidKubeconfig
		if errors.Is(err, ErrKubeconfigRefused) {
			reason = ReasonKubeconfigRefused
		}
		return r.refuseSecret(ctx, &secret, reason, fmt.Sprintf("data key %q: %v", key, err))
	}

	in, err := r.start(name, hash, cfg, namespacesOf(&secret))
	if err != nil {
		changed := r.syncFailed(name, err)
		r.event(&secret, corev1.EventTypeWarning, ReasonSyncFailed, "Connect", err.Error())
		if changed {
			r.notify(name)
		}
		return reconcile.Result{}, fmt.Errorf("starting member cluster %q: %w", name, err)
	}
	in.creds = readCredentials(&secret, cfg)
	old, ok := r.publish(name, in, nil)
	if !ok {
		in.stop()
		return reconcile.Result{}, nil
	}
	// The new cluster serves before the old one stops, so Get never
	// fails for a rotation.
	if old != nil {
		old.stop()
		log.Info("Member cluster replaced", "registrationSHA256", hash)
	} else {
		log.Info("Member cluster connected", "registrationSHA256", hash)
	}
	r.event(&secret, corev1.EventTypeNormal, "Connected", "Connect", "the member cluster's cache is synced")
	r.notify(name)
	return reconcile.Result{}, nil
}

// refuseSecret records that secret cannot be used (reason, message),
// keeping the member's running cluster if any (refuse), records a Warning
// event on the Secret and returns a terminal error: only a change to the
// Secret, which triggers a new reconcile, can fix it.
func (r *Registry) refuseSecret(ctx context.Context, secret *corev1.Secret, reason, message string) (reconcile.Result, error) {
	changed := r.refuse(secret.Name, reason, message)
	ctrl.LoggerFrom(ctx).Info("Member cluster registration refused", "reason", reason, "message", message)
	r.event(secret, corev1.EventTypeWarning, reason, "Connect", message)
	if changed {
		r.notify(secret.Name)
	}
	return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("%s: %s", reason, message))
}

// event records an event on secret, if SetupWithManager gave a recorder.
func (r *Registry) event(secret *corev1.Secret, eventType, reason, action, note string) {
	if r.recorder == nil {
		return
	}
	if len(note) > maxEventNote {
		// Cut on a byte count; drop a rune that the cut split.
		note = strings.ToValidUTF8(note[:maxEventNote], "")
	}
	r.recorder.Eventf(secret, nil, eventType, reason, action, "%s", note)
}

// registrationHash is the hex sha256 that decides whether a registration
// changed: of the kubeconfig bytes data and, when secret restricts the
// member to namespaces (AnnotationNamespaces), of those too, as they
// shape the member's cache.
func registrationHash(data []byte, secret *corev1.Secret) string {
	h := sha256.New()
	h.Write(data)
	if ns := namespacesOf(secret); len(ns) > 0 {
		h.Write([]byte("\x00namespaces=" + strings.Join(ns, ",")))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// kubeconfigOf returns the kubeconfig in secret and its data key:
// KubeconfigKey, else KubeconfigKeyValue; nil when neither holds any.
func kubeconfigOf(secret *corev1.Secret) ([]byte, string) {
	for _, key := range []string{KubeconfigKey, KubeconfigKeyValue} {
		if data := secret.Data[key]; len(data) > 0 {
			return data, key
		}
	}
	return nil, ""
}

// initialPass closes r.initial once every registration Secret present at
// start has had its first connection attempt, bounded by SyncTimeout (plus
// a margin): members connect in parallel, so a dead one delays the start by
// at most that. The controller of Source starts its workers only
// after it, so their first reconciles do not mistake "not read yet" for "not
// registered" and report members missing that are merely starting.
func (r *Registry) initialPass(ctx context.Context) error {
	defer close(r.initial)
	var list corev1.SecretList
	if err := r.reader.List(ctx, &list, client.InNamespace(r.opts.Namespace), client.MatchingLabels{LabelMemberCluster: labelMemberClusterValue}); err != nil {
		r.log.Error(err, "Listing member cluster Secrets for the initial pass; not waiting for them")
		return nil
	}
	attempted := func(context.Context) (bool, error) {
		for i := range list.Items {
			st := r.State(list.Items[i].Name)
			if !st.Registered || st.Reason == ReasonConnecting {
				return false, nil
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, r.opts.SyncTimeout+5*time.Second, true, attempted); err != nil && ctx.Err() == nil {
		r.log.Info("Not every member cluster was attempted in time; starting anyway", "members", len(list.Items))
	}
	return nil
}
