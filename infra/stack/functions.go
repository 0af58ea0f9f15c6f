package stack

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// FunctionsProps configure the functions and what they may reach.
type FunctionsProps struct {
	Stage Stage
	// Env gives the memory scale, the feature flags and the models.
	Env EnvConfig
	// AssetDir holds one directory per function with its bootstrap binary.
	AssetDir string
	Table    awsdynamodb.ITable
	Bus      awsevents.IEventBus
	// Queues by manifest name, for the SQS event sources.
	Queues map[string]awssqs.Queue
}

// Functions are the manifest's Lambda functions (arm64, provided.al2023,
// JSON logs in a log group of their own), each granted exactly its
// manifest grants, its SQS trigger and the functions it invokes. Each
// exports its own spans (TRACE_*, tracing.go); Lambda's active tracing is
// off, so X-Ray holds one trace per request, ours.
//
// State machine ARNs are not set here: the machines reference worker
// functions, so StateMachines.GrantExecutions adds them afterwards.
type Functions struct {
	constructs.Construct
	// Functions by manifest name.
	Functions map[string]awslambda.Function
}

// queueTriggerConcurrency caps the concurrent invocations each SQS event
// source mapping makes. Without a cap the pollers scale up until Lambda
// throttles them, and a throttled batch still counts a receive: messages
// nobody processed would reach the dead-letter queue. Five keeps a burst of
// events from taking the concurrency the API needs.
const queueTriggerConcurrency = 5

// NewFunctions creates every function of the manifest.
func NewFunctions(scope constructs.Construct, id string, props *FunctionsProps) *Functions {
	c := constructs.NewConstruct(scope, &id)
	fs := &Functions{Construct: c, Functions: map[string]awslambda.Function{}}
	env := commonEnvironment(props)
	for _, f := range manifest.Functions {
		fn := fs.newFunction(f, props, declared(env, f.Name))
		fs.Functions[f.Name] = fn
		grant(fn, f, props)
		if _, ok := manifest.EmbedderGrants[f.Name]; ok && props.Env.Embedder != "" {
			fn.AddEnvironment(jsii.String(settings.EnvEmbedder), jsii.String(props.Env.Embedder), nil)
		}
		if f.Trigger == manifest.TriggerSQS {
			fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(props.Queues[f.Queue], &awslambdaeventsources.SqsEventSourceProps{
				BatchSize: jsii.Number(float64(f.BatchSize)), ReportBatchItemFailures: jsii.Bool(true),
				MaxConcurrency: jsii.Number(queueTriggerConcurrency),
			}))
		}
	}
	// Synchronous calls between functions: exactly the manifest's.
	for _, f := range manifest.Functions {
		for _, target := range f.Invokes {
			fs.Functions[target].GrantInvoke(fs.Functions[f.Name])
		}
	}
	return fs
}

// commonEnvironment is the part of the settings contract the stage sets
// alike for every function that declares it.
func commonEnvironment(props *FunctionsProps) map[string]*string {
	env := props.Env
	common := map[string]*string{
		settings.EnvStage: jsii.String(env.Name), settings.EnvTable: props.Table.TableName(), settings.EnvBus: props.Bus.EventBusName(),
		settings.EnvFlags: jsii.String(env.Flags.String()), settings.EnvModelProvider: jsii.String(env.ModelProvider),
	}
	if env.SynthesisModel != "" {
		common[settings.EnvSynthesis] = jsii.String(env.SynthesisModel)
	}
	// The tiers' models and the extra ones: what the functions ask and
	// the agents function offers, the models the Bedrock grants name.
	common[settings.EnvModelTiers] = jsii.String(settings.EncodePairs(env.TierModels()))
	if len(env.ExtraModels) > 0 {
		common[settings.EnvExtraModels] = jsii.String(strings.Join(env.ExtraModels, ","))
	}
	// The rates reach every function that counts requests, the ones whose
	// manifest.Env declares them: the authorizer, and the A2A agent on
	// both APIs, whose public routes check keys and rates themselves (told
	// the authorizer's only, they counted nothing in AWS).
	if env.TeamRatePerSecond > 0 {
		common[settings.EnvTeamRateLimit] = jsii.String(strconv.Itoa(env.TeamRatePerSecond))
	}
	if env.UserRatePerSecond > 0 {
		common[settings.EnvUserRateLimit] = jsii.String(strconv.Itoa(env.UserRatePerSecond))
	}
	// The streaming functions name these origins to browsers themselves
	// (lambdafn.Streamer.AllowOrigins): the REST API adds nothing to a
	// streamed answer.
	if len(env.CORSOrigins) > 0 {
		common[settings.EnvCORSOrigins] = jsii.String(strings.Join(env.CORSOrigins, ","))
	}
	// The console signs people in with the stage's identity provider
	// when it names one (-c identity.issuer and identity.clientId).
	if env.Identity.Issuer != "" && env.Identity.ClientID != "" {
		common[settings.EnvConsoleIssuer] = jsii.String(env.Identity.Issuer)
		common[settings.EnvConsoleClientID] = jsii.String(env.Identity.ClientID)
	}
	// Function names are known before the functions exist (they are
	// physical names from the manifest), so passing them adds no dependency.
	fnNames := map[string]string{}
	for _, f := range manifest.Functions {
		fnNames[f.Name] = props.Stage.Names.Function(f.Name)
	}
	common[settings.EnvFunctions] = jsii.String(settings.EncodePairs(fnNames))
	maps.Copy(common, traceEnvironment(env))
	return common
}

// declared is the part of env the function name reads (manifest.Env):
// a function learns only what it declares, and its start checks exactly
// that (settings.Load).
func declared(env map[string]*string, name string) map[string]*string {
	out := map[string]*string{}
	for _, v := range manifest.Env[name] {
		if value, ok := env[v]; ok {
			out[v] = value
		}
	}
	return out
}

// newFunction creates f and its log group.
func (fs *Functions) newFunction(f manifest.Function, props *FunctionsProps, env map[string]*string) awslambda.Function {
	names, id := props.Stage.Names, camel(f.Name)
	logs := awslogs.NewLogGroup(fs.Construct, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		LogGroupName: jsii.String("/aws/lambda/" + names.Function(f.Name)), Retention: props.Stage.LogRetention, RemovalPolicy: props.Stage.Removal,
	})
	memory := float64(f.MemoryMB)
	if props.Env.MemoryScale > 0 {
		memory *= props.Env.MemoryScale
	}
	var reserved *float64
	if n, ok := props.Env.ReservedConcurrency[f.Name]; ok {
		reserved = jsii.Number(float64(n))
	}
	return awslambda.NewFunction(fs.Construct, jsii.String(id+"Function"), &awslambda.FunctionProps{
		ReservedConcurrentExecutions: reserved,
		FunctionName:                 jsii.String(names.Function(f.Name)),
		Description:                  jsii.String(f.Description),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(jsii.String(filepath.Join(props.AssetDir, f.Name)), nil),
		MemorySize:                   jsii.Number(memory),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(float64(f.Timeout))),
		// No TracingConfig (Lambda's PassThrough): Lambda's own segments
		// would be a second, unrelated trace of the same request, and no
		// caller of ours sends a sampled X-Ray header.
		Tracing:       awslambda.Tracing_DISABLED,
		LogGroup:      logs,
		LoggingFormat: awslambda.LoggingFormat_JSON,
		Environment:   &env,
	})
}

// grant gives fn the manifest grants of f that act on the table, the bus,
// the models (calls and streams) and its dead-letter queue, each on
// exactly those resources: one statement per resource, not the CDK's
// Grant* bundles (GrantReadData alone adds Scan, BatchGetItem,
// ConditionCheckItem, DescribeTable and the stream reads, on every index).
// The executions' grants are StateMachines.GrantExecutions', the
// describes of machines and queues grantDescribes'.
func grant(fn awslambda.Function, f manifest.Function, props *FunctionsProps) {
	var table, secrets, models []string
	for _, g := range StageGrants(f, props.Env) {
		switch {
		case g.Service() == "dynamodb":
			table = append(table, string(g))
		case g.Service() == "secretsmanager":
			secrets = append(secrets, string(g))
		case g == manifest.GrantBusPut || g == manifest.GrantDescribeEventBus:
			fn.AddToRolePolicy(statement([]string{string(g)}, props.Bus.EventBusArn()))
		case g == manifest.GrantModels && slices.Contains(manifest.EmbedderGrants[f.Name], g):
			fn.AddToRolePolicy(embedderPolicy())
		case g == manifest.GrantModels || g == manifest.GrantModelsStream:
			models = append(models, string(g))
		case g == manifest.GrantPutSpans:
			fn.AddToRolePolicy(putSpansPolicy())
		case g == manifest.GrantDeadLetter:
			// The dead-letter queue of its trigger queue, and nothing else;
			// QUEUE_URLS tells the consumer its URL.
			dlq := props.Queues[manifest.Queue{Name: f.Queue}.DLQName()]
			fn.AddToRolePolicy(statement([]string{string(g)}, dlq.QueueArn()))
			// (A token in a Go string resolves to an Fn::Join at synth.)
			fn.AddEnvironment(jsii.String(settings.EnvQueues), jsii.String(manifest.Queue{Name: f.Queue}.DLQName()+"="+*dlq.QueueUrl()), nil)
		}
	}
	if len(table) > 0 {
		fn.AddToRolePolicy(statement(table, props.Table.TableArn()))
	}
	if len(models) > 0 {
		fn.AddToRolePolicy(modelsPolicy(models, props.Env.Models()))
	}
	if len(secrets) > 0 {
		fn.AddToRolePolicy(statement(secrets, jsii.String(SecretsArn(props.Stage.Names.Stage)), jsii.String(A2ASecretsArn(props.Stage.Names.Stage))))
	}
	// Queries on an index need the index's ARN: only the ones it queries.
	if len(f.Indexes) > 0 {
		var arns []*string
		for _, ix := range f.Indexes {
			arns = append(arns, jsii.String(*props.Table.TableArn()+"/index/"+ix))
		}
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(string(manifest.GrantQuery)), Resources: &arns,
		}))
	}
}

// StageGrants are the grants of f that env's stage gives it: its
// manifest grants, less those of the Titan embedder
// (manifest.EmbedderGrants) unless the stage's embedder is titan.
func StageGrants(f manifest.Function, env EnvConfig) []manifest.Grant {
	only := manifest.EmbedderGrants[f.Name]
	if env.Embedder == settings.EmbedderTitan || len(only) == 0 {
		return f.Grants
	}
	var out []manifest.Grant
	for _, g := range f.Grants {
		if !slices.Contains(only, g) {
			out = append(out, g)
		}
	}
	return out
}

// SecretsArn is the ARN pattern of the stage's secrets, the MCP packs'
// credentials (manifest.SecretsPrefix): this stage's, in this account and
// region, and no other secret. Secrets Manager ends a secret's ARN with a
// dash and six random characters, hence the trailing wildcard.
func SecretsArn(stage string) string {
	return fmt.Sprintf("arn:%s:secretsmanager:%s:%s:secret:%s*", *awscdk.Aws_PARTITION(), *awscdk.Aws_REGION(), *awscdk.Aws_ACCOUNT_ID(),
		manifest.SecretsPrefix(stage))
}

// A2ASecretsArn is the ARN pattern of the stage's external A2A agents'
// credentials (manifest.A2ASecretsPrefix), as SecretsArn.
func A2ASecretsArn(stage string) string {
	return fmt.Sprintf("arn:%s:secretsmanager:%s:%s:secret:%s*", *awscdk.Aws_PARTITION(), *awscdk.Aws_REGION(), *awscdk.Aws_ACCOUNT_ID(),
		manifest.A2ASecretsPrefix(stage))
}

// embedderPolicy allows Titan's InvokeModel (settings.TitanEmbedModel) in
// the stack's region, and no other model: embeddings are invoked on the
// foundation model itself (no inference profile fronts them).
func embedderPolicy() awsiam.PolicyStatement {
	arn := fmt.Sprintf("arn:%s:bedrock:%s::foundation-model/%s", *awscdk.Aws_PARTITION(), *awscdk.Aws_REGION(), settings.TitanEmbedModel)
	return statement([]string{string(manifest.GrantModels)}, jsii.String(arn))
}

// statement allows actions on resources.
func statement(actions []string, resources ...*string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings(actions...), Resources: &resources})
}

// modelsPolicy allows the model actions (Converse, authorized as
// bedrock:InvokeModel; ConverseStream, as InvokeModelWithResponseStream)
// on exactly the stage's models: each foundation model in any region (a
// cross-region inference profile routes to several) and the inference
// profiles of this account and region that front it, with the partition of
// the stack so the policy holds in aws-cn and aws-us-gov too. One
// statement for both actions: they act on the same models.
func modelsPolicy(actions, models []string) awsiam.PolicyStatement {
	var arns []*string
	for _, id := range models {
		arns = append(arns,
			jsii.String(fmt.Sprintf("arn:%s:bedrock:*::foundation-model/%s", *awscdk.Aws_PARTITION(), id)),
			jsii.String(fmt.Sprintf("arn:%s:bedrock:%s:%s:inference-profile/*.%s", *awscdk.Aws_PARTITION(), *awscdk.Aws_REGION(), *awscdk.Aws_ACCOUNT_ID(), id)))
	}
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings(actions...), Resources: &arns})
}
