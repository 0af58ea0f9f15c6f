package reports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/agenttools"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/testkit/demo"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
	"github.com/conclave-ai/conclave/shared/work/worker"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

// These tests drive a report through the whole delegation flow in one
// process: the report service creates the task, the lifecycle step marks
// it running, the worker answers with the local model (asking for the
// revision), the lifecycle step completes it, and Sync finishes the report
// as the report-finalizer function does.

const team = demo.TeamID

var user = tasks.Creator{Type: "user", ID: "key_test"}

type fixture struct {
	store  *memstore.Store
	bus    *memstore.Publisher
	tasks  *tasks.Service
	svc    *reports.Service
	worker *worker.Worker
}

func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	store := memstore.New()
	require.NoError(tb, demo.Seed(context.Background(), store))
	bus := &memstore.Publisher{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ts := tasks.NewService(store, nil, bus, log)
	svc := &reports.Service{Store: store, Tasks: ts, Conversations: store, Bus: bus, Log: log}
	w := &worker.Worker{Agents: store, Model: localmodelwiring.New(store), Tracker: agenttools.Tracker{Tasks: ts},
		Tools: &agenttools.Tools{Tasks: ts, Reports: svc}, Tiers: routing.DefaultTierModels, Reviewer: agenttools.Reviewer{}}
	return &fixture{store: store, bus: bus, tasks: ts, svc: svc, worker: w}
}

func (f *fixture) agent(tb testing.TB, slug, script string) {
	tb.Helper()
	_, err := agents.NewService(f.store).Create(context.Background(), team, agents.CreateInput{
		Slug: slug, Name: slug, Model: &agents.Model{Provider: "local", Script: script}})
	require.NoError(tb, err)
}

// run executes the report's task as the delegation machine does and syncs
// the report as the finalizer does.
func (f *fixture) run(tb testing.TB, r reports.Report) reports.Report {
	tb.Helper()
	ctx := context.Background()
	t, err := f.tasks.Get(ctx, team, r.TaskID)
	require.NoError(tb, err)
	arn := "arn:aws:states:us-east-1:1:execution:delegation:" + t.ID
	_, err = f.tasks.ExecStart(ctx, team, t.ID, arn)
	require.NoError(tb, err)
	res, err := f.worker.Run(ctx, workflow.TaskInput{TeamID: team, TaskID: t.ID, Assignee: t.Assignee, Title: t.Title,
		Instructions: t.Instructions, ExpectedOutput: t.ExpectedOutput, Budgets: t.Budgets, ModelTier: t.ModelTier, Report: t.Report})
	require.NoError(tb, err)
	_, err = f.tasks.ExecComplete(ctx, team, t.ID, arn, res)
	require.NoError(tb, err)
	got, err := f.svc.Sync(ctx, team, r.ID)
	require.NoError(tb, err)
	return got
}

func params(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// exampleParams are valid parameters of every type.
var exampleParams = map[string]map[string]any{
	"code_review":        {"files": []string{"src/auth/"}, "focus": []string{"security"}},
	"security_audit":     {"scope": []string{"the login API"}},
	"research_summary":   {"topic": "JWT best practices", "depth": "comprehensive"},
	"data_analysis":      {"dataset": "signups.csv", "question": "why did signups drop in May?"},
	"risk_assessment":    {"subject": "moving the database to another region"},
	"performance_report": {"system": "the checkout API"},
	"comparison":         {"options": []string{"Redis", "Memcached"}, "criteria": []string{"speed", "features"}},
	"action_plan":        {"goal": "ship SSO by March"},
}

func TestEveryTypeInEveryFormatItSupportsCompletes(t *testing.T) {
	f := newFixture(t)
	for _, tp := range reports.List() {
		for _, format := range tp.Formats {
			t.Run(tp.Type+"/"+format, func(t *testing.T) {
				r, err := f.svc.Request(context.Background(), team, user, reports.RequestInput{
					Type: tp.Type, To: "luke", From: "kyra", Title: "About " + tp.Type, Format: format, Parameters: params(exampleParams[tp.Type])})
				require.NoError(t, err)
				done := f.run(t, r)
				assert.Equal(t, reports.Completed, done.Status, "%+v", done)
				assert.Empty(t, done.MissingSections)
				assert.Zero(t, done.Revisions)
				assert.Len(t, done.Sections, len(tp.Sections()), "max_sections 10 lets every optional section in")
				for _, s := range done.Sections {
					assert.NotEmpty(t, s.Content, s.Name)
					assert.Equal(t, format == reports.JSON, s.Value != nil, "%s: a structured value in json only", s.Name)
				}
				assert.Positive(t, done.TokensUsed)
				assert.NotEmpty(t, done.MemoryID)
			})
		}
	}
}

func TestTheTaskCarriesTheTemplate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := f.svc.Request(ctx, team, user, reports.RequestInput{Type: "research_summary", To: "dana", From: "kyra", Title: "JWT",
		Parameters: params(map[string]any{"topic": "JWT"}), Format: "json", MaxSections: ptr(5)})
	require.NoError(t, err)
	assert.Equal(t, reports.Queued, r.Status)
	assert.Equal(t, reports.Standard, r.Complexity)
	assert.Equal(t, "tier_1", r.ModelTier)
	assert.Equal(t, tasks.Creator{Type: "agent", ID: "kyra"}, r.RequestedBy)
	task, err := f.tasks.Get(ctx, team, r.TaskID)
	require.NoError(t, err)
	assert.Equal(t, "analyze", task.Type)
	assert.Equal(t, "dana", task.Assignee)
	assert.True(t, task.Execute)
	assert.Equal(t, 1, task.Depth, "kyra → dana")
	assert.Equal(t, "tier_1", task.ModelTier)
	assert.Equal(t, &workflow.ReportCheck{ReportID: r.ID, Type: "research_summary", Format: "json", MaxSections: 5}, task.Report)
	assert.Equal(t, workflow.Budgets{MaxTokens: 4000, MaxToolCalls: 10, TimeoutSeconds: 120}, task.Budgets, "a task's limits")
	for _, line := range []string{"Report request: research_summary\n", "Format: json\n", "Required sections (write every one, non-empty): executive_summary, findings, sources, recommendations\n",
		"At most 5 sections in all.\n", `Parameters: {"topic":"JWT"}` + "\n", "JSON schema: {"} {
		assert.Contains(t, task.Instructions, line)
	}

	deep, err := f.svc.Request(ctx, team, user, reports.RequestInput{Type: "research_summary", To: "dana", Title: "JWT",
		Parameters: params(map[string]any{"topic": "JWT", "depth": "deep"})})
	require.NoError(t, err)
	assert.Equal(t, reports.Complex, deep.Complexity, "depth asks for the powerful tier")
	assert.Equal(t, "tier_2", deep.ModelTier)
	assert.Equal(t, user, deep.RequestedBy)
	assert.Empty(t, deep.From)

	done := f.run(t, r)
	require.Equal(t, reports.Completed, done.Status)
	assert.Len(t, done.Sections, 5, "the author keeps to max_sections")
	got, err := f.tasks.Get(ctx, team, r.TaskID)
	require.NoError(t, err)
	assert.Equal(t, routing.DefaultTierModels["tier_1"], lastModel(got), "the worker asked the tier's model")
}

func lastModel(t tasks.Task) string {
	for i := len(t.Events) - 1; i >= 0; i-- {
		if m, ok := t.Events[i].Payload["model_id"].(string); ok {
			return m
		}
	}
	return ""
}

func ptr[T any](v T) *T { return &v }

func TestAMissingSectionGetsOneRevision(t *testing.T) {
	f := newFixture(t)
	f.agent(t, "forgetful", "omit-once:findings,severity_breakdown")
	r, err := f.svc.Request(context.Background(), team, user, reports.RequestInput{Type: "code_review", To: "forgetful", From: "kyra",
		Title: "Review auth", Parameters: params(exampleParams["code_review"])})
	require.NoError(t, err)
	done := f.run(t, r)
	assert.Equal(t, reports.Completed, done.Status, done.Error)
	assert.Equal(t, 1, done.Revisions)
	assert.Empty(t, done.MissingSections)
	task, err := f.tasks.Get(context.Background(), team, r.TaskID)
	require.NoError(t, err)
	var revisions []tasks.Event
	for _, e := range task.Events {
		if e.Type == tasks.EvRevision {
			revisions = append(revisions, e)
		}
	}
	require.Len(t, revisions, 1)
	assert.Equal(t, []any{"findings", "severity_breakdown"}, revisions[0].Payload["missing_sections"], "asked for exactly those")
	ev := memstore.Details[reports.Finished](f.bus, reports.DetailType)
	require.Len(t, ev, 1)
	assert.Equal(t, reports.Completed, ev[0].Status)
}

func TestStillMissingAfterTheRevisionFails(t *testing.T) {
	f := newFixture(t)
	f.agent(t, "stubborn", "omit:risk_matrix")
	for _, format := range []string{reports.Markdown, reports.JSON, reports.BulletPoints} {
		r, err := f.svc.Request(context.Background(), team, user, reports.RequestInput{Type: "risk_assessment", To: "stubborn", From: "kyra",
			Title: "Region move", Format: format, Parameters: params(exampleParams["risk_assessment"])})
		require.NoError(t, err)
		done := f.run(t, r)
		assert.Equal(t, reports.Failed, done.Status, format)
		assert.Equal(t, reports.ReasonMissingSections, done.Reason)
		assert.Equal(t, []string{"risk_matrix"}, done.MissingSections)
		assert.Equal(t, 1, done.Revisions, "one revision, no more")
		assert.Contains(t, done.Error, "risk_matrix")
		assert.Empty(t, done.MemoryID, "a failed report is not remembered")
		assert.NotEmpty(t, done.Sections, "what was written is kept")
		task, err := f.tasks.Get(context.Background(), team, r.TaskID)
		require.NoError(t, err)
		assert.Equal(t, tasks.Completed, task.Status, "the task did its work; the report is what failed")
	}
	ev := memstore.Details[reports.Finished](f.bus, reports.DetailType)
	require.Len(t, ev, 3)
	assert.Equal(t, []string{"risk_matrix"}, ev[0].MissingSections)
}

func TestACompletedReportIsAMemoryOfBothAgentsOnly(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	mem := &memory.Service{Store: f.store, Dir: f.store}
	// Contexts cached before the report: the report's end drops them.
	for _, a := range []string{"luke", "kyra", "dana"} {
		_, err := mem.ForAgent(ctx, team, a)
		require.NoError(t, err)
	}
	r, err := f.svc.Request(ctx, team, user, reports.RequestInput{Type: "comparison", To: "luke", From: "kyra", Title: "Cache",
		Parameters: params(exampleParams["comparison"])})
	require.NoError(t, err)
	done := f.run(t, r)
	require.Equal(t, reports.Completed, done.Status)

	for agent, sees := range map[string]bool{"luke": true, "kyra": true, "dana": false} {
		list, err := mem.Visible(ctx, team, agent)
		require.NoError(t, err)
		var found *memory.Memory
		for i := range list {
			if list[i].ID == done.MemoryID {
				found = &list[i]
			}
		}
		assert.Equal(t, sees, found != nil, agent)
		c, err := mem.ForAgent(ctx, team, agent)
		require.NoError(t, err)
		assert.Equal(t, sees, contains(c.IDs(), done.MemoryID), "%s's next context", agent)
		if found != nil {
			assert.Equal(t, "procedural", found.Type)
			assert.Equal(t, "luke", found.Author)
			assert.Equal(t, "report", found.Source)
			assert.Contains(t, found.Content, "comparison_matrix")
		}
	}
	other, err := f.store.RecentMemories(ctx, demo.OtherTeamID, 100)
	require.NoError(t, err)
	assert.Empty(t, other, "no other team")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Bad requests are 4xx naming the field, and write nothing: no report, no
// task, no slot taken.
func TestBadRequestsWriteNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := agents.NewService(f.store).Create(ctx, team, agents.CreateInput{Slug: "napper", Name: "Napper", Status: agents.StatusPaused})
	require.NoError(t, err)
	good := reports.RequestInput{Type: "code_review", To: "luke", From: "kyra", Title: "x", Parameters: params(exampleParams["code_review"])}
	for name, c := range map[string]struct {
		mutate        func(*reports.RequestInput)
		code, field   string
		reason, inMsg string
	}{
		"unknown type":             {func(in *reports.RequestInput) { in.Type = "poem" }, apperr.EINVALID, "type", "", "code_review"},
		"parameters not an object": {func(in *reports.RequestInput) { in.Parameters = json.RawMessage(`["src/"]`) }, apperr.EINVALID, "parameters", "", "object"},
		"parameters a string":      {func(in *reports.RequestInput) { in.Parameters = json.RawMessage(`"files"`) }, apperr.EINVALID, "parameters", "", "object"},
		"a required parameter":     {func(in *reports.RequestInput) { in.Parameters = params(map[string]any{"focus": []string{"x"}}) }, apperr.EINVALID, "parameters.files", "", "needs"},
		"an unknown parameter": {func(in *reports.RequestInput) {
			in.Parameters = params(map[string]any{"files": []string{"a"}, "colour": "red"})
		}, apperr.EINVALID, "parameters.colour", "", "files, focus"},
		"a parameter of the wrong kind":   {func(in *reports.RequestInput) { in.Parameters = params(map[string]any{"files": "src/"}) }, apperr.EINVALID, "parameters.files", "", "list"},
		"max_sections over 10":            {func(in *reports.RequestInput) { in.MaxSections = ptr(11) }, apperr.EINVALID, "max_sections", "", "10"},
		"max_sections below the required": {func(in *reports.RequestInput) { in.MaxSections = ptr(3) }, apperr.EINVALID, "max_sections", "", "4"},
		"unknown format":                  {func(in *reports.RequestInput) { in.Format = "pdf" }, apperr.EINVALID, "format", "", "bullet_points"},
		"a format the type cannot": {func(in *reports.RequestInput) {
			in.Type, in.Format, in.Parameters = "comparison", "bullet_points", params(exampleParams["comparison"])
		}, apperr.EINVALID, "format", "", "markdown or json"},
		"one option to compare": {func(in *reports.RequestInput) {
			in.Type, in.Parameters = "comparison", params(map[string]any{"options": []string{"a"}, "criteria": []string{"b"}})
		}, apperr.EINVALID, "parameters.options", "", "at least 2"},
		"no title":                    {func(in *reports.RequestInput) { in.Title = " " }, apperr.EINVALID, "title", "", ""},
		"no author":                   {func(in *reports.RequestInput) { in.To = "" }, apperr.EINVALID, "to", "", ""},
		"a paused author":             {func(in *reports.RequestInput) { in.To = "napper" }, apperr.ECONFLICT, "", tasks.ReasonUnavailable, "paused"},
		"an unknown author":           {func(in *reports.RequestInput) { in.To = "ghost" }, apperr.ENOTFOUND, "", "", "ghost"},
		"an unknown requester":        {func(in *reports.RequestInput) { in.From = "ghost" }, apperr.ENOTFOUND, "", "", "ghost"},
		"a report from oneself":       {func(in *reports.RequestInput) { in.From = "luke" }, apperr.EINVALID, "", tasks.ReasonSelf, ""},
		"another team's conversation": {func(in *reports.RequestInput) { in.ConversationID = "conv_nope" }, apperr.ENOTFOUND, "", "", "conversation"},
	} {
		t.Run(name, func(t *testing.T) {
			in := good
			c.mutate(&in)
			_, err := f.svc.Request(ctx, team, user, in)
			ae, ok := apperr.As(err)
			require.True(t, ok, "a typed error, got %v", err)
			assert.Equal(t, c.code, ae.Code, ae.Message)
			assert.Equal(t, c.field, ae.Field, ae.Message)
			assert.Equal(t, c.reason, ae.Reason)
			assert.Contains(t, ae.Message, c.inMsg)
		})
	}
	list, _, err := f.svc.List(ctx, team, reports.Filter{}, paging.Page{Limit: 100})
	require.NoError(t, err)
	assert.Empty(t, list, "no report")
	all, _, err := f.tasks.List(ctx, team, tasks.Filter{}, paging.Page{Limit: 100})
	require.NoError(t, err)
	assert.Empty(t, all, "no task")
	for _, a := range []string{"luke", "napper"} {
		n, err := f.tasks.Load(ctx, team, a)
		require.NoError(t, err)
		assert.Zero(t, n, "no slot of %s", a)
	}
}

// A report is a task: the author's five slots, the depth, the chain and
// the self rule hold, as conditions of the task's creation.
func TestDelegationLimitsApplyToReports(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ask := func(to, from, parent string) (reports.Report, error) {
		return f.svc.Request(ctx, team, user, reports.RequestInput{Type: "action_plan", To: to, From: from, ParentTaskID: parent,
			Title: "plan", Parameters: params(exampleParams["action_plan"])})
	}
	for i := range tasks.MaxActivePerAgent {
		_, err := ask("wren", "", "")
		require.NoError(t, err, i)
	}
	_, err := ask("wren", "", "")
	ae, _ := apperr.As(err)
	require.NotNil(t, ae)
	assert.Equal(t, apperr.ELIMIT, ae.Code)
	assert.Equal(t, tasks.ReasonConcurrency, ae.Reason)

	// kyra → luke (depth 1) → dana (2) → sage (3); sage cannot go on.
	chain := []string{"kyra", "luke", "dana", "sage"}
	parent := ""
	for i := 1; i < len(chain); i++ {
		r, err := ask(chain[i], map[bool]string{true: chain[0]}[i == 1], parent)
		require.NoError(t, err, chain[i])
		task, err := f.tasks.Get(ctx, team, r.TaskID)
		require.NoError(t, err)
		assert.Equal(t, i, task.Depth)
		_, err = f.tasks.ExecStart(ctx, team, task.ID, "arn:"+task.ID)
		require.NoError(t, err)
		parent = task.ID
	}
	_, err = ask("archie", "", parent)
	assertReason(t, err, apperr.EREJECTED, tasks.ReasonDepth)
	first, _, err := f.tasks.List(ctx, team, tasks.Filter{Assignee: "dana"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	_, err = ask("kyra", "", first[0].ID)
	assertReason(t, err, apperr.EREJECTED, tasks.ReasonCycle)
	_, err = ask("luke", "kyra", "")
	require.NoError(t, err)
	_, err = ask("wren", "luke", first[0].ID)
	assert.Equal(t, "from", fieldOf(err), "the requester of a delegation is the parent's assignee: %v", err)
}

func fieldOf(err error) string {
	if ae, ok := apperr.As(err); ok {
		return ae.Field
	}
	return ""
}

func assertReason(t *testing.T, err error, code, reason string) {
	t.Helper()
	ae, ok := apperr.As(err)
	require.True(t, ok, "typed error, got %v", err)
	assert.Equal(t, code, ae.Code, ae.Message)
	assert.Equal(t, reason, ae.Reason, ae.Message)
}

// A task that ends otherwise ends its report the same way; the report
// never changes afterwards, and a sync of an unchanged report writes
// nothing.
func TestTheReportFollowsItsTask(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := f.svc.Request(ctx, team, user, reports.RequestInput{Type: "data_analysis", To: "dana", Title: "May",
		Parameters: params(exampleParams["data_analysis"])})
	require.NoError(t, err)
	same, err := f.svc.Sync(ctx, team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, r.Version, same.Version, "nothing changed: nothing written")
	_, err = f.tasks.ExecStart(ctx, team, r.TaskID, "arn:1")
	require.NoError(t, err)
	running, err := f.svc.Sync(ctx, team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, reports.Running, running.Status)
	_, err = f.tasks.Cancel(ctx, team, r.TaskID, "user:key_test", "not needed")
	require.NoError(t, err)
	ended, err := f.svc.Sync(ctx, team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, reports.Canceled, ended.Status)
	assert.Equal(t, reports.ReasonTaskEnded, ended.Reason)
	assert.Equal(t, "not needed", ended.Error)
	assert.NotNil(t, ended.CompletedAt)
	again, err := f.svc.Sync(ctx, team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, ended, again)
	assert.Len(t, memstore.Details[reports.Finished](f.bus, reports.DetailType), 1, "published once")

	list, _, err := f.svc.List(ctx, team, reports.Filter{Status: reports.Canceled, To: "dana", Type: "data_analysis"}, paging.Page{Limit: 10})
	require.NoError(t, err)
	require.Len(t, list, 1)
	list, _, err = f.svc.List(ctx, team, reports.Filter{Status: reports.Completed}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list)
	_, _, err = f.svc.List(ctx, team, reports.Filter{Status: "sleeping"}, paging.Page{Limit: 10})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	_, _, err = f.svc.List(ctx, team, reports.Filter{Type: "poem"}, paging.Page{Limit: 10})
	assert.Equal(t, apperr.EINVALID, apperr.Code(err))
	_, err = f.svc.Get(ctx, demo.OtherTeamID, r.ID)
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "another team's report")
	list, _, err = f.svc.List(ctx, demo.OtherTeamID, reports.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, list)
}

func TestConcernsOnlyReportTasksPastTheirCreation(t *testing.T) {
	for ev, want := range map[tasks.TaskStatusChanged]bool{
		{ReportID: "rep_1", Status: tasks.Queued}:                                false,
		{ReportID: "rep_1", Status: tasks.Running, PreviousStatus: tasks.Queued}: true,
		{ReportID: "rep_1", Status: tasks.Queued, PreviousStatus: tasks.Running}: true,
		{Status: tasks.Completed, PreviousStatus: tasks.Running}:                 false,
	} {
		assert.Equal(t, want, reports.Concerns(ev), fmt.Sprintf("%+v", ev))
	}
}

// The finalizer's event is best effort (a failed publish is only logged):
// a report whose task ended catches up when it is read.
func TestAReadCatchesUpWithTheTask(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r, err := f.svc.Request(ctx, team, user, reports.RequestInput{Type: "action_plan", To: "wren", From: "kyra", Title: "SSO",
		Parameters: params(exampleParams["action_plan"])})
	require.NoError(t, err)
	_, err = f.tasks.ExecStart(ctx, team, r.TaskID, "arn:1")
	require.NoError(t, err)
	_, err = f.tasks.ExecComplete(ctx, team, r.TaskID, "arn:1", workflow.TaskResult{Output: "## objective\no\n## actions\na\n## timeline\nt\n## success_metrics\nm\n"})
	require.NoError(t, err)
	stored, err := f.store.GetReport(ctx, team, r.ID)
	require.NoError(t, err)
	require.Equal(t, reports.Queued, stored.Status, "no event was handled")

	got, err := f.svc.Get(ctx, team, r.ID)
	require.NoError(t, err)
	assert.Equal(t, reports.Completed, got.Status)
	assert.NotEmpty(t, got.MemoryID)
	waited, err := f.svc.Wait(ctx, team, r.ID, time.Second)
	require.NoError(t, err)
	assert.Equal(t, got, waited, "an ended report is read as it is")
}
