package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/federation"
	"github.com/fedop-io/fedop/member"
)

// maxPlanSteps bounds plan's list: 16 components of up to a few hundred
// pods each would be more steps than anyone reads.
const maxPlanSteps = 500

// PlanView is what kubectl fedop plan shows.
type PlanView struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Steps are the steps fedop would take from the observed state, in
	// order, if each succeeded at once.
	Steps []federation.Step `json:"steps"`
	// Then is what the planner says after the last step: done, or what it
	// waits for.
	Then string `json:"then"`
	// Unreachable are the members whose pods could not be read: the plan
	// treats them as out of sight, as fedop does a disconnected member.
	Unreachable map[string]string `json:"unreachable,omitempty"`
}

func (o *Options) newPlanCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "plan FEDERATIONCLUSTER",
		Short: "List the steps fedop would take from now, from the same planner on the observed state",
		Long: `plan reads the FederationCluster, and its pods in every member with the
member's registration Secret (the connection fedop-manager uses), runs fedop's
planner on them, and lists the steps it would take, in order, if each one
succeeded at once: pods created, deleted (one at a time), hooks called. A member
that cannot be read is out of sight, as for fedop: the plan stops where fedop
would wait for it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := o.Host()
			if err != nil {
				return err
			}
			fc, err := o.getFC(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			v, err := o.plan(cmd.Context(), c, fc)
			if err != nil {
				return err
			}
			if output != outputTable {
				return printStructured(o.Out, output, v)
			}
			return o.printPlan(v)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// plan reads fc's pods in its members and previews the planner's steps.
func (o *Options) plan(ctx context.Context, c client.Client, fc *v1alpha1.FederationCluster) (PlanView, error) {
	v := PlanView{Namespace: fc.Namespace, Name: fc.Name}
	var names []string
	for _, comp := range fc.Spec.Components {
		for _, p := range comp.Topology {
			names = append(names, p.Member)
		}
	}
	for _, cs := range fc.Status.Components {
		for _, ps := range cs.Members {
			names = append(names, ps.Member)
		}
	}
	slices.Sort(names)
	pods := map[string][]corev1.Pod{}
	for _, name := range slices.Compact(names) {
		list, err := o.memberPods(ctx, c, fc, name)
		if err != nil {
			if v.Unreachable == nil {
				v.Unreachable = map[string]string{}
			}
			v.Unreachable[name] = err.Error()
			continue
		}
		pods[name] = list
	}
	s, err := federation.PlannerState(fc, pods, o.Now())
	if err != nil {
		return v, err
	}
	v.Steps, v.Then = federation.Preview(s, maxPlanSteps)
	if v.Steps == nil {
		v.Steps = []federation.Step{}
	}
	return v, nil
}

// memberPods lists fc's pods in member name, through its registration
// Secret's kubeconfig.
func (o *Options) memberPods(ctx context.Context, c client.Client, fc *v1alpha1.FederationCluster, name string) ([]corev1.Pod, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: o.FedopNamespace, Name: name}, &s); err != nil {
		return nil, fmt.Errorf("reading its Secret: %w", err)
	}
	data := s.Data[member.KubeconfigKey]
	if len(data) == 0 {
		data = s.Data[member.KubeconfigKeyValue]
	}
	mc, err := o.Member(name, data)
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := mc.List(ctx, &list, client.InNamespace(fc.Namespace), client.MatchingLabels{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelInstance: fc.Name, v1alpha1.LabelMember: name,
	}); err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	return list.Items, nil
}

func (o *Options) printPlan(v PlanView) error {
	var b strings.Builder
	for _, m := range sortedKeys(v.Unreachable) {
		fmt.Fprintf(&b, "Member %s is out of sight: %s\n", m, v.Unreachable[m])
	}
	if len(v.Steps) == 0 {
		fmt.Fprintf(&b, "No step: %s\n", v.Then)
		return writeTable(o.Out, b.String())
	}
	fmt.Fprintln(&b, "STEP\tOPERATION\tACTION\tCOMPONENT\tMEMBER\tPOD\tREVISION")
	for i, s := range v.Steps {
		fmt.Fprintf(&b, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, dash(string(s.Operation)), s.Action, s.Component, s.Member, s.Pod, dash(s.Revision))
	}
	fmt.Fprintf(&b, "Then: %s\n", v.Then)
	return writeTable(o.Out, b.String())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
