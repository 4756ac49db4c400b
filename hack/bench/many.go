package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedop-io/fedop/api/v1alpha1"
	"github.com/fedop-io/fedop/e2e"
)

// Item 11: many FederationClusters of 6 pods (3 in each of the lab's two
// members) upgraded at once by the main manager. The observer checks that
// every one stayed one pod at a time, and gives the step overhead of all
// their steps pooled and the steps per second overall.

const (
	// manyLabel marks item 11's FederationClusters and their pod
	// templates (value "many"): the observer selects their pods by it.
	manyLabel = "bench.fedop.io/group"
	// manyValue is manyLabel's value.
	manyValue = "many"
	// manyPerMember is the pods of each FederationCluster per member.
	manyPerMember = 3
	// manyParallel is how many upgrades are written at once.
	manyParallel = 16
	// targetManyP99 is the most the pooled step overhead p99 may be, as a
	// multiple of item 1's single-FederationCluster p99.
	targetManyP99 = 4.0
)

// manyRound is one upgrade of every FederationCluster at once.
type manyRound struct {
	// written is how long writing every upgrade took; total from the
	// first write to the last new pod seen Ready.
	written, total time.Duration
	steps          int
	overheads      []time.Duration
	// violations are the pods whose deletion was seen while another pod of
	// the same FederationCluster was unavailable (deleted, its
	// replacement not yet seen Ready).
	violations []unavailability
}

// manyResult is item 11's outcome: fedop's rounds, and the floor
// controller's with as many groups of the same pods.
type manyResult struct {
	federations   int
	rounds, floor []manyRound
}

// manyFederation is one of item 11's FederationClusters: one component c
// with manyPerMember pods in each of members.
func manyFederation(name string, members []string, image string) *v1alpha1.FederationCluster {
	fc := stepFederation(name, []string{"c"}, members, manyPerMember, image)
	fc.Labels = map[string]string{manyLabel: manyValue}
	fc.Spec.Components[0].Template.Labels[manyLabel] = manyValue
	return fc
}

// manyPhase runs item 11.
func (b *bench) manyPhase(ctx context.Context) error {
	lab := b.options.members[:2]
	obs, err := startObserver(ctx, b.labConfigs(), labels.SelectorFromSet(labels.Set{manyLabel: manyValue}).String())
	if err != nil {
		return err
	}
	defer obs.Stop()
	n := b.manyFederations
	pods := n * manyPerMember * len(lab)
	res := &b.res.many
	res.federations = n
	var keys []client.ObjectKey
	defer func() { b.deleteMany(obs) }()
	image := imagePrefix + "many-0"
	for i := range n {
		fc := manyFederation(fmt.Sprintf("many-%03d", i), lab, image)
		if err := b.host.Create(ctx, fc); err != nil {
			return fmt.Errorf("creating FederationCluster %s: %w", fc.Name, err)
		}
		keys = append(keys, client.ObjectKeyFromObject(fc))
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if _, err := obs.waitRolledOut(wctx, image, pods); err != nil {
		return err
	}
	if err := waitFederationsReady(wctx, b.host, keys, int32(manyPerMember*len(lab)), b.logf); err != nil {
		return err
	}
	b.logf("%d FederationClusters of %d pods are Ready", n, manyPerMember*len(lab))
	for r := 1; r <= b.manyRounds; r++ {
		image := fmt.Sprintf("%smany-%d", imagePrefix, r)
		round, err := b.manyUpgrade(ctx, obs, keys, image, pods)
		if err != nil {
			return fmt.Errorf("round %d: %w", r, err)
		}
		res.rounds = append(res.rounds, round)
		b.logf("Item 11, round %d: %d steps in %s (%.1f per second; upgrades written in %s), step overhead p50 %s p99 %s, %d one-at-a-time violations",
			r, round.steps, ms(round.total), float64(round.steps)/round.total.Seconds(), ms(round.written),
			ms(e2e.Percentile(round.overheads, 50)), ms(e2e.Percentile(round.overheads, 99)), len(round.violations))
		for _, v := range round.violations {
			b.logf("  violation: %s (FederationCluster %s) deleted at %s", v.pod, v.group, v.start.Format("15:04:05.000"))
		}
	}
	// The floor controller on the same lab, without fedop's pods.
	b.deleteMany(obs)
	return b.manyFloor(ctx, lab, n, pods)
}

// manyFloor rolls n groups of the floor controller's pods, as many as item
// 11's FederationClusters have, all at once in each of b.manyRounds rounds:
// what the lab itself gives a one-pod-at-a-time controller of that many
// workloads, with no host cluster.
func (b *bench) manyFloor(ctx context.Context, lab []string, n, pods int) error {
	cfgs, clients, obs, err := b.floorLab(ctx)
	if err != nil {
		return err
	}
	defer obs.Stop()
	groups := make([]string, n)
	for i := range groups {
		groups[i] = fmt.Sprintf("floor-%03d", i)
	}
	image := imagePrefix + "many-0"
	f, err := startFloor(ctx, cfgs, clients, groups, manyPerMember, image)
	if err != nil {
		return err
	}
	defer func() {
		f.stop()
		if err := b.deleteFloorPods(context.Background(), lab); err != nil {
			b.logf("Item 11: %v", err)
		}
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if _, err := obs.waitRolledOut(wctx, image, pods); err != nil {
		return err
	}
	sys := f.system(obs)
	for r := 1; r <= b.manyRounds; r++ {
		image := fmt.Sprintf("%smany-floor-%d", imagePrefix, r)
		start := time.Now()
		if err := sys.upgrade(ctx, image, 0); err != nil {
			return err
		}
		// A roll that fails ends the round at once: its pods would never
		// all be at image.
		mctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		rolled := make(chan error, 1)
		go func() {
			err := sys.settled(mctx)
			if err != nil {
				cancel()
			}
			rolled <- err
		}()
		round, err := manyMeasure(mctx, obs, start, image, pods)
		err = errors.Join(<-rolled, err)
		cancel()
		if err != nil {
			return fmt.Errorf("floor controller, round %d: %w", r, err)
		}
		b.res.many.floor = append(b.res.many.floor, round)
		b.logf("Item 11, floor controller, round %d: %d steps in %s (%.1f per second), step overhead p50 %s p99 %s, %d one-at-a-time violations; "+
			"replacements deleted before Ready and made again so far: %d",
			r, round.steps, ms(round.total), float64(round.steps)/round.total.Seconds(),
			ms(e2e.Percentile(round.overheads, 50)), ms(e2e.Percentile(round.overheads, 99)), len(round.violations), f.remade.Load())
	}
	return nil
}

// manyUpgrade upgrades every FederationCluster of keys to image at once
// (manyParallel writes in flight) and returns what the observer saw once
// all pods are at image and Ready.
func (b *bench) manyUpgrade(ctx context.Context, obs *observer, keys []client.ObjectKey, image string, pods int) (manyRound, error) {
	var round manyRound
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	data, err := json.Marshal(templatePatch("/spec/components/0/template", image, 0))
	if err != nil {
		return round, err
	}
	start := time.Now()
	// Every patch is sent even if one fails; the first error is returned.
	var g errgroup.Group
	g.SetLimit(manyParallel)
	for _, k := range keys {
		g.Go(func() error {
			obj := &v1alpha1.FederationCluster{}
			obj.Name, obj.Namespace = k.Name, k.Namespace
			if err := b.host.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, data)); err != nil {
				return fmt.Errorf("upgrading FederationCluster %s: %w", k.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return round, err
	}
	written := time.Since(start)
	round, err = manyMeasure(ctx, obs, start, image, pods)
	round.written = written
	return round, err
}

// manyMeasure waits until obs sees all pods at image and Ready, and returns
// what it saw of an upgrade of groups of them (by their instance label)
// started at start.
func manyMeasure(ctx context.Context, obs *observer, start time.Time, image string, pods int) (manyRound, error) {
	var round manyRound
	end, err := obs.waitRolledOut(ctx, image, pods)
	if err != nil {
		return round, err
	}
	round.total = end.Sub(start)
	recs := obs.Records()
	round.violations = oneAtATimeViolations(recs, start)
	for _, g := range byInstance(recs) {
		st := computeSteps(g, start)
		round.steps += st.deletions
		round.overheads = append(round.overheads, st.overheads...)
	}
	if round.steps != pods {
		return round, fmt.Errorf("%d deletions seen in an upgrade of %d pods", round.steps, pods)
	}
	return round, nil
}

// deleteMany deletes item 11's FederationClusters while the main manager
// runs, so that its cleanup removes their pods, and waits up to two
// minutes for the observer to see none left.
func (b *bench) deleteMany(obs *observer) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := b.host.DeleteAllOf(ctx, &v1alpha1.FederationCluster{}, client.InNamespace(namespace), client.MatchingLabels{manyLabel: manyValue})
	if err != nil {
		b.logf("Deleting item 11's FederationClusters: %v", err)
		return
	}
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		for _, r := range obs.Records() {
			if r.GoneAt.IsZero() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		b.logf("Item 11's pods were not all removed: %v", err)
	}
}

// manyRows are item 11's rows.
func (r *results) manyRows() []row {
	m := r.many
	if len(m.rounds) == 0 {
		return []row{notMeasured("11", "FederationClusters upgraded at once")}
	}
	overheads, violations, steps, total := pooledRounds(m.rounds)
	p99 := e2e.Percentile(overheads, 99)
	rows := []row{
		{"11", fmt.Sprintf("%d FederationClusters of %d pods (2 members) upgraded at once: "+
			"pods deleted while another of the same FederationCluster was unavailable (%d rounds)",
			m.federations, manyPerMember*2, len(m.rounds)), fmt.Sprint(violations), "0", metStr(violations == 0)},
	}
	single := median(roundPercentiles(r.stepFedop, 99))
	if single > 0 {
		x := ratio(p99, single)
		rows = append(rows, row{"11", "step overhead p99 of all their steps pooled / item 1's single-FederationCluster p99",
			fmt.Sprintf("%.2f (%s / %s)", x, ms(p99), ms(single)), fmt.Sprintf("<= %.0f", targetManyP99), metStr(x <= targetManyP99)})
	} else {
		rows = append(rows, row{"11", "step overhead p99 of all their steps pooled (item 1 not measured: no ratio)", ms(p99), reported, "-"})
	}
	rows = append(rows, row{"11", "steps per second, all FederationClusters together",
		fmt.Sprintf("%.1f (%d steps in %s)", float64(steps)/total.Seconds(), steps, ms(total)), reported, "-"})
	if len(m.floor) > 0 {
		overheads, _, steps, total := pooledRounds(m.floor)
		p99 := e2e.Percentile(overheads, 99)
		value := fmt.Sprintf("p99 %s, %.1f steps per second", ms(p99), float64(steps)/total.Seconds())
		if single := median(roundPercentiles(r.stepFloor, 99)); single > 0 {
			value = fmt.Sprintf("p99 %s (%.0f x its item 1 p99 of %s), %.1f steps per second", ms(p99), ratio(p99, single), ms(single),
				float64(steps)/total.Seconds())
		}
		rows = append(rows, row{"11", fmt.Sprintf("the floor controller, %d groups of the same pods rolled at once: step overhead pooled, steps per second",
			m.federations), value, reported, "-"})
	}
	return rows
}

// pooledRounds returns the step overheads, violations, steps and total time of
// rounds together.
func pooledRounds(rounds []manyRound) (overheads []time.Duration, violations, steps int, total time.Duration) {
	for _, rd := range rounds {
		overheads = append(overheads, rd.overheads...)
		violations += len(rd.violations)
		steps += rd.steps
		total += rd.total
	}
	return overheads, violations, steps, total
}

// writeManyDetails writes item 11's section.
func (r *results) writeManyDetails(b *strings.Builder, _ options) {
	m := r.many
	b.WriteString("\n## 11. Many FederationClusters upgraded at once\n\n")
	fmt.Fprintf(b, "%d FederationClusters `many-*`, each of one component with %d pods in each of the lab's two members (kwok makes them Ready when scheduled), "+
		"managed by the main manager, are upgraded at once (%d JSON patches in flight) in each round. One observer watches all their pods. "+
		"A violation is a pod seen deleted while another pod of the same FederationCluster was unavailable: deleted, its replacement not yet seen Ready. "+
		"The observer's watches of the two members deliver independently, so a Ready in one member seen after a deletion in the other that followed it "+
		"would count too; the rows below say how many. "+
		"The step overhead is item 1's (the previous replacement seen Ready to the next deletion seen, within one FederationCluster), "+
		"pooled over every FederationCluster; steps per second are all deletions over the time from the first upgrade written to the last new pod seen Ready.\n\n",
		m.federations, manyPerMember, manyParallel)
	b.WriteString("The floor controller (section 1-2) then rolls as many groups of the same pods (" + fmt.Sprint(manyPerMember) +
		" in each member, one group per goroutine, each one pod at a time) on the same lab, fedop's pods gone: what the lab itself gives " +
		"a one-pod-at-a-time controller of that many workloads, with no host cluster, no status and no Events. " +
		"When every workload has a step waiting, a step waits for the lab's capacity whatever the controller: " +
		"its overhead is then set by steps per second, not by what a step costs alone.\n\n")
	b.WriteString(mdHead("system", "round", "upgrades written in", "total", "steps", "steps per second", "p50", "p90", "p99", "max", "violations"))
	for _, sys := range []struct {
		name   string
		rounds []manyRound
	}{{"fedop", m.rounds}, {floorName, m.floor}} {
		for i, rd := range sys.rounds {
			written := "-"
			if sys.name == "fedop" {
				written = ms(rd.written)
			}
			b.WriteString(mdRow(sys.name, fmt.Sprint(i+1), written, ms(rd.total), fmt.Sprint(rd.steps), fmt.Sprintf("%.1f", float64(rd.steps)/rd.total.Seconds()),
				ms(e2e.Percentile(rd.overheads, 50)), ms(e2e.Percentile(rd.overheads, 90)), ms(e2e.Percentile(rd.overheads, 99)), ms(e2e.Percentile(rd.overheads, 100)),
				fmt.Sprint(len(rd.violations))))
		}
	}
	for i, rd := range m.rounds {
		for _, v := range rd.violations {
			fmt.Fprintf(b, "\nRound %d: %s (FederationCluster %s) seen deleted at %s while another of its pods was unavailable.\n",
				i+1, v.pod, v.group, v.start.Format("15:04:05.000"))
		}
	}
}
