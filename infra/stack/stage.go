package stack

import (
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// Stage is what every construct of one stack shares: the physical names of
// the stage, what happens to its data when the stack is deleted and how
// long its logs are kept.
type Stage struct {
	// Names builds the physical names (conclave-<stage>-…), the same ones
	// the local cloud uses.
	Names manifest.Names
	// Removal applies to the table, the queues and the log groups.
	Removal awscdk.RemovalPolicy
	// LogRetention applies to function and state machine logs.
	LogRetention awslogs.RetentionDays
	// LogPayloads is EnvConfig.LogPayloads.
	LogPayloads bool
}

// MachineLogs are a state machine's log options: everything with its data
// where the stage logs payloads, errors without data elsewhere.
func (s Stage) MachineLogs(dest awslogs.ILogGroup) *awsstepfunctions.LogOptions {
	if s.LogPayloads {
		return &awsstepfunctions.LogOptions{Destination: dest, Level: awsstepfunctions.LogLevel_ALL, IncludeExecutionData: jsii.Bool(true)}
	}
	return &awsstepfunctions.LogOptions{Destination: dest, Level: awsstepfunctions.LogLevel_ERROR, IncludeExecutionData: jsii.Bool(false)}
}

// NewStage derives the shared settings of env's constructs.
func NewStage(env EnvConfig) Stage {
	removal := awscdk.RemovalPolicy_DESTROY
	if env.Retain {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	return Stage{Names: manifest.Names{Stage: env.Name}, Removal: removal, LogRetention: retentionDays(env.LogRetentionDays), LogPayloads: env.LogPayloads}
}

// retentionPeriods are the retention periods CloudWatch Logs accepts
// (PutRetentionPolicy), shortest first, each with the CDK's name for it.
var retentionPeriods = []struct {
	days  int
	value awslogs.RetentionDays
}{
	{1, awslogs.RetentionDays_ONE_DAY}, {3, awslogs.RetentionDays_THREE_DAYS}, {5, awslogs.RetentionDays_FIVE_DAYS},
	{7, awslogs.RetentionDays_ONE_WEEK}, {14, awslogs.RetentionDays_TWO_WEEKS}, {30, awslogs.RetentionDays_ONE_MONTH},
	{60, awslogs.RetentionDays_TWO_MONTHS}, {90, awslogs.RetentionDays_THREE_MONTHS}, {120, awslogs.RetentionDays_FOUR_MONTHS},
	{150, awslogs.RetentionDays_FIVE_MONTHS}, {180, awslogs.RetentionDays_SIX_MONTHS}, {365, awslogs.RetentionDays_ONE_YEAR},
	{400, awslogs.RetentionDays_THIRTEEN_MONTHS}, {545, awslogs.RetentionDays_EIGHTEEN_MONTHS}, {731, awslogs.RetentionDays_TWO_YEARS},
	{1096, awslogs.RetentionDays_THREE_YEARS}, {1827, awslogs.RetentionDays_FIVE_YEARS}, {2192, awslogs.RetentionDays_SIX_YEARS},
	{2557, awslogs.RetentionDays_SEVEN_YEARS}, {2922, awslogs.RetentionDays_EIGHT_YEARS}, {3288, awslogs.RetentionDays_NINE_YEARS},
	{3653, awslogs.RetentionDays_TEN_YEARS},
}

// maxRetentionDays is the longest finite retention CloudWatch Logs offers.
const maxRetentionDays = 3653

// retentionDays rounds days up to the next period CloudWatch Logs offers:
// a team that must keep logs N days gets at least N, never fewer (days
// past ten years, which ConfigFromContext refuses, get ten years).
func retentionDays(days int) awslogs.RetentionDays {
	for _, p := range retentionPeriods {
		if days <= p.days {
			return p.value
		}
	}
	return awslogs.RetentionDays_TEN_YEARS
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

// sortedKeys returns m's keys in order. Every walk over a map that adds to
// the template goes through it (TestStackWalksMapsSorted checks), so two
// synths of one stage are identical.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// joinPairs renders name=value pairs, sorted by name like
// settings.EncodePairs, with CloudFormation's Fn::Join so tokens (ARNs,
// URLs) resolve at deploy time.
func joinPairs(m map[string]*string) *string {
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
