package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// AnnotationRestartedAt, in a component's pod template, holds when kubectl
// fedop restart asked for the component's pods to be replaced (RFC 3339).
// It is part of the template, so of the revision hash: the pods are
// outdated and fedop replaces them one at a time, as an upgrade, like
// kubectl rollout restart's kubectl.kubernetes.io/restartedAt.
const AnnotationRestartedAt = "fedop.io/restartedAt"

// update reads the FederationCluster name, lets change modify it, and
// writes it back with the resourceVersion read, again on a conflict
// (client-go's retry.RetryOnConflict). change returns an error to stop.
func (o *Options) update(ctx context.Context, name string, change func(*v1alpha1.FederationCluster) error) (*v1alpha1.FederationCluster, error) {
	c, err := o.Host()
	if err != nil {
		return nil, err
	}
	var fc *v1alpha1.FederationCluster
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		if fc, err = o.getFC(ctx, c, name); err != nil {
			return err
		}
		if err := change(fc); err != nil {
			return err
		}
		return c.Update(ctx, fc, client.FieldOwner(fieldManager))
	})
	return fc, err
}

func (o *Options) newPauseCommand(pause bool) *cobra.Command {
	use, short, done := "pause", "Stop every deletion of a FederationCluster (spec.paused: true)", "paused: fedop deletes no pod until resume"
	if !pause {
		use, short, done = "resume", "Let a paused FederationCluster roll again (spec.paused: false)", "resumed"
	}
	return &cobra.Command{
		Use:   use + " FEDERATIONCLUSTER",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fc, err := o.update(cmd.Context(), args[0], func(fc *v1alpha1.FederationCluster) error {
				fc.Spec.Paused = pause
				return nil
			})
			if err != nil {
				return err
			}
			o.say("FederationCluster %s/%s %s", fc.Namespace, fc.Name, done)
			return nil
		},
	}
}

// errNoOperation is release's error when the lock is free.
var errNoOperation = errors.New("no operation holds the lock (status.operation is empty)")

func (o *Options) newReleaseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "release FEDERATIONCLUSTER",
		Short: "Release the lock: fedop drops the operation in progress and plans again",
		Long: `release annotates the FederationCluster fedop.io/release-operation with the
startedTime of its status.operation: fedop then drops that operation (calling a
drained pod's undo first), records who asked in an Event OperationReleased, and
plans again from what it observes. An annotation naming another operation is
ignored, so a release that races with the operation's end is harmless.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var op v1alpha1.Operation
			fc, err := o.update(cmd.Context(), args[0], func(fc *v1alpha1.FederationCluster) error {
				if fc.Status.Operation == nil {
					return errNoOperation
				}
				op = *fc.Status.Operation
				if fc.Annotations == nil {
					fc.Annotations = map[string]string{}
				}
				fc.Annotations[v1alpha1.AnnotationReleaseOperation] = op.StartedTime.UTC().Format(time.RFC3339)
				return nil
			})
			if err != nil {
				return err
			}
			o.say("FederationCluster %s/%s: asked fedop to release operation %s started %s",
				fc.Namespace, fc.Name, op.Type, op.StartedTime.UTC().Format(time.RFC3339))
			return nil
		},
	}
}

func (o *Options) newRestartCommand() *cobra.Command {
	var components []string
	cmd := &cobra.Command{
		Use:   "restart FEDERATIONCLUSTER [--component C]",
		Short: "Replace every pod (of the components named), one at a time, as an upgrade does",
		Long: `restart sets annotation fedop.io/restartedAt in the pod template of every
component (or of those --component names) to now: a new revision, so fedop
replaces the pods one at a time through the same path as an upgrade, as
kubectl rollout restart does for a Deployment.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			now := o.Now().UTC().Format(time.RFC3339)
			var restarted []string
			fc, err := o.update(cmd.Context(), args[0], func(fc *v1alpha1.FederationCluster) error {
				restarted = nil
				for i := range fc.Spec.Components {
					c := &fc.Spec.Components[i]
					if len(components) > 0 && !slices.Contains(components, c.Name) {
						continue
					}
					if c.Template.Annotations == nil {
						c.Template.Annotations = map[string]string{}
					}
					c.Template.Annotations[AnnotationRestartedAt] = now
					restarted = append(restarted, c.Name)
				}
				for _, name := range components {
					if !slices.Contains(restarted, name) {
						return fmt.Errorf("FederationCluster %s/%s has no component %q", fc.Namespace, fc.Name, name)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			o.say("FederationCluster %s/%s: restarting components %v (%s=%s)", fc.Namespace, fc.Name, restarted, AnnotationRestartedAt, now)
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&components, "component", nil, "The components to restart; every component when empty.")
	return cmd
}
