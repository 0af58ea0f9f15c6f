package dynamo

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/activity"
	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/idempotency"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/reports"
	"github.com/conclave-ai/conclave/shared/tasks"
	"github.com/conclave-ai/conclave/shared/teams"
)

var at = time.Date(2026, 3, 4, 5, 6, 7, 890, time.UTC)

// filled returns a T with every exported field set (strings, numbers,
// bools, times, one-element slices and maps, pointers): a field an item
// struct forgets to store comes back zero and fails the round trip.
func filled[T any](tb testing.TB) T {
	tb.Helper()
	var v T
	fill(reflect.ValueOf(&v).Elem(), "v")
	return v
}

func fill(v reflect.Value, name string) {
	if v.Type() == reflect.TypeOf(json.RawMessage{}) {
		// Raw JSON is stored as JSON: it must be some.
		v.SetBytes([]byte(`{"k":"s-` + name + `"}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + name)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(at))
			return
		}
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(v.Field(i), f.Name)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), name)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), name)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, name)
		m.SetMapIndex(reflect.ValueOf("k-"+name), e)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf("i-" + name))
	}
}

// roundTrip marshals an item struct to what DynamoDB stores and back.
func roundTrip[I any](t *testing.T, it I) I {
	t.Helper()
	m, err := marshal(it)
	require.NoError(t, err)
	for k, av := range m {
		_, isString := av.(*types.AttributeValueMemberS)
		assert.False(t, isString && len(k) > 3 && k[len(k)-3:] == "doc", "no JSON documents: %s", k)
	}
	var back I
	require.NoError(t, unmarshal(m, &back))
	return back
}

func TestItemsKeepEveryStoredField(t *testing.T) {
	t.Run("conversation", func(t *testing.T) {
		c := filled[conversations.Conversation](t)
		c.Participants = nil // items of their own
		assert.Equal(t, c, roundTrip(t, toConvItem(c)).toConversation())
		c.LastHandoff = nil
		assert.Equal(t, c, roundTrip(t, toConvItem(c)).toConversation())
	})
	t.Run("participant", func(t *testing.T) {
		p := filled[conversations.Participant](t)
		p.SetRole = false // a write instruction, not state
		it := participantItem{Agent: p.Agent, Role: p.Role, JoinedAt: p.JoinedAt, LeftAt: p.LeftAt}
		assert.Equal(t, p, roundTrip(t, it).toParticipant())
	})
	t.Run("message", func(t *testing.T) {
		m := filled[conversations.Message](t)
		it, err := marshal(toMessageItem("t", m))
		require.NoError(t, err)
		got, err := fromMessageItem(it)
		require.NoError(t, err)
		assert.Equal(t, m, got)
	})
	t.Run("handoff", func(t *testing.T) {
		h := filled[conversations.Handoff](t)
		assert.Equal(t, h, roundTrip(t, toHandoffItem("t", h)).toHandoff())
	})
	t.Run("decision", func(t *testing.T) {
		d := filled[dispatch.Decision](t)
		d.TeamID = "" // the key holds it
		for i := range d.Scores {
			d.Scores[i].Explicit, d.Scores[i].Override = false, false // scoring internals
		}
		assert.Equal(t, d, roundTrip(t, toDecisionItem(d)).toDecision())
		d.Scores, d.SelectedAgents, d.Attempts, d.Aggregation, d.Dimensions = nil, []string{}, []dispatch.Attempt{}, nil, map[string]float64{}
		assert.Equal(t, d, roundTrip(t, toDecisionItem(d)).toDecision(), "nil and empty stay apart")
	})
	t.Run("feedback", func(t *testing.T) {
		f := filled[conversations.Feedback](t)
		r := roundTrip(t, toFeedbackItem("t", "luke", f)).toRating()
		assert.Equal(t, []any{"luke", f.Rating, f.Query, f.RatedAt}, []any{r.Agent, r.Rating, r.Query, r.At})
	})
	t.Run("agent", func(t *testing.T) {
		a := filled[agents.Agent](t)
		a.IsDefault = false // the team item's default_agent
		assert.Equal(t, a, roundTrip(t, toAgentItem(a)).toAgent())
		a.Model, a.Skills = nil, []agents.Skill{}
		assert.Equal(t, a, roundTrip(t, toAgentItem(a)).toAgent())
	})
	t.Run("task", func(t *testing.T) {
		task := filled[tasks.Task](t)
		task.Events = nil // items of their own (taskEventItem)
		m, err := marshal(toTaskItem(task))
		require.NoError(t, err)
		got, err := fromTaskItem(m)
		require.NoError(t, err)
		assert.Equal(t, task, got)
	})
	t.Run("agent message and inbox entry", func(t *testing.T) {
		m := filled[messaging.Message](t)
		m.TeamID = "" // the key holds it
		m.Metadata = map[string]any{"n": 1.5, "list": []any{"a", true, nil}, "": map[string]any{"deep": "x"}}
		it, err := toAgentMessageItem(m, "TEAM#t", agentMsgSK(m.ID), "agent_message")
		require.NoError(t, err)
		got, err := roundTrip(t, it).toMessage()
		require.NoError(t, err)
		assert.Equal(t, m, got)
		entry := roundTrip(t, inboxItem{Recipient: "luke", agentMessageItem: it})
		assert.Equal(t, "luke", entry.Recipient)
		got, err = entry.toMessage()
		require.NoError(t, err)
		assert.Equal(t, m, got)
	})
	t.Run("memory and context", func(t *testing.T) {
		mem := filled[memory.Memory](t)
		mem.TeamID = "" // the key holds it
		assert.Equal(t, mem, roundTrip(t, toMemoryItem(mem)).toMemory())
		c := filled[memory.Context](t)
		c.Cached = false // set by the service on a hit
		for _, l := range [][]memory.Memory{c.Shared, c.UserProfile, c.Private} {
			l[0].TeamID = ""
		}
		c.Private = []memory.Memory{}
		assert.Equal(t, c, roundTrip(t, toContextItem("t", c)).toContext())
	})
	t.Run("report", func(t *testing.T) {
		r := filled[reports.Report](t)
		r.Parameters = map[string]any{"files": []any{"src/"}, "": map[string]any{"deep": 1.5}}
		r.Sections[0].Value = map[string]any{"list": []any{"a", true, nil}}
		it, err := toReportItem(r)
		require.NoError(t, err)
		got, err := roundTrip(t, it).toReport(r.TeamID)
		require.NoError(t, err)
		assert.Equal(t, r, got)
		r.Sections, r.InvalidSections, r.DroppedSections, r.CompletedAt = []reports.Section{{Name: "summary", Content: "s"}}, nil, nil, nil
		it, err = toReportItem(r)
		require.NoError(t, err)
		got, err = roundTrip(t, it).toReport(r.TeamID)
		require.NoError(t, err)
		assert.Equal(t, r, got, "a text section has no value")
	})
	t.Run("team, key, idempotency, activity", func(t *testing.T) {
		team := filled[teams.Team](t)
		assert.Equal(t, team, roundTrip(t, toTeamItem(team)).toTeam())
		k := filled[teams.APIKey](t)
		assert.Equal(t, k, roundTrip(t, toAPIKeyItem(k, "hash")).toKey())
		rec := filled[idempotency.Record](t)
		assert.Equal(t, &rec, roundTrip(t, toIdemItem("t", rec, at)).toRecord())
		e := filled[activity.Entry](t)
		assert.Equal(t, e, roundTrip(t, toActivityItem(e)).toEntry(e.TeamID))
	})
}

// Items carry the keys and index attributes the queries in keys.go read.
func TestItemKeys(t *testing.T) {
	deadline := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := tasks.Task{TeamID: "t1", ID: "task_1", Assignee: "luke", ParentID: "task_0", Status: tasks.Running, Deadline: &deadline}
	ti := toTaskItem(task)
	assert.Equal(t, []string{"TEAM#t1", "TASK#task_1", "TEAM#t1#ASSIGNEE#luke", "TASK#task_1", "TEAM#t1#PARENT#task_0", "TASK#task_1"},
		[]string{ti.PK, ti.SK, ti.GSI1PK, ti.GSI1SK, ti.GSI2PK, ti.GSI2SK})
	assert.Regexp(t, `^DUE#[0-7]$`, ti.GSI3PK)
	assert.Equal(t, "2026-01-02T03:04:05.000Z#t1#task_1", ti.GSI3SK)
	task.Status = tasks.Queued
	assert.Empty(t, toTaskItem(task).GSI3PK, "only running tasks are in the sweeper's index")

	d := toDecisionItem(dispatch.Decision{ID: "rdec_1", TeamID: "t1", ConversationID: "conv_1", CreatedAt: deadline})
	assert.Equal(t, []string{"TEAM#t1", "RDEC#rdec_1", "TEAM#t1#CONV#conv_1", "RDEC#rdec_1"}, []string{d.PK, d.SK, d.GSI1PK, d.GSI1SK})
	assert.Equal(t, deadline.Add(decisionRetention).Unix(), d.ExpiresAt)

	m := mustItem(t, toDecisionItem(dispatch.Decision{ID: "rdec_1", TeamID: "t1"}))
	assert.Equal(t, &types.AttributeValueMemberBOOL{Value: false}, m["fallback_used"], "fallback_used = false must match")

	rep, err := toReportItem(reports.Report{TeamID: "t1", ID: "rep_1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"TEAM#t1", "REPORT#rep_1", "report"}, []string{rep.PK, rep.SK, rep.Type})

	inbox := mustItem(t, inboxItem{agentMessageItem: agentMessageItem{PK: "TEAM#t1", SK: inboxSK("luke", "amsg_1")}})
	assert.NotContains(t, inbox, "read_at", "unread is attribute_not_exists(read_at)")
	assert.NotContains(t, mustItem(t, toTeamItem(teams.Team{ID: "t1"})), "default_agent")
}
