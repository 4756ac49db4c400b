package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// hookTimeout bounds the work behind one hook request: a leadership
// transfer takes a few election ticks (100 ms each by default).
const hookTimeout = 10 * time.Second

// hooks serves fedop's pod hooks for the local etcd member.
type hooks struct {
	log *slog.Logger
	// cli talks to the local member only (its client URL), so that Status
	// and MoveLeader reach this member and no other.
	cli *clientv3.Client
	// local is the local member's client URL.
	local string
	// http checks the local member's /health.
	http *http.Client
}

// handler routes GET /drain, /undrain and /healthz.
func (h *hooks) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /drain", h.drain)
	mux.HandleFunc("GET /undrain", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /healthz", h.healthz)
	return mux
}

// drain answers 200 when the local member is not the leader, moving
// leadership away first when it is, and 503 with the reason otherwise. The
// caller polls it until 200: a leader that cannot hand over now (no healthy
// voter) may be able to later.
func (h *hooks) drain(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), hookTimeout)
	defer cancel()
	msg, err := h.moveLeaderAway(ctx)
	if err != nil {
		h.log.Info("Drain not done", "error", err)
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	h.log.Info("Drained", "result", msg)
	_, _ = fmt.Fprintln(w, msg)
}

// moveLeaderAway moves leadership from the local member, if it leads, to
// the healthy voter whose applied index is highest (the one that catches up
// soonest), and returns what it found or did. It fails when the local
// member does not answer, when there is no healthy voter to move to, and
// when the local member still leads after MoveLeader returned.
func (h *hooks) moveLeaderAway(ctx context.Context) (string, error) {
	st, err := h.cli.Status(ctx, h.local)
	if err != nil {
		return "", fmt.Errorf("status of the local member: %w", err)
	}
	self := st.Header.MemberId
	if st.Leader != self {
		return fmt.Sprintf("member %x is not the leader (%x is)", self, st.Leader), nil
	}
	list, err := h.cli.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("member list: %w", err)
	}
	var target, best uint64
	for _, m := range list.Members {
		if m.ID == self || m.IsLearner || len(m.ClientURLs) == 0 {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		mst, err := h.cli.Status(sctx, m.ClientURLs[0])
		cancel()
		if err != nil || len(mst.Errors) > 0 {
			continue
		}
		if target == 0 || mst.RaftAppliedIndex > best {
			target, best = m.ID, mst.RaftAppliedIndex
		}
	}
	if target == 0 {
		return "", errors.New("the local member leads and no other voter is healthy")
	}
	if _, err := h.cli.MoveLeader(ctx, target); err != nil {
		return "", fmt.Errorf("move leader from %x to %x: %w", self, target, err)
	}
	st, err = h.cli.Status(ctx, h.local)
	if err != nil {
		return "", fmt.Errorf("status of the local member after moving the leader: %w", err)
	}
	if st.Leader == self {
		return "", fmt.Errorf("member %x still leads after moving the leader to %x", self, target)
	}
	return fmt.Sprintf("moved the leader from %x to %x", self, st.Leader), nil
}

// healthz relays the local member's own GET /health: its status code and
// body (200 and {"health":"true",...} when the member has a leader, no
// alarm, and serves a read).
func (h *hooks) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), hookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.local+"/health", nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	resp, err := h.http.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, 4096))
}
