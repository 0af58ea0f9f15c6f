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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	conclaveevents "github.com/conclave-ai/conclave/events"
	"github.com/conclave-ai/conclave/infra/e2e/apitest"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	ct "github.com/conclave-ai/conclave/shared/testkit/consultationstest"
	"github.com/conclave-ai/conclave/shared/testkit/fakesecret"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
	"github.com/conclave-ai/conclave/shared/wire/localmodelwiring"
	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// mustConsultTeam is a team of a frontend developer, a backend developer
// (APIs, models, database), a security engineer and a paused devops
// engineer, with distinct skills so the gate's choice is clear.
func mustConsultTeam(t *testing.T, e env) demoTeam {
	t.Helper()
	ctx := context.Background()
	tm, k, err := teams.NewService(e.db.teams).CreateTeam(ctx, "consult")
	require.NoError(t, err)
	svc := agents.NewService(e.db.agents)
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
// request and the consultation is completed; a follow-up is one more
// exchange, completed again; the outcome rates it (once) and closes it to
// follow-ups, and its lesson reaches the next similar consultation's
// context package, which holds no secret.
func TestConsultationsAreAnsweredByTheGatesChoice(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)

	c := d.consult(map[string]any{"requesting_agent": "frontend", "question": "What fields does the User model API endpoint return from the database schema?",
		"suggested_agent": "security", "urgency": "high", "context": map[string]any{"current_task": "Build the profile page", "attempted_approaches": []string{"read the API docs"}}})
	assert.Equal(t, "backend", c["consulted_agent"])
	dec := c["decision"].(map[string]any)
	assert.Equal(t, false, dec["suggestion_taken"])
	assert.Contains(t, dec["reason"], "overridden")
	assert.Equal(t, "completed", c["status"])
	assert.NotEmpty(t, c["completed_at"])
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
	assert.Equal(t, "completed", f["status"])

	st, o := d.call("POST", "/v1/consultations/"+id+"/outcome", map[string]any{"rating": 5, "lessons_learned": "The User model API returns preferences as JSON; parse it on the client"})
	require.Equal(t, 200, st, o)
	assert.Equal(t, "completed", o["status"])
	memID := o["outcome"].(map[string]any)["memory_id"].(string)
	require.NotEmpty(t, memID)
	st, _ = d.call("POST", "/v1/consultations/"+id+"/outcome", map[string]any{"rating": 4})
	assert.Equal(t, 409, st, "one outcome")
	resp := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}.Do("POST", "/v1/consultations/"+id+"/exchanges", map[string]any{"message": "One more thing?"})
	require.Equal(t, 409, resp.Status, "a rated consultation takes no follow-up")
	_, _, reason := resp.ErrorFields(t)
	assert.Equal(t, "NotOpen", reason)

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
// The circular wait needs an answer being written: it is stored as its
// request leaves it (pending, its slot taken), as another function would
// while the specialist thinks.
func TestConsultationLoopsEscalateToAHuman(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)

	// identical: the third near-identical question within the hour.
	q := "What fields does the User model API return?"
	var first []string
	for range 2 {
		c := d.consult(map[string]any{"requesting_agent": "frontend", "question": q})
		require.Equal(t, "completed", c["status"])
		first = append(first, c["collaboration_id"].(string))
	}
	ident := d.consult(map[string]any{"requesting_agent": "frontend", "question": "what FIELDS does the User model API return"})
	assert.Equal(t, "escalated", ident["status"])
	assert.Equal(t, "identical_questions", loopOf(ident)["type"])
	assert.ElementsMatch(t, first, loopOf(ident)["evidence"].(map[string]any)["previous"])
	assert.Empty(t, ident["exchanges"], "nothing was sent to an agent")

	// circular: backend, asked by frontend and still answering, asks
	// frontend. Answered ones are no wait.
	notWaiting := d.consult(map[string]any{"requesting_agent": "backend", "question": "Which react hook loads the ui state?"})
	assert.Equal(t, "frontend", notWaiting["consulted_agent"])
	assert.Equal(t, "completed", notWaiting["status"], "frontend has its answers: no wait")
	answering := mustAnswerBeingWritten(t, e, d.id, "frontend", "backend", "Which database index serves the user lookup?")
	circ := d.consult(map[string]any{"requesting_agent": "backend", "question": "Which react ui css component renders the profile?"})
	assert.Equal(t, "frontend", circ["consulted_agent"])
	assert.Equal(t, "escalated", circ["status"])
	assert.Equal(t, "circular_dependency", loopOf(circ)["type"])
	assert.Equal(t, answering, loopOf(circ)["evidence"].(map[string]any)["open_consultation"])

	// stall: five exchanges without a resolution; the sixth escalates.
	s := d.consult(map[string]any{"requesting_agent": "security", "question": "Which database schema stores the API keys?"})
	sid := s["collaboration_id"].(string)
	for _, msg := range []string{"Is the hash column salted?", "Which index serves lookups by prefix?", "Are revoked keys deleted or flagged?", "Who may read the table?"} {
		st, f := d.call("POST", "/v1/consultations/"+sid+"/exchanges", map[string]any{"message": msg})
		require.Equal(t, 200, st, f)
		require.Equal(t, "completed", f["status"])
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
	assert.Equal(t, 7, made, "two answered, three loops, one answered by frontend, one being written")
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
// requests over HTTP: with two slots held by answers being written, each
// request answered took the third slot while its answer was written and
// gave it back with the answer; the others escalated, naming three
// holders; and when all is done the counter holds exactly the two it
// started with, however the requests interleaved.
func TestAtMostThreeActiveConsultationsPerAgentUnderConcurrency(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	held := []string{
		mustAnswerBeingWritten(t, e, d.id, "frontend", "backend", "Which database index serves the user lookup?"),
		mustAnswerBeingWritten(t, e, d.id, "frontend", "security", "Is the password reset token single use?"),
	}
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
	answered, limited := 0, 0
	for i, r := range results {
		if statuses[i] != 201 {
			// Only a lost transaction race may answer otherwise; nothing
			// was written for it.
			assert.Equal(t, 409, statuses[i], r)
			continue
		}
		switch {
		case r["status"] == "completed":
			answered++
		case loopOf(r)["type"] == "too_many_concurrent":
			limited++
			// The holders as read after the refusal: the third may have
			// been answered meanwhile (the create was then tried again,
			// and lost the slot to another request).
			holders := loopOf(r)["evidence"].(map[string]any)["active_consultations"].([]any)
			assert.LessOrEqual(t, len(holders), 3)
			assert.Subset(t, holders, held)
		default:
			t.Errorf("neither answered nor limited: %v", r)
		}
	}
	t.Logf("completed %d, too_many_concurrent %d, of %d", answered, limited, len(questions))
	assert.Positive(t, answered, "the third slot served someone")
	active, ids := consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 2, active)
	assert.ElementsMatch(t, held, ids)
	for st, n := range map[string]int{"pending": 2, "in_progress": 0} {
		code, list := d.call("GET", "/v1/consultations?status="+st+"&agent=frontend", nil)
		require.Equal(t, 200, code)
		assert.Len(t, list["items"], n, st)
	}
}

// A follow-up reopens a completed consultation and takes a slot while its
// answer is written; refused with 409 ConcurrencyLimit (the limit and the
// holders in its details) when its requester has three answers being
// written, and then nothing changes; once one is answered it goes
// through, and the answer gives the slot back.
func TestAFollowUpAtTheLimitIsRefusedOverHTTP(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	c := d.consult(map[string]any{"requesting_agent": "frontend", "question": "What fields does the User model API return?"})
	require.Equal(t, "completed", c["status"])
	id := c["collaboration_id"].(string)
	var held []string
	for _, q := range []string{"Which database index serves the user lookup?", "Is the password reset token single use?", "Which endpoint lists the orders?"} {
		held = append(held, mustAnswerBeingWritten(t, e, d.id, "frontend", "backend", q))
	}

	me := apitest.Client{Base: os.Getenv("CONCLAVE_BASE_URL"), Key: d.key, T: t}
	resp := me.Do("POST", "/v1/consultations/"+id+"/exchanges", map[string]any{"message": "Is created_at in UTC?"})
	require.Equal(t, 409, resp.Status, string(resp.Body))
	code, _, reason := resp.ErrorFields(t)
	assert.Equal(t, "conflict", code)
	assert.Equal(t, consultations.ReasonActiveLimit, reason)
	details, _ := resp.JSON(t)["error"].(map[string]any)["details"].(map[string]any)
	assert.EqualValues(t, 3, details["limit"], string(resp.Body))
	assert.ElementsMatch(t, held, details["active_consultations"])
	st, got := d.call("GET", "/v1/consultations/"+id, nil)
	require.Equal(t, 200, st)
	assert.Equal(t, "completed", got["status"], "nothing changed")
	assert.Equal(t, c["version"], got["version"])
	assert.Len(t, got["exchanges"], 1)
	active, ids := consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 3, active)
	assert.ElementsMatch(t, held, ids)

	// One answer arrives: the follow-up reopens, is answered and gives the
	// slot back.
	mustAnswer(t, e, d.id, held[0])
	st, f := d.call("POST", "/v1/consultations/"+id+"/exchanges", map[string]any{"message": "Is created_at in UTC?"})
	require.Equal(t, 200, st, f)
	assert.Equal(t, "completed", f["status"])
	assert.Len(t, f["exchanges"], 2)
	active, ids = consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 2, active)
	assert.ElementsMatch(t, held[1:], ids)

	// Rated after completion, once.
	st, o := d.call("POST", "/v1/consultations/"+id+"/outcome", map[string]any{"rating": 4})
	require.Equal(t, 200, st, o)
	assert.Equal(t, "completed", o["status"])
	active, _ = consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 2, active, "rating a completed consultation gives back no slot")
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
	assert.Equal(t, "completed", got["status"])
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

// mustAnswerBeingWritten stores a consultation of from's as its request
// leaves it while the specialist (to) thinks: pending, with from's slot
// taken in the same transaction. It returns its id.
func mustAnswerBeingWritten(t *testing.T, e env, teamID, from, to, question string) string {
	t.Helper()
	now := time.Now().UTC()
	c := consultations.Consultation{TeamID: teamID, ID: ids.New("cons"), Status: consultations.Pending, RequestingAgent: from, ConsultedAgent: to,
		Question: question, Urgency: "normal", SuggestedNextSteps: []string{}, Exchanges: []consultations.Exchange{}, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, e.db.consults.CreateConsultation(context.Background(), c, consultations.MaxActivePerAgent))
	return c.ID
}

// mustAnswer saves the answer of a consultation mustAnswerBeingWritten
// stored, as its request would: completed, its slot given back.
func mustAnswer(t *testing.T, e env, teamID, id string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.db.consults.GetConsultation(ctx, teamID, id)
	require.NoError(t, err)
	now := time.Now().UTC()
	c.Status, c.Response, c.ResolvedBy, c.CompletedAt, c.UpdatedAt = consultations.Completed, &consultations.Answer{Answer: "an index on email"}, "specialist", &now, now
	c.Version++
	require.NoError(t, e.db.consults.SaveConsultation(ctx, consultations.Save{Consultation: c, Release: true}))
}

// consCounter reads agent's active counter as stored: the count the
// creates and reopens are conditioned on, and the ids it records.
func consCounter(t *testing.T, e env, teamID, agent string) (int, []string) {
	t.Helper()
	out, err := e.db.core.DB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.db.core.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "TEAM#" + teamID}, "sk": &types.AttributeValueMemberS{Value: "CONSLOAD#" + agent}}})
	require.NoError(t, err)
	var it struct {
		Active int      `dynamodbav:"active"`
		IDs    []string `dynamodbav:"ids,stringset"`
	}
	require.NoError(t, attributevalue.UnmarshalMap(out.Item, &it))
	if it.IDs == nil {
		it.IDs = []string{}
	}
	return it.Active, it.IDs
}

// On DynamoDB Local, reopens at once at the boundary: with one answer
// being written, two consultations reopened at once are both admitted
// (exactly three active); with two being written, two reopened at once
// admit exactly one, and the fourth is refused (ConcurrencyLimit) and
// left as it was. The counter's condition in each reopen's transaction
// decides; the answers give every slot back.
func TestReopensAtOnceStopAtTheLimitOnDynamoDB(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc := consultations.New(e.db.consults, nil, h, &memstore.Publisher{}, nil, nil)
	var done []consultations.Consultation
	for _, q := range []string{"What fields does the User model API return?", "Is the JWT auth token secure?", "Which database schema stores sessions?", "Which endpoint paginates the orders?"} {
		c, err := svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: q})
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, c.Status, q)
		done = append(done, c)
	}
	active, _ := consCounter(t, e, d.id, "frontend")
	require.Zero(t, active, "answered consultations hold no slot")
	hold := func(q string) <-chan ct.Outcome {
		return ct.Background(func() (consultations.Consultation, error) {
			return svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: ct.Hold + " " + q})
		})
	}
	reopen := func(c consultations.Consultation, msg string) <-chan ct.Outcome {
		return ct.Background(func() (consultations.Consultation, error) {
			return svc.Exchange(ctx, d.id, c.ID, consultations.ExchangeInput{Message: ct.Hold + " " + msg})
		})
	}

	// One being written, two reopened at once: three active.
	first := hold("Is the login vulnerable to replay?")
	h.Held(t, 1)
	a, b := reopen(done[0], "And the avatar URL format?"), reopen(done[1], "Which signing algorithm?")
	h.Held(t, 3)
	active, ids := consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 3, active)
	assert.Subset(t, ids, []string{done[0].ID, done[1].ID})
	assert.Len(t, ids, 3)
	h.LetGo()
	for _, ch := range []<-chan ct.Outcome{first, a, b} {
		o := <-ch
		require.NoError(t, o.Err)
		assert.Equal(t, consultations.Completed, o.Consultation.Status)
	}
	active, ids = consCounter(t, e, d.id, "frontend")
	assert.Zero(t, active)
	assert.Empty(t, ids)

	// Two being written, two reopened at once: one admitted, the fourth
	// refused.
	h = ct.NewSpecialist()
	svc.Model = h
	holds := []<-chan ct.Outcome{hold("Which API model holds the preferences?"), hold("Which react css layout renders the avatar?")}
	h.Held(t, 2)
	a, b = reopen(done[2], "Is created_at in UTC?"), reopen(done[3], "Is the cursor opaque?")
	h.Held(t, 3)
	refused, admitted := ct.First(t, a, b)
	require.Error(t, refused.Err)
	assert.Equal(t, consultations.ReasonActiveLimit, ct.Reason(refused.Err), refused.Err)
	active, ids = consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 3, active)
	assert.Len(t, ids, 3)
	loser := done[2]
	if slices.Contains(ids, loser.ID) {
		loser = done[3]
	}
	assert.NotContains(t, ids, loser.ID)
	got, err := svc.Get(ctx, d.id, loser.ID)
	require.NoError(t, err)
	assert.Equal(t, consultations.Completed, got.Status, "the refused one is left as it was")
	assert.Equal(t, loser.Version, got.Version, "the refused one is written nothing")
	assert.Len(t, got.Exchanges, 1)
	h.LetGo()
	for _, ch := range append(holds, admitted) {
		o := <-ch
		require.NoError(t, o.Err)
		assert.Equal(t, consultations.Completed, o.Consultation.Status)
	}
	active, ids = consCounter(t, e, d.id, "frontend")
	assert.Zero(t, active)
	assert.Empty(t, ids)
}

// On DynamoDB Local, two follow-ups at once on one consultation (both
// read the same version) take one slot: the version condition of the
// reopen's transaction admits one, the other is refused
// (ConsultationChanged). An escalation gives back exactly the slot its
// consultation held: a failed specialist's after a reopen, none after a
// loop caught before it.
func TestFollowUpsAtOnceAndEscalationsKeepTheCounterOnDynamoDB(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	ctx := context.Background()
	h := ct.NewSpecialist()
	svc := consultations.New(e.db.consults, nil, h, &memstore.Publisher{}, nil, nil)
	c, err := svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: "What fields does the User model API return?"})
	require.NoError(t, err)
	require.Equal(t, consultations.Completed, c.Status)

	svc.Store = ct.NewReadGate(e.db.consults, c.ID, 2)
	follow := func(msg string) <-chan ct.Outcome {
		return ct.Background(func() (consultations.Consultation, error) {
			return svc.Exchange(ctx, d.id, c.ID, consultations.ExchangeInput{Message: ct.Hold + " " + msg})
		})
	}
	a, b := follow("Is created_at in UTC?"), follow("Are preferences versioned?")
	h.Held(t, 1)
	refused, admitted := ct.First(t, a, b)
	assert.Equal(t, "ConsultationChanged", ct.Reason(refused.Err), refused.Err)
	active, ids := consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 1, active, "one slot")
	assert.Equal(t, []string{c.ID}, ids)
	h.LetGo()
	o := <-admitted
	require.NoError(t, o.Err)
	assert.Equal(t, consultations.Completed, o.Consultation.Status)
	assert.Len(t, o.Consultation.Exchanges, 2)
	svc.Store = e.db.consults

	// Another answer being written holds a slot throughout.
	h = ct.NewSpecialist()
	svc.Model = h
	other := ct.Background(func() (consultations.Consultation, error) {
		return svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: ct.Hold + " Is the login vulnerable to replay?"})
	})
	h.Held(t, 1)
	failed, err := svc.Exchange(ctx, d.id, c.ID, consultations.ExchangeInput{Message: ct.Fail + " Which index serves the email lookup?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, failed.Status)
	assert.Equal(t, consultations.EscalSpecialistError, failed.Loop.Type)
	active, _ = consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 1, active, "the reopen's slot came back with the escalation")

	stall, err := svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: "Is the JWT auth token secure?"})
	require.NoError(t, err)
	for _, m := range []string{"Which signing algorithm?", "How long do tokens live?", "Is refresh rotation on?", "Where is the key kept?"} {
		stall, err = svc.Exchange(ctx, d.id, stall.ID, consultations.ExchangeInput{Message: m})
		require.NoError(t, err)
		require.Equal(t, consultations.Completed, stall.Status)
	}
	stall, err = svc.Exchange(ctx, d.id, stall.ID, consultations.ExchangeInput{Message: "And the audience claim?"})
	require.NoError(t, err)
	assert.Equal(t, consultations.Escalated, stall.Status)
	assert.Equal(t, consultations.LoopStall, stall.Loop.Type)
	active, ids = consCounter(t, e, d.id, "frontend")
	assert.Equal(t, 1, active, "a loop caught before the reopen gives back no slot")
	assert.Len(t, ids, 1)
	h.LetGo()
	require.NoError(t, (<-other).Err)
	active, _ = consCounter(t, e, d.id, "frontend")
	assert.Zero(t, active)
}

// On DynamoDB Local: the active counter records which consultations hold
// its slots (a string set beside the count, in the same transactions), so
// one whose request was cut off is found and closed, giving exactly its
// slot back, when its requester next needs one. The service runs in the
// test with its clock moved past the idle limit (a function's clock
// cannot be).
func TestACutOffConsultationGivesItsSlotBackOnDynamoDB(t *testing.T) {
	e := mustEnv(t)
	d := mustConsultTeam(t, e)
	ctx := context.Background()
	svc := consultations.New(e.db.consults, nil, localmodelwiring.New(e.db.agents), &memstore.Publisher{}, nil, nil)
	t0 := time.Now().UTC()
	now := t0
	svc.Now = func() time.Time { return now }
	ask := func(q string) consultations.Consultation {
		t.Helper()
		c, err := svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: q})
		require.NoError(t, err)
		return c
	}
	svc.Store = ct.CutOff{Store: e.db.consults}
	for _, q := range []string{"What fields does the User model API return?", "Is the JWT auth token secure?", "Which database schema stores sessions?"} {
		_, err := svc.Request(ctx, d.id, consultations.RequestInput{RequestingAgent: "frontend", Question: q})
		require.Error(t, err, "cut off")
	}
	svc.Store = e.db.consults
	list, _, err := svc.List(ctx, d.id, consultations.Filter{Status: consultations.Pending, Agent: "frontend"}, paging.Page{})
	require.NoError(t, err)
	require.Len(t, list, 3)
	var held []string
	for _, c := range list {
		held = append(held, c.ID)
	}
	ids, err := e.db.consults.ActiveConsultations(ctx, d.id, "frontend")
	require.NoError(t, err)
	assert.ElementsMatch(t, held, ids)
	full := ask("Which endpoint paginates the orders?")
	require.Equal(t, consultations.Escalated, full.Status)
	assert.ElementsMatch(t, held, full.Loop.Evidence["active_consultations"])

	now = t0.Add(consultations.IdleLimit + time.Minute)
	c := ask("Is the login vulnerable to replay?")
	require.Equal(t, consultations.Completed, c.Status, "the idle ones gave their slots back")
	for _, id := range held {
		got, err := svc.Get(ctx, d.id, id)
		require.NoError(t, err)
		assert.Equal(t, consultations.Completed, got.Status)
		assert.Equal(t, consultations.ClosedIdle, got.ClosedReason)
	}
	active, ids := consCounter(t, e, d.id, "frontend")
	assert.Zero(t, active, "exactly their three slots came back, and the answer's")
	assert.Empty(t, ids)
}
