// Package cloud is the Docker-less local cloud (architecture decision 2): it
// provisions Conclave's resources from the manifest and the embedded state
// machines — the table on DynamoDB Local, queues, bus and state machines on
// moto — and serves the edge in front of both: the HTTP API, the Lambda
// Invoke API and the SQS event source mappings, running the real Go handlers
// in-process, and every other AWS call forwarded to the process that serves
// its service.
package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/conclave-ai/conclave/shared/platform/lambdafn"
	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/statemachines"
)

// Account and Region of the local cloud (moto's defaults; DynamoDB Local
// runs with -sharedDb, so it answers for any account and region).
const (
	Account = "123456789012"
	Region  = "us-east-1"
)

// Resources are the provisioned names, URLs and ARNs.
type Resources struct {
	Names         manifest.Names
	QueueURLs     map[string]string // manifest queue name (and name-dlq) → URL
	QueueARNs     map[string]string
	StateMachines map[string]string // manifest name → ARN
	// StreamURL is the streaming API's base URL (the edge's streaming
	// port), STREAM_URL of the functions that declare it; empty: none.
	StreamURL string
	// TraceEndpoint is where the functions send their spans (the edge's
	// OTLP receiver, traces.go), TRACE_ENDPOINT; empty: nowhere.
	TraceEndpoint string
	// ConsoleIssuer is the issuer the console signs people in with (the
	// local demo issuer, oidc.go), CONSOLE_OIDC_ISSUER, its client id
	// OIDCAudience (the audience the demo team registers); empty: keys
	// only.
	ConsoleIssuer string
}

// LocalFlags are the feature flags of make run and the tests: everything
// on, as in dev, but router_model: the demo's routing is the gate's alone
// (deterministic and explained by its scores), and the router model's
// tests turn it on for the service they build
// (routermodel_integration_test.go). FEATURE_FLAGS overrides them (e.g.
// to try prod's, or router_model=true).
const LocalFlags = "collaboration=true,expert_gate=true,ensemble=true,router_model=false,sessions=true,task_delegation=true"

// LocalModelProvider is the functions' MODEL_PROVIDER on the local cloud
// unless the environment sets one: Bedrock, answered by the edge.
const LocalModelProvider = "bedrock"

// LocalExtraModels are the local stage's EXTRA_MODELS: Claude 3 Haiku, the
// priced model the budget tests give agents (a price of its own, none of
// the tiers'), so the agents function offers every model the tests and
// make run name (GET /v1/models).
const LocalExtraModels = "anthropic.claude-3-haiku-20240307-v1:0"

// Environment is the environment the local cloud gives its functions:
// every variable its resources or the developer's environment give a
// value. Models are reached through the Bedrock adapter, answered by the
// edge with the deterministic local model, unless MODEL_PROVIDER says
// otherwise. Each function reads from it what it declares
// (FunctionConfig).
func (r Resources) Environment() map[string]string {
	fns := map[string]string{}
	for _, f := range manifest.Functions {
		fns[f.Name] = r.Names.Function(f.Name)
	}
	env := map[string]string{
		settings.EnvStage: r.Names.Stage, settings.EnvTable: r.Names.Table(), settings.EnvBus: r.Names.Bus(),
		settings.EnvStateMachines: settings.EncodePairs(r.StateMachines), settings.EnvQueues: settings.EncodePairs(r.QueueURLs),
		settings.EnvFunctions: settings.EncodePairs(fns),
		settings.EnvFlags:     LocalFlags,
		// The functions run the production model path: the Bedrock
		// adapter, whose Converse calls the edge answers (bedrock.go).
		// MODEL_PROVIDER overrides it (local: the deterministic model
		// called in process).
		settings.EnvModelProvider: LocalModelProvider,
		// The models agents may name besides the tiers' (the routing
		// defaults here): LocalExtraModels.
		settings.EnvExtraModels: LocalExtraModels,
		// A team's requests per second. The suites share the demo team
		// and a warm machine runs their bursts at several hundred
		// requests a second (200 made them flaky), so locally the limit
		// only stops a runaway client; TEAM_RATE_LIMIT overrides it, and
		// the limit's own test uses a team and a limit of its own.
		settings.EnvTeamRateLimit: "2000",
		// MCP packs reach loopback servers only (toolpacks.NetPolicy):
		// the tests start theirs on 127.0.0.1, and nothing a test
		// registers reaches outside the machine.
		settings.EnvMCPLoopbackOnly: "true",
	}
	if r.StreamURL != "" {
		env[settings.EnvStreamURL] = r.StreamURL
	}
	if r.ConsoleIssuer != "" {
		env[settings.EnvConsoleIssuer], env[settings.EnvConsoleClientID] = r.ConsoleIssuer, OIDCAudience
	}
	if r.TraceEndpoint != "" {
		// Every trace is kept locally (a test reads any turn's), without
		// prompt text unless TRACE_CONTENT=true, as deployed.
		env[settings.EnvTraceEndpoint] = r.TraceEndpoint
		env[settings.EnvTraceSamplePercent] = "100"
	}
	// The streaming functions echo the origins the edge answers, as a
	// stage's do (the edge's own CORS sets the same headers on top).
	if origins := LocalCORS().Origins; len(origins) > 0 {
		env[settings.EnvCORSOrigins] = strings.Join(origins, ",")
	}
	// What the developer's environment overrides, checked as in AWS (a
	// TEAM_RATE_LIMIT=abc stops the local cloud's start, naming it;
	// USER_RATE_LIMIT tries a person's rate, otherwise a fifth of 2,000);
	// MODEL_PROVIDER=openai and the OPENAI_ variables run make run on a
	// local OpenAI-compatible server (docs/local-cloud.md).
	for _, name := range []string{settings.EnvFlags, settings.EnvModelProvider, settings.EnvTeamRateLimit, settings.EnvUserRateLimit,
		settings.EnvOpenAIBaseURL, settings.EnvOpenAIAPIKey, settings.EnvOpenAIModel, settings.EnvTraceContent, settings.EnvTraceSamplePercent} {
		if v := os.Getenv(name); v != "" {
			env[name] = v
		}
	}
	return env
}

// FunctionConfig is the configuration of the function name on the local
// cloud, loaded from Environment as its cold start in AWS loads its own
// (lambdafn.LoadConfig): only the variables it declares, strictly.
func (r Resources) FunctionConfig(name string) (settings.Config, error) {
	env := r.Environment()
	return lambdafn.LoadConfig(name, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
}

// FunctionARN is the ARN a function would have in AWS.
func (r Resources) FunctionARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", Region, Account, r.Names.Function(name))
}

// Backends are the AWS configurations of the processes behind the edge:
// DynamoDB Local for the table, moto for everything else.
type Backends struct {
	DynamoDB aws.Config
	Moto     aws.Config
}

// Provision creates every resource; it is idempotent (existing resources are
// kept, state machine definitions are updated).
func Provision(ctx context.Context, b Backends, names manifest.Names) (Resources, error) {
	cfg := b.Moto
	res := Resources{Names: names, QueueURLs: map[string]string{}, QueueARNs: map[string]string{}, StateMachines: map[string]string{}}
	if err := provisionTable(ctx, dynamodb.NewFromConfig(b.DynamoDB), names); err != nil {
		return res, fmt.Errorf("table: %w", err)
	}
	if err := provisionQueues(ctx, sqs.NewFromConfig(cfg), names, &res); err != nil {
		return res, fmt.Errorf("queues: %w", err)
	}
	if err := provisionBus(ctx, eventbridge.NewFromConfig(cfg), names, &res); err != nil {
		return res, fmt.Errorf("bus: %w", err)
	}
	if err := provisionStateMachines(ctx, sfn.NewFromConfig(cfg), &res); err != nil {
		return res, fmt.Errorf("state machines: %w", err)
	}
	return res, nil
}

func provisionTable(ctx context.Context, db *dynamodb.Client, names manifest.Names) error {
	t := manifest.MainTable
	attrs := []ddbtypes.AttributeDefinition{
		{AttributeName: aws.String(t.PartitionKey), AttributeType: ddbtypes.ScalarAttributeTypeS},
		{AttributeName: aws.String(t.SortKey), AttributeType: ddbtypes.ScalarAttributeTypeS},
	}
	var gsis []ddbtypes.GlobalSecondaryIndex
	for _, g := range t.GSIs {
		attrs = append(attrs,
			ddbtypes.AttributeDefinition{AttributeName: aws.String(g.PartitionKey), AttributeType: ddbtypes.ScalarAttributeTypeS},
			ddbtypes.AttributeDefinition{AttributeName: aws.String(g.SortKey), AttributeType: ddbtypes.ScalarAttributeTypeS})
		gsis = append(gsis, ddbtypes.GlobalSecondaryIndex{
			IndexName: aws.String(g.Name),
			KeySchema: []ddbtypes.KeySchemaElement{
				{AttributeName: aws.String(g.PartitionKey), KeyType: ddbtypes.KeyTypeHash},
				{AttributeName: aws.String(g.SortKey), KeyType: ddbtypes.KeyTypeRange},
			},
			Projection: &ddbtypes.Projection{ProjectionType: ddbtypes.ProjectionTypeAll},
		})
	}
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(names.Table()),
		AttributeDefinitions: attrs,
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String(t.PartitionKey), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String(t.SortKey), KeyType: ddbtypes.KeyTypeRange},
		},
		GlobalSecondaryIndexes: gsis,
		BillingMode:            ddbtypes.BillingModePayPerRequest,
	})
	var inUse *ddbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return err
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(names.Table()),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true)},
	})
	if err != nil && errors.As(err, new(*ddbtypes.ResourceInUseException)) {
		return nil
	}
	return err
}

func createQueue(ctx context.Context, c *sqs.Client, name string, attrs map[string]string, res *Resources, key string) error {
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	a, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return err
	}
	res.QueueURLs[key] = aws.ToString(out.QueueUrl)
	res.QueueARNs[key] = a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	return nil
}

func provisionQueues(ctx context.Context, c *sqs.Client, names manifest.Names, res *Resources) error {
	for _, q := range manifest.Queues {
		if q.DeadLetterOnly {
			if err := createQueue(ctx, c, names.Queue(q.Name), map[string]string{"MessageRetentionPeriod": "1209600"}, res, q.Name); err != nil {
				return err
			}
			continue
		}
		if err := createQueue(ctx, c, names.Queue(q.DLQName()), map[string]string{"MessageRetentionPeriod": "1209600"}, res, q.DLQName()); err != nil {
			return err
		}
		redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": res.QueueARNs[q.DLQName()], "maxReceiveCount": strconv.Itoa(q.MaxReceiveCount)})
		attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(q.VisibilityTimeout), "RedrivePolicy": string(redrive), "MessageRetentionPeriod": "1209600"}
		if err := createQueue(ctx, c, names.Queue(q.Name), attrs, res, q.Name); err != nil {
			return err
		}
	}
	return nil
}

// EventPattern is the JSON pattern of a rule (the CDK app uses the same
// manifest.Rule.Pattern).
func EventPattern(r manifest.Rule) string {
	b, _ := json.Marshal(r.Pattern())
	return string(b)
}

func provisionBus(ctx context.Context, c *eventbridge.Client, names manifest.Names, res *Resources) error {
	_, err := c.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(names.Bus())})
	if err != nil && !errors.As(err, new(*ebtypes.ResourceAlreadyExistsException)) {
		return err
	}
	for _, r := range manifest.Rules {
		if _, err := c.PutRule(ctx, &eventbridge.PutRuleInput{
			Name: aws.String(names.Rule(r.Name)), EventBusName: aws.String(names.Bus()),
			EventPattern: aws.String(EventPattern(r)), State: ebtypes.RuleStateEnabled,
		}); err != nil {
			return err
		}
		if _, err := c.PutTargets(ctx, &eventbridge.PutTargetsInput{
			Rule: aws.String(names.Rule(r.Name)), EventBusName: aws.String(names.Bus()),
			Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(res.QueueARNs[r.Queue])}},
		}); err != nil {
			return err
		}
	}
	return nil
}

// Substitutions resolves a state machine's substitutions against res.
func (r Resources) Substitutions(sm manifest.StateMachine) map[string]string {
	out := map[string]string{}
	for _, k := range sm.SortedSubstitutions() {
		ref, _ := manifest.ParseRef(sm.Substitutions[k]) // manifest.Validate checks them
		switch ref.Kind {
		case manifest.RefBus:
			out[k] = r.Names.Bus()
		case manifest.RefTable:
			out[k] = r.Names.Table()
		case manifest.RefFunction:
			out[k] = r.FunctionARN(ref.Name)
		case manifest.RefQueue:
			out[k] = r.QueueURLs[ref.Name]
		}
	}
	return out
}

func provisionStateMachines(ctx context.Context, c *sfn.Client, res *Resources) error {
	existing := map[string]string{}
	p := sfn.NewListStateMachinesPaginator(c, &sfn.ListStateMachinesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, sm := range page.StateMachines {
			existing[aws.ToString(sm.Name)] = aws.ToString(sm.StateMachineArn)
		}
	}
	role := fmt.Sprintf("arn:aws:iam::%s:role/%s-states", Account, res.Names.Prefix())
	for _, sm := range manifest.StateMachines {
		raw, err := statemachines.Definition(sm.File)
		if err != nil {
			return err
		}
		def := statemachines.Substitute(raw, res.Substitutions(sm))
		name := res.Names.StateMachine(sm.Name)
		if arn, ok := existing[name]; ok {
			if _, err := c.UpdateStateMachine(ctx, &sfn.UpdateStateMachineInput{StateMachineArn: aws.String(arn), Definition: aws.String(def)}); err != nil {
				return err
			}
			res.StateMachines[sm.Name] = arn
			continue
		}
		out, err := c.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{
			Name: aws.String(name), Definition: aws.String(def), RoleArn: aws.String(role), Type: sfntypes.StateMachineTypeStandard,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res.StateMachines[sm.Name] = aws.ToString(out.StateMachineArn)
	}
	return nil
}
