package stack

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// The context keys of a stage's tracing (docs/operations.md, "Traces").
// Every function exports its own spans (shared/platform/tracing) straight
// to the region's X-Ray OTLP endpoint, signed with its role: no collector
// layer, no daemon.
const (
	// ContextTraceSamplePercent is TraceSamplePercent, 0 to 100 (-c
	// tracing.samplePercent=25).
	ContextTraceSamplePercent = "tracing.samplePercent"
	// ContextTraceContent is TraceContent, true or false; prod refuses
	// true (noContentStages).
	ContextTraceContent = "tracing.content"
)

// noContentStages never record prompts, completions or tool arguments in
// their spans: in AWS the spans are CloudWatch Logs (the account's
// aws/spans log group), readable by whoever may read traces and kept by
// that group's retention, not by the stage's, so a team's conversations
// would leave the table's access control and its TTLs.
var noContentStages = []string{"prod"}

// xrayOTLPPath is where X-Ray's OTLP endpoint takes traces.
const xrayOTLPPath = "/v1/traces"

// isTracingKey reports whether key is one of the tracing context's.
func isTracingKey(key string) bool { return strings.HasPrefix(key, "tracing.") || key == "tracing" }

// setTracing applies one tracing context key to cfg.
func setTracing(cfg *EnvConfig, key string, v any) error {
	switch key {
	case ContextTraceSamplePercent:
		n := cfg.TraceSamplePercent
		if err := setCount(&n, key, v, 0); err != nil || n > 100 {
			return fmt.Errorf("-c %s must be a whole number from 0 to 100 (the percentage of new traces recorded), got %v", key, v)
		}
		cfg.TraceSamplePercent = n
	case ContextTraceContent:
		b, ok := v.(bool)
		if s, isString := v.(string); isString && (strings.TrimSpace(s) == "true" || strings.TrimSpace(s) == "false") {
			b, ok = strings.TrimSpace(s) == "true", true
		}
		if !ok {
			return fmt.Errorf("-c %s must be true or false, got %v", key, v)
		}
		for _, stage := range noContentStages {
			if b && cfg.Name == stage {
				return fmt.Errorf("-c %s=true is refused for %s: spans would carry prompts, completions and tool arguments into the account's aws/spans log group, "+
					"outside the table's access control and retention; record content in dev or staging", key, stage)
			}
		}
		cfg.TraceContent = b
	default:
		return fmt.Errorf("-c %s: unknown key (want %s or %s)", key, ContextTraceSamplePercent, ContextTraceContent)
	}
	return nil
}

// TraceEndpoint is the stack's region's X-Ray OTLP traces URL (a token
// until deploy): TRACE_ENDPOINT of every function.
func TraceEndpoint() string {
	return "https://xray." + *awscdk.Aws_REGION() + ".amazonaws.com" + xrayOTLPPath
}

// traceEnvironment is the stage's tracing settings, as every function
// reads them (manifest.Tracing).
func traceEnvironment(env EnvConfig) map[string]*string {
	out := map[string]*string{
		settings.EnvTraceSamplePercent: jsii.String(strconv.Itoa(env.TraceSamplePercent)),
		settings.EnvTraceContent:       jsii.String(strconv.FormatBool(env.TraceContent)),
	}
	// LocalStack's X-Ray has no OTLP endpoint, and AWS's is not the
	// container's to reach: there the spans go nowhere (answers still
	// carry X-Trace-Id), rather than each flush waiting on an export that
	// cannot succeed.
	if env.Name != localStackStage {
		out[settings.EnvTraceEndpoint] = jsii.String(TraceEndpoint())
	}
	return out
}

// localStackStage is the stage make localstack-deploy deploys.
const localStackStage = "localstack"

// putSpansPolicy allows manifest.GrantPutSpans on every resource: X-Ray
// has no resource-level permissions for its span upload.
func putSpansPolicy() awsiam.PolicyStatement {
	return statement([]string{string(manifest.GrantPutSpans)}, jsii.String("*"))
}

// tracesWidget is the dashboard's way to the stage's traces: the
// CloudWatch console's X-Ray traces page of the stack's region, where an
// answer's X-Trace-Id (W3C form) finds its trace.
func tracesWidget(stage string) awscloudwatch.IWidget {
	console := "https://console.aws.amazon.com/cloudwatch/home?region=" + *awscdk.Aws_REGION()
	md := "### Traces\n" +
		"Every function exports its spans to X-Ray's OTLP endpoint (one trace per turn; `service.name` is the function's name). " +
		"[X-Ray traces](" + console + "#xray:traces/query): paste an answer's `X-Trace-Id` into the query, or filter `service(\"expert-gate\")`. " +
		"The spans themselves, with their `gen_ai.*` attributes: Application Signals, Transaction Search, in the same console. " +
		"Stage " + stage + "; sampling and the once-per-account setup: docs/operations.md, \"Traces\"."
	return awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Markdown: jsii.String(md), Width: jsii.Number(24), Height: jsii.Number(3)})
}
