package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// SchedulesProps configure the schedules.
type SchedulesProps struct {
	Stage Stage
	// Functions by manifest name; the scheduled ones are looked up here.
	Functions map[string]awslambda.Function
	// DeadLetter receives the schedule events whose invocation failed
	// after the retries.
	DeadLetter awssqs.IQueue
}

// Schedules invoke the manifest's scheduled functions from EventBridge
// rules on the default bus, retried twice, then dead-lettered.
type Schedules struct {
	constructs.Construct
	// Rules by function name.
	Rules map[string]awsevents.Rule
}

// NewSchedules creates a rate rule for every scheduled function.
func NewSchedules(scope constructs.Construct, id string, props *SchedulesProps) *Schedules {
	c := constructs.NewConstruct(scope, &id)
	s := &Schedules{Construct: c, Rules: map[string]awsevents.Rule{}}
	for _, f := range manifest.Functions {
		if f.Trigger != manifest.TriggerSchedule {
			continue
		}
		rule := awsevents.NewRule(c, jsii.String(camel(f.Name)+"Schedule"), &awsevents.RuleProps{
			RuleName: jsii.String(props.Stage.Names.Rule(f.Name + "-schedule")),
			Schedule: awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(float64(f.EveryMinutes)))),
		})
		rule.AddTarget(&functionTarget{fn: props.Functions[f.Name], retried: retried{rule: rule, dlq: props.DeadLetter, retries: 2}})
		s.Rules[f.Name] = rule
	}
	return s
}
