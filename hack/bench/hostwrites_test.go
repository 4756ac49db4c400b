package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

func TestFCWritesKeepsStoredWritesOfTheFederationCluster(t *testing.T) {
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	event := func(at time.Duration, stage auditv1.Stage, verb, name, sub string, code int32) auditv1.Event {
		return auditv1.Event{
			Stage: stage, Verb: verb, UserAgent: "fedop-manager",
			ObjectRef:      &auditv1.ObjectReference{APIGroup: "fedop.io", Resource: "federationclusters", Subresource: sub, Namespace: namespace, Name: name},
			ResponseStatus: &metav1.Status{Code: code},
			StageTimestamp: metav1.NewMicroTime(base.Add(at)),
		}
	}
	events := []auditv1.Event{
		event(1*time.Millisecond, auditv1.StageResponseComplete, "update", "step", "status", 200),                    // kept
		event(2*time.Millisecond, auditv1.StageResponseComplete, "get", "step", "", 200),                             // a read
		event(3*time.Millisecond, auditv1.StageResponseComplete, "update", "step", "status", 409),                    // a conflict: nothing stored
		event(4*time.Millisecond, auditv1.StageResponseComplete, "patch", "other", "", 200),                          // another FederationCluster
		event(5*time.Millisecond, auditv1.StageRequestReceived, "update", "step", "", 0),                             // not yet stored
		event(6*time.Millisecond, auditv1.StageResponseComplete, "patch", "step", "", 200),                           // kept: a spec write
		event(7*time.Microsecond+7*time.Millisecond, auditv1.StageResponseComplete, "update", "step", "status", 200), // kept, to the microsecond
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, ev := range events {
		require.NoError(t, enc.Encode(ev))
	}
	require.NoError(t, f.Close())

	writes, err := fcWrites(path, "step")
	got := times(writes)
	require.NoError(t, err)
	want := []time.Time{base.Add(time.Millisecond), base.Add(6 * time.Millisecond), base.Add(7*time.Millisecond + 7*time.Microsecond)}
	require.Len(t, got, len(want))
	assert.Equal(t, "update status by fedop-manager", writes[0].what)
	assert.Equal(t, "patch by fedop-manager", writes[1].what)
	for i := range want {
		assert.True(t, want[i].Equal(got[i]), "write %d: got %s, want %s", i, got[i], want[i])
	}
}

func TestFCWritesRejectsWhatIsNotAnAuditLog(t *testing.T) {
	dir := t.TempDir()
	_, err := fcWrites(filepath.Join(dir, "missing.log"), "step")
	assert.ErrorContains(t, err, "reading an audit log")

	bad := filepath.Join(dir, "bad.log")
	require.NoError(t, os.WriteFile(bad, []byte("{\"stage\":\"ResponseComplete\"}\nnot json\n"), 0o600))
	_, err = fcWrites(bad, "step")
	assert.ErrorContains(t, err, "line 2")
}

func TestPodDeletesAndMatchDeletes(t *testing.T) {
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	del := func(received int, name, sub string, code int32) auditv1.Event {
		return auditv1.Event{
			Stage: auditv1.StageResponseComplete, Verb: "delete",
			ObjectRef:                &auditv1.ObjectReference{Resource: "pods", Subresource: sub, Namespace: namespace, Name: name},
			ResponseStatus:           &metav1.Status{Code: code},
			RequestReceivedTimestamp: metav1.NewMicroTime(at(received)),
			StageTimestamp:           metav1.NewMicroTime(at(received + 3)),
		}
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	f, err := os.Create(path)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, ev := range []auditv1.Event{
		del(10, "p-1", "", 200),         // an earlier round's deletion of the name
		del(100, "p-1", "", 200),        // this step's
		del(105, "p-1", "", 404),        // a retry that found it gone: not a deletion
		del(90, "p-2", "eviction", 201), // not a DELETE of the pod itself
		del(300, "p-1", "", 200),        // a later round's
	} {
		require.NoError(t, enc.Encode(ev))
	}
	require.NoError(t, f.Close())

	deletes, err := podDeletes(path)
	require.NoError(t, err)
	require.Len(t, deletes, 1)
	require.Len(t, deletes["p-1"], 3)
	for i, want := range []time.Time{at(10), at(100), at(300)} {
		assert.True(t, want.Equal(deletes["p-1"][i]), "deletion %d: got %s, want %s", i, deletes["p-1"][i], want)
	}

	steps := []stepTimes{
		{member: "a", pod: "p-1", anchor: at(95), deletedAt: at(112)}, // the DELETE received at 100
		{member: "a", pod: "p-2", anchor: at(95), deletedAt: at(120)}, // no DELETE of its own: unmatched
	}
	assert.Equal(t, 1, matchDeletes(steps, map[string]map[string][]time.Time{"a": deletes}))
	assert.True(t, steps[0].deleteSent.Equal(at(100)), "deleteSent %s", steps[0].deleteSent)
	assert.True(t, steps[0].windowEnd().Equal(at(100)))
	assert.True(t, steps[1].deleteSent.IsZero())
	assert.True(t, steps[1].windowEnd().Equal(at(120)), "an unmatched step's window ends at the deletion seen")
}
