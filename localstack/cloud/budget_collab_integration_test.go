//go:build integration

// AWS call budgets of the collaboration routes and workflows that came
// after TestAWSCallBudgetsPerOperation: sessions (every route, and every
// session-steps action of a session's execution), reports (every route,
// the report's worker run and the report-finalizer). The same table in
// docs/testing.md, "AWS calls per operation".
package cloud_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

func TestAWSCallBudgetsSessionsAndReports(t *testing.T) {
	e := mustEnv(t)
	d := mustDemoTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	require.NotEmpty(t, api.Base)
	start := lastSeq(t)

	var approved, cancelled, resumed, report, reportTask string
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	lit := func(s string) func() string { return func() string { return s } }
	dynamo := func(n int) calls { return calls{"DynamoDB": n} }
	sessionPath := func(id *string, tail string) func() string {
		return func() string { return "/v1/sessions/" + *id + tail }
	}
	// A session reads its lead and each participant (each must be an
	// active agent of the team; one GetItem each, see docs/testing.md) and is one
	// conditional write (its participants inside it; each participant's slot
	// is taken by its stage's task, not here), a transaction with the first
	// event of its stream (SessionStatusChanged, planning); announced; the
	// execution started, named by the session id.
	sessionCreate := calls{"DynamoDB": 4, "DynamoDB.GetItem": 3, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1, "SFN": 1}

	steps := []step{
		{op: "POST /v1/sessions", method: "POST", path: lit("/v1/sessions"), status: 201,
			body: map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Name the release", "approval": "final",
				"participants": twoContributors("luke", "archie")},
			max: sessionCreate, then: func(r map[string]any) { approved = str(r, "id") }},
		{op: "GET /v1/sessions", method: "GET", path: lit("/v1/sessions"), status: 200, max: dynamo(1)},
		// the session and its participants.
		{op: "GET /v1/sessions/{id}", method: "GET", path: sessionPath(&approved, ""), status: 200, max: dynamo(1),
			before: func() { d.waitSession(approved, 60*time.Second, "awaiting_approval") }},
		// the session (its task token), one conditional write with its
		// status's event (a transaction), announced, the token sent back
		// to the execution.
		{op: "POST /v1/sessions/{id}/approve", method: "POST", path: sessionPath(&approved, "/approve"), status: 200,
			body: map[string]any{"decision": "approve"}, max: calls{"DynamoDB": 2, "EventBridge": 1, "SFN": 1}},
		// the session, its messages page.
		{op: "GET /v1/sessions/{id}/trace", method: "GET", path: sessionPath(&approved, "/trace"), status: 200, max: dynamo(2),
			before: func() { d.waitSession(approved, 60*time.Second) }},
		// sage hangs: the session is still running when it is cancelled.
		{op: "POST /v1/sessions (to cancel)", method: "POST", path: lit("/v1/sessions"), status: 201,
			before: func() { d.script(e, "sage", "timeout") },
			body: map[string]any{"pattern": "brainstorm", "lead": "kyra", "goal": "Cancel me",
				"participants": twoContributors("sage", "wren")},
			max: sessionCreate, then: func(r map[string]any) { cancelled = str(r, "id") }},
		// the session, the execution stopped, one conditional write with its
		// status's event (a transaction, from the same read), announced; a
		// stage under way that changed the session
		// meanwhile costs one re-read and put (the version condition). The
		// cancel waits until the execution has run its steps and settled
		// (wren's contribution stored, sage's model call hanging): moto
		// 5.2.5 answers a StopExecution of an execution started a moment
		// before with a 500 (its worker has no environment yet) and the SDK
		// retries it; and the stages' own writes, racing the cancel's put,
		// each cost it a re-read and a put.
		{op: "POST /v1/sessions/{id}/cancel", method: "POST", path: sessionPath(&cancelled, "/cancel"), status: 200,
			before: func() { d.waitSettled(cancelled) },
			max:    calls{"DynamoDB": 4, "DynamoDB.GetItem": 2, "DynamoDB.TransactWriteItems": 2, "EventBridge": 1, "SFN": 1}},
		{op: "POST /v1/sessions (to resume)", method: "POST", path: lit("/v1/sessions"), status: 201,
			before: func() { d.script(e, "dana", "fail") },
			body: map[string]any{"pattern": "pipeline", "lead": "kyra", "goal": "Resume me",
				"participants": []any{part("luke", "worker", 1), part("dana", "worker", 2)}},
			max: sessionCreate, then: func(r map[string]any) { resumed = str(r, "id") }},
		// the session, one conditional write with its status's event (a
		// transaction), announced, the next run started (<id>-r1).
		{op: "POST /v1/sessions/{id}/resume", method: "POST", path: sessionPath(&resumed, "/resume"), status: 200,
			before: func() {
				failed := d.waitSession(resumed, 60*time.Second)
				require.Equal(t, "failed", failed["status"], failed)
				_, err := agents.NewService(e.db.agents).Update(context.Background(), d.id, "dana", agents.UpdateInput{Model: &agents.Model{Provider: "local"}})
				require.NoError(t, err)
			},
			max: calls{"DynamoDB": 2, "EventBridge": 1, "SFN": 1}},

		// reports
		{op: "GET /v1/report-templates", method: "GET", path: lit("/v1/report-templates"), status: 200, max: calls{}},
		// a report is a task (the create of the task service: the parent
		// read when there is one, one transaction with the report item;
		// announced, its execution started).
		{op: "POST /v1/reports", method: "POST", path: lit("/v1/reports"), status: 201,
			body: map[string]any{"type": "research_summary", "to": "dana", "from": "kyra", "title": "Budget report",
				"parameters": reportParams["research_summary"]},
			max:  calls{"DynamoDB": 2, "EventBridge": 1, "SFN": 1},
			then: func(r map[string]any) { report, reportTask = str(r, "id"), str(r, "task_id") }},
		{op: "GET /v1/reports", method: "GET", path: lit("/v1/reports"), status: 200, max: dynamo(1)},
		// the report (and its task, for the status a report that is still
		// running has).
		{op: "GET /v1/reports/{id}", method: "GET", path: func() string { return "/v1/reports/" + report }, status: 200, max: dynamo(2),
			before: func() { d.waitReport(report) }},
	}
	table := runSteps(t, api, d.id, steps)
	d.waitSession(resumed, 60*time.Second)

	// Each session-steps action of the approved brainstorm's execution, per
	// invocation (the Map state runs one "stage" per contributor). Every
	// step reads the session once, to check that it may still run, and
	// changes it from that read (one conditional write, announced when its
	// status moves). A change the session's stream tells of (a status, a
	// stage's output) is a transaction with its events, one call as the put
	// it replaces; any other change stays one PutItem.
	stateChange := calls{"DynamoDB": 5, "DynamoDB.GetItem": 3, "DynamoDB.PutItem": 1, "DynamoDB.TransactWriteItems": 1, "EventBridge": 2}
	// A stage is a task of the task model, so the delegation limits and
	// the budgets hold inside sessions: created, started, its attempt
	// recorded and completed (four transactions, three announced), the
	// agent, the model call (one Converse call) charged to the session's cap (one conditional add), the protocol
	// check (the session's messages) and the message put, the participant
	// marked working and the output stored (each a read and a conditional
	// write of the session: a put, and a transaction with the stage's
	// SessionStageCompleted event; the output announced). Above that: a concurrent
	// stage that changed the session first costs a re-read and a write
	// (the version condition; here one other contributor, so at most two:
	// one more transaction when it is the output's), and
	// the cancel watch reads the session once a second while the model
	// works (the local model answers at once; about one read per second of
	// a Bedrock call in AWS).
	// And the model call charged to the team's budget (charged): the
	// contributors' stages run at once, so each may be the team's first
	// call of the month.
	stage := charged(calls{"DynamoDB": 25 + 4, "DynamoDB.TransactWriteItems": 6 + 1, "DynamoDB.UpdateItem": 1, "DynamoDB.Query": 2, "EventBridge": 5, "BedrockRuntime": 1}, 1, true)
	perAction := map[string]calls{
		// status planning → active (a read and a put, announced), the
		// history (empty: the first run), the participants invited (a
		// message each through the messaging service, announced) and the
		// opening delegation recorded (the protocol check reads the
		// history again, one put); the status change is a transaction
		// with its event.
		"begin": calls{"DynamoDB": 8, "DynamoDB.GetItem": 3, "DynamoDB.PutItem": 2, "DynamoDB.TransactWriteItems": 1, "DynamoDB.Query": 2, "EventBridge": 2},
		"stage": stage,
		// the lead's turn: a stage with the other outputs in its prompt,
		// one more write and announcement for the final output (the
		// lead's stage and the final output each a transaction with its
		// event).
		"synthesize": charged(calls{"DynamoDB": 29 + 2, "DynamoDB.TransactWriteItems": 7, "DynamoDB.UpdateItem": 1, "DynamoDB.Query": 2, "EventBridge": 6, "BedrockRuntime": 1}, 1, false),
		// the task token stored (status awaiting_approval, announced) and
		// the participants told (one message, announced).
		"await": stateChange,
		// the session ended completed (announced) and the participants
		// told; the result-poster posts the outcome.
		"complete": stateChange,
	}
	all, _ := invocations(t, start, "session-steps", d.id)
	seen := map[string]bool{}
	for _, inv := range all {
		if inv.SessionID != approved {
			continue
		}
		max, ok := perAction[inv.Action]
		require.True(t, ok, "session-steps %q has a budget", inv.Action)
		if inv.Action == "stage" || inv.Action == "synthesize" {
			// a stage's model call runs under the cancel watch: a loaded
			// machine's call runs longer and the watch reads more.
			max = maps.Clone(max)
			max["DynamoDB"] += watchReads(inv)
		}
		within(t, "session-steps "+inv.Action, inv.Calls, max)
		if !seen[inv.Action] {
			seen[inv.Action] = true
			table = append(table, measured{op: "session-steps " + inv.Action, calls: inv.Calls})
		}
	}
	for action := range perAction {
		require.True(t, seen[action], "the approved session ran session-steps %s", action)
	}

	// The report's worker run and its finalizer.
	list, _ := invocations(t, start, "task-worker", d.id)
	for _, inv := range list {
		if inv.TaskID == reportTask {
			// the task run as a delegated task's (see task-worker above):
			// the agent read with its team (one Query: the roster) and its
			// unread inbox (one Query), its memory context (built here:
			// three reads and one transaction at most), and the report's
			// template and requester in the brief; the answer is parsed and
			// checked in memory, a revision would add one model call; and
			// the watch's read that the task still runs, once a second of
			// the attempt (a loaded machine's attempt outlasts one).
			// The model call charged to the team's budget (charged; the
			// report may run before the sessions' stages).
			within(t, "task-worker (a report)", inv.Calls, charged(calls{"DynamoDB": 12 + watchReads(inv), "DynamoDB.TransactWriteItems": 3, "BedrockRuntime": 1}, 1, true))
			table = append(table, measured{op: "task-worker (a report)", calls: inv.Calls})
		}
	}
	// The finalizer runs from the queue its rule feeds, asynchronously: the
	// long-polling GET may have synced the report first.
	var fin []invocation
	require.Eventually(t, func() bool {
		fin, _ = invocations(t, start, "report-finalizer", d.id)
		return len(fin) > 0
	}, 30*time.Second, 200*time.Millisecond, "the report-finalizer ran for the team")
	for _, inv := range fin {
		// per record: the report and its task read (and the task's
		// timeline, for a completed one: the revisions); a report whose
		// task moved is saved in one transaction (status, sections, the
		// memory it becomes) and, ended, announced. The save is
		// conditioned on the report's version: a concurrent sync (a
		// `GET /v1/reports/{id}?wait=` syncs too) that saved first costs
		// one more round of the same reads and a transaction, at most.
		n := atLeastOne(inv.Records)
		within(t, "report-finalizer", inv.Calls, calls{"DynamoDB": 8 * n, "DynamoDB.GetItem": 4 * n, "DynamoDB.Query": 2 * n,
			"DynamoDB.TransactWriteItems": 2 * n, "EventBridge": n})
	}
	busiest := fin[0]
	for _, inv := range fin {
		if inv.Total() > busiest.Total() {
			busiest = inv
		}
	}
	table = append(table, measured{op: "report-finalizer (per record; the report's end)", calls: busiest.Calls, extra: fmt.Sprintf("%d record(s)", busiest.Records)})

	for _, r := range table {
		t.Log(r)
	}
}

// The consultations routes, each held to its budget (docs/testing.md, "AWS calls
// per operation").
func TestAWSCallBudgetsConsultations(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	api := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	require.NotEmpty(t, api.Base)

	var answered, escalation, backendDone, taskEscalation string
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	lit := func(s string) func() string { return func() string { return s } }
	consultation := func(tail string) func() string {
		return func() string { return "/v1/consultations/" + answered + tail }
	}
	const repeated = "Which index serves the API key lookups by prefix?"
	// A request reads the team's agents, asks the expert-gate function
	// (which reads the counters and the ratings: gate), the team's recent
	// consultations (loop detection and the similar past resolutions) and
	// its shared memories: three queries and an invoke.
	// Then writes is the consultation created with the requester's slot
	// taken (one transaction) and, answered, saved completed with the
	// answer and the slot given back (one more); escalated, it is one
	// transaction with its escalation, announced (ConsultationEscalated).
	// model is the specialist's model calls (Converse).
	// Each model call is charged to the team's budget (charged); the
	// first consultation's is the team's first of the month.
	request := func(writes, model int) calls {
		c := calls{"DynamoDB": 3 + writes, "DynamoDB.Query": 3, "DynamoDB.TransactWriteItems": writes, "BedrockRuntime": model, "Lambda": 1}
		if model == 0 {
			c["EventBridge"] = 1
		}
		return charged(c, model, model > 0)
	}
	// The gate: the counters and the ratings (two queries); the team's
	// skills have no examples, so it reads no classifier.
	gate := calls{"DynamoDB": 2, "DynamoDB.Query": 2}
	steps := []step{
		{op: "POST /v1/consultations (answered)", method: "POST", path: lit("/v1/consultations"), status: 201,
			body: map[string]any{"requesting_agent": "frontend", "question": "What fields does the User model API endpoint return?"},
			max:  request(2, 1), gate: gate,
			then: func(r map[string]any) { answered = str(r, "collaboration_id") }},
		// the consultation, the team's recent consultations (the loop
		// checks before the exchange), the team's agents (the specialist's
		// record for its prompt); the consultation reopened with the
		// requester's slot taken (one transaction: the limit of 3 is its
		// condition); the model (one Converse call); the exchange saved,
		// completed, with the slot given back (one more).
		{op: "POST /v1/consultations/{id}/exchanges", method: "POST", path: consultation("/exchanges"), status: 200,
			body: map[string]any{"message": "Is created_at in UTC?"},
			max:  charged(calls{"DynamoDB": 5, "DynamoDB.GetItem": 1, "DynamoDB.Query": 2, "DynamoDB.TransactWriteItems": 2, "BedrockRuntime": 1}, 1, false)},
		// the consultation; the outcome and the lesson stored as a shared
		// memory in one transaction (completed already, it holds no slot);
		// the memory announced.
		{op: "POST /v1/consultations/{id}/outcome", method: "POST", path: consultation("/outcome"), status: 200,
			body: map[string]any{"rating": 5, "lessons_learned": "created_at is UTC"},
			max:  calls{"DynamoDB": 2, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1}},
		{op: "GET /v1/consultations/{id}", method: "GET", path: consultation(""), status: 200, max: calls{"DynamoDB": 1}},
		{op: "GET /v1/consultations", method: "GET", path: lit("/v1/consultations"), status: 200, max: calls{"DynamoDB": 1}},
		// the team's newest consultations (up to 1,000, a page each 100).
		{op: "GET /v1/consultations/metrics", method: "GET", path: lit("/v1/consultations/metrics"), status: 200, max: calls{"DynamoDB": 1}},
		{op: "POST /v1/consultations (a loop: escalated)", method: "POST", path: lit("/v1/consultations"), status: 201,
			before: func() {
				for range 2 {
					d.consult(map[string]any{"requesting_agent": "security", "question": repeated})
				}
			},
			body: map[string]any{"requesting_agent": "security", "question": repeated}, max: request(1, 0), gate: gate,
			then: func(r map[string]any) { escalation = str(r, "escalation_id") }},
		// A fourth active consultation of one requester (three answers of
		// its being written, stored as their requests leave them): the
		// request's reads; the create's transaction is refused by the slot
		// counter's condition; the counter and each of its 3 holders read
		// (none idle here; each idle one would be closed in a transaction
		// of its own and the create tried once more); the consultation
		// stored escalated with its escalation (one transaction), announced.
		{op: "POST /v1/consultations (a fourth active: escalated)", method: "POST", path: lit("/v1/consultations"), status: 201,
			before: func() {
				c := d.consult(map[string]any{"requesting_agent": "backend", "question": "Which react component renders the profile page?"})
				require.Equal(t, "completed", c["status"], c)
				backendDone = str(c, "collaboration_id")
				for _, q := range []string{"How should the css grid of the ui be laid out?", "Which react hook loads the ui state?", "Which ui font does the header use?"} {
					mustAnswerBeingWritten(t, e, d.id, "backend", "frontend", q)
				}
			},
			body: map[string]any{"requesting_agent": "backend", "question": "Which css class styles the ui header?"},
			max:  calls{"DynamoDB": 9, "DynamoDB.Query": 3, "DynamoDB.GetItem": 4, "DynamoDB.TransactWriteItems": 2, "EventBridge": 1, "Lambda": 1},
			gate: gate,
			then: func(r map[string]any) {
				require.Equal(t, "escalated", r["status"], r)
				require.Equal(t, "too_many_concurrent", r["loop"].(map[string]any)["type"], r)
			}},
		// A follow-up that would be its requester's fourth active
		// consultation: the consultation, the loop checks' and the
		// specialist's reads; the reopen's transaction refused by the slot
		// counter's condition; the counter and its 3 holders read (as
		// above); 409 ConcurrencyLimit, nothing written, no model call.
		{op: "POST /v1/consultations/{id}/exchanges (a fourth active: 409)", method: "POST",
			path: func() string { return "/v1/consultations/" + backendDone + "/exchanges" }, status: 409,
			body: map[string]any{"message": "Which breakpoint switches the layout?"},
			max:  calls{"DynamoDB": 8, "DynamoDB.GetItem": 5, "DynamoDB.Query": 2, "DynamoDB.TransactWriteItems": 1}},
		// the open ones first, then the resolved ones: a query each.
		{op: "GET /v1/escalations", method: "GET", path: lit("/v1/escalations"), status: 200, max: calls{"DynamoDB": 2, "DynamoDB.Query": 2}},
		// the escalation and its consultation; the escalation resolved, the
		// consultation completed with the human's answer and the requester's
		// inbox message in one transaction.
		{op: "POST /v1/escalations/{id}/resolve", method: "POST", path: func() string { return "/v1/escalations/" + escalation + "/resolve" }, status: 200,
			body: map[string]any{"answer": "the key_prefix index"},
			max:  calls{"DynamoDB": 3, "DynamoDB.GetItem": 2, "DynamoDB.TransactWriteItems": 1}},
		// A task's (task_overdue): the escalation and the task; the task
		// canceled with the note and the escalation resolved in the
		// task's one transaction; the status change announced.
		{op: "POST /v1/escalations/{id}/resolve (task_overdue, cancel)", method: "POST", path: func() string { return "/v1/escalations/" + taskEscalation + "/resolve" }, status: 200,
			before: func() { taskEscalation = overdueEscalation(t, e, d, "backend") },
			body:   map[string]any{"answer": "not this sprint", "action": "cancel"},
			max:    calls{"DynamoDB": 3, "DynamoDB.GetItem": 2, "DynamoDB.TransactWriteItems": 1, "EventBridge": 1}},
	}
	for _, r := range runSteps(t, api, d.id, steps) {
		t.Log(r)
	}
}

// waitSettled waits until a cancel-me brainstorm has settled: active, with
// wren's contribution stored, so only sage's hanging model call is left
// and nothing writes the session while it is cancelled.
func (d demoTeam) waitSettled(id string) {
	d.t.Helper()
	d.waitSession(id, 60*time.Second, "active")
	require.Eventually(d.t, func() bool {
		_, s := d.call("GET", "/v1/sessions/"+id, nil)
		outs, _ := s["stage_outputs"].([]any)
		sageWorking := false
		for _, p := range s["participants"].([]any) {
			pm := p.(map[string]any)
			sageWorking = sageWorking || pm["agent"] == "sage" && pm["status"] == "working"
		}
		return len(outs) >= 1 && sageWorking
	}, 60*time.Second, 250*time.Millisecond, "wren's contribution stored, sage at work")
}
