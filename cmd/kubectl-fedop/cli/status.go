package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// StatusView is a FederationCluster as kubectl fedop status shows it.
type StatusView struct {
	Namespace          string `json:"namespace"`
	Name               string `json:"name"`
	Generation         int64  `json:"generation"`
	ObservedGeneration int64  `json:"observedGeneration"`
	Paused             bool   `json:"paused"`
	// Members are the member clusters in topology order (the matrix's
	// columns).
	Members []string `json:"members"`
	// Cells are the matrix: one per component and member it is placed in.
	Cells []Cell `json:"cells"`
	// Operation is status.operation: the lock.
	Operation *v1alpha1.Operation `json:"operation,omitempty"`
	// MemberStatus is status.members.
	MemberStatus []v1alpha1.MemberStatus `json:"memberStatus,omitempty"`
	Conditions   []metav1.Condition      `json:"conditions,omitempty"`
}

// Cell is one component in one member: pods ready, updated (at the update
// revision) and desired, and the revisions.
type Cell struct {
	Component       string `json:"component"`
	Member          string `json:"member"`
	Ready           int32  `json:"ready"`
	Updated         int32  `json:"updated"`
	Desired         int32  `json:"desired"`
	Observed        int32  `json:"observed"`
	CurrentRevision string `json:"currentRevision,omitempty"`
	UpdateRevision  string `json:"updateRevision,omitempty"`
	// Rollout is the component's rollout phase.
	Rollout v1alpha1.RolloutPhase `json:"rollout,omitempty"`
}

// statusView builds the view of fc: desired counts from the spec, the
// rest from status.
func statusView(fc *v1alpha1.FederationCluster) StatusView {
	v := StatusView{
		Namespace: fc.Namespace, Name: fc.Name, Generation: fc.Generation, ObservedGeneration: fc.Status.ObservedGeneration,
		Paused: fc.Spec.Paused, Operation: fc.Status.Operation, MemberStatus: fc.Status.Members, Conditions: fc.Status.Conditions,
	}
	addMember := func(m string) {
		if !slices.Contains(v.Members, m) {
			v.Members = append(v.Members, m)
		}
	}
	status := map[string]*v1alpha1.ComponentStatus{}
	for i := range fc.Status.Components {
		status[fc.Status.Components[i].Name] = &fc.Status.Components[i]
	}
	for _, c := range fc.Spec.Components {
		cs := status[c.Name]
		seen := map[string]bool{}
		cell := func(m string, desired int32) {
			seen[m] = true
			addMember(m)
			cl := Cell{Component: c.Name, Member: m, Desired: desired}
			if cs != nil {
				cl.Rollout = cs.Rollout
				for _, ps := range cs.Members {
					if ps.Member == m {
						cl.Ready, cl.Updated, cl.Observed = ps.ReadyReplicas, ps.UpdatedReplicas, ps.Replicas
						cl.CurrentRevision, cl.UpdateRevision = ps.CurrentRevision, ps.UpdateRevision
					}
				}
			}
			v.Cells = append(v.Cells, cl)
		}
		for _, p := range c.Topology {
			cell(p.Member, p.Replicas)
		}
		if cs != nil {
			for _, ps := range cs.Members {
				if !seen[ps.Member] {
					cell(ps.Member, 0) // being drained
				}
			}
		}
	}
	return v
}

// lock describes the operation in words, or "free".
func lock(now time.Time, op *v1alpha1.Operation) string {
	if op == nil {
		return "free"
	}
	var b strings.Builder
	b.WriteString(string(op.Type))
	if op.Component != "" {
		b.WriteString(" " + op.Component)
	}
	if op.Pod != "" {
		fmt.Fprintf(&b, ", pod %s in %s", op.Pod, dash(op.Member))
	} else if op.Member != "" {
		fmt.Fprintf(&b, ", last step in %s", op.Member)
	}
	if op.Stage != "" {
		fmt.Fprintf(&b, ", stage %s", op.Stage)
		if op.StageStartedTime != nil {
			fmt.Fprintf(&b, " for %s", ago(now, op.StageStartedTime.Time))
		}
	}
	if op.TargetRevision != "" {
		fmt.Fprintf(&b, ", to revision %s", op.TargetRevision)
	}
	if op.NextPod != "" {
		fmt.Fprintf(&b, ", next pod %s", op.NextPod)
	}
	fmt.Fprintf(&b, "; held by %s since %s (%s)", dash(op.Holder), op.StartedTime.UTC().Format(time.RFC3339), ago(now, op.StartedTime.Time))
	return b.String()
}

// printStatus draws v: the matrix, revisions, the lock, members and
// conditions.
func printStatus(out io.Writer, now time.Time, v StatusView, color painter) error {
	// Each table goes through a tabwriter of its own: kubectl's remembers
	// column widths from one table to the next.
	var b strings.Builder
	var tables []string
	next := func() {
		tables = append(tables, b.String())
		b.Reset()
	}
	paused := ""
	if v.Paused {
		paused = ", " + color.paint(colorYellow, "paused")
	}
	fmt.Fprintf(&b, "FederationCluster %s/%s, generation %d (observed %d)%s\n\n", v.Namespace, v.Name, v.Generation, v.ObservedGeneration, paused)
	fmt.Fprintf(&b, "COMPONENT\t%s\tROLLOUT\n", strings.ToUpper(strings.Join(v.Members, "\t")))
	for _, component := range components(v) {
		row := make([]string, 0, len(v.Members)+2)
		row = append(row, component)
		phase := ""
		for _, m := range v.Members {
			cell := "-"
			for _, c := range v.Cells {
				if c.Component == component && c.Member == m {
					cell = color.paint(cellColor(c), fmt.Sprintf("%d/%d/%d", c.Ready, c.Updated, c.Desired))
					phase = string(c.Rollout)
				}
			}
			row = append(row, cell)
		}
		row = append(row, dash(phase))
		fmt.Fprintln(&b, strings.Join(row, "\t"))
	}
	fmt.Fprintln(&b, "(cells: pods ready/updated/desired)")
	next()

	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "COMPONENT\tMEMBER\tCURRENT REVISION\tUPDATE REVISION")
	for _, c := range v.Cells {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", c.Component, c.Member, dash(c.CurrentRevision), dash(c.UpdateRevision))
	}

	next()
	fmt.Fprintf(&b, "\nLock: %s\n", lock(now, v.Operation))
	members := make([]string, 0, len(v.MemberStatus))
	for _, m := range v.MemberStatus {
		s := color.paint(colorGreen, "connected")
		if !m.Connected {
			s = color.paint(colorRed, "disconnected")
			if m.Message != "" {
				s += " (" + m.Message + ")"
			}
		}
		members = append(members, m.Name+" "+s)
	}
	fmt.Fprintf(&b, "Members: %s\n", dash(strings.Join(members, ", ")))

	if len(v.Conditions) > 0 {
		fmt.Fprintln(&b)
		fmt.Fprintln(&b, "CONDITION\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range v.Conditions {
			st := string(c.Status)
			switch c.Status {
			case metav1.ConditionTrue:
				st = color.paint(colorGreen, st)
			case metav1.ConditionFalse:
				st = color.paint(colorRed, st)
			default:
				st = color.paint(colorYellow, st)
			}
			fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", c.Type, st, c.Reason, ago(now, c.LastTransitionTime.Time), dash(c.Message))
		}
	}
	next()
	for _, t := range tables {
		if err := writeTable(out, t); err != nil {
			return err
		}
	}
	return nil
}

func components(v StatusView) []string {
	var out []string
	for _, c := range v.Cells {
		if !slices.Contains(out, c.Component) {
			out = append(out, c.Component)
		}
	}
	return out
}

func cellColor(c Cell) string {
	switch {
	case c.Ready == c.Desired && c.Updated == c.Desired && c.Observed == c.Desired:
		return colorGreen
	case c.Ready < c.Desired:
		return colorRed
	default:
		return colorYellow
	}
}

// summary is one line of status -w when stdout is not a terminal: what
// changes from one step to the next.
func summary(v StatusView) string {
	var ready, updated, desired int32
	cells := make([]string, 0, len(v.Cells))
	for _, c := range v.Cells {
		ready += c.Ready
		updated += c.Updated
		desired += c.Desired
		cells = append(cells, fmt.Sprintf("%s@%s=%d/%d/%d", c.Component, c.Member, c.Ready, c.Updated, c.Desired))
	}
	return fmt.Sprintf("ready %d/%d updated %d/%d | %s | lock: %s", ready, desired, updated, desired, strings.Join(cells, " "), lockLine(v.Operation))
}

// lockLine is the lock in a few words, without times (so that a line
// changes only when the step does).
func lockLine(op *v1alpha1.Operation) string {
	if op == nil {
		return "free"
	}
	parts := []string{string(op.Type)}
	for _, s := range []string{op.Component, op.Pod, op.Member, string(op.Stage)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

func (o *Options) newStatusCommand() *cobra.Command {
	var output string
	var watchFlag, noColor bool
	cmd := &cobra.Command{
		Use:   "status FEDERATIONCLUSTER [-w]",
		Short: "Show a FederationCluster: pods per member and component, revisions, the lock, conditions",
		Args:  cobra.ExactArgs(1),
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
			if !watchFlag {
				return o.showStatus(fc, output, painter(!noColor && o.IsTerminal()))
			}
			return o.watchStatus(cmd.Context(), c, fc, output, noColor)
		},
	}
	addOutputFlag(cmd, &output)
	cmd.Flags().BoolVarP(&watchFlag, "watch", "w", false, "Keep watching: redraw on a terminal, else print a line per change.")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "Do not color the output.")
	return cmd
}

func (o *Options) showStatus(fc *v1alpha1.FederationCluster, output string, color painter) error {
	v := statusView(fc)
	if output != outputTable {
		return printStructured(o.Out, output, v)
	}
	return printStatus(o.Out, o.Now(), v, color)
}

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// watchStatus shows fc, then again on every change until ctx ends or the
// FederationCluster is deleted: redrawn on a terminal, else one line per
// change of the summary (or one document per change with -o).
func (o *Options) watchStatus(ctx context.Context, c client.WithWatch, fc *v1alpha1.FederationCluster, output string, noColor bool) error {
	tty := o.IsTerminal() && output == outputTable
	last := ""
	show := func(fc *v1alpha1.FederationCluster) error {
		now := o.Now()
		switch {
		case tty:
			var b strings.Builder
			b.WriteString(clearScreen)
			if err := printStatus(&b, now, statusView(fc), painter(!noColor)); err != nil {
				return err
			}
			_, err := io.WriteString(o.Out, b.String())
			return err
		case output != outputTable:
			return printStructured(o.Out, output, statusView(fc))
		default:
			line := summary(statusView(fc))
			if line != last {
				last = line
				if _, err := fmt.Fprintf(o.Out, "%s %s\n", now.UTC().Format("15:04:05"), line); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if err := show(fc); err != nil {
		return err
	}
	var list v1alpha1.FederationClusterList
	w, err := c.Watch(ctx, &list, client.InNamespace(fc.Namespace), client.MatchingFields{"metadata.name": fc.Name})
	if err != nil {
		return fmt.Errorf("watching FederationCluster %s/%s: %w", fc.Namespace, fc.Name, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil
			}
			switch ev.Type {
			case watch.Deleted:
				_, err := fmt.Fprintf(o.Out, "FederationCluster %s/%s deleted\n", fc.Namespace, fc.Name)
				return err
			case watch.Added, watch.Modified:
				if got, ok := ev.Object.(*v1alpha1.FederationCluster); ok {
					if err := show(got); err != nil {
						return err
					}
				}
			}
		}
	}
}
