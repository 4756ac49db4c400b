package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/member"
)

// MemberView is one member cluster as kubectl fedop members shows it.
type MemberView struct {
	// Name is the member's name: its registration Secret's.
	Name string `json:"name"`
	// Server is the API server address in its kubeconfig.
	Server string `json:"server,omitempty"`
	// Connected is what the FederationClusters' status last said of the
	// member (status.members[].connected); nil when none uses it.
	Connected *bool `json:"connected,omitempty"`
	// Since is when fedop-manager last connected to it (its latest
	// Connected Event on the Secret).
	Since *time.Time `json:"since,omitempty"`
	// LastProbe is the latest status.members[].lastProbeTime.
	LastProbe *time.Time `json:"lastProbe,omitempty"`
	// CredentialsExpiry is when the kubeconfig's token or client
	// certificate expires.
	CredentialsExpiry *time.Time `json:"credentialsExpiry,omitempty"`
	// Renewed says whether fedop-manager renews the token (the Secret
	// names the member ServiceAccount).
	Renewed bool `json:"renewed"`
	// Namespaces are the member namespaces fedop may use; empty: all.
	Namespaces []string `json:"namespaces,omitempty"`
	// FederationClusters are those placing pods in it, as namespace/name.
	FederationClusters []string `json:"federationClusters,omitempty"`
	// Pods counts fedop's pods there, as the FederationClusters' status
	// counts them.
	Pods int32 `json:"pods"`
	// Message is the latest status message about it, else the latest
	// Warning Event on its Secret since it connected, if any.
	Message string `json:"message,omitempty"`
}

func (o *Options) newMembersCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the member clusters: connection, credentials, FederationClusters and pods",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			c, err := o.Host()
			if err != nil {
				return err
			}
			views, err := o.members(cmd.Context(), c)
			if err != nil {
				return err
			}
			if output != outputTable {
				return printStructured(o.Out, output, views)
			}
			return o.printMembers(views)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// members reads every registration Secret, the FederationClusters of
// every namespace and the Secrets' Events, and returns a view per member,
// by name.
func (o *Options) members(ctx context.Context, c client.Client) ([]MemberView, error) {
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(o.FedopNamespace), client.MatchingLabels{member.LabelMemberCluster: "true"}); err != nil {
		return nil, fmt.Errorf("listing the member Secrets in %s: %w", o.FedopNamespace, err)
	}
	var fcs v1alpha1.FederationClusterList
	if err := c.List(ctx, &fcs); err != nil {
		return nil, fmt.Errorf("listing FederationClusters: %w", err)
	}
	var events eventsv1.EventList
	if err := c.List(ctx, &events, client.InNamespace(o.FedopNamespace)); err != nil {
		return nil, fmt.Errorf("listing the Events in %s: %w", o.FedopNamespace, err)
	}
	views := make([]MemberView, 0, len(secrets.Items))
	for i := range secrets.Items {
		s := &secrets.Items[i]
		v := MemberView{Name: s.Name, Renewed: s.Annotations[member.AnnotationServiceAccount] != ""}
		if ns := s.Annotations[member.AnnotationNamespaces]; ns != "" {
			v.Namespaces = strings.Split(ns, ",")
		}
		data := s.Data[member.KubeconfigKey]
		if len(data) == 0 {
			data = s.Data[member.KubeconfigKeyValue]
		}
		if cfg, err := clientcmd.RESTConfigFromKubeConfig(data); err == nil {
			v.Server = cfg.Host
			if _, exp, ok := member.CredentialsLifetime(cfg); ok {
				v.CredentialsExpiry = &exp
			}
		} else {
			v.Message = "kubeconfig: " + err.Error()
		}
		v.fromStatus(fcs.Items)
		v.fromEvents(events.Items)
		views = append(views, v)
	}
	slices.SortFunc(views, func(a, b MemberView) int { return strings.Compare(a.Name, b.Name) })
	return views, nil
}

// fromStatus fills in what the FederationClusters fcs say of the member:
// which use it, its pods, and the latest probe their status records.
func (v *MemberView) fromStatus(fcs []v1alpha1.FederationCluster) {
	for j := range fcs {
		fc := &fcs[j]
		if !usesMember(fc, v.Name) {
			continue
		}
		v.FederationClusters = append(v.FederationClusters, fc.Namespace+"/"+fc.Name)
		v.Pods += podsIn(fc, v.Name)
		for _, ms := range fc.Status.Members {
			if ms.Name != v.Name || (v.LastProbe != nil && ms.LastProbeTime != nil && !ms.LastProbeTime.After(*v.LastProbe)) {
				continue
			}
			connected := ms.Connected
			v.Connected = &connected
			if ms.LastProbeTime != nil {
				t := ms.LastProbeTime.Time
				v.LastProbe = &t
			}
			if ms.Message != "" {
				v.Message = ms.Message
			}
		}
	}
}

// fromEvents fills in what the Events on the member's Secret say.
func (v *MemberView) fromEvents(events []eventsv1.Event) {
	// Since: the latest Connected Event. A Warning Event after it
	// (a refused kubeconfig, a failed renewal, credentials expiring
	// soon) is the message, unless status has one.
	var warning *eventsv1.Event
	for j := range events {
		e := &events[j]
		if e.Regarding.Kind != "Secret" || e.Regarding.Name != v.Name {
			continue
		}
		t := eventTime(e)
		switch {
		case e.Reason == "Connected" && (v.Since == nil || t.After(*v.Since)):
			v.Since = &t
		case e.Type == corev1.EventTypeWarning && (warning == nil || t.After(eventTime(warning))):
			warning = e
		}
	}
	if warning != nil && v.Message == "" && (v.Since == nil || eventTime(warning).After(*v.Since)) {
		v.Message = warning.Reason + ": " + warning.Note
	}
}

// usesMember says whether fc's spec places pods in member, or its status
// still counts some there.
func usesMember(fc *v1alpha1.FederationCluster, name string) bool {
	for _, c := range fc.Spec.Components {
		for _, p := range c.Topology {
			if p.Member == name {
				return true
			}
		}
	}
	return podsIn(fc, name) > 0
}

// podsIn counts the pods fc's status says it has in member name.
func podsIn(fc *v1alpha1.FederationCluster, name string) int32 {
	var n int32
	for _, cs := range fc.Status.Components {
		for _, ps := range cs.Members {
			if ps.Member == name {
				n += ps.Replicas
			}
		}
	}
	return n
}

// eventTime is when e last happened.
func eventTime(e *eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	default:
		return e.DeprecatedLastTimestamp.Time
	}
}

func (o *Options) printMembers(views []MemberView) error {
	if len(views) == 0 {
		_, err := fmt.Fprintf(o.Out, "No member clusters in %s (kubectl fedop join registers one).\n", o.FedopNamespace)
		return err
	}
	now := o.Now()
	var b strings.Builder
	fmt.Fprintln(&b, "NAME\tCONNECTED\tSINCE\tLAST PROBE\tCREDENTIALS\tNAMESPACES\tFEDERATIONCLUSTERS\tPODS\tMESSAGE")
	for _, v := range views {
		connected := "-"
		if v.Connected != nil {
			connected = fmt.Sprint(*v.Connected)
		}
		creds := "-"
		if v.CredentialsExpiry != nil {
			creds = until(now, *v.CredentialsExpiry)
			if strings.HasPrefix(creds, "in ") {
				creds = "expire " + creds
			}
			if v.Renewed {
				creds += " (renewed)"
			}
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", v.Name, connected, agoPtr(now, v.Since), agoPtr(now, v.LastProbe), creds,
			dash(strings.Join(v.Namespaces, ",")), dash(strings.Join(v.FederationClusters, ",")), v.Pods, dash(v.Message))
	}
	return writeTable(o.Out, b.String())
}

func agoPtr(now time.Time, t *time.Time) string {
	if t == nil {
		return "-"
	}
	return ago(now, *t) + " ago"
}
