package storetest

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/plans"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// convTask is a new work item (queued, not executed) of the team, linked
// to conversation conv; with check it is a report's own task.
func (f *fixture) convTask(t *testing.T, conv, assignee, title string, check *workflow.ReportCheck) tasks.Task {
	t.Helper()
	tk, err := f.tasks.Create(context.Background(), f.team, user, tasks.CreateInput{Assignee: assignee, Title: title, ConversationID: conv, Report: check}, false)
	require.NoError(t, err)
	return tk
}

// conversationWork is one conversation's work of each kind, created in
// this order at increasing times (the tasks at the services' now, the
// rest a second apart after them): the two tasks, a report's own task,
// then a session, a plan (a message longer than a label), a report and a
// consultation; and a task of another conversation of the team.
type conversationWork struct {
	conv, other                                   conversations.Conversation
	taskA, taskB, reportTask, otherTask           tasks.Task
	session, plan, report, consultation, longPlan string
	want                                          []conversations.WorkEntry // newest first
}

func (f *fixture) conversationWork(t *testing.T) conversationWork {
	t.Helper()
	ctx := context.Background()
	w := conversationWork{conv: f.conversation(t, "ann"), other: f.conversation(t, "ann")}
	w.taskA = f.convTask(t, w.conv.ID, "bob", "contract task A", nil)
	w.taskB = f.convTask(t, w.conv.ID, "cat", "contract task B", nil)
	rep := f.report("research_summary", "bob", "ann")
	rep.ConversationID = w.conv.ID
	w.reportTask = f.convTask(t, w.conv.ID, "bob", rep.Title, &workflow.ReportCheck{ReportID: rep.ID, Type: rep.Type, Format: rep.Format, MaxSections: rep.MaxSections})
	w.otherTask = f.convTask(t, w.other.ID, "bob", "another conversation's", nil)
	base := time.Now().UTC().Add(time.Second)

	ses := sessions.Session{TeamID: f.team, ID: ids.New("ses"), ConversationID: w.conv.ID, Pattern: sessions.Brainstorm, Lead: "ann", Goal: "contract goal",
		Participants: []sessions.Participant{{Agent: "bob", Role: "contributor"}}, MaxDurationSeconds: 600, MaxCostUSD: 1, MaxRounds: 5,
		Approval: "none", Status: sessions.Completed, StageOutputs: []sessions.StageOutput{}, Runs: 1, CreatedBy: "user:key_contract",
		Version: 1, CreatedAt: base, UpdatedAt: base}
	require.NoError(t, f.Sessions.CreateSession(ctx, ses))
	// A session of no conversation is on no conversation's index.
	loose := ses
	loose.ID, loose.ConversationID = ids.New("ses"), ""
	require.NoError(t, f.Sessions.CreateSession(ctx, loose))

	at := base.Add(time.Second)
	w.longPlan = strings.Repeat("plan the contract ", 20)
	pl := plans.Plan{TeamID: f.team, ID: ids.New("plan"), ConversationID: w.conv.ID, Lead: "ann", Message: w.longPlan, Trigger: "contract",
		Status: plans.Completed, RootTaskID: ids.New("task"), Version: 1, CreatedAt: at, UpdatedAt: at,
		Steps: []plans.StepState{{Step: plans.Step{StepID: 1}, Agent: "bob", Status: plans.StepCompleted, TaskID: ids.New("task")}}}
	require.NoError(t, plans.WithEvents(plans.Plan{}, &pl, at))
	require.NoError(t, f.Plans.CreatePlan(ctx, pl))

	rep.CreatedAt, rep.UpdatedAt, rep.TaskID = base.Add(2*time.Second), base.Add(2*time.Second), w.reportTask.ID
	require.NoError(t, f.Reports.CreateReport(ctx, rep))

	cons := f.consultation("ann")
	cons.ConversationID, cons.Question = w.conv.ID, "which contract?"
	cons.CreatedAt, cons.UpdatedAt = base.Add(3*time.Second), base.Add(3*time.Second)
	require.NoError(t, f.Consultations.CreateConsultation(ctx, cons, consultations.MaxActivePerAgent))

	w.session, w.plan, w.report, w.consultation = ses.ID, pl.ID, rep.ID, cons.ID
	w.want = []conversations.WorkEntry{
		{Type: "consultation", ID: cons.ID, Status: "pending", Agent: "cat", Label: "which contract?", CreatedAt: cons.CreatedAt},
		{Type: "report", ID: rep.ID, Status: "queued", Agent: "bob", Label: rep.Title, CreatedAt: rep.CreatedAt},
		{Type: "plan", ID: pl.ID, Status: "completed", Agent: "ann", Label: clip.Clip(w.longPlan, conversations.MaxWorkLabel), CreatedAt: at},
		{Type: "session", ID: ses.ID, Status: "completed", Agent: "ann", Label: "contract goal", CreatedAt: base},
		{Type: "task", ID: w.taskB.ID, Status: "queued", Agent: "cat", Label: "contract task B", CreatedAt: w.taskB.CreatedAt},
		{Type: "task", ID: w.taskA.ID, Status: "queued", Agent: "bob", Label: "contract task A", CreatedAt: w.taskA.CreatedAt},
	}
	return w
}

// sameEntries compares entries field by field, times as instants.
func sameEntries(t *testing.T, want, got []conversations.WorkEntry) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		assert.True(t, want[i].CreatedAt.Equal(got[i].CreatedAt), "%s: created %s, want %s", want[i].ID, got[i].CreatedAt, want[i].CreatedAt)
		g := got[i]
		g.CreatedAt = want[i].CreatedAt
		assert.Equal(t, want[i], g)
	}
}

// conversationWorkListed: a conversation's tasks, sessions, plans,
// reports and consultations are listed newest first (by when each was
// created), each with its status, its agent and its label (a plan's
// message clipped); a report's own task is left out, and a page is
// filled past it; another conversation's work, work of no conversation
// and another team's listing are apart; a page token is its listing's.
func conversationWorkListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	w := f.conversationWork(t)
	list := func(team, conv string) func(paging.Page) ([]conversations.WorkEntry, string, error) {
		return func(p paging.Page) ([]conversations.WorkEntry, string, error) {
			return f.Work.ListWork(ctx, team, conv, p)
		}
	}
	whole, next, err := list(f.team, w.conv.ID)(paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, next, "the whole listing in one page")
	sameEntries(t, w.want, whole)
	assert.Equal(t, conversations.MaxWorkLabel, utf8.RuneCountInString(whole[2].Label), "a plan's message clipped to a label")

	var wantIDs []string
	for _, e := range w.want {
		wantIDs = append(wantIDs, e.ID)
	}
	key := func(e conversations.WorkEntry) string { return e.ID }
	assert.Equal(t, wantIDs, pages(t, 4, list(f.team, w.conv.ID), key), "newest first, each once")
	// A page of one is filled past the report's own task (filtered out
	// where it sorts): every page but an empty last one holds one entry.
	p := paging.Page{Limit: 1}
	var one []string
	for range 20 {
		got, next, err := list(f.team, w.conv.ID)(p)
		require.NoError(t, err)
		if next == "" {
			assert.Empty(t, got, "only the page after the last entry is empty")
			break
		}
		require.Len(t, got, 1, "a full page while entries follow")
		one = append(one, got[0].ID)
		p.Token = next
	}
	assert.Equal(t, wantIDs, one)

	other, _, err := list(f.team, w.other.ID)(paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, other, 1)
	assert.Equal(t, w.otherTask.ID, other[0].ID, "the other conversation's own")
	none, _, err := list(f.otherTeam(), w.conv.ID)(paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, none, "another team reads none of it")
	none, _, err = list(f.team, ids.New("conv"))(paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, none, "an unknown conversation has none")
	boundToken(t, list(f.team, w.conv.ID), list(f.team, w.other.ID))
	boundToken(t, list(f.team, w.conv.ID), list(f.otherTeam(), w.conv.ID))
}

// conversationTasksListed: the tasks of a conversation (a report's own
// task included) newest first, by status, agent and assignee, a page at
// a time (filled past the filtered ones); the conversation's other work,
// another conversation's tasks and another team's listing are apart.
func conversationTasksListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	w := f.conversationWork(t)
	list := func(team string, flt tasks.Filter) func(paging.Page) ([]tasks.Task, string, error) {
		return func(p paging.Page) ([]tasks.Task, string, error) { return f.Tasks.ListTasks(ctx, team, flt, p) }
	}
	key := func(tk tasks.Task) string { return tk.ID }
	conv := tasks.Filter{ConversationID: w.conv.ID}
	assert.Equal(t, []string{w.reportTask.ID, w.taskB.ID, w.taskA.ID}, pages(t, 1, list(f.team, conv), key), "its tasks alone, newest first")
	whole, _, err := f.Tasks.ListTasks(ctx, f.team, conv, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, whole, 3)
	assert.Equal(t, w.taskA.Title, whole[2].Title, "read whole")
	assert.Equal(t, w.conv.ID, whole[2].ConversationID)

	bob := conv
	bob.Assignee = "bob"
	assert.Equal(t, []string{w.reportTask.ID, w.taskA.ID}, pages(t, 1, list(f.team, bob), key), "by assignee, a full page past cat's")
	cat := conv
	cat.Agent = "cat"
	assert.Equal(t, []string{w.taskB.ID}, pages(t, 1, list(f.team, cat), key), "by agent")
	done := conv
	done.Status = tasks.Completed
	assert.Empty(t, pages(t, 2, list(f.team, done), key), "by status")
	queued := conv
	queued.Status = tasks.Queued
	assert.Len(t, pages(t, 2, list(f.team, queued), key), 3)

	assert.Equal(t, []string{w.otherTask.ID}, pages(t, 2, list(f.team, tasks.Filter{ConversationID: w.other.ID}), key))
	assert.Empty(t, pages(t, 2, list(f.otherTeam(), conv), key), "another team's")
	boundToken(t, list(f.team, conv), list(f.team, tasks.Filter{ConversationID: w.other.ID}))
	boundToken(t, list(f.team, conv), list(f.team, tasks.Filter{}))
}

// agentConversationsListed: the conversations an agent took part in
// (joined: as the primary, added, whether it left since or not), newest
// first, whole, a page at a time; another agent's, another team's and an
// agent that joined none are apart; a page token is its listing's.
func agentConversationsListed(t *testing.T, f *fixture) {
	ctx := context.Background()
	c1 := f.conversation(t, "ann")
	c2 := f.conversation(t, "bob")
	c3 := f.conversation(t, "ann")
	f.conversation(t, "")
	at := time.Now().UTC().Truncate(time.Millisecond)
	bob := conversations.Participant{Agent: "bob", Role: conversations.RoleInvited, JoinedAt: at}
	require.NoError(t, f.Conversations.SetParticipants(ctx, f.team, c3.ID, []conversations.Participant{bob}, nil, at))
	require.NoError(t, f.Conversations.SetParticipants(ctx, f.team, c3.ID, nil, []string{"bob"}, at.Add(time.Second)))

	list := func(team, agent string) func(paging.Page) ([]conversations.Conversation, string, error) {
		return func(p paging.Page) ([]conversations.Conversation, string, error) {
			return f.Conversations.ListAgentConversations(ctx, team, agent, p)
		}
	}
	key := func(c conversations.Conversation) string { return c.ID }
	assert.Equal(t, []string{c3.ID, c1.ID}, pages(t, 1, list(f.team, "ann"), key), "ann's, newest first")
	assert.Equal(t, []string{c3.ID, c2.ID}, pages(t, 1, list(f.team, "bob"), key), "bob's: the one he left too")
	assert.Empty(t, pages(t, 2, list(f.team, "cat"), key), "cat took part in none")
	assert.Empty(t, pages(t, 2, list(f.otherTeam(), "ann"), key), "another team's ann")

	whole, _, err := f.Conversations.ListAgentConversations(ctx, f.team, "ann", paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, whole, 2)
	assert.Equal(t, f.team, whole[0].TeamID, "read whole")
	assert.Equal(t, c3.Title, whole[0].Title)
	assert.Equal(t, "ann", whole[0].PrimaryAgent)
	assert.Equal(t, conversations.StatusOpen, whole[0].Status)
	assert.True(t, c3.CreatedAt.Equal(whole[0].CreatedAt))
	boundToken(t, list(f.team, "ann"), list(f.team, "bob"))
	boundToken(t, list(f.team, "ann"), list(f.team, ""))
}
