//go:build integration

// Integration tests against the running local cloud (make test starts it;
// by hand: make up, then `set -a; . .local/cloud.env; set +a`). They prove
// every managed-service path works locally with the real handlers.
package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/localstack/cloud"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/activitystore"
	"github.com/conclave-ai/conclave/shared/store/agentstore"
	"github.com/conclave-ai/conclave/shared/store/consultationstore"
	"github.com/conclave-ai/conclave/shared/store/conversationstore"
	"github.com/conclave-ai/conclave/shared/store/decisionstore"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/evaluationstore"
	"github.com/conclave-ai/conclave/shared/store/expertgatestore"
	"github.com/conclave-ai/conclave/shared/store/messagestore"
	"github.com/conclave-ai/conclave/shared/store/resultstore"
	"github.com/conclave-ai/conclave/shared/store/sessionstore"
	"github.com/conclave-ai/conclave/shared/store/taskstore"
	"github.com/conclave-ai/conclave/shared/store/teamstore"
	"github.com/conclave-ai/conclave/shared/team/activity"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/authorizer"
	"github.com/conclave-ai/conclave/shared/team/teams"
)

type env struct {
	cfg   aws.Config
	names manifest.Names
	db    stores
}

// stores are the table's adapters the tests read and write directly, one
// per domain, as the functions build them.
type stores struct {
	core        *dynamo.Store
	teams       *teamstore.Store
	agents      *agentstore.Store
	activity    *activitystore.Store
	tasks       *taskstore.Store
	sessions    *sessionstore.Store
	convs       *conversationstore.Store
	inbox       *messagestore.Store
	consults    *consultationstore.Store
	decisions   *decisionstore.Store
	gate        *expertgatestore.Store
	results     *resultstore.Store
	evaluations *evaluationstore.Store
}

func newStores(db dynamo.API, table string) stores {
	return stores{
		core: dynamo.New(db, table), teams: teamstore.New(db, table), agents: agentstore.New(db, table),
		activity: activitystore.New(db, table), tasks: taskstore.New(db, table), sessions: sessionstore.New(db, table),
		convs: conversationstore.New(db, table), inbox: messagestore.New(db, table), consults: consultationstore.New(db, table),
		decisions: decisionstore.New(db, table), gate: expertgatestore.New(db, table), results: resultstore.New(db, table),
		evaluations: evaluationstore.New(db, table),
	}
}

// mustEnv connects to the running local cloud and runs the test in parallel
// with the package's other parallel tests (go test -parallel; make test sets
// how many at once). That is safe because every test works in a team of its
// own (mustTeam, mustDemoTeam), and it is what keeps the suite's time near
// its longest test rather than the sum: most of a test's time is spent
// waiting on executions, queues and retry delays. A test that acts beyond
// its team calls mustSerialEnv instead.
func mustEnv(t *testing.T) env {
	t.Helper()
	t.Parallel()
	return connect(t)
}

// mustSerialEnv connects to the local cloud for a test that must not run
// beside the others: one that moves the sweeper's clock (it would end
// every team's executions due before then) or counts every invocation of a
// function. Go runs such tests first, one at a time, before the parallel
// ones start.
func mustSerialEnv(t *testing.T) env {
	t.Helper()
	return connect(t)
}

func connect(tb testing.TB) env {
	tb.Helper()
	edge, stage := os.Getenv("CONCLAVE_EDGE_URL"), os.Getenv("CONCLAVE_STAGE")
	if edge == "" || stage == "" {
		tb.Fatal("CONCLAVE_EDGE_URL and CONCLAVE_STAGE are not set: run `make test`, or `make up` and load .local/cloud.env")
	}
	// Static credentials rather than t.Setenv, which a parallel test may not call.
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion("us-east-1"), config.WithBaseEndpoint(edge),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	require.NoError(tb, err)
	names := manifest.Names{Stage: stage}
	return env{cfg: cfg, names: names, db: newStores(dynamodb.NewFromConfig(cfg), names.Table())}
}

// mustTeam creates a fresh team so tests never share state.
func mustTeam(tb testing.TB, e env) string {
	tb.Helper()
	t, k, err := teams.NewService(e.db.teams).CreateTeam(context.Background(), "integration")
	require.NoError(tb, err)
	require.NotEmpty(tb, k.Secret)
	return t.ID
}

func mustAgent(tb testing.TB, e env, teamID, slug string, model *agents.Model) {
	tb.Helper()
	_, err := agents.NewService(e.db.agents).Create(context.Background(), teamID, agents.CreateInput{
		Slug: slug, Name: slug, Model: model,
		Skills: []agents.Skill{{Name: "testing", Description: "answers test tasks", Priority: 50}},
	})
	require.NoError(tb, err)
}

// A conditional write that loses a race comes back as a typed conflict.
func TestConditionalWriteRaceIsTypedConflict(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	svc := agents.NewService(e.db.agents)

	// Many rounds of many writers: one small round proves little (moto's
	// DynamoDB let two racing conditional puts both succeed now and then;
	// the edge no longer serialises anything, so this is DynamoDB Local's
	// atomicity alone, at ten times the rounds the lock was proven with).
	const rounds, n = 100, 24
	for r := range rounds {
		slug := fmt.Sprintf("racer-%d", r)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = svc.Create(ctx, team, agents.CreateInput{Slug: slug, Name: fmt.Sprintf("Racer %d", i)})
			}()
		}
		wg.Wait()
		won, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case apperr.Is(err, apperr.ECONFLICT):
				conflicts++
			default:
				t.Errorf("unexpected error: %v", err)
			}
		}
		require.Equal(t, 1, won, "round %d: exactly one create wins", r)
		require.Equal(t, n-1, conflicts, "round %d: every other create is a typed conflict", r)
	}

	// Optimistic concurrency: two updates from the same version, one wins.
	a, err := svc.Get(ctx, team, "racer-0")
	require.NoError(t, err)
	v := a.Version
	name1, name2 := "First", "Second"
	_, err1 := svc.Update(ctx, team, "racer-0", agents.UpdateInput{Name: &name1, Version: &v})
	_, err2 := svc.Update(ctx, team, "racer-0", agents.UpdateInput{Name: &name2, Version: &v})
	require.NoError(t, err1)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err2))
	got, err := svc.Get(ctx, team, "racer-0")
	require.NoError(t, err)
	assert.Equal(t, "First", got.Name, "the losing update changed nothing")
}

// An event put on the bus reaches a function through a rule, an SQS queue
// and the edge's event source mapping.
func TestBusEventReachesFunctionThroughRuleAndQueue(t *testing.T) {
	e := mustEnv(t)
	ctx := context.Background()
	team := mustTeam(t, e)
	marker := ids.New("probe")
	detail, _ := json.Marshal(map[string]string{"team_id": team, "marker": marker})
	out, err := eventbridge.NewFromConfig(e.cfg).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(e.names.Bus()), Source: aws.String(manifest.EventSource),
		DetailType: aws.String("ProbeSent"), Detail: aws.String(string(detail)),
	}}})
	require.NoError(t, err)
	require.Zero(t, out.FailedEntryCount)
	eventID := aws.ToString(out.Entries[0].EventId)

	entry := waitActivity(t, e, team, func(en activity.Entry) bool { return en.EventID == eventID })
	assert.Equal(t, "ProbeSent", entry.DetailType)
	assert.Contains(t, string(entry.Detail), marker)
}

func waitActivity(t *testing.T, e env, team string, match func(activity.Entry) bool) activity.Entry {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		list, _, err := e.db.activity.List(context.Background(), team, paging.Page{Limit: 100})
		require.NoError(t, err)
		for _, en := range list {
			if match(en) {
				return en
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no matching activity for team %s within 30s", team)
	return activity.Entry{}
}

// waitDeadLetter finds the dead-lettered message of one task; messages of
// other tasks are returned to the queue at once.
func waitDeadLetter(t *testing.T, e env, taskID string) string {
	t.Helper()
	return awaitMessage(t, e, "task-dlq", 60*time.Second, func(body string) bool {
		var probe struct {
			TaskID string `json:"task_id"`
		}
		_ = json.Unmarshal([]byte(body), &probe)
		return probe.TaskID == taskID
	})
}

// awaitMessage polls queue (a manifest queue name, DLQs included) until a
// message matches, deletes it and returns its body; messages that do not
// match go back to the queue at once (visibility 1 s) for other tests.
func awaitMessage(t *testing.T, e env, queue string, within time.Duration, match func(body string) bool) string {
	t.Helper()
	return aws.ToString(awaitSQSMessage(t, e, queue, within, match).Body)
}

// awaitSQSMessage receives (and deletes) the first message of queue whose
// body matches, with its message attributes.
func awaitSQSMessage(t *testing.T, e env, queue string, within time.Duration, match func(body string) bool) sqstypes.Message {
	t.Helper()
	ctx := context.Background()
	c := sqs.NewFromConfig(e.cfg)
	url, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(e.names.Queue(queue))})
	require.NoError(t, err)
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: url.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1, VisibilityTimeout: 1,
			MessageAttributeNames: []string{"All"},
		})
		require.NoError(t, err)
		for _, m := range out.Messages {
			if match(aws.ToString(m.Body)) {
				_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url.QueueUrl, ReceiptHandle: m.ReceiptHandle})
				require.NoError(t, err)
				return m
			}
		}
	}
	t.Fatalf("no matching message reached %s within %s", queue, within)
	return sqstypes.Message{}
}

func detailField(t *testing.T, en activity.Entry, field string) any {
	t.Helper()
	var d map[string]any
	require.NoError(t, json.Unmarshal(en.Detail, &d))
	return d[field]
}

// Every DynamoDB call of the local cloud (handlers, workflow steps, these
// tests) is served by DynamoDB Local and none by moto; moto serves the rest.
func TestDynamoDBLocalServesEveryDynamoDBCall(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e) // at least one DynamoDB call through the edge
	mustAgent(t, e, team, "counted", nil)

	resp, err := http.Get(os.Getenv("CONCLAVE_EDGE_URL") + cloud.BackendsPath)
	require.NoError(t, err)
	defer resp.Body.Close()
	var counts map[string]map[string]int64
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&counts))

	assert.Positive(t, counts[cloud.BackendDynamoDB]["dynamodb"], "DynamoDB Local served the table")
	assert.Equal(t, []string{"dynamodb"}, keys(counts[cloud.BackendDynamoDB]), "DynamoDB Local serves DynamoDB only")
	assert.NotContains(t, counts[cloud.BackendMoto], "dynamodb", "moto received a DynamoDB call")
	assert.Positive(t, counts[cloud.BackendMoto]["sqs"], "moto serves the queues")
}

func keys(m map[string]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The per-team rate limit counts on the real table, atomically: 30
// concurrent requests of one team in one second, 10 allowed, 20 marked.
func TestTeamRateLimitHoldsUnderConcurrency(t *testing.T) {
	e := mustEnv(t)
	svc := teams.NewService(e.db.teams)
	_, key, err := svc.CreateTeam(context.Background(), "rated")
	require.NoError(t, err)
	second := time.Now().Add(time.Hour) // a second no other request uses
	h := &authorizer.Handler{Teams: svc, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Rate: &authorizer.RateLimit{PerSecond: 10, Counter: e.db.core, Now: func() time.Time { return second }}}
	var wg sync.WaitGroup
	var marked atomic.Int32
	for range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := h.Handle(context.Background(), events.APIGatewayV2CustomAuthorizerV2Request{Headers: map[string]string{"x-api-key": key.Secret}})
			assert.NoError(t, err)
			assert.True(t, resp.IsAuthorized)
			if resp.Context[authorizer.ContextRateLimited] == true {
				marked.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, 20, marked.Load())
}
