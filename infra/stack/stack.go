// Package stack is Conclave's CDK stack: everything in the function manifest
// (functions, routes, queues, rules, state machines) plus the table and the
// event bus, with least-privilege grants. One stack per environment.
package stack

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/manifest"
	"github.com/conclave-ai/conclave/shared/settings"
	"github.com/conclave-ai/conclave/statemachines"
)

// Props configure the stack.
type Props struct {
	awscdk.StackProps
	Env EnvConfig
	// AssetDir holds one directory per function with its bootstrap binary
	// (make build writes dist/<function>/bootstrap).
	AssetDir string
}

// Stack exposes the constructs tests and outputs need.
type Stack struct {
	awscdk.Stack
	Table         awsdynamodb.Table
	Bus           awsevents.EventBus
	API           awsapigatewayv2.HttpApi
	Functions     map[string]awslambda.Function
	Queues        map[string]awssqs.Queue
	StateMachines map[string]awsstepfunctions.StateMachine
}

// NewConclaveStack builds the stack of one environment.
func NewConclaveStack(scope constructs.Construct, id string, props *Props) *Stack {
	sp := props.StackProps
	st := &Stack{
		Stack:     awscdk.NewStack(scope, &id, &sp),
		Functions: map[string]awslambda.Function{}, Queues: map[string]awssqs.Queue{},
		StateMachines: map[string]awsstepfunctions.StateMachine{},
	}
	// Constructs take the jsii stack as scope, not the Go wrapper.
	s := st.Stack
	env := props.Env
	names := manifest.Names{Stage: env.Name}
	removal := awscdk.RemovalPolicy_DESTROY
	if env.Retain {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	retention := retentionDays(env.LogRetentionDays)

	// The single table.
	t := manifest.MainTable
	st.Table = awsdynamodb.NewTable(s, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:                        jsii.String(names.Table()),
		PartitionKey:                     &awsdynamodb.Attribute{Name: jsii.String(t.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
		SortKey:                          &awsdynamodb.Attribute{Name: jsii.String(t.SortKey), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:                      awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute:              jsii.String(t.TTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		Encryption:                       awsdynamodb.TableEncryption_AWS_MANAGED,
		DeletionProtection:               jsii.Bool(env.Retain),
		RemovalPolicy:                    removal,
	})
	for _, g := range t.GSIs {
		st.Table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(g.Name),
			PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(g.PartitionKey), Type: awsdynamodb.AttributeType_STRING},
			SortKey:        &awsdynamodb.Attribute{Name: jsii.String(g.SortKey), Type: awsdynamodb.AttributeType_STRING},
			ProjectionType: awsdynamodb.ProjectionType_ALL,
		})
	}

	st.Bus = awsevents.NewEventBus(s, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: jsii.String(names.Bus())})

	// Queues, each with its dead-letter queue.
	for _, q := range manifest.Queues {
		id := camel(q.Name)
		if q.DeadLetterOnly {
			st.Queues[q.Name] = awssqs.NewQueue(s, jsii.String(id+"Queue"), &awssqs.QueueProps{
				QueueName: jsii.String(names.Queue(q.Name)), RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
				Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true), RemovalPolicy: removal,
			})
			continue
		}
		dlq := awssqs.NewQueue(s, jsii.String(id+"DeadLetterQueue"), &awssqs.QueueProps{
			QueueName: jsii.String(names.Queue(q.DLQName())), RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
			Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true), RemovalPolicy: removal,
		})
		st.Queues[q.DLQName()] = dlq
		st.Queues[q.Name] = awssqs.NewQueue(s, jsii.String(id+"Queue"), &awssqs.QueueProps{
			QueueName:         jsii.String(names.Queue(q.Name)),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(float64(q.VisibilityTimeout))),
			DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(q.MaxReceiveCount))},
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true), RemovalPolicy: removal,
		})
	}

	// Rules from the bus to queues.
	for _, r := range manifest.Rules {
		pattern := r.Pattern()
		ep := &awsevents.EventPattern{Source: jsii.Strings(pattern["source"]...)}
		if dt, ok := pattern["detail-type"]; ok {
			ep.DetailType = jsii.Strings(dt...)
		}
		rule := awsevents.NewRule(s, jsii.String(camel(r.Name)+"Rule"), &awsevents.RuleProps{
			RuleName: jsii.String(names.Rule(r.Name)), EventBus: st.Bus, EventPattern: ep,
		})
		rule.AddTarget(awseventstargets.NewSqsQueue(st.Queues[r.Queue], &awseventstargets.SqsQueueProps{}))
	}

	// Functions from the manifest. State machine ARNs are added after the
	// machines exist (only to functions that start executions), so the
	// machines can reference worker functions without a cycle.
	common := map[string]*string{
		settings.EnvStage: jsii.String(env.Name), settings.EnvTable: st.Table.TableName(), settings.EnvBus: st.Bus.EventBusName(),
		settings.EnvFlags: jsii.String(env.Flags.String()), settings.EnvModelProvider: jsii.String(env.ModelProvider),
	}
	if env.SynthesisModel != "" {
		common[settings.EnvSynthesis] = jsii.String(env.SynthesisModel)
	}
	// Function names are known before the functions exist (they are
	// physical names from the manifest), so passing them adds no dependency.
	fnNames := map[string]string{}
	for _, f := range manifest.Functions {
		fnNames[f.Name] = names.Function(f.Name)
	}
	common[settings.EnvFunctions] = jsii.String(settings.EncodePairs(fnNames))
	for _, f := range manifest.Functions {
		id := camel(f.Name)
		logs := awslogs.NewLogGroup(s, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
			LogGroupName: jsii.String("/aws/lambda/" + names.Function(f.Name)), Retention: retention, RemovalPolicy: removal,
		})
		memory := float64(f.MemoryMB)
		if env.MemoryScale > 0 {
			memory *= env.MemoryScale
		}
		fn := awslambda.NewFunction(s, jsii.String(id+"Function"), &awslambda.FunctionProps{
			FunctionName:  jsii.String(names.Function(f.Name)),
			Description:   jsii.String(f.Description),
			Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:  awslambda.Architecture_ARM_64(),
			Handler:       jsii.String("bootstrap"),
			Code:          awslambda.Code_FromAsset(jsii.String(filepath.Join(props.AssetDir, f.Name)), nil),
			MemorySize:    jsii.Number(memory),
			Timeout:       awscdk.Duration_Seconds(jsii.Number(float64(f.Timeout))),
			Tracing:       awslambda.Tracing_ACTIVE,
			LogGroup:      logs,
			LoggingFormat: awslambda.LoggingFormat_JSON,
			Environment:   &common,
		})
		st.Functions[f.Name] = fn
		for _, g := range f.Grants {
			switch g {
			case manifest.GrantTableRead:
				st.Table.GrantReadData(fn)
			case manifest.GrantTableWrite:
				st.Table.GrantReadWriteData(fn)
			case manifest.GrantBusPut:
				st.Bus.GrantPutEventsTo(fn, nil)
			case manifest.GrantModels:
				// Foundation models and the cross-region inference profiles
				// that front them; Converse is authorized as InvokeModel.
				fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
					Actions: jsii.Strings("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"),
					Resources: jsii.Strings("arn:aws:bedrock:*::foundation-model/*",
						fmt.Sprintf("arn:aws:bedrock:*:%s:inference-profile/*", *awscdk.Aws_ACCOUNT_ID())),
				}))
			}
		}
		if f.Trigger == manifest.TriggerSQS {
			fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(st.Queues[f.Queue], &awslambdaeventsources.SqsEventSourceProps{
				BatchSize: jsii.Number(float64(f.BatchSize)), ReportBatchItemFailures: jsii.Bool(true),
			}))
		}
	}

	// Synchronous calls between functions: exactly the manifest's.
	for _, f := range manifest.Functions {
		for _, target := range f.Invokes {
			st.Functions[target].GrantInvoke(st.Functions[f.Name])
		}
	}

	// State machines from statemachines/, deployed as they are.
	for _, sm := range manifest.StateMachines {
		raw, err := statemachines.Definition(sm.File)
		if err != nil {
			panic(err)
		}
		id := camel(sm.Name)
		logs := awslogs.NewLogGroup(s, jsii.String(id+"StateMachineLogs"), &awslogs.LogGroupProps{
			LogGroupName: jsii.String("/aws/vendedlogs/states/" + names.StateMachine(sm.Name)), Retention: retention, RemovalPolicy: removal,
		})
		// Substitutions are resolved before the machine is created (jsii
		// copies the map), grants after (they need the machine's role). Both
		// walk the keys sorted: the grants' order is the order of the role's
		// policy statements, and map order would change it on every synth.
		subs := map[string]*string{}
		for _, k := range sortedKeys(sm.Substitutions) {
			ref := sm.Substitutions[k]
			switch {
			case ref == "bus":
				subs[k] = st.Bus.EventBusName()
			case ref == "table":
				subs[k] = st.Table.TableName()
			case strings.HasPrefix(ref, "function:"):
				subs[k] = st.Functions[strings.TrimPrefix(ref, "function:")].FunctionArn()
			case strings.HasPrefix(ref, "queue:"):
				subs[k] = st.Queues[strings.TrimPrefix(ref, "queue:")].QueueUrl()
			}
		}
		machine := awsstepfunctions.NewStateMachine(s, jsii.String(id+"StateMachine"), &awsstepfunctions.StateMachineProps{
			StateMachineName:        jsii.String(names.StateMachine(sm.Name)),
			StateMachineType:        awsstepfunctions.StateMachineType_STANDARD,
			DefinitionBody:          awsstepfunctions.DefinitionBody_FromString(jsii.String(raw)),
			DefinitionSubstitutions: &subs,
			Logs:                    &awsstepfunctions.LogOptions{Destination: logs, Level: awsstepfunctions.LogLevel_ALL, IncludeExecutionData: jsii.Bool(true)},
			TracingEnabled:          jsii.Bool(true),
			Timeout:                 awscdk.Duration_Seconds(jsii.Number(float64(sm.Timeout))),
		})
		for _, k := range sortedKeys(sm.Substitutions) {
			switch ref := sm.Substitutions[k]; {
			case ref == "bus":
				st.Bus.GrantPutEventsTo(machine, nil)
			case ref == "table":
				st.Table.GrantReadWriteData(machine)
			case strings.HasPrefix(ref, "function:"):
				st.Functions[strings.TrimPrefix(ref, "function:")].GrantInvoke(machine)
			case strings.HasPrefix(ref, "queue:"):
				st.Queues[strings.TrimPrefix(ref, "queue:")].GrantSendMessages(machine)
			}
		}
		st.StateMachines[sm.Name] = machine
	}

	// Functions that start or stop executions, and the health function,
	// learn the machines' ARNs. The ARNs are built from the names rather
	// than taken from the machines: the worker both is invoked by the
	// delegation machine and starts executions of it (sub-delegation), and a
	// reference would make a dependency cycle.
	smARNs := map[string]*string{}
	var execARNs []*string
	for _, sm := range manifest.StateMachines {
		smARNs[sm.Name] = s.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("stateMachine"),
			ResourceName: jsii.String(names.StateMachine(sm.Name)), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
		execARNs = append(execARNs, s.FormatArn(&awscdk.ArnComponents{
			Service: jsii.String("states"), Resource: jsii.String("execution"),
			ResourceName: jsii.String(names.StateMachine(sm.Name) + ":*"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME,
		}))
	}
	var smARNList []*string
	for _, sm := range manifest.StateMachines {
		smARNList = append(smARNList, smARNs[sm.Name])
	}
	queueURLs := map[string]*string{}
	for _, name := range sortedKeys(st.Queues) {
		queueURLs[name] = st.Queues[name].QueueUrl()
	}
	for _, f := range manifest.Functions {
		fn := st.Functions[f.Name]
		starts, stops := hasGrant(f, manifest.GrantStartExecution), hasGrant(f, manifest.GrantStopExecution)
		if !starts && !stops && f.Name != "health" {
			continue
		}
		fn.AddEnvironment(jsii.String(settings.EnvStateMachines), joinPairs(st, smARNs), nil)
		if starts {
			fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions: jsii.Strings("states:StartExecution"), Resources: &smARNList,
			}))
		}
		if stops {
			fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions: jsii.Strings("states:StopExecution", "states:DescribeExecution"), Resources: &execARNs,
			}))
		}
	}
	// Scheduled functions: an EventBridge schedule on the default bus.
	for _, f := range manifest.Functions {
		if f.Trigger != manifest.TriggerSchedule {
			continue
		}
		rule := awsevents.NewRule(s, jsii.String(camel(f.Name)+"Schedule"), &awsevents.RuleProps{
			RuleName: jsii.String(names.Rule(f.Name + "-schedule")),
			Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(float64(f.EveryMinutes)))),
		})
		rule.AddTarget(awseventstargets.NewLambdaFunction(st.Functions[f.Name], &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(2),
		}))
	}
	health := st.Functions["health"]
	health.AddEnvironment(jsii.String(settings.EnvQueues), joinPairs(st, queueURLs), nil)
	var smArnList, queueArnList []*string
	// In name order: ranging over the maps would reorder the resource lists
	// (and so the template) on every synth.
	for _, name := range sortedKeys(st.StateMachines) {
		smArnList = append(smArnList, st.StateMachines[name].StateMachineArn())
	}
	for _, name := range sortedKeys(st.Queues) {
		queueArnList = append(queueArnList, st.Queues[name].QueueArn())
	}
	health.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("dynamodb:DescribeTable"), Resources: &[]*string{st.Table.TableArn()},
	}))
	health.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("events:DescribeEventBus"), Resources: &[]*string{st.Bus.EventBusArn()},
	}))
	health.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("states:DescribeStateMachine"), Resources: &smArnList,
	}))
	health.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings("sqs:GetQueueAttributes"), Resources: &queueArnList,
	}))

	// The HTTP API: every route behind the Lambda authorizer (simple
	// responses, X-Api-Key). Caching is off so a revoked key stops working
	// at once.
	authz := awsapigatewayv2authorizers.NewHttpLambdaAuthorizer(jsii.String("ApiKeyAuthorizer"), st.Functions["authorizer"], &awsapigatewayv2authorizers.HttpLambdaAuthorizerProps{
		AuthorizerName:  jsii.String(names.Prefix() + "-api-key"),
		ResponseTypes:   &[]awsapigatewayv2authorizers.HttpLambdaResponseType{awsapigatewayv2authorizers.HttpLambdaResponseType_SIMPLE},
		IdentitySource:  jsii.Strings("$request.header.X-Api-Key"),
		ResultsCacheTtl: awscdk.Duration_Seconds(jsii.Number(0)),
	})
	st.API = awsapigatewayv2.NewHttpApi(s, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		ApiName: jsii.String(names.Prefix() + "-api"), DefaultAuthorizer: authz,
	})
	integrations := map[string]awsapigatewayv2integrations.HttpLambdaIntegration{}
	for _, rt := range manifest.Routes() {
		integ, ok := integrations[rt.Function]
		if !ok {
			integ = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(camel(rt.Function)+"Integration"), st.Functions[rt.Function], nil)
			integrations[rt.Function] = integ
		}
		st.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String(rt.Route.Path), Methods: &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(rt.Route.Method)}, Integration: integ,
		})
	}

	awscdk.NewCfnOutput(s, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: st.API.ApiEndpoint()})
	awscdk.NewCfnOutput(s, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: st.Table.TableName()})
	awscdk.NewCfnOutput(s, jsii.String("EventBusName"), &awscdk.CfnOutputProps{Value: st.Bus.EventBusName()})
	awscdk.NewCfnOutput(s, jsii.String("AdminFunctionName"), &awscdk.CfnOutputProps{Value: st.Functions["admin"].FunctionName()})
	return st
}

func hasGrant(f manifest.Function, g manifest.Grant) bool {
	for _, x := range f.Grants {
		if x == g {
			return true
		}
	}
	return false
}

// joinPairs renders name=value pairs with CloudFormation's Fn::Join so
// tokens resolve at deploy time.
func joinPairs(st *Stack, m map[string]*string) *string {
	var parts []*string
	for i, k := range sortedKeys(m) {
		prefix := k + "="
		if i > 0 {
			prefix = "," + prefix
		}
		parts = append(parts, jsii.String(prefix), m[k])
	}
	return awscdk.Fn_Join(jsii.String(""), &parts)
}

// sortedKeys returns m's keys in order. Every walk over a map that adds to
// the template goes through it, so two synths of one stage are identical.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// camel turns "task-worker" into "TaskWorker" for construct ids.
func camel(s string) string {
	parts := strings.Split(s, "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "")
}

func retentionDays(days int) awslogs.RetentionDays {
	switch {
	case days <= 1:
		return awslogs.RetentionDays_ONE_DAY
	case days <= 7:
		return awslogs.RetentionDays_ONE_WEEK
	case days <= 14:
		return awslogs.RetentionDays_TWO_WEEKS
	case days <= 30:
		return awslogs.RetentionDays_ONE_MONTH
	case days <= 90:
		return awslogs.RetentionDays_THREE_MONTHS
	case days <= 180:
		return awslogs.RetentionDays_SIX_MONTHS
	}
	return awslogs.RetentionDays_ONE_YEAR
}
