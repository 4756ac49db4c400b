package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/e2e"
	"github.com/fedop-io/fedop/internal/podwatch"
)

// Item 10: manager start to the first step after a SIGKILL. A manager of
// the benchmark's own (as items 5 and 6 start them) upgrades a
// FederationCluster like item 1's; once the observer has seen
// restartAfter of its deletions, the manager is SIGKILLed and the same
// binary started again at once; the figure is the time from just before
// the new process was started to the next deletion the observer sees.
// Measured with the lab's two members only, then with apiserver-only
// members (item 5's) registered too.

const (
	// restartNamespace holds item 10's registration Secrets on the host.
	restartNamespace = "fedop-bench-restart"
	// restartAfter is the deletions seen before the SIGKILL: mid-rollout,
	// an operation held in the FederationCluster's status.
	restartAfter = 3
	// restartPoll is how often the observer's records are looked at while
	// waiting to kill: the kill comes at most this long after the
	// restartAfter-th deletion was seen. The figures themselves are the
	// observer's receive times.
	restartPoll = 2 * time.Millisecond
	// targetRestartLab and targetRestartMany are issue 19's targets, with
	// the lab's two members and with restartFleet apiserver-only members
	// more.
	targetRestartLab  = 1500 * time.Millisecond
	targetRestartMany = 3 * time.Second
)

// restartRun is one SIGKILL and restart.
type restartRun struct {
	// members is how many members the manager had.
	members int
	// toStep is from just before the new process started to the next
	// deletion seen; connected from then to every member connected (the
	// manager's gauge, polled); killedAt the deletions seen before the
	// kill.
	toStep, connected time.Duration
	killedAt          int
	// replacementPending is whether the killed manager left the last
	// deleted pod without a replacement seen: the new one then creates it
	// and waits for it to be Ready before its first deletion.
	replacementPending bool
}

// restartResult is item 10's outcome.
type restartResult struct {
	runs []restartRun
	// skipped says why the size with apiserver-only members was not
	// measured, if it was not.
	skipped string
}

// byMembers returns the time to step of the runs with n members.
func (r *restartResult) byMembers(n int) []time.Duration {
	return collect(r.runs, func(run restartRun) (time.Duration, bool) { return run.toStep, run.members == n })
}

// restartPhase runs item 10.
func (b *bench) restartPhase(ctx context.Context) error {
	lab := b.options.members[:2]
	defer b.deleteHostNamespace(context.Background(), restartNamespace)
	kcs, err := b.labKubeconfigs(ctx, lab)
	if err != nil {
		return err
	}
	if err := b.registerMembers(ctx, restartNamespace, kcs); err != nil {
		return err
	}
	fc := stepFederation("restart", components, lab, int32(b.perMember), imagePrefix+"restart-0")
	obs, err := b.observeFederation(ctx, fc.Name)
	if err != nil {
		return err
	}
	defer obs.Stop()
	m, err := b.startManager(restartNamespace, "item 10, first start")
	if err != nil {
		return err
	}
	// m changes at every restart: the deferred calls take the last one.
	// The FederationCluster is deleted while it runs, so that its cleanup
	// removes the pods; then it stops.
	defer func() { m.stop() }()
	if _, err := waitConnected(ctx, m, lab); err != nil {
		return err
	}
	if err := b.host.Create(ctx, fc); err != nil {
		return fmt.Errorf("creating FederationCluster %s: %w", fc.Name, err)
	}
	defer func() { b.deleteFederations([]client.ObjectKey{client.ObjectKeyFromObject(fc)}, m, time.Minute) }()
	sys := fedopSystem(b.host, fc, obs)
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := obs.waitRolledOut(sctx, imagePrefix+"restart-0", sys.pods); err != nil {
		return fmt.Errorf("FederationCluster %s: creating: %w", fc.Name, err)
	}
	if err := sys.settled(sctx); err != nil {
		return err
	}

	res := &b.res.restart
	round := 0
	for _, extra := range []int{0, b.restartFleet} {
		names := slices.Clone(lab)
		if extra > 0 {
			if err := b.ensureFleet(ctx); err != nil {
				return err
			}
			if err := b.fleet.grow(ctx, extra, startParallel); err != nil {
				if !errors.Is(err, errNoMemory) {
					return err
				}
				res.skipped = err.Error()
				b.logf("Item 10 with %d apiserver-only members not measured: %v", extra, err)
				break
			}
			fkcs := b.fleet.kubeconfigs(extra)
			if err := b.registerMembers(ctx, restartNamespace, fkcs); err != nil {
				return err
			}
			names = append(names, slices.Sorted(maps.Keys(fkcs))...)
			// A manager that knows every member before the first kill.
			m.stop()
			if m, err = b.startManager(restartNamespace, fmt.Sprintf("item 10, %d members", len(names))); err != nil {
				return err
			}
			if _, err := waitConnected(ctx, m, names); err != nil {
				return err
			}
		}
		for r := 1; r <= b.restartRounds; r++ {
			round++
			run, next, err := b.killAndRestart(ctx, sys, m, names, fmt.Sprintf("%srestart-%d", imagePrefix, round))
			if next != nil {
				m = next
			}
			if err != nil {
				return fmt.Errorf("%d members, round %d: %w", len(names), r, err)
			}
			b.logf("Item 10, %d members, round %d: SIGKILL after %d deletions; new manager's first deletion seen %s after its start "+
				"(every member connected after %s; replacement left pending by the killed manager: %t)",
				len(names), r, run.killedAt, ms(run.toStep), ms(run.connected), run.replacementPending)
			res.runs = append(res.runs, run)
		}
	}
	return nil
}

// killAndRestart upgrades sys to image under manager m, SIGKILLs m once
// restartAfter deletions were seen, starts the manager again, measures the
// time to its first deletion, and waits for the upgrade to complete. It
// returns the new manager (nil if none was started).
func (b *bench) killAndRestart(ctx context.Context, sys *system, m *managerRun, names []string, image string) (restartRun, *managerRun, error) {
	run := restartRun{members: len(names)}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	if err := sys.upgrade(ctx, image, 0); err != nil {
		return run, nil, err
	}
	err := wait.PollUntilContextCancel(ctx, restartPoll, true, func(context.Context) (bool, error) {
		return len(podwatch.Deletions(sys.obs.Records(), start)) >= restartAfter, nil
	})
	if err != nil {
		return run, nil, fmt.Errorf("waiting for %d deletions: %w", restartAfter, err)
	}
	if err := syscall.Kill(m.proc.pid(), syscall.SIGKILL); err != nil {
		return run, nil, fmt.Errorf("SIGKILL: %w", err)
	}
	select {
	case <-m.proc.done:
	case <-ctx.Done():
		return run, nil, ctx.Err()
	}
	recs := sys.obs.Records()
	deleted := podwatch.Deletions(recs, start)
	run.killedAt = len(deleted)
	last := deleted[len(deleted)-1]
	if repl := replacementOf(recs, last); repl == nil {
		run.replacementPending = true
	}
	next, err := b.startManager(restartNamespace, fmt.Sprintf("item 10, %d members, restart after SIGKILL", len(names)))
	if err != nil {
		return run, nil, err
	}
	connected := make(chan connectRun, 1)
	go func() {
		c, _ := waitConnected(ctx, next, names)
		connected <- c
	}()
	var first podRecord
	err = wait.PollUntilContextCancel(ctx, restartPoll, true, func(context.Context) (bool, error) {
		d := podwatch.Deletions(sys.obs.Records(), next.started)
		if len(d) == 0 {
			return false, nil
		}
		first = d[0]
		return true, nil
	})
	if err != nil {
		return run, next, fmt.Errorf("waiting for the restarted manager's first deletion: %w", err)
	}
	run.toStep = first.DeletedAt.Sub(next.started)
	if _, err := sys.obs.waitRolledOut(ctx, image, sys.pods); err != nil {
		return run, next, err
	}
	if err := sys.settled(ctx); err != nil {
		return run, next, err
	}
	run.connected = (<-connected).all
	return run, next, nil
}

// restartRows are item 10's rows.
func (r *results) restartRows(o options) []row {
	var rows []row
	for _, x := range []struct {
		n      int
		target time.Duration
	}{{2, targetRestartLab}, {2 + o.restartFleet, targetRestartMany}} {
		ds := r.restart.byMembers(x.n)
		what := fmt.Sprintf("manager start to first step after a SIGKILL mid-rollout, %d members (median, max of %d)", x.n, len(ds))
		if x.n > 2 {
			what = fmt.Sprintf("manager start to first step after a SIGKILL mid-rollout, the lab's 2 + %d apiserver-only members (median, max of %d)",
				o.restartFleet, len(ds))
		}
		if len(ds) == 0 {
			rows = append(rows, row{"10", what, "not measured: " + r.restart.skipped, "<= " + x.target.String(), "-"})
			continue
		}
		rows = append(rows, row{"10", what, fmt.Sprintf("%s, %s", ms(median(ds)), ms(slices.Max(ds))), "<= " + x.target.String(), metStr(median(ds) <= x.target)})
	}
	return rows
}

// writeRestartDetails writes item 10's section.
func (r *results) writeRestartDetails(b *strings.Builder, o options) {
	b.WriteString("\n## 10. Manager start to first step after a SIGKILL\n\n")
	fmt.Fprintf(b, "A fedop-manager of the benchmark's own (the same binary and defaults as items 5 and 6, members from a namespace of its own) upgrades "+
		"FederationCluster `restart` (as item 1's: %d pods over the lab's two members, Ready at once). When the observer has seen %d of the upgrade's deletions, "+
		"the manager is SIGKILLed (a rollout in progress, its operation held in the status) and, once it has exited, started again. "+
		"The figure is from just before the new process is started to the next deletion the observer sees: the process's start, its caches' sync, "+
		"and the reconcile that resumes the operation. If the killed manager had deleted a pod and not yet created its replacement, the new one creates it "+
		"and waits for it to be Ready first (kwok: tens of milliseconds), which the figure includes. "+
		"Then the same with %d apiserver-only members (item 5's) registered too.\n\n", 4*o.perMember, restartAfter, o.restartFleet)
	b.WriteString(mdHead("members", "to first step", "every member connected", "deletions before the kill", "replacement pending at the kill"))
	for _, run := range r.restart.runs {
		b.WriteString(mdRow(fmt.Sprint(run.members), ms(run.toStep), ms(run.connected), fmt.Sprint(run.killedAt), fmt.Sprint(run.replacementPending)))
	}
	if r.restart.skipped != "" {
		fmt.Fprintf(b, "\nWith apiserver-only members: not measured (%s).\n", r.restart.skipped)
	}
	if ds := r.restart.byMembers(2); len(ds) > 0 {
		fmt.Fprintf(b, "\nWith the lab's members only: p50 %s over %d restarts.\n", ms(e2e.Percentile(ds, 50)), len(ds))
	}
}
