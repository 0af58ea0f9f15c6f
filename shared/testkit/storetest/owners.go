package storetest

// What belongs to a person (issue 44, item 4): the owner of a
// conversation, the user a task works for.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// conversationsOwned: a conversation keeps its owner; an owner's listing
// holds theirs alone, newest first, each once across pages however the
// others interleave (a filtered page may be short); a key's own
// conversation has none and is in no owner's listing.
func conversationsOwned(t *testing.T, f *fixture) {
	ctx := context.Background()
	var alice []string
	for i := range 8 {
		switch i % 3 {
		case 0:
			alice = append(alice, f.ownedConversation(t, "alice").ID)
		case 1:
			f.ownedConversation(t, "auth0|bob")
		default:
			f.conversation(t, "")
		}
	}
	got, err := f.Conversations.GetConversation(ctx, f.team, alice[0])
	require.NoError(t, err)
	assert.Equal(t, "alice", got.Owner)
	keys := f.conversation(t, "")
	got, err = f.Conversations.GetConversation(ctx, f.team, keys.ID)
	require.NoError(t, err)
	assert.Empty(t, got.Owner, "a key's own conversation")

	list := func(team, owner string) func(paging.Page) ([]conversations.Conversation, string, error) {
		return func(p paging.Page) ([]conversations.Conversation, string, error) {
			return f.Conversations.ListConversations(ctx, team, owner, p)
		}
	}
	key := func(c conversations.Conversation) string { return c.ID }
	assert.Equal(t, reversed(alice), pages(t, 2, list(f.team, "alice"), key), "alice's alone, newest first, each once")
	assert.Len(t, pages(t, 2, list(f.team, "auth0|bob"), key), 3)
	assert.Empty(t, pages(t, 10, list(f.team, "carol"), key), "a person with none")
	assert.Empty(t, pages(t, 10, list(f.otherTeam(), "alice"), key), "another team's alice")
	whole, _, err := f.Conversations.ListConversations(ctx, f.team, "alice", paging.Page{Limit: 10})
	require.NoError(t, err)
	for _, c := range whole {
		assert.Equal(t, "alice", c.Owner)
		assert.Equal(t, f.team, c.TeamID)
	}
}

// ownedConversation is a new open conversation owner started.
func (f *fixture) ownedConversation(t *testing.T, owner string) conversations.Conversation {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	c := conversations.Conversation{ID: ids.New("conv"), TeamID: f.team, Title: "owned", Owner: owner, Status: conversations.StatusOpen,
		Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.Conversations.CreateConversation(context.Background(), c, nil))
	return c
}

// taskUser: a task a person starts records their user id beside its
// creator (whose shape does not change), read back as written; its
// delegations work for the same person; a key's own task has none.
func taskUser(t *testing.T, f *fixture) {
	ctx := authctx.WithCaller(context.Background(), authctx.Caller{UserID: "auth0|alice", Role: authctx.RoleMember})
	tk, err := f.tasks.Create(ctx, f.team, user, tasks.CreateInput{Assignee: "ann", Title: "for alice"}, false)
	require.NoError(t, err)
	assert.Equal(t, "auth0|alice", tk.UserID)
	got := f.get(t, tk.ID)
	assert.Equal(t, "auth0|alice", got.UserID)
	assert.Equal(t, user, got.CreatedBy, "created_by as before")
	running, err := f.tasks.Start(context.Background(), f.team, f.queued(t, "ann").ID, "user:key_contract")
	require.NoError(t, err)
	assert.Empty(t, f.get(t, running.ID).UserID, "a key's own task")
	mine, err := f.tasks.Create(ctx, f.team, user, tasks.CreateInput{Assignee: "ann", Title: "alice's, executed"}, true)
	require.NoError(t, err)
	mine, err = f.tasks.Start(context.Background(), f.team, mine.ID, "user:key_contract")
	require.NoError(t, err)
	child := f.child(t, mine, "bob")
	assert.Equal(t, "auth0|alice", f.get(t, child.ID).UserID, "a delegation works for the same person")
	list, _, err := f.Tasks.ListTasks(context.Background(), f.team, tasks.Filter{UserID: "auth0|alice"}, paging.Page{Limit: 50})
	require.NoError(t, err)
	var listed []string
	for _, l := range list {
		assert.Equal(t, "auth0|alice", l.UserID, "a person's listing holds theirs only")
		listed = append(listed, l.ID)
	}
	assert.Subset(t, listed, []string{tk.ID, mine.ID, child.ID})
}

// startedForUser: a session's and a report's user id read back as
// written, beside their creator; none reads back empty; a listing by
// user id holds that person's only.
func startedForUser(t *testing.T, f *fixture) {
	ctx := context.Background()
	rep := f.report("status", "ann", "bob")
	rep.UserID = "auth0|alice"
	require.NoError(t, f.Reports.CreateReport(ctx, rep))
	got, err := f.Reports.GetReport(ctx, f.team, rep.ID)
	require.NoError(t, err)
	assert.Equal(t, "auth0|alice", got.UserID)
	assert.Equal(t, rep.RequestedBy, got.RequestedBy)
	bare := f.report("status", "ann", "bob")
	require.NoError(t, f.Reports.CreateReport(ctx, bare))
	got, err = f.Reports.GetReport(ctx, f.team, bare.ID)
	require.NoError(t, err)
	assert.Empty(t, got.UserID)

	now := time.Now().UTC()
	ses := f.session(t, 0.5)
	mine := ses
	mine.ID, mine.UserID, mine.CreatedAt, mine.UpdatedAt = ids.New("ses"), "auth0|alice", now, now
	require.NoError(t, f.Sessions.CreateSession(ctx, mine))
	back, err := f.Sessions.GetSession(ctx, f.team, mine.ID)
	require.NoError(t, err)
	assert.Equal(t, "auth0|alice", back.UserID)
	assert.Equal(t, "user:key_contract", back.CreatedBy)
	back, err = f.Sessions.GetSession(ctx, f.team, ses.ID)
	require.NoError(t, err)
	assert.Empty(t, back.UserID)

	reps, _, err := f.Reports.ListReports(ctx, f.team, reports.Filter{UserID: "auth0|alice"}, paging.Page{Limit: 50})
	require.NoError(t, err)
	var listed []string
	for _, r := range reps {
		listed = append(listed, r.ID+"="+r.UserID)
	}
	assert.Contains(t, listed, rep.ID+"=auth0|alice")
	assert.NotContains(t, listed, bare.ID+"=")
	sess, _, err := f.Sessions.ListSessions(ctx, f.team, sessions.Filter{UserID: "auth0|alice"}, paging.Page{Limit: 50})
	require.NoError(t, err)
	listed = nil
	for _, v := range sess {
		listed = append(listed, v.ID+"="+v.UserID)
	}
	assert.Contains(t, listed, mine.ID+"=auth0|alice")
	assert.NotContains(t, listed, ses.ID+"=")
}

// plansOwned: a plan keeps the person whose turn started it; their
// listing holds theirs alone, newest first, each once across pages
// however the others interleave, filled to the page where it can; a key's
// own plan is in no person's listing, and another team's alice has none.
func plansOwned(t *testing.T, f *fixture) {
	ctx := context.Background()
	base := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC) // after any sweep of a running system
	var alice []string
	for i := range 9 {
		p := plans.Plan{TeamID: f.team, ID: ids.New("plan"), Lead: "ann", Message: "plan", Trigger: "contract", Status: plans.Running,
			RootTaskID: ids.New("task"), Version: 1, CreatedAt: base, UpdatedAt: base,
			Steps: []plans.StepState{{Step: plans.Step{StepID: 1}, Agent: "bob", Status: plans.StepRunning, TaskID: ids.New("task")}}}
		switch i % 3 {
		case 0:
			p.UserID = "auth0|alice"
			alice = append(alice, p.ID)
		case 1:
			p.UserID = "bob"
		}
		require.NoError(t, plans.WithEvents(plans.Plan{}, &p, base))
		require.NoError(t, f.Plans.CreatePlan(ctx, p))
	}
	got, err := f.Plans.GetPlan(ctx, f.team, alice[0])
	require.NoError(t, err)
	assert.Equal(t, "auth0|alice", got.UserID)

	list := func(team, user string) func(paging.Page) ([]plans.Plan, string, error) {
		return func(p paging.Page) ([]plans.Plan, string, error) { return f.Plans.ListPlans(ctx, team, user, p) }
	}
	key := func(p plans.Plan) string { return p.ID }
	assert.Equal(t, reversed(alice), pages(t, 2, list(f.team, "auth0|alice"), key), "alice's alone, newest first, each once")
	assert.Len(t, pages(t, 2, list(f.team, "bob"), key), 3)
	assert.Len(t, pages(t, 4, list(f.team, ""), key), 9, "everyone's")
	assert.Empty(t, pages(t, 10, list(f.otherTeam(), "auth0|alice"), key), "another team's alice")
	first, _, err := f.Plans.ListPlans(ctx, f.team, "auth0|alice", paging.Page{Limit: 2})
	require.NoError(t, err)
	assert.Len(t, first, 2, "a filtered page is filled where the plans are near (three in nine)")
}
