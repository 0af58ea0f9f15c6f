package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/routing/cascade"
	"github.com/conclave-ai/conclave/shared/work/plans"
)

// turnWith is a turn of the conversation c as read, as the service makes
// one (conversations.turnOn): one version on, its messages counted and
// numbered on the stream.
func turnWith(c conversations.Conversation, msgs ...conversations.Message) conversations.Turn {
	next := c
	next.Version++
	next.MessageCount += len(msgs)
	next.EventSeq += int64(len(msgs))
	next.UpdatedAt = time.Now().UTC()
	return conversations.Turn{Conversation: next, Messages: msgs, Decision: cascade.Decision{ID: ids.New("rdec"), ConversationID: c.ID}}
}

func message(conv, role, agent, content string) conversations.Message {
	return conversations.Message{ID: ids.New("msg"), ConversationID: conv, Role: role, Agent: agent, Content: content, CreatedAt: time.Now().UTC()}
}

// convStream: every message stored in a conversation (a turn's, a
// handoff's note, a posted result) is an event of its stream, numbered in
// the write that stores it; six results posted at once and a turn racing
// them take 1 … 8 once each; a replayed result, a turn from a stale read
// and a turn refused by a carried result write no event; another team
// reads nothing.
func convStream(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC()
	c := conversations.Conversation{ID: ids.New("conv"), TeamID: f.team, Title: "stream", Status: conversations.StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.Conversations.CreateConversation(ctx, c, nil))

	const posters = 6
	markers := make([]string, posters)
	var wg sync.WaitGroup
	for i := range posters {
		markers[i] = ids.New("task")
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := message(c.ID, conversations.AuthorAssistant, "bob", fmt.Sprintf("result %d", i))
			m.ResultOf = &conversations.WorkRef{Type: "task", ID: markers[i], Status: "completed", Agent: "bob"}
			posted, err := f.Results.PostResult(ctx, f.team, m, markers[i])
			assert.NoError(t, err)
			assert.True(t, posted)
		}()
	}
	wg.Add(1)
	var turn conversations.Turn
	go func() {
		defer wg.Done()
		user, reply := message(c.ID, conversations.AuthorUser, "", "hi"), message(c.ID, conversations.AuthorAssistant, "ann", "hello")
		for range 100 {
			cur, err := f.Conversations.GetConversation(ctx, f.team, c.ID)
			if !assert.NoError(t, err) {
				return
			}
			turn = turnWith(cur, user, reply)
			err = f.Conversations.CommitTurn(ctx, f.team, turn)
			if !errors.Is(err, conversations.ErrChanged) {
				assert.NoError(t, err)
				return
			}
		}
		t.Error("the turn never committed")
	}()
	wg.Wait()

	stream := streams.Conversation(c.ID)
	evs := f.streamOf(t, stream)
	require.Len(t, evs, posters+2, "one event per message, each number once")
	byType := map[string]int{}
	inStream := map[string]bool{}
	for _, ev := range evs {
		byType[ev.Type]++
		d := detailOf[conversations.MessagePosted](t, ev)
		assert.Equal(t, c.ID, d.ConversationID)
		assert.False(t, inStream[d.Message.ID], "a message once")
		inStream[d.Message.ID] = true
	}
	assert.Equal(t, map[string]int{conversations.ResultPostedType: posters, conversations.MessagePostedType: 2}, byType)
	stored, _, err := f.Conversations.ListMessages(ctx, f.team, c.ID, paging.Page{Limit: 100})
	require.NoError(t, err)
	require.Len(t, stored, posters+2)
	for _, m := range stored {
		assert.True(t, inStream[m.ID], "message %s has its event", m.ID)
	}
	cur, err := f.Conversations.GetConversation(ctx, f.team, c.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(posters+2), cur.EventSeq)
	f.resumes(t, stream, evs)

	f.convRefusals(t, cur, turn, markers[0])
	f.foreign(t, stream)
}

// convRefusals: changes of the conversation refused by a condition write
// no event; a handoff's note takes the next number.
func (f *fixture) convRefusals(t *testing.T, cur conversations.Conversation, stale conversations.Turn, marker string) {
	t.Helper()
	ctx := context.Background()
	stream := streams.Conversation(cur.ID)
	head := cur.EventSeq

	again := message(cur.ID, conversations.AuthorAssistant, "bob", "posted twice")
	posted, err := f.Results.PostResult(ctx, f.team, again, marker)
	require.NoError(t, err)
	assert.False(t, posted, "a replayed marker posts nothing")
	stale.Messages = []conversations.Message{message(cur.ID, conversations.AuthorUser, "", "stale")}
	stale.Decision.ID = ids.New("rdec")
	assert.ErrorIs(t, f.Conversations.CommitTurn(ctx, f.team, stale), conversations.ErrChanged)
	carried := turnWith(cur, message(cur.ID, conversations.AuthorAssistant, "ann", "carries a posted result"))
	carried.Carried = []conversations.CarriedResult{{Marker: marker, MessageID: carried.Messages[0].ID}}
	assert.Error(t, f.Conversations.CommitTurn(ctx, f.team, carried), "a result posted before refuses the turn")
	h, err := f.Streams.StreamHead(ctx, f.team, stream)
	require.NoError(t, err)
	assert.Equal(t, head, h, "refused changes write no event")

	next := cur
	next.Version++
	next.MessageCount++
	next.EventSeq++
	note := message(cur.ID, conversations.AuthorSystem, "", "Ann handed off to Bob.")
	require.NoError(t, f.Conversations.CommitHandoff(ctx, f.team, conversations.HandoffChange{Conversation: next,
		Handoff: conversations.Handoff{ID: ids.New("hoff"), ConversationID: cur.ID, From: "ann", To: "bob", Kind: conversations.KindHandoff, Reason: "x", CreatedAt: note.CreatedAt},
		Note:    note}))
	evs := f.streamOf(t, stream)
	require.Len(t, evs, int(head)+1)
	last := evs[len(evs)-1]
	assert.Equal(t, conversations.MessagePostedType, last.Type)
	assert.Equal(t, note.ID, detailOf[conversations.MessagePosted](t, last).Message.ID, "the handoff's note")
}

// planStream: a plan's create, step end and end write PlanStarted,
// PlanStepCompleted and PlanCompleted on its stream, numbered 1 … 3; a
// write from a stale read is refused with no event; another team reads
// nothing.
func planStream(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC()
	p := plans.Plan{TeamID: f.team, ID: ids.New("plan"), ConversationID: ids.New("conv"), Lead: "ann", Message: "two things", Trigger: "contract",
		Status: plans.Running, RootTaskID: ids.New("task"), Version: 1, CreatedAt: now, UpdatedAt: now,
		Steps: []plans.StepState{{Step: plans.Step{StepID: 1}, Agent: "bob", Status: plans.StepRunning, TaskID: ids.New("task")}}}
	require.NoError(t, plans.WithEvents(plans.Plan{}, &p, now))
	require.NoError(t, f.Plans.CreatePlan(ctx, p))
	change := func(from plans.Plan, edit func(*plans.Plan)) (plans.Plan, error) {
		after := from
		after.Steps = append([]plans.StepState(nil), from.Steps...)
		edit(&after)
		after.Version++
		require.NoError(t, plans.WithEvents(from, &after, time.Now().UTC()))
		return after, f.Plans.PutPlan(ctx, after)
	}
	read := func() plans.Plan {
		got, err := f.Plans.GetPlan(ctx, f.team, p.ID)
		require.NoError(t, err)
		return got
	}
	stepped, err := change(read(), func(x *plans.Plan) { x.Steps[0].Status, x.Steps[0].Output = plans.StepCompleted, "done" })
	require.NoError(t, err)
	_, err = change(read(), func(x *plans.Plan) { x.Status, x.Synthesis = plans.Completed, "the answer" })
	require.NoError(t, err)
	_, err = change(stepped, func(x *plans.Plan) { x.Status, x.Error = plans.Cancelled, "cancelled by contract" })
	assert.ErrorIs(t, err, plans.ErrChanged, "a write from a stale read")

	evs := f.streamOf(t, streams.Plan(p.ID))
	require.Equal(t, []string{plans.EventStarted, plans.EventStepCompleted, plans.EventCompleted}, typesOf(evs))
	assert.Equal(t, 1, detailOf[plans.Event](t, evs[1]).StepID)
	assert.Equal(t, "the answer", detailOf[plans.Event](t, evs[2]).Synthesis)
	assert.Equal(t, int64(3), read().EventSeq)
	f.foreign(t, streams.Plan(p.ID))
}
