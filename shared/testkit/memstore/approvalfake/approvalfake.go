// Package approvalfake is the in-memory fake of approvals.Store (the
// approvals of tool calls and the teams' approval policies), as
// shared/store/approvalstore is the DynamoDB one; both are held to the
// store contract (shared/testkit/storetest).
package approvalfake

import (
	"context"
	"slices"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/work/approvals"
)

var _ approvals.Store = (*Approvals)(nil)

// Approvals is approvals.Store on a memtable.Table. Safe for concurrent
// use.
type Approvals struct{ tb *memtable.Table }

// New returns the approvals of tb (nil: a table of their own).
func New(tb *memtable.Table) *Approvals {
	if tb == nil {
		tb = memtable.New()
	}
	return &Approvals{tb: tb}
}

// approvalRows are the approvals and policies (held by value: the token
// and team are not part of an approval's JSON).
type approvalRows struct {
	policies  map[string]approvals.Policy
	approvals map[memtable.Key]approvals.Approval
}

func rowsOf(tb *memtable.Table) *approvalRows {
	return memtable.Part(tb, "approvals", func() *approvalRows {
		return &approvalRows{policies: map[string]approvals.Policy{}, approvals: map[memtable.Key]approvals.Approval{}}
	})
}

// Pending reports whether the team's approval id exists and is pending:
// the condition on each approval a task's end cancels (taskfake). Call
// with the table locked.
func Pending(tb *memtable.Table, teamID, id string) bool {
	a, ok := rowsOf(tb).approvals[memtable.Key{Team: teamID, ID: id}]
	return ok && a.Status == approvals.Pending
}

// Cancel ends a pending approval with its task (Pending passed). Call
// with the table locked.
func Cancel(tb *memtable.Table, teamID, id, by, reason string, at time.Time) {
	rows := rowsOf(tb)
	k := memtable.Key{Team: teamID, ID: id}
	a := rows.approvals[k]
	a.Status, a.DecidedBy, a.DecidedAt, a.Reason = approvals.Canceled, by, &at, reason
	rows.approvals[k] = a
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
func (s *Approvals) GetApprovalPolicy(_ context.Context, teamID string) (approvals.Policy, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	p := rowsOf(s.tb).policies[teamID]
	p.Tools, p.Agents, p.Deciders = slices.Clone(p.Tools), slices.Clone(p.Agents), slices.Clone(p.Deciders)
	return p, nil
}

// PutApprovalPolicy implements approvals.Store.
func (s *Approvals) PutApprovalPolicy(_ context.Context, teamID string, p approvals.Policy) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	p.Tools, p.Agents, p.Deciders = slices.Clone(p.Tools), slices.Clone(p.Agents), slices.Clone(p.Deciders)
	rowsOf(s.tb).policies[teamID] = p
	return nil
}

// RegisterApproval implements approvals.Store as the adapter does: a new
// approval, or a pending one's token replaced, or a decided one as it is.
func (s *Approvals) RegisterApproval(_ context.Context, a approvals.Approval) (approvals.Approval, bool, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	rows := rowsOf(s.tb)
	k := memtable.Key{Team: a.TeamID, ID: a.ID}
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
func (s *Approvals) GetApproval(_ context.Context, teamID, id string) (approvals.Approval, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	a, ok := rowsOf(s.tb).approvals[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return approvals.Approval{}, apperr.NotFound("approval", id)
	}
	return cloneApproval(a), nil
}

// ListApprovals implements approvals.Store, newest first. As in the
// adapter the filters apply after the limit and the token is bound to the
// team's listing.
func (s *Approvals) ListApprovals(_ context.Context, teamID string, f approvals.Filter, p paging.Page) ([]approvals.Approval, string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[approvals.Approval]
	for k, a := range rowsOf(s.tb).approvals {
		if k.Team == teamID {
			rows = append(rows, memtable.Row[approvals.Approval]{SK: k.ID, V: cloneApproval(a)})
		}
	}
	keep := func(a approvals.Approval) bool {
		return (f.Status == "" || a.Status == f.Status) && (f.TaskID == "" || a.TaskID == f.TaskID)
	}
	return memtable.Query(rows, true, "approvals:"+teamID, p, keep)
}

// DecideApproval implements approvals.Store: conditioned on pending.
func (s *Approvals) DecideApproval(_ context.Context, teamID, id string, d approvals.Decision) (approvals.Approval, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	rows := rowsOf(s.tb)
	k := memtable.Key{Team: teamID, ID: id}
	a, ok := rows.approvals[k]
	if !ok {
		return approvals.Approval{}, apperr.NotFound("approval", id)
	}
	if a.Status != approvals.Pending {
		return approvals.Approval{}, apperr.New(apperr.ECONFLICT, "approval %s is already %s", id, a.Status).
			WithReason("AlreadyDecided").WithDetail("status", string(a.Status))
	}
	at := d.At
	a.Status, a.DecidedBy, a.UserID, a.DecidedAt = d.Status, d.By, d.UserID, &at
	if d.Reason != "" {
		a.Reason = d.Reason
	}
	if len(d.Arguments) > 0 {
		a.ApprovedArguments = slices.Clone(d.Arguments)
	}
	rows.approvals[k] = a
	return cloneApproval(a), nil
}
