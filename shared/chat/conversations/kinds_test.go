package conversations_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

// kindFixture routes by skill (the AgentRouter) with tools that start
// the work they are asked for.
func kindFixture(t *testing.T, offered ...string) (*fixture, *fakeTools) {
	t.Helper()
	f := newFixture(t, collaborationOn)
	tools := &fakeTools{specs: spec(offered...), answers: map[string]conversations.ToolResult{
		"request_report":      {Text: "requested report rep_1", Pending: &conversations.WorkRef{Type: "report", ID: "rep_1", Agent: "luke", Status: "requested"}},
		"start_collaboration": {Text: "started session ses_1", Pending: &conversations.WorkRef{Type: "session", ID: "ses_1", Agent: "luke", Status: "planning"}},
	}}
	f.cfg.Tools = tools
	f.rebuild()
	return f, tools
}

func toolInput(t *testing.T, m conversations.Message) map[string]any {
	t.Helper()
	require.Len(t, m.ToolCalls, 1)
	var in map[string]any
	require.NoError(t, json.Unmarshal([]byte(m.ToolCalls[0].Input), &in))
	return in
}

// A message routed to a report skill requests that report from the
// agent, through request_report, with no model call; the reply lists it
// pending.
func TestAReportSkillRequestsItsReport(t *testing.T) {
	f, tools := kindFixture(t, "request_report", "start_collaboration")
	f.withSkill(t, func(sk *agents.Skill) { sk.Kind = "report:code_review" })
	f.cfg.ReportParameters = reports.ParametersFrom
	f.rebuild()
	c := f.create(t, "")
	res, err := f.svc.Post(context.Background(), team, c.ID, conversations.PostInput{Content: "Can you review this Go function for bugs?", UserKey: "key_u"})
	require.NoError(t, err)
	r := reply(t, res)
	assert.Equal(t, "luke", r.Agent)
	assert.Equal(t, []conversations.WorkRef{{Type: "report", ID: "rep_1", Agent: "luke", Status: "requested"}}, r.Pending)
	assert.Contains(t, r.Content, "I have requested a code_review report (rep_1)")
	assert.Equal(t, []string{"request_report"}, tools.names)
	assert.Equal(t, c.ID, tools.calls[0].ConversationID, "the conversation is linked: the report is posted back")
	assert.Equal(t, "request_report", tools.calls[0].Offered[0].Name)
	assert.Equal(t, "key_u", tools.calls[0].ForUser, "the user's request, written by the agent")
	in := toolInput(t, r)
	assert.Equal(t, "luke", in["to_agent"])
	assert.Equal(t, "code_review", in["report_type"])
	assert.Equal(t, "Can you review this Go function for bugs?", in["title"])
	assert.Equal(t, map[string]any{"files": []any{"Can you review this Go function for bugs?"}}, in["parameters"], "the template's required parameters")
	assert.Empty(t, f.model.requests, "no model call")
	assert.Equal(t, []string{"luke"}, res.Routing.AnsweredBy)
}

// A session skill starts its session led by the agent with the colleagues
// sharing its domains (roles by pattern).
func TestASessionSkillStartsItsSession(t *testing.T) {
	f, tools := kindFixture(t, "request_report", "start_collaboration")
	f.withSkill(t, func(sk *agents.Skill) {
		sk.Kind, sk.Domains = "session:peer_review", []string{"software", "security"}
	})
	c := f.create(t, "")
	r := reply(t, f.post(t, c.ID, "Can you review this Go function for bugs?"))
	assert.Equal(t, []conversations.WorkRef{{Type: "session", ID: "ses_1", Agent: "luke", Status: "planning"}}, r.Pending)
	assert.Contains(t, r.Content, "I have started a peer_review session that I lead (ses_1)")
	assert.Equal(t, []string{"start_collaboration"}, tools.names)
	in := toolInput(t, r)
	assert.Equal(t, "peer_review", in["pattern"])
	assert.Equal(t, []any{
		map[string]any{"slug": "archie", "role": "worker"},
		map[string]any{"slug": "sage", "role": "reviewer"},
	}, in["participants"])
	assert.Empty(t, f.model.requests)
}

// A report whose template needs no parameter is requested without any.
func TestAReportWithoutParametersIsRequestedWithoutThem(t *testing.T) {
	f, _ := kindFixture(t, "request_report")
	f.withSkill(t, func(sk *agents.Skill) { sk.Kind = "report:code_review" })
	f.cfg.ReportParameters = func(string, string) map[string]any { return map[string]any{} }
	f.rebuild()
	c := f.create(t, "")
	in := toolInput(t, reply(t, f.post(t, c.ID, "Can you review this Go function for bugs?")))
	assert.NotContains(t, in, "parameters")
}

// A session brings in at most MaxKindParticipants colleagues, the best
// scored first and then by slug (here none is scored: by slug).
func TestASessionBringsInAtMostThreeColleagues(t *testing.T) {
	f, _ := kindFixture(t, "start_collaboration")
	f.withSkill(t, func(sk *agents.Skill) {
		sk.Kind, sk.Domains = "session:brainstorm", []string{"general", "software", "data", "security", "writing"}
	})
	c := f.create(t, "")
	in := toolInput(t, reply(t, f.post(t, c.ID, "Can you review this Go function for bugs?")))
	var slugs []any
	for _, p := range in["participants"].([]any) {
		slugs = append(slugs, p.(map[string]any)["slug"])
	}
	assert.Equal(t, []any{"archie", "dana", "kyra"}, slugs)
	assert.Equal(t, 3, conversations.MaxKindParticipants)
}

// The agent answers with its model when its kind cannot run: the tool is
// not offered, the tool refuses, or a session has too few colleagues.
func TestAKindSkillThatCannotRunAnswersAsChat(t *testing.T) {
	cases := map[string]struct {
		offered []string
		kind    string
		refuse  bool
	}{
		"tool not offered":   {offered: []string{"start_collaboration"}, kind: "report:code_review"},
		"refused":            {offered: []string{"request_report"}, kind: "report:code_review", refuse: true},
		"too few colleagues": {offered: []string{"start_collaboration"}, kind: "session:brainstorm"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f, tools := kindFixture(t, c.offered...)
			if c.refuse {
				tools.answers["request_report"] = conversations.ToolResult{Text: "refused: luke has 5 active tasks"}
			}
			f.withSkill(t, func(sk *agents.Skill) { sk.Kind, sk.Domains = c.kind, []string{"code"} })
			conv := f.create(t, "")
			r := reply(t, f.post(t, conv.ID, "Can you review this Go function for bugs?"))
			assert.Equal(t, "luke", r.Agent)
			assert.Empty(t, r.Pending)
			assert.NotEmpty(t, f.model.requests, "the model answered")
		})
	}
}

// A kind's call held by the approval policy is pending with its approval:
// the reply says it waits for a human.
func TestAKindSkillHeldForApprovalSaysSo(t *testing.T) {
	f, tools := kindFixture(t, "request_report")
	tools.answers["request_report"] = conversations.ToolResult{Text: "held for approval apr_1",
		Approval: &conversations.WorkRef{Type: conversations.WorkApproval, ID: "apr_1", Agent: "luke", Status: "pending"},
		Pending:  &conversations.WorkRef{Type: "task", ID: "task_1", Agent: "luke", Status: "blocked"}}
	f.withSkill(t, func(sk *agents.Skill) { sk.Kind = "report:code_review" })
	c := f.create(t, "")
	r := reply(t, f.post(t, c.ID, "Can you review this Go function for bugs?"))
	require.Len(t, r.Pending, 2)
	assert.Equal(t, "apr_1", r.Pending[0].ID)
	assert.Contains(t, r.Content, "needs a human's approval (apr_1)")
	assert.Empty(t, f.model.requests)
}
