package stack

import (
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/manifest"
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

// retentionDays rounds days up to the next period CloudWatch Logs offers.
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
