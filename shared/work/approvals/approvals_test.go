package approvals_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/authctx"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// callbacks records what each token was sent.
type callbacks struct {
	mu   sync.Mutex
	sent map[string]workflow.ApprovalOutcome
}

func (c *callbacks) Succeed(_ context.Context, token string, out any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent[token] = out.(workflow.ApprovalOutcome)
	return nil
}

type fixture struct {
	svc *approvals.Service
	cb  *callbacks
	bus *memstore.Publisher
	now time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{cb: &callbacks{sent: map[string]workflow.ApprovalOutcome{}}, bus: &memstore.Publisher{}, now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	f.svc = &approvals.Service{Store: memstore.New(), Bus: f.bus, Callbacks: f.cb, Validate: agenttools.ValidateArguments, Now: func() time.Time { return f.now }}
	return f
}

func (f *fixture) request(t *testing.T, team, token string) approvals.Approval {
	t.Helper()
	a, err := f.svc.Request(context.Background(), team, "task_1", "arn:exec", token, workflow.ApprovalWait{
		ApprovalID: approvals.NewID(), CallID: "call-1", Tool: "send_agent_message", Agent: "ava",
		Arguments: json.RawMessage(`{"to_agent":"luke","message":"hi"}`), Reasons: []string{approvals.ReasonPolicyTool}, TimeoutSeconds: 60,
	})
	require.NoError(t, err)
	return a
}

func TestRequiredMatchesAnyRuleAndHITLSkills(t *testing.T) {
	cost := 0.25
	p := approvals.Policy{Tools: []string{"send_agent_message"}, Agents: []string{"kyra"}, MinEstimatedCostUSD: &cost}
	ava := agents.Agent{Slug: "ava", Skills: []agents.Skill{{Name: "ops", Tools: []string{"share_memory"}, SupportsHITL: true}, {Name: "chat", Tools: []string{"search_memories"}}}}
	assert.Equal(t, []string{approvals.ReasonPolicyTool}, approvals.Required(p, ava, "send_agent_message", 0))
	assert.Equal(t, []string{approvals.ReasonPolicyAgent}, approvals.Required(p, agents.Agent{Slug: "kyra"}, "get_agent_inbox", 0))
	assert.Equal(t, []string{approvals.ReasonPolicyCost}, approvals.Required(p, ava, "delegate_task", approvals.EstimatedCost("delegate_task", 0)))
	assert.Equal(t, []string{"skill:ops"}, approvals.Required(approvals.Policy{}, ava, "share_memory", 0))
	assert.Empty(t, approvals.Required(p, ava, "search_memories", 0), "a skill without supports_hitl gates nothing")
	assert.Empty(t, approvals.Required(approvals.Policy{}, ava, "delegate_task", 10))

	assert.Equal(t, tasks.DefaultCostCapUSD, approvals.EstimatedCost("delegate_task", 0))
	assert.Equal(t, 0.3, approvals.EstimatedCost("request_report", 0.3))
	assert.Zero(t, approvals.EstimatedCost("send_agent_message", 0.3))
}

func TestPutPolicyValidatesEachField(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, c := range []struct {
		in    approvals.PolicyInput
		field string
	}{
		{approvals.PolicyInput{Tools: []string{"read_file"}}, "tools[0]"},
		{approvals.PolicyInput{Agents: []string{"ok-agent", "Bad Slug"}}, "agents[1]"},
		{approvals.PolicyInput{MinEstimatedCostUSD: new(-1.0)}, "min_estimated_cost_usd"},
		{approvals.PolicyInput{ExpirySeconds: new(3)}, "expiry_seconds"},
		{approvals.PolicyInput{ExpirySeconds: new(approvals.MaxExpirySeconds + 1)}, "expiry_seconds"},
		{approvals.PolicyInput{Deciders: []string{"alice", "no spaces"}}, "deciders[1]"},
		{approvals.PolicyInput{Deciders: []string{""}}, "deciders[0]"},
		{approvals.PolicyInput{Deciders: []string{strings.Repeat("a", 129)}}, "deciders[0]"},
		{approvals.PolicyInput{Deciders: make([]string, approvals.MaxListed+1)}, "deciders"},
	} {
		_, err := f.svc.PutPolicy(ctx, "t1", "user:k", c.in)
		var ae *apperr.Error
		require.ErrorAs(t, err, &ae, c.field)
		assert.Equal(t, c.field, ae.Field)
	}
	got, err := f.svc.Policy(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, approvals.DefaultExpirySeconds, got.ExpirySeconds, "nothing was stored; the default expiry")
	assert.Empty(t, got.Tools)

	_, err = f.svc.PutPolicy(ctx, "t1", "user:k", approvals.PolicyInput{Tools: []string{"delegate_task", "delegate_task"}, ExpirySeconds: new(30)})
	require.NoError(t, err)
	got, err = f.svc.Policy(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, []string{"delegate_task"}, got.Tools)
	assert.Equal(t, 30, got.ExpirySeconds)
}

func TestDecideOnceWithEditedArgumentsSendsTheToken(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.request(t, "t1", "tok-1")
	assert.Len(t, f.bus.OfType("ApprovalRequested"), 1)

	_, err := f.svc.Decide(ctx, "t1", a.ID, "user:k", approvals.DecideInput{Decision: "approve", Arguments: json.RawMessage(`{"to_agent":"luke","message":7}`)})
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "arguments.message", ae.Field)
	_, err = f.svc.Decide(ctx, "t1", a.ID, "user:k", approvals.DecideInput{Decision: "reject", Arguments: json.RawMessage(`{}`)})
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "arguments", ae.Field)
	_, err = f.svc.Decide(ctx, "other-team", a.ID, "user:k", approvals.DecideInput{Decision: "approve"})
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "another team's approval")

	// Decided by a key acting for carol: the approval records her.
	carol := authctx.WithCaller(ctx, authctx.Caller{UserID: "carol", Role: authctx.RoleAdmin})
	got, err := f.svc.Decide(carol, "t1", a.ID, "user:k", approvals.DecideInput{Decision: "approve", Arguments: json.RawMessage(`{"to_agent":"luke","message":"edited"}`)})
	require.NoError(t, err)
	assert.Equal(t, approvals.Approved, got.Status)
	assert.Equal(t, "carol", got.UserID)
	stored, err := f.svc.Get(ctx, "t1", a.ID)
	require.NoError(t, err)
	assert.Equal(t, "carol", stored.UserID, "stored with the decision")
	sent := f.cb.sent["tok-1"]
	assert.Equal(t, workflow.DecisionApprove, sent.Decision)
	assert.JSONEq(t, `{"to_agent":"luke","message":"edited"}`, string(sent.Arguments), "the edited arguments run")
	assert.Len(t, f.bus.OfType("ApprovalDecided"), 1)

	_, err = f.svc.Decide(ctx, "t1", a.ID, "user:k", approvals.DecideInput{Decision: "reject"})
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, apperr.ECONFLICT, ae.Code)
	assert.Equal(t, "AlreadyDecided", ae.Reason)

	// A retried registration of a decided approval gets the decision at once.
	again, err := f.svc.Request(ctx, "t1", "task_1", "arn:exec", "tok-2", workflow.ApprovalWait{ApprovalID: a.ID, Tool: a.Tool, Agent: a.Agent})
	require.NoError(t, err)
	assert.Equal(t, approvals.Approved, again.Status)
	assert.Equal(t, workflow.DecisionApprove, f.cb.sent["tok-2"].Decision)
	assert.Len(t, f.bus.OfType("ApprovalRequested"), 1, "announced once")
}

func TestExpiryIsARejectionUnlessDecidedFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.request(t, "t1", "tok-1")
	out, err := f.svc.Expire(ctx, "t1", a.ID)
	require.NoError(t, err)
	assert.Equal(t, workflow.DecisionExpire, out.Decision)
	got, err := f.svc.Get(ctx, "t1", a.ID)
	require.NoError(t, err)
	assert.Equal(t, approvals.Expired, got.Status)

	b := f.request(t, "t1", "tok-2")
	_, err = f.svc.Decide(ctx, "t1", b.ID, "user:k", approvals.DecideInput{Decision: "reject", Reason: "no"})
	require.NoError(t, err)
	out, err = f.svc.Expire(ctx, "t1", b.ID)
	require.NoError(t, err)
	assert.Equal(t, workflow.DecisionReject, out.Decision, "the human's decision stands")
	assert.Equal(t, "no", out.Reason)

	c := f.request(t, "t1", "tok-3")
	f.now = f.now.Add(2 * time.Minute)
	_, err = f.svc.Decide(ctx, "t1", c.ID, "user:k", approvals.DecideInput{Decision: "approve"})
	var ae *apperr.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "expired", ae.Details["status"], "too late")

	list, _, err := f.svc.List(ctx, "t1", approvals.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1, "pending by default")
	assert.Equal(t, c.ID, list[0].ID)
	_, _, err = f.svc.List(ctx, "t1", approvals.Filter{Status: "nope"}, paging.Page{Limit: 10})
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "status", ae.Field)
}

// A member reads and decides approvals only when the policy names them;
// otherwise 403 ApprovalForbidden before anything is read or written. A
// key, an admin and a key acting for a user always may.
func TestOnlyDecidersAmongMembersReadAndDecide(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.request(t, "t1", "tok-1")
	_, err := f.svc.PutPolicy(ctx, "t1", "user:k", approvals.PolicyInput{Deciders: []string{"alice", "alice", "auth0|carol"}})
	require.NoError(t, err)
	p, err := f.svc.Policy(ctx, "t1")
	require.NoError(t, err)
	assert.Equal(t, []string{"alice", "auth0|carol"}, p.Deciders, "deduplicated")

	bob := authctx.WithCaller(ctx, authctx.Caller{UserID: "bob", Role: authctx.RoleMember})
	forbidden := func(err error) {
		t.Helper()
		var ae *apperr.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, apperr.EFORBIDDEN, ae.Code)
		assert.Equal(t, "ApprovalForbidden", ae.Reason)
	}
	_, _, err = f.svc.List(bob, "t1", approvals.Filter{}, paging.Page{Limit: 10})
	forbidden(err)
	_, err = f.svc.Get(bob, "t1", a.ID)
	forbidden(err)
	_, err = f.svc.Decide(bob, "t1", a.ID, "user:bob", approvals.DecideInput{Decision: "approve"})
	forbidden(err)
	got, err := f.svc.Get(ctx, "t1", a.ID)
	require.NoError(t, err)
	assert.Equal(t, approvals.Pending, got.Status, "nothing changed")
	assert.Empty(t, f.cb.sent)
	assert.Empty(t, f.bus.OfType("ApprovalDecided"))

	// An admin named nowhere decides; so would a key (no caller).
	admin := authctx.WithCaller(ctx, authctx.Caller{UserID: "root", Role: authctx.RoleAdmin})
	list, _, err := f.svc.List(admin, "t1", approvals.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, list, 1)

	alice := authctx.WithCaller(ctx, authctx.Caller{UserID: "alice", Role: authctx.RoleMember})
	list, _, err = f.svc.List(alice, "t1", approvals.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, list, 1)
	got, err = f.svc.Decide(alice, "t1", a.ID, "user:alice", approvals.DecideInput{Decision: "reject"})
	require.NoError(t, err)
	assert.Equal(t, approvals.Rejected, got.Status)
	assert.Equal(t, workflow.DecisionReject, f.cb.sent["tok-1"].Decision)
}
