//go:build integration

// Consultations against the local cloud: HTTP through the edge to the
// consultations function, the ExpertGate scoring in process over DynamoDB
// Local, the local model answering as the specialist, the active counter a
// condition of DynamoDB's own transactions, ConsultationEscalated through
// the bus to the activity log.
package cloud_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	conclaveevents "github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/activity"
	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/consultations"
	"github.com/conclave-ai/conclave/shared/consultations/fakesecret"
	"github.com/conclave-ai/conclave/shared/memstore"
	"github.com/conclave-ai/conclave/shared/models/localmodel"
	"github.com/conclave-ai/conclave/shared/teams"
)

// mustConsultTeam is a team of a frontend developer, a backend developer
// (APIs, models, database), a security engineer and a paused devops
// engineer, with distinct skills so the gate's choice is clear.
func mustConsultTeam(t *testing.T, e env) demoTeam {
	t.Helper()
	ctx := context.Background()
	tm, k, err := teams.NewService(e.store).CreateTeam(ctx, "consult")
	require.NoError(t, err)
	svc := agents.NewService(e.store)
	for _, in := range []agents.CreateInput{
		{Slug: "frontend", Name: "Fran", Skills: []agents.Skill{{Name: "ui", Description: "user interfaces", Keywords: []string{"ui", "react", "css"}}}},
		{Slug: "backend", Name: "Ben", Skills: []agents.Skill{{Name: "api-design", Description: "APIs, database schema, models", Keywords: []string{"api", "model", "database", "schema", "endpoint", "fields"}}}},
		{Slug: "security", Name: "Sec", Skills: []agents.Skill{{Name: "security-review", Description: "authentication, vulnerabilities", Keywords: []string{"auth", "authentication", "security", "vulnerability", "token", "jwt"}}}},
		{Slug: "devops", Name: "Dev", Status: agents.StatusPaused, Skills: []agents.Skill{{Name: "deploy", Description: "deployment", Keywords: []string{"docker", "deploy"}}}},
	} {
		_, err := svc.Create(ctx, tm.ID, in)
		require.NoError(t, err)
	}
	return demoTeam{id: tm.ID, key: k.Secret, t: t}
}

func (d demoTeam) consult(body map[string]any) map[string]any {
	d.t.Helper()
	st, c := d.call("POST", "/v1/consultations", body)
	require.Equal(d.t, 201, st, c)
	return c
}

func loopOf(c map[string]any) map[string]any {
	l, _ := c["loop"].(map[string]any)
	return l
}

// The gate chooses: a suggestion is overridden when a better specialist
// exists and taken when it is the best; the specialist answers within the
// request; a follow-up is one more exchange; the outcome closes it and its
// lesson reaches the next similar consultation's context package, which
// holds no secret.
func TestConsultationsAreAnsweredByTheGatesChoice(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)

	c := d.consult(map[string]any{"requesting_agent": "frontend", "question": "What fields does the User model API endpoint return from the database schema?",
		"suggested_agent": "security", "urgency": "high", "context": map[string]any{"current_task": "Build the profile page", "attempted_approaches": []string{"read the API docs"}}})
	assert.Equal(t, "backend", c["consulted_agent"])
	dec := c["decision"].(map[string]any)
	assert.Equal(t, false, dec["suggestion_taken"])
	assert.Contains(t, dec["reason"], "overridden")
	assert.Equal(t, "in_progress", c["status"])
	assert.NotEmpty(t, c["response"].(map[string]any)["answer"])
	require.Len(t, c["exchanges"], 1)

	taken := d.consult(map[string]any{"requesting_agent": "frontend", "question": "Is this JWT authentication token handling secure against vulnerabilities?", "suggested_agent": "security"})
	assert.Equal(t, "security", taken["consulted_agent"])
	assert.Equal(t, true, taken["decision"].(map[string]any)["suggestion_taken"])

	id := c["collaboration_id"].(string)
	st, f := d.call("POST", "/v1/consultations/"+id+"/exchanges", map[string]any{"message": "Is created_at in UTC?"})
	require.Equal(t, 200, st, f)
	require.Len(t, f["exchanges"], 2)
	assert.Equal(t, "clarification", f["exchanges"].([]any)[1].(map[string]any)["type"])

	st, o := d.call("POST", "/v1/consultations/"+id+"/outcome", map[string]any{"rating": 5, "lessons_learned": "The User model API returns preferences as JSON; parse it on the client"})
	require.Equal(t, 200, st, o)
	assert.Equal(t, "completed", o["status"])
	memID := o["outcome"].(map[string]any)["memory_id"].(string)
	require.NotEmpty(t, memID)
	st, _ = d.call("POST", "/v1/consultations/"+id+"/outcome", map[string]any{"rating": 4})
	assert.Equal(t, 409, st, "one outcome")

	// The next similar question: the past resolution and the lesson (a
	// shared memory) are in its package; the secrets it carried are not,
	// anywhere in what is stored or shown.
	fake := fakesecret.New("integration")
	secrets := fake.Values()
	next := d.consult(map[string]any{"requesting_agent": "security", "question": "What fields does the User model API return for the profile? my " + fake.PasswordClause(),
		"context": map[string]any{"current_task": "connect to " + fake.ConnectionString(), "error_messages": []string{fake.AccessKeyID + " denied", fake.AuthHeader(), fake.PrivateKeyBlock()}}})
	pkg := next["context_package"].(map[string]any)
	past := pkg["similar_past"].([]any)
	require.NotEmpty(t, past)
	assert.Equal(t, id, past[0].(map[string]any)["consultation_id"])
	assert.Contains(t, past[0].(map[string]any)["resolution"], "preferences as JSON")
	mems := pkg["memories"].([]any)
	require.NotEmpty(t, mems)
	assert.Equal(t, memID, mems[0].(map[string]any)["memory_id"])
	assert.NotEmpty(t, pkg["included"])
	st, stored := d.call("GET", "/v1/consultations/"+next["collaboration_id"].(string), nil)
	require.Equal(t, 200, st)
	raw := fmt.Sprint(stored)
	for _, s := range secrets {
		assert.NotContains(t, raw, s)
	}
	assert.Contains(t, raw, "[REDACTED:")
}

// Each loop type escalates with its evidence, publishes
// ConsultationEscalated, and is listed for a human (open first), whose
// answer reaches the requester's inbox and completes the consultation.
func TestConsultationLoopsEscalateToAHuman(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)

	// identical: the third near-identical question within the hour.
	q := "What fields does the User model API return?"
	var first []string
	for range 2 {
		c := d.consult(map[string]any{"requesting_agent": "frontend", "question": q})
		require.Equal(t, "in_progress", c["status"])
		first = append(first, c["collaboration_id"].(string))
	}
	ident := d.consult(map[string]any{"requesting_agent": "frontend", "question": "what FIELDS does the User model API return"})
	assert.Equal(t, "escalated", ident["status"])
	assert.Equal(t, "identical_questions", loopOf(ident)["type"])
	assert.ElementsMatch(t, first, loopOf(ident)["evidence"].(map[string]any)["previous"])
	assert.Empty(t, ident["exchanges"], "nothing was sent to an agent")

	// circular: backend, consulted by frontend (still open), asks frontend.
	circ := d.consult(map[string]any{"requesting_agent": "backend", "question": "Which react ui css component renders the profile?"})
	assert.Equal(t, "frontend", circ["consulted_agent"])
	assert.Equal(t, "escalated", circ["status"])
	assert.Equal(t, "circular_dependency", loopOf(circ)["type"])
	assert.Contains(t, first, loopOf(circ)["evidence"].(map[string]any)["open_consultation"])

	// stall: five exchanges without a resolution; the sixth escalates.
	s := d.consult(map[string]any{"requesting_agent": "security", "question": "Which database schema stores the API keys?"})
	sid := s["collaboration_id"].(string)
	for _, msg := range []string{"Is the hash column salted?", "Which index serves lookups by prefix?", "Are revoked keys deleted or flagged?", "Who may read the table?"} {
		st, f := d.call("POST", "/v1/consultations/"+sid+"/exchanges", map[string]any{"message": msg})
		require.Equal(t, 200, st, f)
		require.Equal(t, "in_progress", f["status"])
	}
	st, stall := d.call("POST", "/v1/consultations/"+sid+"/exchanges", map[string]any{"message": "And the index on the hash column?"})
	require.Equal(t, 200, st, stall)
	assert.Equal(t, "escalated", stall["status"])
	assert.Equal(t, "stall", loopOf(stall)["type"])
	assert.EqualValues(t, 5, loopOf(stall)["evidence"].(map[string]any)["exchanges"])
	assert.Len(t, stall["exchanges"], 5, "the sixth was not sent")
	st, _ = d.call("POST", "/v1/consultations/"+sid+"/exchanges", map[string]any{"message": "hello?"})
	assert.Equal(t, 409, st)

	// The event, valid against its schema.
	en := waitActivity(t, e, d.id, func(en activity.Entry) bool {
		return en.DetailType == "ConsultationEscalated" && detailField(t, en, "type") == "stall"
	})
	assert.NoError(t, conclaveevents.Validate(en.DetailType, en.Detail))

	// A human resolves the identical-loop escalation.
	st, list := d.call("GET", "/v1/escalations", nil)
	require.Equal(t, 200, st, list)
	require.Len(t, list["items"], 3)
	escID := ident["escalation_id"].(string)
	st, res := d.call("POST", "/v1/escalations/"+escID+"/resolve", map[string]any{"answer": "id, username, email, preferences (JSON)", "resolved_by": "ops@example.com"})
	require.Equal(t, 200, st, res)
	assert.Equal(t, "resolved", res["status"])
	st, again := d.call("POST", "/v1/escalations/"+escID+"/resolve", map[string]any{"answer": "again"})
	assert.Equal(t, 409, st, again)

	st, done := d.call("GET", "/v1/consultations/"+ident["collaboration_id"].(string), nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "completed", done["status"])
	assert.Equal(t, "human", done["resolved_by"])
	assert.Equal(t, "id, username, email, preferences (JSON)", done["response"].(map[string]any)["answer"])
	st, inbox := d.call("GET", "/v1/agents/frontend/inbox", nil)
	require.Equal(t, 200, st, inbox)
	found := false
	for _, it := range inbox["items"].([]any) {
		m := it.(map[string]any)
		found = found || (m["id"] == res["message_id"] && strings.Contains(m["content"].(string), "preferences (JSON)"))
	}
	assert.True(t, found, "the human's answer is in the requester's inbox: %v", inbox)

	// Open first: resolve the newest (the stall's) too, so newest-first
	// order alone (stall, circular, identical) would not pass: the open
	// circular escalation, then the resolved ones newest first.
	st, res = d.call("POST", "/v1/escalations/"+stall["escalation_id"].(string)+"/resolve", map[string]any{"answer": "A unique index on the hash column"})
	require.Equal(t, 200, st, res)
	st, list = d.call("GET", "/v1/escalations", nil)
	require.Equal(t, 200, st)
	items := list["items"].([]any)
	require.Len(t, items, 3)
	var order []string
	for _, it := range items {
		m := it.(map[string]any)
		order = append(order, m["id"].(string)+":"+m["status"].(string))
	}
	assert.Equal(t, []string{circ["escalation_id"].(string) + ":open", stall["escalation_id"].(string) + ":resolved", escID + ":resolved"}, order)

	// The metrics add up to the consultations made.
	st, m := d.call("GET", "/v1/consultations/metrics", nil)
	require.Equal(t, 200, st, m)
	st, all := d.call("GET", "/v1/consultations?limit=100", nil)
	require.Equal(t, 200, st)
	made := len(all["items"].([]any))
	assert.Equal(t, 5, made)
	assert.EqualValues(t, made, m["total"])
	sum, loops := 0.0, 0.0
	for _, p := range m["pairs"].([]any) {
		pm := p.(map[string]any)
		sum += pm["count"].(float64)
		for k, v := range pm["by_outcome"].(map[string]any) {
			if strings.HasPrefix(k, "loop:") {
				loops += v.(float64)
			}
		}
	}
	assert.EqualValues(t, made, sum)
	assert.EqualValues(t, 3, loops, "three loops were detected")
}

// The product's "3 active consultations per agent" holds under concurrent
// requests: the counter is a condition of each consultation's transaction.
func TestAtMostThreeActiveConsultationsPerAgentUnderConcurrency(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	questions := []string{"api model fields", "jwt auth token", "database schema indexes", "endpoint error codes", "security review of login", "api pagination style"}
	var wg sync.WaitGroup
	statuses := make([]int, len(questions))
	results := make([]map[string]any, len(questions))
	for i, q := range questions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], results[i] = d.call("POST", "/v1/consultations", map[string]any{"requesting_agent": "frontend", "question": q})
		}()
	}
	wg.Wait()
	active, limited := 0, 0
	for i, r := range results {
		if statuses[i] != 201 {
			// Only a lost transaction race may answer otherwise; nothing
			// was written for it.
			assert.Equal(t, 409, statuses[i], r)
			continue
		}
		switch {
		case r["status"] == "in_progress":
			active++
		case loopOf(r)["type"] == "too_many_concurrent":
			limited++
			assert.Len(t, loopOf(r)["evidence"].(map[string]any)["active_consultations"], 3)
		}
	}
	t.Logf("in_progress %d, too_many_concurrent %d, of %d", active, limited, len(questions))
	assert.LessOrEqual(t, active, 3)
	assert.Positive(t, limited)
	st, list := d.call("GET", "/v1/consultations?status=in_progress&agent=frontend", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], active)
	// Closing one frees a slot.
	var open string
	for _, r := range results {
		if r["status"] == "in_progress" {
			open = r["collaboration_id"].(string)
		}
	}
	if active == 3 {
		st, _ = d.call("POST", "/v1/consultations/"+open+"/outcome", map[string]any{"rating": 4})
		require.Equal(t, 200, st)
		c := d.consult(map[string]any{"requesting_agent": "frontend", "question": "css grid or flexbox for the profile card?"})
		assert.Equal(t, "in_progress", c["status"])
	}
}

// Bad input is 400 naming the field with nothing written; another team's
// ids are 404 and its lists are empty; a repeated POST with the same
// Idempotency-Key replays the first answer.
func TestConsultationsValidationIsolationIdempotency(t *testing.T) {
	e := mustEnv(t)
	d, other := mustConsultTeam(t, e), mustConsultTeam(t, e)
	for field, body := range map[string]map[string]any{
		"requesting_agent":             {"requesting_agent": "devops", "question": "q"},
		"question":                     {"requesting_agent": "frontend", "question": ""},
		"urgency":                      {"requesting_agent": "frontend", "question": "q", "urgency": "asap"},
		"context.relevant_files":       {"requesting_agent": "frontend", "question": "q", "context": map[string]any{"relevant_files": []string{""}}},
		"context.attempted_approaches": {"requesting_agent": "frontend", "question": "q", "context": map[string]any{"attempted_approaches": make([]string, 11)}},
	} {
		resp := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}.Do("POST", "/v1/consultations", body)
		require.Equal(t, 400, resp.Status, field)
		_, got, _ := resp.ErrorFields(t)
		assert.Equal(t, field, got)
	}
	st, _ := d.call("POST", "/v1/consultations", map[string]any{"requesting_agent": "frontend", "question": "q", "extra": 1})
	assert.Equal(t, 400, st)
	st, list := d.call("GET", "/v1/consultations", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, list["items"], "nothing written")
	st, _ = d.call("POST", "/v1/consultations/cons_x/outcome", map[string]any{"rating": 9})
	assert.Equal(t, 400, st)
	st, _ = d.call("GET", "/v1/consultations?status=nope", nil)
	assert.Equal(t, 400, st)

	me := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	body := map[string]any{"requesting_agent": "frontend", "question": "What fields does the User model API return?"}
	first := me.Do("POST", "/v1/consultations", body, "Idempotency-Key", "consult-once")
	require.Equal(t, 201, first.Status, string(first.Body))
	again := me.Do("POST", "/v1/consultations", body, "Idempotency-Key", "consult-once")
	assert.Equal(t, 201, again.Status)
	assert.Equal(t, first.Body, again.Body)
	assert.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	st, list = d.call("GET", "/v1/consultations", nil)
	require.Equal(t, 200, st)
	assert.Len(t, list["items"], 1, "one consultation")

	id := first.JSON(t)["collaboration_id"].(string)
	st, got := d.call("GET", "/v1/consultations/"+id+"?wait=1", nil)
	require.Equal(t, 200, st, got)
	assert.Equal(t, id, got["collaboration_id"])
	assert.Equal(t, "in_progress", got["status"])
	st, _ = d.call("GET", "/v1/consultations/"+id+"?wait=26", nil)
	assert.Equal(t, 400, st, "wait beyond its maximum")
	for _, path := range []string{"/v1/consultations/" + id, "/v1/consultations/" + id + "?wait=1"} {
		st, _ = other.call("GET", path, nil)
		assert.Equal(t, 404, st, path)
	}
	st, _ = other.call("POST", "/v1/consultations/"+id+"/exchanges", map[string]any{"message": "hi"})
	assert.Equal(t, 404, st)
	st, _ = other.call("POST", "/v1/consultations/"+id+"/outcome", map[string]any{"rating": 3})
	assert.Equal(t, 404, st)
	st, theirs := other.call("GET", "/v1/consultations?limit=100", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, theirs["items"])
	st, m := other.call("GET", "/v1/consultations/metrics", nil)
	require.Equal(t, 200, st)
	assert.EqualValues(t, 0, m["total"])
	st, _ = other.call("POST", "/v1/escalations/esc_nope/resolve", map[string]any{"answer": "x"})
	assert.Equal(t, 404, st)

	// A real escalation of d's (the same question a third time): invisible
	// and unresolvable for the other team, and left as it was.
	var loop map[string]any
	for range 2 {
		loop = d.consult(body)
	}
	require.Equal(t, "escalated", loop["status"])
	escID := loop["escalation_id"].(string)
	st, _ = other.call("POST", "/v1/escalations/"+escID+"/resolve", map[string]any{"answer": "not yours to answer"})
	assert.Equal(t, 404, st)
	st, esc := other.call("GET", "/v1/escalations", nil)
	require.Equal(t, 200, st)
	assert.Empty(t, esc["items"])
	st, _ = other.call("GET", "/v1/consultations/"+loop["collaboration_id"].(string), nil)
	assert.Equal(t, 404, st)

	// Bad follow-ups and resolutions are 400 and change nothing.
	st, _ = d.call("POST", "/v1/consultations/"+id+"/exchanges", map[string]any{"message": ""})
	assert.Equal(t, 400, st, "empty message")
	for name, body := range map[string]map[string]any{
		"empty answer":         {"answer": ""},
		"resolved_by too long": {"answer": "id, email", "resolved_by": strings.Repeat("x", 201)},
	} {
		st, _ = d.call("POST", "/v1/escalations/"+escID+"/resolve", body)
		assert.Equal(t, 400, st, name)
	}
	st, mine := d.call("GET", "/v1/escalations", nil)
	require.Equal(t, 200, st)
	require.Len(t, mine["items"], 1)
	still := mine["items"].([]any)[0].(map[string]any)
	assert.Equal(t, escID, still["id"])
	assert.Equal(t, "open", still["status"])
	assert.Empty(t, still["resolution"])
	st, c := d.call("GET", "/v1/consultations/"+id, nil)
	require.Equal(t, 200, st)
	assert.Len(t, c["exchanges"], 1, "no exchange was added")
	st, c = d.call("GET", "/v1/consultations/"+loop["collaboration_id"].(string), nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "escalated", c["status"])
	st, inbox := d.call("GET", "/v1/agents/frontend/inbox", nil)
	require.Equal(t, 200, st, inbox)
	assert.Empty(t, inbox["items"], "no answer was delivered")
}

// On DynamoDB Local: the active counter records which consultations hold
// its slots (a string set beside the count, in the same transactions), so
// an abandoned consultation is found and closed, giving exactly its slot
// back, when its requester next needs one. The service runs in the test
// with its clock moved past the idle limit (a function's clock cannot
// be).
func TestAnIdleConsultationGivesItsSlotBackOnDynamoDB(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	ctx := context.Background()
	svc := consultations.New(e.store, localmodel.New(e.store), &memstore.Publisher{}, nil, nil)
	t0 := time.Now().UTC()
	now := t0
	svc.Now = func() time.Time { return now }
	ask := func(q string) consultations.Consultation {
		t.Helper()
		c, err := svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: q})
		require.NoError(t, err)
		return c
	}
	var held []string
	for _, q := range []string{"What fields does the User model API return?", "Is the JWT auth token secure?", "Which database schema stores sessions?"} {
		c := ask(q)
		require.Equal(t, consultations.InProgress, c.Status)
		held = append(held, c.ID)
	}
	ids, err := e.store.ActiveConsultations(ctx, d.id, "frontend")
	require.NoError(t, err)
	assert.ElementsMatch(t, held, ids)
	full := ask("Which endpoint paginates the orders?")
	require.Equal(t, consultations.Escalated, full.Status)
	assert.ElementsMatch(t, held, full.Loop.Evidence["active_consultations"])

	now = t0.Add(consultations.IdleLimit + time.Minute)
	c := ask("Is the login vulnerable to replay?")
	require.Equal(t, consultations.InProgress, c.Status, "the idle ones gave their slots back")
	for _, id := range held {
		got, err := svc.Get(ctx, d.id, id)
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, got.Status)
		assert.Equal(t, consultations.ClosedIdle, got.ClosedReason)
	}
	ids, err = e.store.ActiveConsultations(ctx, d.id, "frontend")
	require.NoError(t, err)
	assert.Equal(t, []string{c.ID}, ids, "the counter holds only the new one")
	// Exactly three slots came back: two more fit, a third does not.
	for _, q := range []string{"Which API model holds the preferences?", "Which react ui css fits the profile card?"} {
		assert.Equal(t, consultations.InProgress, ask(q).Status, q)
	}
	assert.Equal(t, consultations.Escalated, ask("Which database index serves the orders lookup?").Status)
}
