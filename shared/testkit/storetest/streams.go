package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

// The resumable streams (shared/platform/streams): every change of a session, plan
// or conversation writes the events it tells of in its own write,
// numbered by its owner's counter under the change's condition. So a
// stream is 1, 2, 3 … without a gap or a repeat, however many writers
// race, a refused change writes none, and a team reads only its own.

// streamOf reads the whole stream and checks what every stream is: its
// numbers 1 … n in order, its head n, every detail valid against its
// type's schema. It returns the events.
func (f *fixture) streamOf(t *testing.T, stream string) []streams.Event {
	t.Helper()
	ctx := context.Background()
	evs, err := f.Streams.StreamEvents(ctx, f.team, stream, 0, 1000)
	require.NoError(t, err)
	head, err := f.Streams.StreamHead(ctx, f.team, stream)
	require.NoError(t, err)
	assert.Equal(t, int64(len(evs)), head, "%s: the head is the last number", stream)
	for i, ev := range evs {
		assert.Equal(t, int64(i+1), ev.Seq, "%s: numbered 1 … n without a gap or a repeat", stream)
		assert.NoError(t, events.Validate(ev.Type, ev.Detail), "%s #%d %s", stream, ev.Seq, ev.Type)
		assert.False(t, ev.At.IsZero(), "%s #%d has its time", stream, ev.Seq)
	}
	return evs
}

func typesOf(evs []streams.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

func seqsOf(evs []streams.Event) []int64 {
	out := make([]int64, len(evs))
	for i, ev := range evs {
		out[i] = ev.Seq
	}
	return out
}

// detailOf decodes an event's detail.
func detailOf[T any](t *testing.T, ev streams.Event) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(ev.Detail, &v))
	return v
}

// sessionChange is the read–change–write of the session service
// (sessions.updateFrom): read, change a copy, derive and number its
// events (sessions.WithEvents), write it conditioned on the version read.
func (f *fixture) sessionChange(from sessions.Session, change func(*sessions.Session)) (sessions.Session, error) {
	after := from
	after.StageOutputs = append([]sessions.StageOutput(nil), from.StageOutputs...)
	after.Participants = append([]sessions.Participant(nil), from.Participants...)
	change(&after)
	after.Version, after.UpdatedAt = from.Version+1, time.Now().UTC()
	if err := sessions.WithEvents(from, &after, after.UpdatedAt); err != nil {
		return sessions.Session{}, err
	}
	return after, f.Sessions.PutSession(context.Background(), after)
}

func stageOutput(stage int, agent string) sessions.StageOutput {
	return sessions.StageOutput{Key: fmt.Sprintf("stage:%d:%s", stage, agent), Stage: stage, Kind: "contribution", Agent: agent,
		TaskID: "task_" + agent, Output: agent + "'s ideas", Tokens: 40, CostUSD: 0.001, DurationSeconds: 1.5}
}

// sessionStream: a session's create and changes write their events 1 … n
// in order, with the details the bus gets; a change without one writes
// none; a read resumes after any number with exactly the rest; a refused
// change writes nothing; another team reads nothing of it.
func sessionStream(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC()
	s := sessions.Session{TeamID: f.team, ID: ids.New("ses"), Pattern: sessions.Brainstorm, Lead: "ann", Goal: "stream",
		Participants: []sessions.Participant{{Agent: "bob", Role: "contributor"}, {Agent: "cat", Role: "contributor"}}, MaxDurationSeconds: 600,
		MaxCostUSD: 1, MaxRounds: 5, Approval: "none", Status: sessions.Planning, StageOutputs: []sessions.StageOutput{}, Runs: 1,
		CreatedBy: "user:key_contract", Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, sessions.WithEvents(sessions.Session{}, &s, now))
	require.NoError(t, f.Sessions.CreateSession(ctx, s))

	s, err := f.sessionChange(s, func(a *sessions.Session) { a.Status = sessions.Active })
	require.NoError(t, err)
	s, err = f.sessionChange(s, func(a *sessions.Session) { a.StageOutputs = append(a.StageOutputs, stageOutput(1, "bob")) })
	require.NoError(t, err)
	before := s
	s, err = f.sessionChange(s, func(a *sessions.Session) { a.Participants[0].Status = sessions.PartWorking })
	require.NoError(t, err)
	assert.Equal(t, before.EventSeq, s.EventSeq, "a change that tells of nothing takes no number")
	s, err = f.sessionChange(s, func(a *sessions.Session) {
		a.StageOutputs = append(a.StageOutputs, stageOutput(1, "cat"))
		a.Status = sessions.Synthesizing
	})
	require.NoError(t, err)
	s, err = f.sessionChange(s, func(a *sessions.Session) { a.Status, a.Outcome = sessions.Completed, sessions.OutcomeCompleted })
	require.NoError(t, err)

	stream := streams.Session(s.ID)
	evs := f.streamOf(t, stream)
	st, stage := sessions.EventStatusChanged, sessions.EventStageCompleted
	require.Equal(t, []string{st, st, stage, stage, st, st}, typesOf(evs))
	var statuses []sessions.Status
	for _, ev := range evs {
		if ev.Type == st {
			d := detailOf[sessions.SessionStatusChanged](t, ev)
			assert.Equal(t, s.ID, d.SessionID)
			statuses = append(statuses, d.Status)
		}
	}
	assert.Equal(t, []sessions.Status{sessions.Planning, sessions.Active, sessions.Synthesizing, sessions.Completed}, statuses)
	assert.Equal(t, "cat", detailOf[sessions.SessionStageCompleted](t, evs[3]).Agent, "the stage a change adds, before the status it moves to")
	got, err := f.Sessions.GetSession(ctx, f.team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, int64(6), got.EventSeq, "the session's event_seq is its stream's last number")
	assert.Empty(t, got.Events, "the events are the stream's, not the session's")

	f.resumes(t, stream, evs)

	// A change from a stale read is refused whole: no event of it.
	_, err = f.sessionChange(before, func(a *sessions.Session) { a.Status = sessions.Cancelled })
	assert.ErrorIs(t, err, sessions.ErrChanged)
	assert.Equal(t, typesOf(evs), typesOf(f.streamOf(t, stream)), "a refused change writes no event")

	f.foreign(t, stream)
}

// resumes checks reads after every number: exactly the rest, in order;
// a limit cuts the rest at its first events.
func (f *fixture) resumes(t *testing.T, stream string, all []streams.Event) {
	t.Helper()
	ctx := context.Background()
	for n := range int64(len(all)) + 1 {
		rest, err := f.Streams.StreamEvents(ctx, f.team, stream, n, 1000)
		require.NoError(t, err)
		assert.Equal(t, seqsOf(all[n:]), seqsOf(rest), "after %d: exactly the rest", n)
		if n < int64(len(all)) {
			assert.JSONEq(t, string(all[n].Detail), string(rest[0].Detail), "read back as written")
			assert.True(t, all[n].At.Equal(rest[0].At))
		}
	}
	two, err := f.Streams.StreamEvents(ctx, f.team, stream, 1, 2)
	require.NoError(t, err)
	assert.Equal(t, []int64{2, 3}, seqsOf(two), "a limit")
}

// foreign checks that another team reads nothing of the team's stream.
func (f *fixture) foreign(t *testing.T, stream string) {
	t.Helper()
	ctx := context.Background()
	other := "team_other_" + f.team
	evs, err := f.Streams.StreamEvents(ctx, other, stream, 0, 1000)
	require.NoError(t, err)
	assert.Empty(t, evs, "another team's read of %s", stream)
	head, err := f.Streams.StreamHead(ctx, other, stream)
	require.NoError(t, err)
	assert.Zero(t, head, "another team's head of %s", stream)
}

// sessionStreamRace: six stages stored at once into one session, each by
// the service's read–change–write loop (a lost race reads again), take
// the numbers 2 … 7, once each: one event per stage, none lost, none
// twice.
func sessionStreamRace(t *testing.T, f *fixture) {
	ctx := context.Background()
	now := time.Now().UTC()
	s := sessions.Session{TeamID: f.team, ID: ids.New("ses"), Pattern: sessions.Brainstorm, Lead: "ann", Goal: "race",
		Participants: []sessions.Participant{{Agent: "bob", Role: "contributor"}}, MaxDurationSeconds: 600, MaxCostUSD: 1, MaxRounds: 5,
		Approval: "none", Status: sessions.Active, StageOutputs: []sessions.StageOutput{}, Runs: 1, CreatedBy: "user:key_contract",
		Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, sessions.WithEvents(sessions.Session{}, &s, now))
	require.NoError(t, f.Sessions.CreateSession(ctx, s))
	const n = 6
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := stageOutput(1, fmt.Sprintf("agent%d", i))
			for range 100 {
				cur, err := f.Sessions.GetSession(ctx, f.team, s.ID)
				if !assert.NoError(t, err) {
					return
				}
				_, err = f.sessionChange(cur, func(a *sessions.Session) { a.StageOutputs = append(a.StageOutputs, o) })
				if !errors.Is(err, sessions.ErrChanged) {
					assert.NoError(t, err)
					return
				}
			}
			t.Errorf("stage %s never stored", o.Key)
		}()
	}
	wg.Wait()
	evs := f.streamOf(t, streams.Session(s.ID))
	require.Len(t, evs, 1+n, "the create's and one per stage")
	agents := map[string]int{}
	for _, ev := range evs[1:] {
		require.Equal(t, sessions.EventStageCompleted, ev.Type)
		agents[detailOf[sessions.SessionStageCompleted](t, ev).Agent]++
	}
	assert.Len(t, agents, n, "every stage once")
	got, err := f.Sessions.GetSession(ctx, f.team, s.ID)
	require.NoError(t, err)
	assert.Len(t, got.StageOutputs, n)
	assert.Equal(t, int64(1+n), got.EventSeq)
}
