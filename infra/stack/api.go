package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// authorizerFunction is the manifest function behind the Lambda authorizer.
const authorizerFunction = "authorizer"

// APIProps configure the HTTP API.
type APIProps struct {
	Stage Stage
	// Env gives the stage's throttling.
	Env EnvConfig
	// Functions by manifest name: the authorizer and every route's.
	Functions map[string]awslambda.Function
}

// API is the HTTP API: one route per manifest route, each behind the Lambda
// authorizer (simple responses, X-Api-Key or a bearer token), one
// integration per function.
type API struct {
	constructs.Construct
	// HTTPAPI is the API itself, for its endpoint.
	HTTPAPI awsapigatewayv2.HttpApi
}

// NewAPI creates the API, its authorizer and its routes.
func NewAPI(scope constructs.Construct, id string, props *APIProps) *API {
	c := constructs.NewConstruct(scope, &id)
	names := props.Stage.Names
	// Caching is off so a revoked key stops working at once. No identity
	// source: either X-Api-Key or Authorization carries the credential,
	// and an identity source would require each (the authorizer runs on
	// every request and denies one with neither; docs/api.md).
	authz := awsapigatewayv2authorizers.NewHttpLambdaAuthorizer(jsii.String("ApiKeyAuthorizer"), props.Functions[authorizerFunction], &awsapigatewayv2authorizers.HttpLambdaAuthorizerProps{
		AuthorizerName:  jsii.String(names.Prefix() + "-api-key"),
		ResponseTypes:   &[]awsapigatewayv2authorizers.HttpLambdaResponseType{awsapigatewayv2authorizers.HttpLambdaResponseType_SIMPLE},
		IdentitySource:  jsii.Strings(),
		ResultsCacheTtl: awscdk.Duration_Seconds(jsii.Number(0)),
	})
	api := awsapigatewayv2.NewHttpApi(c, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		ApiName: jsii.String(names.Prefix() + "-api"), DefaultAuthorizer: authz,
		// The gateway answers preflights itself, before the authorizer.
		CorsPreflight: httpAPICORS(props.Env.CORSOrigins),
	})
	integrations := map[string]awsapigatewayv2integrations.HttpLambdaIntegration{}
	for _, rt := range manifest.Routes() {
		integ, ok := integrations[rt.Function]
		if !ok {
			// One permission per function for this API (any of its
			// routes; only the function's own routes integrate with it),
			// not one per route: 93 routes made 93 permissions, a fifth of
			// CloudFormation's 500 resources a stack.
			integ = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(camel(rt.Function)+"Integration"), props.Functions[rt.Function],
				&awsapigatewayv2integrations.HttpLambdaIntegrationProps{ScopePermissionToRoute: jsii.Bool(false)})
			integrations[rt.Function] = integ
		}
		opts := &awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String(rt.Route.Path), Methods: &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(rt.Route.Method)}, Integration: integ,
		}
		if rt.Public {
			// The function answers for itself (manifest.Function.Public):
			// no authorizer, the stage's throttling and access log still.
			opts.Authorizer = awsapigatewayv2.NewHttpNoneAuthorizer()
		}
		api.AddRoutes(opts)
	}
	configureStage(c, api, props)
	return &API{Construct: c, HTTPAPI: api}
}

// accessLogFormat is one JSON line per request: who (team, key), what
// (route, status, sizes) and how long, keyed by the request id every
// function logs too. No headers, no bodies, no API key.
const accessLogFormat = `{"request_id":"$context.requestId","time":"$context.requestTime","ip":"$context.identity.sourceIp",` +
	`"method":"$context.httpMethod","route":"$context.routeKey","path":"$context.path","status":"$context.status",` +
	`"protocol":"$context.protocol","response_length":"$context.responseLength","latency_ms":"$context.responseLatency",` +
	`"integration_latency_ms":"$context.integrationLatency","team_id":"$context.authorizer.team_id","key_id":"$context.authorizer.key_id",` +
	`"error":"$context.error.message","authorizer_error":"$context.authorizer.error"}`

// configureStage sets the default stage's throttling (every route, per
// stage) and its JSON access log, through the stage's CloudFormation
// resource: the HTTP API construct creates the stage and has no property
// for either.
func configureStage(c constructs.Construct, api awsapigatewayv2.HttpApi, props *APIProps) {
	logs := awslogs.NewLogGroup(c, jsii.String("AccessLogs"), &awslogs.LogGroupProps{
		LogGroupName: jsii.String("/aws/apigateway/" + props.Stage.Names.Prefix() + "-api"),
		Retention:    props.Stage.LogRetention, RemovalPolicy: props.Stage.Removal,
	})
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingRateLimit: jsii.Number(float64(props.Env.APIRatePerSecond)), ThrottlingBurstLimit: jsii.Number(float64(props.Env.APIBurst)),
		DetailedMetricsEnabled: jsii.Bool(false),
	})
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(), Format: jsii.String(accessLogFormat),
	})
}
