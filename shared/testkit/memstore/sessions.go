package memstore

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

var _ sessions.Store = (*Store)(nil)

// copySession deep-copies a session as the adapter's item stores it.
func copySession(v sessions.Session) sessions.Session {
	v.Events = nil // written on the stream, not on the session
	v.Participants = slices.Clone(v.Participants)
	v.StageOutputs = slices.Clone(v.StageOutputs)
	v.SlotWaits, v.RemoteWaits = slices.Clone(v.SlotWaits), slices.Clone(v.RemoteWaits)
	for i := range v.StageOutputs {
		if d := v.StageOutputs[i].Data; d != nil {
			v.StageOutputs[i].Data = readDoc[map[string]any](doc(d))
		}
	}
	if v.StageOutputs == nil {
		v.StageOutputs = []sessions.StageOutput{}
	}
	v.Deadline, v.StartedAt, v.CompletedAt = cloneTime(v.Deadline), cloneTime(v.StartedAt), cloneTime(v.CompletedAt)
	return v
}

func (s *Store) sessionMaps() {
	if s.sessions == nil {
		s.sessions, s.sessionMsgs = map[key]sessions.Session{}, map[key][]sessions.Message{}
	}
}

// CreateSession implements sessions.Store.
func (s *Store) CreateSession(ctx context.Context, v sessions.Session) error {
	if err := streamNumbered(v.EventSeq, v.Events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	if err := s.refTaken(ctx, v.TeamID, sessions.RefKind); err != nil {
		return err
	}
	k := key{v.TeamID, v.ID}
	if _, ok := s.sessions[k]; ok {
		return apperr.New(apperr.ECONFLICT, "session %q exists", v.ID)
	}
	if err := s.streamFree(v.TeamID, streams.Session(v.ID), v.Events); err != nil {
		return err
	}
	s.sessions[k] = copySession(v)
	s.streamAppend(v.TeamID, streams.Session(v.ID), v.Events)
	s.refSet(ctx, v.TeamID, sessions.RefKind, v.ID)
	return nil
}

// GetSession implements sessions.Store.
func (s *Store) GetSession(_ context.Context, teamID, id string) (sessions.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	v, ok := s.sessions[key{teamID, id}]
	if !ok {
		return sessions.Session{}, apperr.NotFound("session", id)
	}
	return copySession(v), nil
}

// PutSession implements sessions.Store: conditioned on the version, the
// session and its events (on its stream) at once.
func (s *Store) PutSession(_ context.Context, v sessions.Session) error {
	if err := streamNumbered(v.EventSeq, v.Events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	k := key{v.TeamID, v.ID}
	cur, ok := s.sessions[k]
	if !ok {
		return apperr.NotFound("session", v.ID)
	}
	if cur.Version != v.Version-1 {
		return sessions.ErrChanged
	}
	if err := s.streamFree(v.TeamID, streams.Session(v.ID), v.Events); err != nil {
		return err
	}
	// Charges (ADD on the adapter's item) are the stored values' own.
	s.sessions[k] = copySession(v)
	s.streamAppend(v.TeamID, streams.Session(v.ID), v.Events)
	return nil
}

// Charge implements sessions.Store: total + cost ≤ cap, as the adapter's
// condition total ≤ cap − cost.
func (s *Store) Charge(_ context.Context, teamID, id string, cost float64, tokens int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	k := key{teamID, id}
	v, ok := s.sessions[k]
	if !ok {
		return apperr.NotFound("session", id)
	}
	v.Version++
	if v.BudgetExhausted || v.TotalCostUSD > v.MaxCostUSD-cost {
		v.BudgetExhausted = true
		s.sessions[k] = v
		return sessions.ErrBudget
	}
	v.TotalCostUSD += cost
	v.Tokens += tokens
	v.ModelCalls++
	s.sessions[k] = v
	return nil
}

// ListSessions implements sessions.Store, newest first.
func (s *Store) ListSessions(_ context.Context, teamID string, f sessions.Filter, p paging.Page) ([]sessions.Session, string, error) {
	p, err := p.Normalize()
	if err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	var all []sessions.Session
	for k, v := range s.sessions {
		if k.team != teamID || (f.Status != "" && v.Status != f.Status) || (f.Pattern != "" && v.Pattern != f.Pattern) {
			continue
		}
		if f.Agent != "" && !slices.Contains(v.Agents(), f.Agent) {
			continue
		}
		all = append(all, copySession(v))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID > all[j].ID })
	start := 0
	if p.Token != "" {
		for start < len(all) && all[start].ID >= p.Token {
			start++
		}
	}
	end := min(len(all), start+p.Limit)
	next := ""
	if end < len(all) {
		next = all[end-1].ID
	}
	return all[start:end], next, nil
}

// AppendSessionMessage implements sessions.Store.
func (s *Store) AppendSessionMessage(_ context.Context, teamID, id string, m sessions.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	k := key{teamID, id}
	if m.Data != nil {
		m.Data = readDoc[map[string]any](doc(m.Data))
	}
	s.sessionMsgs[k] = append(s.sessionMsgs[k], m)
	return nil
}

// ListSessionMessages implements sessions.Store.
func (s *Store) ListSessionMessages(_ context.Context, teamID, id string) ([]sessions.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	out := slices.Clone(s.sessionMsgs[key{teamID, id}])
	for i := range out {
		out[i].Seq = i + 1
	}
	return out, nil
}

// DueSessions implements sessions.Store.
func (s *Store) DueSessions(_ context.Context, before time.Time, limit int) ([]sessions.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	var out []sessions.Ref
	for k, v := range s.sessions {
		if !v.Status.Terminal() && v.Status != sessions.AwaitingApproval && v.Status != sessions.Planning && v.Deadline != nil && v.Deadline.Before(before) && len(out) < limit {
			out = append(out, sessions.Ref{TeamID: k.team, ID: k.id})
		}
	}
	return out, nil
}

// UnstartedSessions implements sessions.Store.
func (s *Store) UnstartedSessions(_ context.Context, before time.Time, limit int) ([]sessions.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sessionMaps()
	var out []sessions.Ref
	for k, v := range s.sessions {
		if v.Status == sessions.Planning && v.UpdatedAt.Before(before) && len(out) < limit {
			out = append(out, sessions.Ref{TeamID: k.team, ID: k.id})
		}
	}
	return out, nil
}
