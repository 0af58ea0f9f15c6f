package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

// agentsListed: the team's agents are listed by slug, a page at a time,
// all or of a status; another team reads none.
func agentsListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	_, err := f.Agents.SetStatus(ctx, f.team, "bob", agents.StatusPaused, time.Now().UTC())
	require.NoError(t, err)
	list := func(team string, filter agents.Filter) func(paging.Page) ([]agents.Agent, string, error) {
		return func(p paging.Page) ([]agents.Agent, string, error) { return f.Agents.ListAgents(ctx, team, filter, p) }
	}
	key := func(a agents.Agent) string { return a.Slug }
	assert.Equal(t, []string{"ann", "bob", "cat"}, pages(t, 2, list(f.team, agents.Filter{}), key), "by slug")
	assert.Equal(t, []string{"bob"}, pages(t, 1, list(f.team, agents.Filter{Status: agents.StatusPaused}), key), "of a status")
	assert.Empty(t, pages(t, 2, list(f.otherTeam(), agents.Filter{}), key))
	boundToken(t, list(f.team, agents.Filter{}), list(f.otherTeam(), agents.Filter{}))
	whole, _, err := f.Agents.ListAgents(ctx, f.team, agents.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	for _, a := range whole {
		assert.Equal(t, f.team, a.TeamID)
		assert.NotEmpty(t, a.Skills, "%s is listed with its skills", a.Slug)
	}
}

// approvalPolicy: a team has the zero policy until one is put; a put
// replaces the whole policy; another team's is its own.
func approvalPolicy(t *testing.T, f *fixture) {
	ctx := context.Background()
	p, err := f.Approvals.GetApprovalPolicy(ctx, f.team)
	require.NoError(t, err)
	assert.Zero(t, p.ExpirySeconds)
	assert.Empty(t, p.Tools)
	assert.Empty(t, p.Deciders)
	assert.Nil(t, p.MinEstimatedCostUSD)
	at := time.Now().UTC().Truncate(time.Millisecond)
	cost := 0.25
	put := approvals.Policy{Tools: []string{"send_agent_message"}, Agents: []string{"bob"}, MinEstimatedCostUSD: &cost,
		ExpirySeconds: 600, Deciders: []string{"alice", "auth0|bob"}, UpdatedAt: &at, UpdatedBy: "user:key_contract"}
	require.NoError(t, f.Approvals.PutApprovalPolicy(ctx, f.team, put))
	p, err = f.Approvals.GetApprovalPolicy(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, put.Tools, p.Tools)
	assert.Equal(t, put.Agents, p.Agents)
	assert.Equal(t, put.Deciders, p.Deciders)
	require.NotNil(t, p.MinEstimatedCostUSD)
	assert.InDelta(t, cost, *p.MinEstimatedCostUSD, 1e-12)
	assert.Equal(t, 600, p.ExpirySeconds)
	require.NotNil(t, p.UpdatedAt)
	assert.True(t, p.UpdatedAt.Equal(at))
	assert.Equal(t, "user:key_contract", p.UpdatedBy)
	require.NoError(t, f.Approvals.PutApprovalPolicy(ctx, f.team, approvals.Policy{Tools: []string{"web_search"}, ExpirySeconds: 60}))
	p, err = f.Approvals.GetApprovalPolicy(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, []string{"web_search"}, p.Tools)
	assert.Empty(t, p.Agents, "replaced whole")
	assert.Empty(t, p.Deciders, "replaced whole")
	assert.Nil(t, p.MinEstimatedCostUSD)
	theirs, err := f.Approvals.GetApprovalPolicy(ctx, f.otherTeam())
	require.NoError(t, err)
	assert.Zero(t, theirs.ExpirySeconds)
}

// approvalsPaged: approvals are listed newest first, a page at a time, by
// status and task, with a token valid for its listing only.
func approvalsPaged(t *testing.T, f *fixture) {
	ctx := context.Background()
	a, b := f.running(t, "ann"), f.running(t, "bob")
	made := []string{f.approval(t, a.ID).ID, f.approval(t, b.ID).ID, f.approval(t, a.ID).ID}
	_, err := f.Approvals.DecideApproval(ctx, f.team, made[1], approvals.Decision{Status: approvals.Approved, By: "user:key_contract", At: time.Now().UTC()})
	require.NoError(t, err)
	list := func(filter approvals.Filter) func(paging.Page) ([]approvals.Approval, string, error) {
		return func(p paging.Page) ([]approvals.Approval, string, error) {
			return f.Approvals.ListApprovals(ctx, f.team, filter, p)
		}
	}
	key := func(a approvals.Approval) string { return a.ID }
	assert.Equal(t, reversed(made), pages(t, 1, list(approvals.Filter{}), key))
	assert.Equal(t, []string{made[2], made[0]}, pages(t, 1, list(approvals.Filter{Status: approvals.Pending}), key))
	assert.Equal(t, []string{made[1]}, pages(t, 1, list(approvals.Filter{TaskID: b.ID}), key))
	theirs, _, err := f.Approvals.ListApprovals(ctx, f.otherTeam(), approvals.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, theirs)
	boundToken(t, list(approvals.Filter{}), func(p paging.Page) ([]approvals.Approval, string, error) {
		return f.Approvals.ListApprovals(ctx, f.otherTeam(), approvals.Filter{}, p)
	})
}

// sessionsListed: the team's sessions are listed newest first, a page at a
// time, by status, pattern and agent (lead or participant); a session's
// agents are its lead and participants; the sweep's index lists sessions
// due earliest first.
func sessionsListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	base := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) // after any sweep of a running system
	mk := func(lead, participant string, pattern sessions.Pattern, st sessions.Status, deadline time.Time) sessions.Session {
		t.Helper()
		s := f.session(t, 0.5)
		next := s
		next.Version, next.Lead, next.Pattern, next.Status, next.Deadline = 2, lead, pattern, st, &deadline
		next.Participants = []sessions.Participant{{Agent: participant, Role: "contributor"}}
		require.NoError(t, f.Sessions.PutSession(ctx, next))
		return next
	}
	s1 := mk("ann", "bob", sessions.Brainstorm, sessions.Active, base.Add(2*time.Hour))
	s2 := mk("bob", "cat", sessions.Pipeline, sessions.Active, base.Add(time.Hour))
	s3 := mk("cat", "ann", sessions.Brainstorm, sessions.Completed, base)
	list := func(filter sessions.Filter) func(paging.Page) ([]sessions.Session, string, error) {
		return func(p paging.Page) ([]sessions.Session, string, error) {
			return f.Sessions.ListSessions(ctx, f.team, filter, p)
		}
	}
	key := func(s sessions.Session) string { return s.ID }
	for _, tc := range []struct {
		name   string
		filter sessions.Filter
		want   []string
	}{
		{"all", sessions.Filter{}, []string{s3.ID, s2.ID, s1.ID}},
		{"a status", sessions.Filter{Status: sessions.Active}, []string{s2.ID, s1.ID}},
		{"a pattern", sessions.Filter{Pattern: sessions.Brainstorm}, []string{s3.ID, s1.ID}},
		{"an agent, lead or participant", sessions.Filter{Agent: "bob"}, []string{s2.ID, s1.ID}},
	} {
		assert.Equal(t, tc.want, pages(t, 1, list(tc.filter), key), "%s, newest first, a page at a time", tc.name)
	}
	theirs, _, err := f.Sessions.ListSessions(ctx, f.otherTeam(), sessions.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, theirs)
	boundToken(t, list(sessions.Filter{}), func(p paging.Page) ([]sessions.Session, string, error) {
		return f.Sessions.ListSessions(ctx, f.otherTeam(), sessions.Filter{}, p)
	})

	dir, ok := f.Sessions.(interface {
		SessionAgents(ctx context.Context, teamID, sessionID string) ([]string, error)
	})
	require.True(t, ok, "the sessions' store tells who works in a session (messaging.Directory)")
	who, err := dir.SessionAgents(ctx, f.team, s2.ID)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"bob", "cat"}, who)
	_, err = dir.SessionAgents(ctx, f.otherTeam(), s2.ID)
	refused(t, err, apperr.ENOTFOUND, "")

	due, err := f.Sessions.DueSessions(ctx, base.Add(3*time.Hour), 1000)
	require.NoError(t, err)
	var ours []string
	for _, r := range due {
		if r.TeamID == f.team {
			ours = append(ours, r.ID)
		}
	}
	assert.Equal(t, []string{s2.ID, s1.ID}, ours, "due earliest first; an ended session is not")
}

// plansListed: the team's plans are listed newest first, a page at a
// time; the sweep's index lists the plans that have not ended whose
// backstop is before the time asked, earliest first, across teams.
func plansListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	base := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) // after any sweep of a running system
	mk := func(created time.Time, st plans.Status) plans.Plan {
		t.Helper()
		p := plans.Plan{TeamID: f.team, ID: ids.New("plan"), Lead: "ann", Message: "plan", Trigger: "contract", Status: st,
			RootTaskID: ids.New("task"), Version: 1, CreatedAt: created, UpdatedAt: created,
			Steps: []plans.StepState{{Step: plans.Step{StepID: 1}, Agent: "bob", Status: plans.StepRunning, TaskID: ids.New("task")}}}
		require.NoError(t, plans.WithEvents(plans.Plan{}, &p, created))
		require.NoError(t, f.Plans.CreatePlan(ctx, p))
		return p
	}
	late := mk(base.Add(time.Hour), plans.Running)
	early := mk(base, plans.Running)
	ended := mk(base, plans.Completed)
	key := func(p plans.Plan) string { return p.ID }
	list := func(team string) func(paging.Page) ([]plans.Plan, string, error) {
		return func(p paging.Page) ([]plans.Plan, string, error) { return f.Plans.ListPlans(ctx, team, "", p) }
	}
	assert.Equal(t, []string{ended.ID, early.ID, late.ID}, pages(t, 1, list(f.team), key), "newest first")
	assert.Empty(t, pages(t, 10, list(f.otherTeam()), key))
	boundToken(t, list(f.team), list(f.otherTeam()))

	due := func(before time.Time) []string {
		t.Helper()
		refs, err := f.Plans.DuePlans(ctx, before, 1000)
		require.NoError(t, err)
		var ours []string
		for _, r := range refs {
			if r.TeamID == f.team {
				ours = append(ours, r.ID)
			}
		}
		return ours
	}
	assert.Equal(t, []string{early.ID, late.ID}, due(late.Due().Add(time.Millisecond)), "earliest first; an ended plan is not due")
	assert.Equal(t, []string{early.ID}, due(late.Due()), "due before the time asked, not at it")
	assert.Empty(t, due(early.Due()))
}
