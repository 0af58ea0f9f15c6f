package memstore

import (
	"context"
	"slices"
	"sort"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/approvals"
)

var _ approvals.Store = (*Store)(nil)

// approvalRows are the approvals and policies, made on first use (held by
// value: the token and team are not part of an approval's JSON).
type approvalRows struct {
	policies  map[string]approvals.Policy
	approvals map[key]approvals.Approval
}

func (s *Store) approvalsRows() *approvalRows {
	if s.apr == nil {
		s.apr = &approvalRows{policies: map[string]approvals.Policy{}, approvals: map[key]approvals.Approval{}}
	}
	return s.apr
}

func cloneApproval(a approvals.Approval) approvals.Approval {
	a.Arguments = slices.Clone(a.Arguments)
	a.ApprovedArguments = slices.Clone(a.ApprovedArguments)
	a.Reasons = slices.Clone(a.Reasons)
	if a.DecidedAt != nil {
		at := *a.DecidedAt
		a.DecidedAt = &at
	}
	return a
}

// GetApprovalPolicy implements approvals.Store.
func (s *Store) GetApprovalPolicy(_ context.Context, teamID string) (approvals.Policy, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.approvalsRows().policies[teamID]
	p.Tools, p.Agents = slices.Clone(p.Tools), slices.Clone(p.Agents)
	return p, nil
}

// PutApprovalPolicy implements approvals.Store.
func (s *Store) PutApprovalPolicy(_ context.Context, teamID string, p approvals.Policy) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Tools, p.Agents = slices.Clone(p.Tools), slices.Clone(p.Agents)
	s.approvalsRows().policies[teamID] = p
	return nil
}

// RegisterApproval implements approvals.Store as the adapter does: a new
// approval, or a pending one's token replaced, or a decided one as it is.
func (s *Store) RegisterApproval(_ context.Context, a approvals.Approval) (approvals.Approval, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := s.approvalsRows()
	k := key{a.TeamID, a.ID}
	cur, ok := rows.approvals[k]
	if !ok {
		rows.approvals[k] = cloneApproval(a)
		return cloneApproval(a), true, nil
	}
	if cur.Status == approvals.Pending {
		cur.Token, cur.ExecutionARN = a.Token, a.ExecutionARN
		rows.approvals[k] = cur
	}
	return cloneApproval(cur), false, nil
}

// GetApproval implements approvals.Store.
func (s *Store) GetApproval(_ context.Context, teamID, id string) (approvals.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.approvalsRows().approvals[key{teamID, id}]
	if !ok {
		return approvals.Approval{}, apperr.NotFound("approval", id)
	}
	return cloneApproval(a), nil
}

// ListApprovals implements approvals.Store, newest first. The page token
// is the last id returned.
func (s *Store) ListApprovals(_ context.Context, teamID string, f approvals.Filter, p paging.Page) ([]approvals.Approval, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []approvals.Approval
	for k, a := range s.approvalsRows().approvals {
		if k.team == teamID && (f.Status == "" || a.Status == f.Status) && (f.TaskID == "" || a.TaskID == f.TaskID) && (p.Token == "" || a.ID < p.Token) {
			all = append(all, cloneApproval(a))
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID > all[j].ID })
	next := ""
	if p.Limit > 0 && len(all) > p.Limit {
		all = all[:p.Limit]
		next = all[len(all)-1].ID
	}
	if all == nil {
		all = []approvals.Approval{}
	}
	return all, next, nil
}

// DecideApproval implements approvals.Store: conditioned on pending.
func (s *Store) DecideApproval(_ context.Context, teamID, id string, d approvals.Decision) (approvals.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := s.approvalsRows()
	k := key{teamID, id}
	a, ok := rows.approvals[k]
	if !ok {
		return approvals.Approval{}, apperr.NotFound("approval", id)
	}
	if a.Status != approvals.Pending {
		return approvals.Approval{}, apperr.New(apperr.ECONFLICT, "approval %s is already %s", id, a.Status).
			WithReason("AlreadyDecided").WithDetail("status", string(a.Status))
	}
	at := d.At
	a.Status, a.DecidedBy, a.DecidedAt = d.Status, d.By, &at
	if d.Reason != "" {
		a.Reason = d.Reason
	}
	if len(d.Arguments) > 0 {
		a.ApprovedArguments = slices.Clone(d.Arguments)
	}
	rows.approvals[k] = a
	return cloneApproval(a), nil
}
