package podwatch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// pod returns pod name with uid, Ready or not, with ip and, when
// terminating, a deletionTimestamp.
func pod(name, uid string, ready bool, ip string, terminating bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), Labels: map[string]string{"c": "x"}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Image: "img:1"}}},
		Status: corev1.PodStatus{PodIP: ip}}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	if terminating {
		p.DeletionTimestamp = &metav1.Time{Time: t0}
	}
	return p
}

// scheduled returns p bound to a node.
func scheduled(p *corev1.Pod) *corev1.Pod {
	p.Spec.NodeName = "node-1"
	return p
}

type event struct {
	pod  *corev1.Pod
	gone bool
	ms   int
	want Change
}

func TestSetObserve(t *testing.T) {
	for _, tc := range []struct {
		name      string
		keepReady bool
		events    []event
		want      Record
	}{{
		name: "a life: created, scheduled with an IP, Ready, deleted, gone",
		events: []event{
			{pod("p", "u", false, "", false), false, 1, Created},
			{scheduled(pod("p", "u", false, "10.0.0.1", false)), false, 2, 0},
			{pod("p", "u", true, "10.0.0.1", false), false, 3, BecameReady},
			{pod("p", "u", false, "10.0.0.1", true), false, 4, BecameUnready | Deleted},
			{pod("p", "u", false, "10.0.0.1", true), true, 5, Gone},
		},
		want: Record{Member: "m", Name: "p", UID: "u", Labels: map[string]string{"c": "x"}, Image: "img:1", IP: "10.0.0.1",
			FirstSeen: at(1), ScheduledAt: at(2), IPAt: at(2), ReadyAt: at(3), DeletedAt: at(4), GoneAt: at(5)},
	}, {
		name: "delete event without a terminating update: deleted and gone at once",
		events: []event{
			{pod("p", "u", true, "", false), false, 1, Created | BecameReady},
			{pod("p", "u", true, "", false), true, 2, Deleted | Gone},
		},
		want: Record{Member: "m", Name: "p", UID: "u", Labels: map[string]string{"c": "x"}, Image: "img:1",
			FirstSeen: at(1), ReadyAt: at(1), DeletedAt: at(2), GoneAt: at(2)},
	}, {
		name: "unready by itself sets UnreadyAt; ReadyAt stays the first",
		events: []event{
			{pod("p", "u", true, "", false), false, 1, Created | BecameReady},
			{pod("p", "u", false, "", false), false, 2, BecameUnready},
			{pod("p", "u", true, "", false), false, 3, BecameReady},
		},
		want: Record{Member: "m", Name: "p", UID: "u", Labels: map[string]string{"c": "x"}, Image: "img:1", Ready: true,
			FirstSeen: at(1), ReadyAt: at(1), UnreadyAt: at(2)},
	}, {
		name:      "KeepReady: an older not-Ready event does not undo Ready",
		keepReady: true,
		events: []event{
			{pod("p", "u", true, "", false), false, 1, Created | BecameReady},
			{pod("p", "u", false, "", false), false, 2, 0},
		},
		want: Record{Member: "m", Name: "p", UID: "u", Labels: map[string]string{"c": "x"}, Image: "img:1", Ready: true,
			FirstSeen: at(1), ReadyAt: at(1)},
	}, {
		name: "an event after the delete event changes nothing",
		events: []event{
			{pod("p", "u", false, "", false), true, 1, Created | Deleted | Gone},
			{pod("p", "u", true, "10.0.0.1", false), false, 2, 0},
		},
		want: Record{Member: "m", Name: "p", UID: "u", Labels: map[string]string{"c": "x"}, Image: "img:1",
			FirstSeen: at(1), DeletedAt: at(1), GoneAt: at(1)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSet()
			s.KeepReady = tc.keepReady
			for i, e := range tc.events {
				_, ch := s.Observe("m", e.pod, e.gone, at(e.ms))
				assert.Equal(t, e.want, ch, "event %d", i)
			}
			recs := s.Records()
			require.Len(t, recs, 1)
			assert.Equal(t, tc.want, recs[0])
		})
	}
}

func TestShortfallAndGauge(t *testing.T) {
	s := NewSet()
	s.Observe("a", pod("p0", "u0", true, "", false), false, at(1))
	s.Observe("a", pod("p1", "u1", true, "", true), false, at(1)) // terminating
	s.Observe("b", pod("p2", "u2", false, "", false), false, at(1))
	available := s.Available(func(r *Record) string { return r.Member })
	assert.Equal(t, map[string]int{"a": 1}, available)
	for _, tc := range []struct {
		desired map[string]int
		want    int
	}{
		{map[string]int{"a": 2, "b": 1}, 2},
		{map[string]int{"a": 1}, 0},
		{map[string]int{"a": 0, "b": 0}, 0},
		{map[string]int{"c": 3}, 3},
	} {
		assert.Equal(t, tc.want, Shortfall(tc.desired, available), "%v", tc.desired)
	}

	var g Gauge
	g.Set(1, at(1))
	g.Set(2, at(2))
	g.Set(0, at(3))
	assert.Equal(t, Gauge{Now: 0, Max: 2, MaxAt: at(2)}, g)
	g.Reset(at(4))
	assert.Equal(t, Gauge{Now: 0, Max: 0, MaxAt: at(4)}, g)
}

func TestSteps(t *testing.T) {
	old := func(member, name string, deleted int) Record {
		return Record{Member: member, Name: name, UID: types.UID(name + "-old"), FirstSeen: t0, ReadyAt: t0, DeletedAt: at(deleted)}
	}
	repl := func(member, name string, created, ready int) Record {
		r := Record{Member: member, Name: name, UID: types.UID(name + "-new"), FirstSeen: at(created)}
		if ready > 0 {
			r.ReadyAt = at(ready)
		}
		return r
	}
	gone := func(r Record, ms int) Record { r.GoneAt = at(ms); return r }
	for _, tc := range []struct {
		name      string
		recs      []Record
		after     []string
		overheads []time.Duration
	}{{
		name: "two clean steps across members",
		recs: []Record{
			old("a", "p0", 100), repl("a", "p0", 110, 1100),
			old("b", "p1", 1120), repl("b", "p1", 1130, 2130),
			old("a", "p2", 2160), repl("a", "p2", 2170, 3170),
		},
		after:     []string{AfterReady, AfterReady},
		overheads: []time.Duration{20 * time.Millisecond, 30 * time.Millisecond},
	}, {
		name: "a deletion before the replacement is Ready is an overlap",
		recs: []Record{
			old("a", "p0", 100), repl("a", "p0", 110, 1100),
			old("a", "p1", 500), repl("a", "p1", 510, 1500),
		},
		after:     []string{""},
		overheads: []time.Duration{0},
	}, {
		name: "a pod of the same name first seen after the next deletion is no replacement",
		recs: []Record{
			gone(old("a", "p0", 100), 150), repl("a", "p0", 300, 400),
			old("a", "p1", 200),
		},
		after:     []string{AfterGone},
		overheads: []time.Duration{50 * time.Millisecond},
	}, {
		name: "a pod of the same name in another member is no replacement",
		recs: []Record{
			old("a", "p0", 100), repl("b", "p0", 110, 120),
			old("a", "p1", 200),
		},
		after:     []string{""},
		overheads: []time.Duration{0},
	}, {
		name: "no replacement and not gone: an overlap",
		recs: []Record{
			old("a", "p0", 100),
			old("a", "p1", 200),
		},
		after:     []string{""},
		overheads: []time.Duration{0},
	}, {
		name: "deletions before the start are left out",
		recs: []Record{
			old("a", "p9", -50),
			old("a", "p0", 100), repl("a", "p0", 110, 200),
			old("a", "p1", 230),
		},
		after:     []string{AfterReady},
		overheads: []time.Duration{30 * time.Millisecond},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			steps := Steps(tc.recs, t0)
			var after []string
			var overheads []time.Duration
			for _, s := range steps {
				after, overheads = append(after, s.After), append(overheads, s.Overhead)
			}
			assert.Equal(t, tc.after, after)
			assert.Equal(t, tc.overheads, overheads)
		})
	}
}
