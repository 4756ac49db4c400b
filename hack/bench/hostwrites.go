package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/fedop-io/fedop/api/v1alpha1"
)

// Item 9 times both ends of what it counts on the API servers, from the
// audit logs of the lab's kube-apiservers (hack/bench.sh gives every
// cluster a policy that logs writes to FederationClusters and pod
// deletions, and nothing else): each write to the FederationCluster by
// when the host stored it, and each step's deletion by when its member
// received the DELETE. The observer's receive times of pod events, which
// the item used before, lag on a loaded lab: in a quick run with a manager
// that logged its requests' times, the observer saw two deletions 9 ms and
// 19 ms after fedop's DELETE had returned, after the status write that
// followed it. A critical window still opens at the previous replacement
// seen Ready by the observer: which of a pod's status writes made it Ready
// is not in a Metadata-level audit event. All the times are on this
// machine's clock.

// verbDelete is the audit events' verb of a DELETE of one object.
const verbDelete = "delete"

// auditLog returns the audit log of the lab's cluster named cluster: where
// kwokctl --runtime binary writes it under hack/lab.sh's KWOK_WORKDIR.
func auditLog(labDir, cluster string) string {
	return filepath.Join(labDir, "kwok", "clusters", cluster, "logs", "audit.log")
}

// readAudit returns the ResponseComplete events of the audit log at path
// that succeeded (a status code below 300), are about an object in the
// benchmark's namespace, and that keep accepts, in the log's order. It
// errors when the log cannot be read or a line is not an audit event.
func readAudit(path string, keep func(ev *auditv1.Event) bool) ([]auditv1.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading an audit log: %w", err)
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	var out []auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		var ev auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log %s, line %d: %w", path, line, err)
		}
		if ev.Stage == auditv1.StageResponseComplete && ev.ObjectRef != nil && ev.ObjectRef.Namespace == namespace &&
			ev.ResponseStatus != nil && ev.ResponseStatus.Code < 300 && keep(&ev) {
			out = append(out, ev)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading audit log %s: %w", path, err)
	}
	return out, nil
}

// hostWrite is one write of fcWrites: when the API server stored it, and
// what it was (verb, subresource, user agent), for the log.
type hostWrite struct {
	at   time.Time
	what string
}

// fcWrites returns the writes (create, update, patch, delete: spec or
// status; one that changed nothing included) to FederationCluster name in
// the host's audit log at path, each at its ResponseComplete time.
func fcWrites(path, name string) ([]hostWrite, error) {
	evs, err := readAudit(path, func(ev *auditv1.Event) bool {
		ref := ev.ObjectRef
		return ref.APIGroup == v1alpha1.GroupVersion.Group && ref.Resource == "federationclusters" && ref.Name == name &&
			slices.Contains([]string{"create", "update", "patch", verbDelete}, ev.Verb)
	})
	if err != nil {
		return nil, err
	}
	out := make([]hostWrite, 0, len(evs))
	for _, ev := range evs {
		what := ev.Verb
		if ev.ObjectRef.Subresource != "" {
			what += " " + ev.ObjectRef.Subresource
		}
		out = append(out, hostWrite{at: ev.StageTimestamp.Time, what: what + " by " + ev.UserAgent})
	}
	return out, nil
}

// times returns the times of writes.
func times(writes []hostWrite) []time.Time {
	out := make([]time.Time, len(writes))
	for i, w := range writes {
		out[i] = w.at
	}
	return out
}

// podDeletes returns, by pod name, when a member's API server received
// each DELETE of a pod (its requestReceivedTimestamp), from the member's
// audit log at path, in the log's order.
func podDeletes(path string) (map[string][]time.Time, error) {
	evs, err := readAudit(path, func(ev *auditv1.Event) bool {
		return ev.Verb == verbDelete && ev.ObjectRef.APIGroup == "" && ev.ObjectRef.Resource == "pods" && ev.ObjectRef.Subresource == ""
	})
	if err != nil {
		return nil, err
	}
	out := map[string][]time.Time{}
	for _, ev := range evs {
		out[ev.ObjectRef.Name] = append(out[ev.ObjectRef.Name], ev.RequestReceivedTimestamp.Time)
	}
	return out, nil
}

// deleteLags returns, over the steps of ws with a known deleteSent, how
// late the observer saw each deletion after its member received the
// DELETE.
func deleteLags(ws []windowResult) []time.Duration {
	var out []time.Duration
	for _, w := range ws {
		for _, st := range w.phases {
			if !st.deleteSent.IsZero() {
				out = append(out, st.deletedAt.Sub(st.deleteSent))
			}
		}
	}
	return out
}

// matchDeletes sets each step's deleteSent: the last DELETE of its pod
// that its member received at or before the observer saw the deletion
// (a watch shows a deletion only after its request). deletes maps member
// to podDeletes. It returns how many steps had none.
func matchDeletes(steps []stepTimes, deletes map[string]map[string][]time.Time) (unmatched int) {
	for i := range steps {
		st := &steps[i]
		st.deleteSent = time.Time{}
		for _, at := range deletes[st.member][st.pod] {
			if !at.After(st.deletedAt) && at.After(st.deleteSent) {
				st.deleteSent = at
			}
		}
		if st.deleteSent.IsZero() {
			unmatched++
		}
	}
	return unmatched
}
