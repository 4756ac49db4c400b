package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

func (o *Options) newUnjoinCommand() *cobra.Command {
	var memberKubeconfig, memberContext string
	cmd := &cobra.Command{
		Use:   "unjoin NAME [--member-kubeconfig FILE]",
		Short: "Remove a member cluster that no FederationCluster uses",
		Long: `unjoin refuses while a FederationCluster places pods in the member (naming
them); otherwise it deletes the member's Secret on the host and, with
--member-kubeconfig, what join created in the member: the ServiceAccount, its
Roles, RoleBindings, ClusterRole and ClusterRoleBinding (namespaces are kept).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.unjoin(cmd.Context(), args[0], memberKubeconfig, memberContext)
		},
	}
	cmd.Flags().StringVar(&memberKubeconfig, "member-kubeconfig", "", "The member cluster's kubeconfig, to delete what join created there.")
	cmd.Flags().StringVar(&memberContext, "member-context", "", "The context of --member-kubeconfig to use.")
	return cmd
}

func (o *Options) unjoin(ctx context.Context, name, memberKubeconfig, memberContext string) error {
	hc, err := o.Host()
	if err != nil {
		return err
	}
	var fcs v1alpha1.FederationClusterList
	if err := hc.List(ctx, &fcs); err != nil {
		return fmt.Errorf("listing FederationClusters: %w", err)
	}
	var users []string
	for i := range fcs.Items {
		fc := &fcs.Items[i]
		if usesMember(fc, name) {
			users = append(users, fmt.Sprintf("%s/%s (%d pods there)", fc.Namespace, fc.Name, podsIn(fc, name)))
		}
	}
	if len(users) > 0 {
		return fmt.Errorf("member %s is in use by FederationCluster %s: remove it from their topology first", name, strings.Join(users, ", "))
	}
	var mc client.Client
	if memberKubeconfig != "" {
		m, err := loadMember(memberKubeconfig, memberContext, "")
		if err != nil {
			return err
		}
		if err := ready(ctx, m.cfg); err != nil {
			return fmt.Errorf("the member cluster does not answer at %s: %w", m.cfg.Host, err)
		}
		if mc, err = client.New(m.cfg, client.Options{Scheme: Scheme()}); err != nil {
			return err
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: o.FedopNamespace, Name: name}}
	if err := hc.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s/%s: %w", o.FedopNamespace, name, err)
	}
	o.say("Secret %s/%s deleted: fedop-manager disconnects from member %s", o.FedopNamespace, name, name)
	if mc == nil {
		o.say("In the member, ServiceAccount %s/%s and its RBAC (label app.kubernetes.io/managed-by=%s) are left: pass --member-kubeconfig to delete them",
			memberNamespace, serviceAccount, fieldManager)
		return nil
	}
	return deleteMemberRBAC(ctx, mc, o)
}

// deleteMemberRBAC deletes every object join created in the member but the
// namespaces.
func deleteMemberRBAC(ctx context.Context, c client.Client, o *Options) error {
	sel := client.MatchingLabels(joinLabels)
	var roles rbacv1.RoleList
	var bindings rbacv1.RoleBindingList
	if err := c.List(ctx, &roles, sel); err != nil {
		return fmt.Errorf("listing the member's Roles: %w", err)
	}
	if err := c.List(ctx, &bindings, sel); err != nil {
		return fmt.Errorf("listing the member's RoleBindings: %w", err)
	}
	var objs []client.Object
	for i := range bindings.Items {
		objs = append(objs, &bindings.Items[i])
	}
	for i := range roles.Items {
		objs = append(objs, &roles.Items[i])
	}
	objs = append(objs,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: rbacName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: rbacName}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: memberNamespace, Name: serviceAccount}})
	for _, obj := range objs {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %T %s in the member: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	o.say("Deleted ServiceAccount %s/%s and its RBAC in the member (%d Roles and RoleBindings)",
		memberNamespace, serviceAccount, len(roles.Items)+len(bindings.Items))
	return nil
}
