package grants

import (
	"fmt"
	"sort"
	"strings"
)

// prefixes maps each SDK service package a function may call to the
// service prefix of its IAM actions. An operation of any other service
// fails the analysis: it needs a mapping (and a grant) first.
var prefixes = map[string]string{
	"dynamodb":       "dynamodb",
	"eventbridge":    "events",
	"sfn":            "states",
	"sqs":            "sqs",
	"lambda":         "lambda",
	"bedrockruntime": "bedrock",
	"secretsmanager": "secretsmanager",
}

// credentialChain are the services config.LoadDefaultConfig links for its
// credential providers (web identity and assumed-role profiles through
// STS, IAM Identity Center through SSO and SSO OIDC, console sign-in).
// Their calls are not authorized by the function's role (they authenticate
// with a token or with other credentials), and in Lambda none runs: the
// credentials come from the environment the Lambda service sets.
var credentialChain = map[string]bool{"sts": true, "sso": true, "ssooidc": true, "signin": true}

// sdkInternal are operations the SDK's own code links but, as the
// functions configure their clients, never calls. It is the whole
// allow-list of the analysis: a call listed here is neither a call nor a
// grant.
var sdkInternal = map[string]bool{
	// Endpoint discovery: a DynamoDB client asks for endpoints only when
	// it is turned on (AWS_ENABLE_ENDPOINT_DISCOVERY, or the client's
	// EndpointDiscovery option), which no function does; the default
	// ("auto") discovers only for operations that require it, and no
	// DynamoDB operation does.
	"dynamodb.DescribeEndpoints": true,
}

// renamed are the operations whose IAM action has another name than the
// operation.
var renamed = map[string][]string{
	"lambda.Invoke":                    {"lambda:InvokeFunction"},
	"lambda.InvokeWithResponseStream":  {"lambda:InvokeFunction"},
	"bedrockruntime.Converse":          {"bedrock:InvokeModel"},
	"bedrockruntime.ConverseStream":    {"bedrock:InvokeModelWithResponseStream"},
	"dynamodb.TransactGetItems":        {"dynamodb:GetItem"},
	"sqs.SendMessageBatch":             {"sqs:SendMessage"},
	"sqs.DeleteMessageBatch":           {"sqs:DeleteMessage"},
	"sqs.ChangeMessageVisibilityBatch": {"sqs:ChangeMessageVisibility"},
	// The span export (httpCalls): X-Ray's OTLP endpoint authorizes the
	// signed POST as PutSpans.
	"xray.PutSpans": {"xray:PutSpans"},
}

// httpCalls are the functions of Conclave's own that call an AWS API
// without the SDK, each with the operation it performs: the tracing
// exporter's ExportSpans posts spans to X-Ray's OTLP endpoint, signed with
// the function's role (shared/platform/tracing/otlp). The batch
// span processor calls it (through the otel SDK's SpanExporter
// interface) once the function's tracer provider exists, which lambdafn
// makes for every function; a function whose main never reaches it is
// not granted it.
var httpCalls = map[string]string{
	"(*github.com/conclave-ai/conclave/shared/platform/tracing/otlp.exporter).ExportSpans": "xray.PutSpans",
}

// transactionActions are the actions that authorize each kind of write in
// a TransactWriteItems (there is no action of the transaction itself:
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html).
var transactionActions = map[string]string{
	"Put": "dynamodb:PutItem", "Update": "dynamodb:UpdateItem",
	"Delete": "dynamodb:DeleteItem", "ConditionCheck": "dynamodb:ConditionCheckItem",
}

// iamActions returns the IAM actions operation op ("dynamodb.GetItem")
// needs; txItems are the kinds of transaction write the code builds.
func iamActions(op string, txItems map[string]bool) ([]string, error) {
	svc, name, _ := strings.Cut(op, ".")
	if credentialChain[svc] {
		return nil, nil
	}
	if acts, ok := renamed[op]; ok {
		return acts, nil
	}
	if op == "dynamodb.TransactWriteItems" {
		var out []string
		for kind := range txItems {
			out = append(out, transactionActions[kind])
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: no transaction write found", op)
		}
		sort.Strings(out)
		return out, nil
	}
	prefix, ok := prefixes[svc]
	if !ok {
		return nil, fmt.Errorf("%s: no IAM mapping for the %s client (add it to grants.prefixes)", op, svc)
	}
	return []string{prefix + ":" + name}, nil
}
