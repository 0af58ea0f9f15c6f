package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawsevents"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The rule targets and the alarm action the stack uses, written here with
// what awseventstargets.SqsQueue, awseventstargets.LambdaFunction and
// awscloudwatchactions.SnsAction do (CDK v2.260: the same target
// properties, permissions and policy statements: the synthesized templates
// are byte for byte what those gave). Those two packages link the bindings
// of ECS, RDS, AppSync, CodeBuild, CodePipeline and forty more services the
// stack never deploys: a fifth of the CDK bindings' source, 35 s of CPU on
// every cold build (docs/testing.md).

// eventsPrincipal is EventBridge, allowed only for the rule's own events
// when conditions is set.
func eventsPrincipal(ruleArn *string) awsiam.IPrincipal {
	var opts *awsiam.ServicePrincipalOpts
	if ruleArn != nil {
		opts = &awsiam.ServicePrincipalOpts{Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": ruleArn}}}
	}
	return awsiam.NewServicePrincipal(jsii.String("events.amazonaws.com"), opts)
}

// retried is a target's retry policy and dead-letter queue: events
// EventBridge could not deliver within retries and maxAge go to dlq, whose
// policy lets this rule (and no other) send them.
type retried struct {
	rule    awsevents.Rule
	dlq     awssqs.IQueue
	retries float64
	maxAge  awscdk.Duration // nil: EventBridge's default (24 hours)
}

// config is the target configuration of arn with the retry policy, and
// the dead-letter queue's statement for the rule (as the CDK's
// addToDeadLetterQueueResourcePolicy words it).
func (r retried) config(arn *string, resource constructs.IConstruct) *awsevents.RuleTargetConfig {
	retry := &awsevents.CfnRule_RetryPolicyProperty{MaximumRetryAttempts: jsii.Number(r.retries)}
	if r.maxAge != nil {
		retry.MaximumEventAgeInSeconds = r.maxAge.ToSeconds(&awscdk.TimeConversionOptions{Integral: jsii.Bool(true)})
	}
	r.dlq.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("AllowEventRule" + *awscdk.Names_NodeUniqueId(r.rule.Node())),
		Effect:     awsiam.Effect_ALLOW,
		Principals: &[]awsiam.IPrincipal{eventsPrincipal(nil)},
		Actions:    jsii.Strings("sqs:SendMessage"),
		Resources:  jsii.Strings(*r.dlq.QueueArn()),
		Conditions: &map[string]any{"ArnEquals": map[string]any{"aws:SourceArn": r.rule.RuleArn()}},
	}))
	return &awsevents.RuleTargetConfig{
		Arn: arn, TargetResource: resource, RetryPolicy: retry,
		DeadLetterConfig: &awsevents.CfnRule_DeadLetterConfigProperty{Arn: r.dlq.QueueArn()},
	}
}

// queueTarget puts the rule's events on a queue (SQS-managed encryption,
// so the queue's policy can name the rule: no KMS key to grant).
type queueTarget struct {
	retried
	queue awssqs.IQueue
}

var _ awsevents.IRuleTarget = (*queueTarget)(nil)

// Bind implements awsevents.IRuleTarget.
func (t *queueTarget) Bind(_ interfacesawsevents.IRuleRef, _ *string) *awsevents.RuleTargetConfig {
	t.queue.GrantSendMessages(eventsPrincipal(t.rule.RuleArn()))
	return t.config(t.queue.QueueArn(), t.queue)
}

// functionTarget invokes a function with the rule's events.
type functionTarget struct {
	retried
	fn awslambda.IFunction
}

var _ awsevents.IRuleTarget = (*functionTarget)(nil)

// Bind implements awsevents.IRuleTarget.
func (t *functionTarget) Bind(_ interfacesawsevents.IRuleRef, _ *string) *awsevents.RuleTargetConfig {
	id := jsii.String("AllowEventRule" + *awscdk.Names_NodeUniqueId(t.fn.Node()))
	if t.rule.Node().TryFindChild(id) == nil {
		t.fn.AddPermission(id, &awslambda.Permission{
			Scope: t.rule, Action: jsii.String("lambda:InvokeFunction"),
			Principal: eventsPrincipal(nil), SourceArn: t.rule.RuleArn(),
		})
	}
	return t.config(t.fn.FunctionArn(), t.fn)
}

// topicAction notifies a topic of an alarm's state changes.
type topicAction struct{ topic awssns.ITopic }

var _ awscloudwatch.IAlarmAction = (*topicAction)(nil)

// Bind implements awscloudwatch.IAlarmAction.
func (a *topicAction) Bind(_ constructs.Construct, _ awscloudwatch.IAlarm) *awscloudwatch.AlarmActionConfig {
	return &awscloudwatch.AlarmActionConfig{AlarmActionArn: a.topic.TopicArn()}
}
