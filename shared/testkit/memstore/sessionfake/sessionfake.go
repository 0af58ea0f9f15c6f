// Package sessionfake is the in-memory fake of sessions.Store
// (collaboration sessions, their traces and the sweeps' indexes), as
// shared/store/sessionstore is the DynamoDB one; both are held to the
// store contract (shared/testkit/storetest).
package sessionfake

import (
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

var _ sessions.Store = (*Sessions)(nil)

// Sessions is sessions.Store on a memtable.Table: the sessions, their
// traces, and their events on the sessions' streams. Safe for concurrent
// use.
type Sessions struct {
	*agentfake.Agents
	tb *memtable.Table
}

// New returns the sessions of tb (nil: a table of their own).
func New(tb *memtable.Table) *Sessions {
	if tb == nil {
		tb = memtable.New()
	}
	return &Sessions{Agents: agentfake.New(tb), tb: tb}
}

// state is the sessions' part of the table.
type state struct {
	sessions map[memtable.Key]sessions.Session
	msgs     map[memtable.Key][]sessions.Message // the traces, by team and session id
}

// st is the sessions' part of the table. Call with the table locked.
func (s *Sessions) st() *state {
	return memtable.Part(s.tb, "sessions", func() *state {
		return &state{sessions: map[memtable.Key]sessions.Session{}, msgs: map[memtable.Key][]sessions.Message{}}
	})
}

// copySession deep-copies a session as the adapter's item stores it.
func copySession(v sessions.Session) sessions.Session {
	v.Events = nil // written on the stream, not on the session
	v.Participants = slices.Clone(v.Participants)
	v.StageOutputs = slices.Clone(v.StageOutputs)
	v.SlotWaits, v.RemoteWaits = slices.Clone(v.SlotWaits), slices.Clone(v.RemoteWaits)
	for i := range v.StageOutputs {
		if d := v.StageOutputs[i].Data; d != nil {
			v.StageOutputs[i].Data = memtable.ReadDoc[map[string]any](memtable.Doc(d))
		}
	}
	if v.StageOutputs == nil {
		v.StageOutputs = []sessions.StageOutput{}
	}
	v.Deadline, v.StartedAt, v.CompletedAt = memtable.CloneTime(v.Deadline), memtable.CloneTime(v.StartedAt), memtable.CloneTime(v.CompletedAt)
	return v
}

// CreateSession implements sessions.Store.
func (s *Sessions) CreateSession(ctx context.Context, v sessions.Session) error {
	if err := memtable.StreamNumbered(v.EventSeq, v.Events); err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	if err := memtable.RefTaken(ctx, s.tb, v.TeamID, sessions.RefKind); err != nil {
		return err
	}
	k := memtable.Key{Team: v.TeamID, ID: v.ID}
	if _, ok := s.st().sessions[k]; ok {
		return apperr.New(apperr.ECONFLICT, "session %q exists", v.ID)
	}
	if err := memtable.StreamFree(s.tb, v.TeamID, streams.Session(v.ID), v.Events); err != nil {
		return err
	}
	s.st().sessions[k] = copySession(v)
	memtable.StreamAppend(s.tb, v.TeamID, streams.Session(v.ID), v.Events)
	memtable.RefSet(ctx, s.tb, v.TeamID, sessions.RefKind, v.ID)
	return nil
}

// GetSession implements sessions.Store.
func (s *Sessions) GetSession(_ context.Context, teamID, id string) (sessions.Session, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	v, ok := s.st().sessions[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return sessions.Session{}, apperr.NotFound("session", id)
	}
	return copySession(v), nil
}

// PutSession implements sessions.Store: conditioned on the version, the
// session and its events (on its stream) at once.
func (s *Sessions) PutSession(_ context.Context, v sessions.Session) error {
	if err := memtable.StreamNumbered(v.EventSeq, v.Events); err != nil {
		return err
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: v.TeamID, ID: v.ID}
	cur, ok := s.st().sessions[k]
	if !ok {
		return apperr.NotFound("session", v.ID)
	}
	if cur.Version != v.Version-1 {
		return sessions.ErrChanged
	}
	if err := memtable.StreamFree(s.tb, v.TeamID, streams.Session(v.ID), v.Events); err != nil {
		return err
	}
	// Charges (ADD on the adapter's item) are the stored values' own.
	s.st().sessions[k] = copySession(v)
	memtable.StreamAppend(s.tb, v.TeamID, streams.Session(v.ID), v.Events)
	return nil
}

// Charge implements sessions.Store: total + cost ≤ cap, as the adapter's
// condition total ≤ cap − cost.
func (s *Sessions) Charge(_ context.Context, teamID, id string, cost float64, tokens int) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: teamID, ID: id}
	v, ok := s.st().sessions[k]
	if !ok {
		return apperr.NotFound("session", id)
	}
	v.Version++
	if v.BudgetExhausted || v.TotalCostUSD > v.MaxCostUSD-cost {
		v.BudgetExhausted = true
		s.st().sessions[k] = v
		return sessions.ErrBudget
	}
	v.TotalCostUSD += cost
	v.Tokens += tokens
	v.ModelCalls++
	s.st().sessions[k] = v
	return nil
}

// ListSessions implements sessions.Store, newest first. As in the
// adapter the filters apply after the limit (a page may hold fewer than
// Limit sessions while a next token is returned) and the token is bound
// to the team's listing.
func (s *Sessions) ListSessions(_ context.Context, teamID string, f sessions.Filter, p paging.Page) ([]sessions.Session, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[sessions.Session]
	for k, v := range s.st().sessions {
		if k.Team == teamID {
			rows = append(rows, memtable.Row[sessions.Session]{SK: k.ID, V: copySession(v)})
		}
	}
	keep := func(v sessions.Session) bool {
		return (f.Status == "" || v.Status == f.Status) && (f.Pattern == "" || v.Pattern == f.Pattern) &&
			(f.Agent == "" || slices.Contains(v.Agents(), f.Agent)) && (f.UserID == "" || v.UserID == f.UserID)
	}
	return memtable.Query(rows, true, "sessions:"+teamID, p, keep)
}

// AppendSessionMessage implements sessions.Store.
func (s *Sessions) AppendSessionMessage(_ context.Context, teamID, id string, m sessions.Message) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: teamID, ID: id}
	if m.Data != nil {
		m.Data = memtable.ReadDoc[map[string]any](memtable.Doc(m.Data))
	}
	s.st().msgs[k] = append(s.st().msgs[k], m)
	return nil
}

// ListSessionMessages implements sessions.Store.
func (s *Sessions) ListSessionMessages(_ context.Context, teamID, id string) ([]sessions.Message, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	out := slices.Clone(s.st().msgs[memtable.Key{Team: teamID, ID: id}])
	for i := range out {
		out[i].Seq = i + 1
	}
	return out, nil
}

// DueSessions implements sessions.Store: the sessions the sweep ends
// (not ended, not awaiting approval or planning, with a deadline), as the
// adapter's index lists them (dueRefs).
func (s *Sessions) DueSessions(_ context.Context, before time.Time, limit int) ([]sessions.Ref, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var list []memtable.DueRow[sessions.Ref]
	for k, v := range s.st().sessions {
		if !v.Status.Terminal() && v.Status != sessions.AwaitingApproval && v.Status != sessions.Planning && v.Deadline != nil {
			list = append(list, memtable.DueRow[sessions.Ref]{At: *v.Deadline, Team: k.Team, ID: k.ID, Ref: sessions.Ref{TeamID: k.Team, ID: k.ID}})
		}
	}
	return memtable.DueRefs(list, before, limit), nil
}

// UnstartedSessions implements sessions.Store: the planning sessions by
// their last change, as the adapter's index lists them (dueRefs).
func (s *Sessions) UnstartedSessions(_ context.Context, before time.Time, limit int) ([]sessions.Ref, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var list []memtable.DueRow[sessions.Ref]
	for k, v := range s.st().sessions {
		if v.Status == sessions.Planning {
			list = append(list, memtable.DueRow[sessions.Ref]{At: v.UpdatedAt, Team: k.Team, ID: k.ID, Ref: sessions.Ref{TeamID: k.Team, ID: k.ID}})
		}
	}
	return memtable.DueRefs(list, before, limit), nil
}

// SessionAgents implements messaging.Directory: the lead and the
// participants of a collaboration session (ENOTFOUND for an unknown one).
func (s *Sessions) SessionAgents(ctx context.Context, teamID, sessionID string) ([]string, error) {
	v, err := s.GetSession(ctx, teamID, sessionID)
	if err != nil {
		return nil, apperr.NotFound("collaboration session", sessionID)
	}
	return v.Agents(), nil
}
