package stack

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// StreamAPIProps configure the streaming API.
type StreamAPIProps struct {
	Stage Stage
	// Env gives the stage's throttling, the HTTP API's.
	Env EnvConfig
	// Functions by manifest name: the authorizer and every route's.
	Functions map[string]awslambda.Function
	// Routes are the API's routes; nil means the manifest's
	// (manifest.StreamRoutes). Tests pass others, a public one say.
	Routes []manifest.RouteTarget
	// ConsoleOrigin is the origin of the console the HTTP API serves
	// (its endpoint; docs/console.md): the page streams from this API,
	// another origin, so its preflights are answered beside the stage's
	// origins. nil: the stage's origins only.
	ConsoleOrigin *string
}

// StreamAPI is the streaming API: a regional REST API, the only kind whose
// Lambda proxy integrations stream (Server-Sent Events as a function writes
// them, up to 15 minutes; the HTTP API buffers every answer for at most 30
// seconds). One resource path per stream route, one method per route, each
// behind the HTTP API's authorizer function as a REQUEST authorizer
// (X-Api-Key or a bearer token, caching off) unless its function is public; throttled, access
// logged per stage (traced by the functions' own spans).
type StreamAPI struct {
	constructs.Construct
	// RestAPI is the API itself.
	RestAPI awsapigateway.RestApi
	// Stage is its one stage, named after the stack's stage (dev, prod).
	Stage awsapigateway.Stage
	// URL is the stage's invoke URL without a trailing slash, as the HTTP
	// API's endpoint: routes append to it ("<url>/v1/…").
	URL *string
}

// maxStreamTimeoutMs is the longest a streamed integration may run:
// API Gateway ends a stream after 15 minutes (Lambda's own ceiling).
const maxStreamTimeoutMs = 15 * 60 * 1000

// NewStreamAPI creates the API, its authorizer, its routes and its stage.
func NewStreamAPI(scope constructs.Construct, id string, props *StreamAPIProps) *StreamAPI {
	c := constructs.NewConstruct(scope, &id)
	names := props.Stage.Names
	routes := props.Routes
	if routes == nil {
		routes = manifest.StreamRoutes()
	}
	logs := awslogs.NewLogGroup(c, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		LogGroupName: jsii.String("/aws/apigateway/" + names.Prefix() + "-stream"),
		Retention:    props.Stage.LogRetention, RemovalPolicy: props.Stage.Removal,
	})
	api := awsapigateway.NewRestApi(c, jsii.String("StreamApi"), &awsapigateway.RestApiProps{
		RestApiName: jsii.String(names.Prefix() + "-stream"),
		Description: jsii.String("Conclave " + names.Stage + " streaming API: Server-Sent Events from response-streaming Lambda integrations."),
		// Regional: an edge-optimized endpoint ends a stream idle for 30
		// seconds, a regional one after 5 minutes.
		EndpointConfiguration: &awsapigateway.EndpointConfiguration{Types: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL}},
		// A REST API's access log is written with the account's API Gateway
		// CloudWatch role (the HTTP API's with a service-linked role), an
		// account and region setting that a first deploy would otherwise
		// stop at. Every stage's stack sets the same role (AWS's
		// AmazonAPIGatewayPushToCloudWatchLogs); it is kept when a stack is
		// deleted, so the other stages of the account keep logging.
		DefaultCorsPreflightOptions: restAPICORS(StreamOrigins(props.Env, props.ConsoleOrigin)), // preflights without the authorizer (cors.go)
		CloudWatchRole:              jsii.Bool(true),
		CloudWatchRoleRemovalPolicy: awscdk.RemovalPolicy_RETAIN,
		DeployOptions: &awsapigateway.StageOptions{
			StageName: jsii.String(names.Stage),
			// The HTTP API's limits, for every method (method settings */*).
			ThrottlingRateLimit: jsii.Number(float64(props.Env.APIRatePerSecond)), ThrottlingBurstLimit: jsii.Number(float64(props.Env.APIBurst)),
			MetricsEnabled:       jsii.Bool(false),
			AccessLogDestination: awsapigateway.NewLogGroupLogDestination(logs),
			AccessLogFormat:      awsapigateway.AccessLogFormat_Custom(jsii.String(streamAccessLogFormat)),
			// No X-Ray from the gateway: the functions' spans are the
			// trace (the HTTP API has no tracing to turn off).
			TracingEnabled: jsii.Bool(false),
		},
	})
	// The construct's own output of the URL (with a trailing slash) would
	// sit beside StreamUrl, the stack's.
	api.Node().TryRemoveChild(jsii.String("Endpoint"))
	skipChecks(api.DeploymentStage().Node().DefaultChild(), checkSkip{"CKV_AWS_120",
		"API Gateway caches no streamed response (responseTransferMode STREAM); a cache cluster would be billed for nothing."},
		checkSkip{"CKV_AWS_73", "The functions export OpenTelemetry spans to X-Ray themselves; the gateway's own X-Ray trace would be a second, unrelated one."})

	// Caching is off so a revoked key stops working at once, as on the
	// HTTP API. No identity source, as there: either X-Api-Key or a bearer
	// token reaches the authorizer, which denies a request with neither.
	authz := awsapigateway.NewRequestAuthorizer(c, jsii.String("ApiKeyAuthorizer"), &awsapigateway.RequestAuthorizerProps{
		AuthorizerName:  jsii.String(names.Prefix() + "-stream-api-key"),
		Handler:         props.Functions[authorizerFunction],
		IdentitySources: &[]*string{},
		ResultsCacheTtl: awscdk.Duration_Seconds(jsii.Number(0)),
	})
	integrations := map[string]awsapigateway.LambdaIntegration{}
	for _, rt := range routes {
		integ, ok := integrations[rt.Function]
		if !ok {
			integ = streamIntegration(props.Functions[rt.Function])
			integrations[rt.Function] = integ
		}
		opts := &awsapigateway.MethodOptions{Authorizer: authz, AuthorizationType: awsapigateway.AuthorizationType_CUSTOM}
		if rt.Public {
			// The function answers for itself (manifest.Function.Public):
			// no authorizer, the stage's throttling and access log still.
			opts = &awsapigateway.MethodOptions{AuthorizationType: awsapigateway.AuthorizationType_NONE}
		}
		method := api.Root().ResourceForPath(jsii.String(rt.Route.Path)).AddMethod(jsii.String(rt.Route.Method), integ, opts)
		if rt.Public {
			skipChecks(method.Node().DefaultChild(), checkSkip{"CKV_AWS_59",
				"A public function checks the caller itself (manifest.Function.Public), so its errors are its own."})
		}
	}
	// The stage's name as the stage was given it, not a reference to the
	// stage: a function of this API that is told the URL (ShareURL) would
	// otherwise depend on the stage, which depends on the function
	// (stage, deployment, method, integration).
	url := fmt.Sprintf("https://%s.execute-api.%s.%s/%s", *api.RestApiId(), *awscdk.Aws_REGION(), *awscdk.Aws_URL_SUFFIX(), names.Stage)
	return &StreamAPI{Construct: c, RestAPI: api, Stage: api.DeploymentStage(), URL: jsii.String(url)}
}

// StreamOrigins are the origins the streaming API answers: the stage's
// and the console's.
func StreamOrigins(env EnvConfig, console *string) []string {
	origins := slices.Clone(env.CORSOrigins)
	if console != nil {
		origins = append(origins, *console)
	}
	return origins
}

// ShareOrigins tells the functions that name origins themselves (the
// streamed answers: settings.EnvCORSOrigins) the API's origins, the
// console's among them.
func (s *StreamAPI) ShareOrigins(functions map[string]awslambda.Function, origins []string) {
	if len(origins) == 0 {
		return
	}
	for _, f := range manifest.Functions {
		if slices.Contains(manifest.Env[f.Name], settings.EnvCORSOrigins) {
			functions[f.Name].AddEnvironment(jsii.String(settings.EnvCORSOrigins), jsii.String(strings.Join(origins, ",")), nil)
		}
	}
}

// ShareURL tells the functions that declare settings.EnvStreamURL (the A2A
// agent, whose card names its streaming endpoint) the API's URL.
func (s *StreamAPI) ShareURL(functions map[string]awslambda.Function) {
	for _, f := range manifest.Functions {
		if slices.Contains(manifest.Env[f.Name], settings.EnvStreamURL) {
			functions[f.Name].AddEnvironment(jsii.String(settings.EnvStreamURL), s.URL, nil)
		}
	}
}

// streamIntegration is fn's Lambda proxy integration: invoked with
// InvokeWithResponseStream (the 2021-11-15 response-streaming-invocations
// path), its answer streamed as written, for as long as fn may run (its
// timeout, the manifest's). One permission lets this API (any of its
// methods and stages, and no other API) invoke fn.
func streamIntegration(fn awslambda.Function) awsapigateway.LambdaIntegration {
	return awsapigateway.NewLambdaIntegration(fn, &awsapigateway.LambdaIntegrationOptions{
		Proxy:                   jsii.Bool(true),
		ResponseTransferMode:    awsapigateway.ResponseTransferMode_STREAM,
		Timeout:                 awscdk.Duration_Millis(jsii.Number(streamTimeoutMs(*fn.Timeout().ToMilliseconds(nil)))),
		ScopePermissionToMethod: jsii.Bool(false),
	})
}

// streamTimeoutMs is a streamed integration's timeout for a function that
// runs up to ms: the function's whole run, at most 15 minutes.
func streamTimeoutMs(ms float64) float64 {
	return min(ms, maxStreamTimeoutMs)
}

// streamAccessLogFormat has the HTTP API's access log fields
// (accessLogFormat) in a REST API's variables: the route is the resource
// path ("/v1/plans/{id}/events"). No headers, no bodies, no API key.
const streamAccessLogFormat = `{"request_id":"$context.requestId","time":"$context.requestTime","ip":"$context.identity.sourceIp",` +
	`"method":"$context.httpMethod","route":"$context.resourcePath","path":"$context.path","status":"$context.status",` +
	`"protocol":"$context.protocol","response_length":"$context.responseLength","latency_ms":"$context.responseLatency",` +
	`"integration_latency_ms":"$context.integrationLatency","team_id":"$context.authorizer.team_id","key_id":"$context.authorizer.key_id",` +
	`"error":"$context.error.message","authorizer_error":"$context.authorizer.error"}`

// checkSkip is one checkov check that does not apply to one resource, with
// why.
type checkSkip struct{ ID, Comment string }

// skipChecks records on the CloudFormation resource r the checkov checks
// that do not apply to it alone (checkov reads Metadata.checkov.skip);
// checks that apply to no resource of the stack are skipped in
// localstack/checkov.yaml instead.
func skipChecks(r constructs.IConstruct, skips ...checkSkip) {
	var list []map[string]string
	for _, s := range skips {
		list = append(list, map[string]string{"id": s.ID, "comment": s.Comment})
	}
	r.(awscdk.CfnResource).AddMetadata(jsii.String("checkov"), map[string]any{"skip": list})
}

// streamAPIAlarms: the streaming API's share of 5xx answers and its p99
// time to the first byte, over the HTTP API's thresholds, on the stage's
// metrics (ApiName and Stage).
//
// The latency is IntegrationLatency, not Latency: a stream stays open for
// minutes by design, so the time API Gateway takes to answer in full
// measures the stream's length, not its health. What must stay short is
// the wait for the function's first bytes (the status and headers it
// writes before any event).
func (m *Monitoring) streamAPIAlarms(props *MonitoringProps) {
	stage := props.Stream.Stage
	opts := &awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("Sum")}
	rate := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("IF(requests > 0, 100 * errors / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"errors": stage.MetricServerError(opts), "requests": stage.MetricCount(opts)},
		Label:        jsii.String("5xx %"), Period: alarmPeriod,
	})
	prefix := props.Stage.Names.Prefix()
	m.alarm("Stream5xxRateAlarm", prefix+"-stream-5xx-rate", "More than the stage's share of streaming API answers are 5xx.", rate, props.Env.API5xxPercent, 3)
	first := stage.MetricIntegrationLatency(&awscloudwatch.MetricOptions{Period: alarmPeriod, Statistic: jsii.String("p99")})
	m.alarm("StreamLatencyP99Alarm", prefix+"-stream-latency-p99",
		"The streaming API's p99 wait for a function's first bytes (IntegrationLatency) is over the stage's threshold.", first, float64(props.Env.APILatencyP99Ms), 3)
}
