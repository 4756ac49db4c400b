package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/fedop-io/fedop/member"
)

// Names join gives the objects it creates in a member cluster.
const (
	// memberNamespace holds the member's ServiceAccount.
	memberNamespace = "fedop-system"
	// serviceAccount is the identity fedop-manager uses in the member.
	serviceAccount = "fedop-member"
	// rbacName names the Roles, RoleBindings, ClusterRole and
	// ClusterRoleBinding of that identity.
	rbacName = "fedop-member"
	// tokenRBACName names the Role and RoleBinding that let the identity
	// request tokens for itself (renewal).
	tokenRBACName = "fedop-member-token"
)

// joinLabels mark every object join creates in a member, so that unjoin
// finds them. They are not fedop's managed-by label: member caches select
// on that one, and these objects are not fedop's workload.
var joinLabels = map[string]string{"app.kubernetes.io/part-of": "fedop", "app.kubernetes.io/managed-by": fieldManager}

// Verbs of the rules join grants.
const (
	verbGet    = "get"
	verbCreate = "create"
	verbDelete = "delete"
)

// namespacedRules are what fedop-manager does in a namespace of a member,
// verb by verb (federation/act.go, discovery.go, cleanup.go, hooks.go):
// pods are created and deleted (with a UID precondition; the finalizer's
// cleanup deletes them as a collection, by fedop's labels), never updated;
// Services, EndpointSlices and claims are written by server-side apply
// (create, patch) and deleted; pods/proxy GET calls lifecycle hooks;
// Endpoints are read and deleted (the one a selector-less Service of an
// earlier fedop left behind); Events are created. The member caches list
// and watch pods, Services, EndpointSlices and claims.
func namespacedRules() []rbacv1.PolicyRule {
	applied := []string{verbGet, "list", "watch", verbCreate, "patch", verbDelete}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{verbGet, "list", "watch", verbCreate, verbDelete, "deletecollection"}},
		{APIGroups: []string{""}, Resources: []string{"pods/proxy"}, Verbs: []string{verbGet}},
		{APIGroups: []string{""}, Resources: []string{"services", "persistentvolumeclaims"}, Verbs: applied},
		{APIGroups: []string{discoveryv1.GroupName}, Resources: []string{"endpointslices"}, Verbs: applied},
		{APIGroups: []string{""}, Resources: []string{"endpoints"}, Verbs: []string{verbGet, verbDelete}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{verbCreate}},
	}
}

// clusterRules are what fedop-manager needs cluster-wide: it reads the
// StorageClass a claim names, to know whether the claim may grow
// (federation/observe.go). With clusterWide, also namespaces (fedop
// creates a FederationCluster's namespace in a member that lacks it) and
// every namespaced rule in every namespace: the registration script's
// ClusterRole.
func clusterRules(clusterWide bool) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{storagev1.GroupName}, Resources: []string{"storageclasses"}, Verbs: []string{verbGet}}}
	if clusterWide {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{verbGet, verbCreate}})
		rules = append(rules, namespacedRules()...)
	}
	return rules
}

// joinOptions are join's flags.
type joinOptions struct {
	memberKubeconfig string
	memberContext    string
	namespaces       []string
	server           string
	tokenDuration    time.Duration
	clusterWide      bool
	revokeOldTokens  bool
	dryRun           bool
}

func (o *Options) newJoinCommand() *cobra.Command {
	var jo joinOptions
	cmd := &cobra.Command{
		Use:   "join NAME --member-kubeconfig FILE (--namespaces NS,... | --cluster-wide)",
		Short: "Register a member cluster with least-privilege, self-renewing credentials",
		Long: `join registers the cluster of --member-kubeconfig as member NAME of the host
(--kubeconfig, --context): in the member, ServiceAccount fedop-system/fedop-member
with a Role and RoleBinding in each namespace of --namespaces (created if missing)
holding only what fedop does there, a ClusterRole to read StorageClasses, and
the right to request tokens for itself; a token from the TokenRequest API; on
the host, Secret NAME in fedop-system with a kubeconfig fedop-manager reads and
renews before the token expires. --cluster-wide grants the same in every
namespace instead (and namespaces get, create). Nothing is changed until both
clusters have answered. Running it again rotates the token, and takes the
rights away in namespaces no longer listed.`,
		Example: `  kubectl fedop join k8s-a --member-kubeconfig k8s-a.kubeconfig --namespaces db
  kubectl fedop join k8s-a --member-kubeconfig k8s-a.kubeconfig --cluster-wide --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.join(cmd.Context(), args[0], jo)
		},
	}
	f := cmd.Flags()
	f.StringVar(&jo.memberKubeconfig, "member-kubeconfig", "", "The member cluster's kubeconfig (an identity that may create RBAC there).")
	f.StringVar(&jo.memberContext, "member-context", "", "The context of --member-kubeconfig to use; its current context when empty.")
	f.StringSliceVar(&jo.namespaces, "namespaces", nil, "The member namespaces fedop may use (its FederationClusters' namespaces), comma-separated.")
	f.StringVar(&jo.server, "server", "",
		"The https URL fedop-manager reaches the member's API server at, when not the kubeconfig's (kind: https://<cluster>-control-plane:6443).")
	f.DurationVar(&jo.tokenDuration, "token-duration", 24*time.Hour, "The lifetime of the token (and of each renewed one); the member's API server may cap it.")
	f.BoolVar(&jo.clusterWide, "cluster-wide", false,
		"Grant fedop's rights in every namespace of the member, and namespaces get, create (the registration script's behaviour).")
	f.BoolVar(&jo.revokeOldTokens, "revoke-old-tokens", false, "Recreate the ServiceAccount first, so that every token minted before stops working.")
	f.BoolVar(&jo.dryRun, "dry-run", false, "Print the objects join would create in both clusters, and change nothing.")
	_ = cmd.MarkFlagRequired("member-kubeconfig")
	return cmd
}

// memberAccess is what join read of the member's kubeconfig.
type memberAccess struct {
	cfg    *rest.Config
	server string
	caData []byte
}

// loadMember reads the member kubeconfig and its context.
func loadMember(path, kubeContext, server string) (*memberAccess, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("member kubeconfig %s: %w", path, err)
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, fmt.Errorf("member kubeconfig %s: %w", path, err)
	}
	if len(cfg.CAData) == 0 {
		return nil, fmt.Errorf("member kubeconfig %s has no CA for its cluster; fedop does not connect without TLS verification", path)
	}
	if server == "" {
		server = cfg.Host
	}
	return &memberAccess{cfg: cfg, server: server, caData: cfg.CAData}, nil
}

// checkJoin validates join's arguments.
func checkJoin(name string, jo joinOptions) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("member name %q must be a DNS-1123 label: %s", name, strings.Join(errs, "; "))
	}
	if jo.server != "" && !strings.HasPrefix(jo.server, "https://") {
		return fmt.Errorf("--server %s: must be an https:// URL", jo.server)
	}
	if len(jo.namespaces) == 0 && !jo.clusterWide {
		return errors.New("name the namespaces fedop may use with --namespaces, or grant every namespace with --cluster-wide")
	}
	if len(jo.namespaces) > 0 && jo.clusterWide {
		return errors.New("--namespaces and --cluster-wide exclude each other")
	}
	for _, ns := range jo.namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("--namespaces: %q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if jo.tokenDuration < 10*time.Minute {
		return fmt.Errorf("--token-duration %s: the API server issues tokens for 10m at least", jo.tokenDuration)
	}
	return nil
}

// memberObjects returns what join applies in the member, in order.
func memberObjects(jo joinOptions) []client.Object {
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: joinLabels}
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: memberNamespace, Name: serviceAccount}}
	objs := make([]client.Object, 0, 6+3*len(jo.namespaces))
	objs = append(objs,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: memberNamespace}},
		&corev1.ServiceAccount{ObjectMeta: meta(memberNamespace, serviceAccount)},
		&rbacv1.Role{ObjectMeta: meta(memberNamespace, tokenRBACName), Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{verbCreate}, ResourceNames: []string{serviceAccount},
		}}},
		&rbacv1.RoleBinding{ObjectMeta: meta(memberNamespace, tokenRBACName), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: tokenRBACName}},
		&rbacv1.ClusterRole{ObjectMeta: meta("", rbacName), Rules: clusterRules(jo.clusterWide)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", rbacName), Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbacName}},
	)
	for _, ns := range jo.namespaces {
		objs = append(objs,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&rbacv1.Role{ObjectMeta: meta(ns, rbacName), Rules: namespacedRules()},
			&rbacv1.RoleBinding{ObjectMeta: meta(ns, rbacName), Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: rbacName}})
	}
	return objs
}

// hostObjects returns what join applies on the host: the namespace and the
// registration Secret with kubeconfig.
func (o *Options) hostObjects(name string, jo joinOptions, kubeconfig []byte) []client.Object {
	ann := map[string]string{
		member.AnnotationServiceAccount: memberNamespace + "/" + serviceAccount,
		member.AnnotationTokenDuration:  jo.tokenDuration.String(),
	}
	if len(jo.namespaces) > 0 {
		ann[member.AnnotationNamespaces] = strings.Join(jo.namespaces, ",")
	}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.FedopNamespace}},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.FedopNamespace, Name: name, Labels: map[string]string{member.LabelMemberCluster: "true"}, Annotations: ann},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{member.KubeconfigKey: kubeconfig},
		},
	}
}

// memberKubeconfig is the kubeconfig fedop-manager uses for member name:
// server, CA data and token inline, no file and no command.
func memberKubeconfig(name, server string, caData []byte, token string) ([]byte, error) {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	kc.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: serviceAccount, Namespace: memberNamespace}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// join registers member name; see newJoinCommand.
func (o *Options) join(ctx context.Context, name string, jo joinOptions) error {
	if err := checkJoin(name, jo); err != nil {
		return err
	}
	slices.Sort(jo.namespaces)
	jo.namespaces = slices.Compact(jo.namespaces)
	m, err := loadMember(jo.memberKubeconfig, jo.memberContext, jo.server)
	if err != nil {
		return err
	}
	mobjs := memberObjects(jo)
	if jo.dryRun {
		kc, err := memberKubeconfig(name, m.server, m.caData, "<a token from the TokenRequest API>")
		if err != nil {
			return err
		}
		o.say("# In the member cluster (%s): then a token for ServiceAccount %s/%s valid %s", m.cfg.Host, memberNamespace, serviceAccount, jo.tokenDuration)
		if err := printObjects(o.Out, mobjs); err != nil {
			return err
		}
		o.say("# On the host cluster:")
		return printObjects(o.Out, o.hostObjects(name, jo, kc))
	}

	// Both clusters must answer before anything is written to either.
	hostCfg, err := o.HostConfig()
	if err != nil {
		return fmt.Errorf("host kubeconfig: %w", err)
	}
	if err := ready(ctx, m.cfg); err != nil {
		return fmt.Errorf("the member cluster does not answer at %s: %w", m.cfg.Host, err)
	}
	if err := ready(ctx, hostCfg); err != nil {
		return fmt.Errorf("the host cluster does not answer at %s: %w", hostCfg.Host, err)
	}
	mc, err := client.New(m.cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return fmt.Errorf("member client: %w", err)
	}
	hc, err := client.New(hostCfg, client.Options{Scheme: Scheme()})
	if err != nil {
		return fmt.Errorf("host client: %w", err)
	}

	_, _ = fmt.Fprintf(o.ErrOut, "Joining member %s (%s)\n", name, m.server) // progress only, as o.say
	if jo.revokeOldTokens {
		if err := recreateServiceAccount(ctx, mc); err != nil {
			return err
		}
	}
	for _, obj := range mobjs {
		if err := apply(ctx, mc, obj); err != nil {
			return fmt.Errorf("in the member: %w", err)
		}
	}
	if err := pruneRoles(ctx, mc, jo.namespaces); err != nil {
		return fmt.Errorf("in the member: %w", err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: memberNamespace, Name: serviceAccount}}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(jo.tokenDuration / time.Second))}}
	if err := mc.SubResource("token").Create(ctx, sa, tr); err != nil {
		return fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", memberNamespace, serviceAccount, err)
	}
	kc, err := memberKubeconfig(name, m.server, m.caData, tr.Status.Token)
	if err != nil {
		return err
	}
	for _, obj := range o.hostObjects(name, jo, kc) {
		if err := apply(ctx, hc, obj); err != nil {
			return fmt.Errorf("on the host: %w", err)
		}
	}
	scope := "namespaces " + strings.Join(jo.namespaces, ", ")
	if jo.clusterWide {
		scope = "every namespace"
	}
	o.say("Member %s joined: Secret %s/%s on the host; fedop may act in %s; token valid until %s, renewed by fedop-manager",
		name, o.FedopNamespace, name, scope, tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	return nil
}

// pruneRoles deletes the Roles and RoleBindings an earlier join created in
// namespaces that keep is not listing any more (all of them with
// --cluster-wide, whose ClusterRole grants the same everywhere): a join
// with fewer namespaces takes the rights in the others away.
func pruneRoles(ctx context.Context, c client.Client, keep []string) error {
	var roles rbacv1.RoleList
	var bindings rbacv1.RoleBindingList
	if err := c.List(ctx, &roles, client.MatchingLabels(joinLabels)); err != nil {
		return fmt.Errorf("listing Roles: %w", err)
	}
	if err := c.List(ctx, &bindings, client.MatchingLabels(joinLabels)); err != nil {
		return fmt.Errorf("listing RoleBindings: %w", err)
	}
	var stale []client.Object
	for i := range bindings.Items {
		if b := &bindings.Items[i]; b.Name == rbacName && !slices.Contains(keep, b.Namespace) {
			stale = append(stale, b)
		}
	}
	for i := range roles.Items {
		if r := &roles.Items[i]; r.Name == rbacName && !slices.Contains(keep, r.Namespace) {
			stale = append(stale, r)
		}
	}
	for _, obj := range stale {
		if err := client.IgnoreNotFound(c.Delete(ctx, obj)); err != nil {
			return fmt.Errorf("deleting %s/%s, no longer listed: %w", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// ready GETs /readyz of the API server of cfg, within 10 seconds.
func ready(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 10 * time.Second
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return dc.RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
}

// apply writes obj with server-side apply, owning every field it sets.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	u, err := toUnstructured(obj, c.Scheme())
	if err != nil {
		return err
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// toUnstructured converts obj, with its kind set from scheme, dropping the
// empty creationTimestamp and status that an apply must not send.
func toUnstructured(obj client.Object, scheme *runtime.Scheme) (*unstructured.Unstructured, error) {
	gvk, err := apiutil.GVKForObject(obj, scheme)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}

// printObjects prints objs as YAML documents, with cli-runtime's printer.
func printObjects(out io.Writer, objs []client.Object) error {
	p := &printers.YAMLPrinter{}
	for _, obj := range objs {
		u, err := toUnstructured(obj, Scheme())
		if err != nil {
			return err
		}
		if err := p.PrintObj(u, out); err != nil {
			return err
		}
	}
	return nil
}

// recreateServiceAccount deletes the member ServiceAccount and waits until
// it is gone, so that every token minted for it stops working.
func recreateServiceAccount(ctx context.Context, c client.Client) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: memberNamespace, Name: serviceAccount}}
	if err := client.IgnoreNotFound(c.Delete(ctx, sa)); err != nil {
		return fmt.Errorf("deleting ServiceAccount %s/%s: %w", memberNamespace, serviceAccount, err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(sa), &corev1.ServiceAccount{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
