package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
)

// BusProps configure the event bus and its queues.
type BusProps struct {
	Stage Stage
}

// Bus is the custom event bus every Conclave event is published on, the
// manifest's queues (each with its dead-letter queue) and the rules that
// deliver events from the bus to them (architecture decision 5).
type Bus struct {
	constructs.Construct
	// EventBus is the custom bus.
	EventBus awsevents.EventBus
	// Queues by manifest name; a dead-letter queue is listed under
	// manifest.Queue.DLQName.
	Queues map[string]awssqs.Queue
}

// NewBus creates the bus, the queues and the rules.
func NewBus(scope constructs.Construct, id string, props *BusProps) *Bus {
	c := constructs.NewConstruct(scope, &id)
	b := &Bus{
		Construct: c,
		EventBus:  awsevents.NewEventBus(c, jsii.String("Bus"), &awsevents.EventBusProps{EventBusName: jsii.String(props.Stage.Names.Bus())}),
		Queues:    map[string]awssqs.Queue{},
	}
	for _, q := range manifest.Queues {
		b.addQueue(q, props.Stage)
	}
	for _, r := range manifest.Rules {
		b.addRule(r, props.Stage)
	}
	return b
}

// addQueue creates q and, unless q only receives failed payloads, its
// dead-letter queue. Every queue is encrypted and refuses plain HTTP.
func (b *Bus) addQueue(q manifest.Queue, stage Stage) {
	id := camel(q.Name)
	if q.DeadLetterOnly {
		b.Queues[q.Name] = awssqs.NewQueue(b.Construct, jsii.String(id+"Queue"), &awssqs.QueueProps{
			QueueName: jsii.String(stage.Names.Queue(q.Name)), RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
			Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true), RemovalPolicy: stage.Removal,
		})
		return
	}
	dlq := awssqs.NewQueue(b.Construct, jsii.String(id+"DeadLetterQueue"), &awssqs.QueueProps{
		QueueName: jsii.String(stage.Names.Queue(q.DLQName())), RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true), RemovalPolicy: stage.Removal,
	})
	b.Queues[q.DLQName()] = dlq
	b.Queues[q.Name] = awssqs.NewQueue(b.Construct, jsii.String(id+"Queue"), &awssqs.QueueProps{
		QueueName:         jsii.String(stage.Names.Queue(q.Name)),
		VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(float64(q.VisibilityTimeout))),
		// As long as the dead-letter queue keeps what fails: a consumer
		// that is down for days loses nothing.
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		DeadLetterQueue: &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(q.MaxReceiveCount))},
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true), RemovalPolicy: stage.Removal,
	})
}

// addRule routes the events matching r from the bus to r's queue.
func (b *Bus) addRule(r manifest.Rule, stage Stage) {
	pattern := r.Pattern()
	ep := &awsevents.EventPattern{Source: jsii.Strings(pattern["source"].([]string)...)}
	if dt, ok := pattern["detail-type"].([]string); ok {
		ep.DetailType = jsii.Strings(dt...)
	}
	if detail, ok := pattern["detail"].(map[string]any); ok {
		ep.Detail = &detail
	}
	rule := awsevents.NewRule(b.Construct, jsii.String(camel(r.Name)+"Rule"), &awsevents.RuleProps{
		RuleName: jsii.String(stage.Names.Rule(r.Name)), EventBus: b.EventBus, EventPattern: ep,
	})
	// An event EventBridge cannot put on the queue (the queue's policy, a
	// throttle that outlasts the retries) lands in the delivery DLQ instead
	// of vanishing after 24 hours.
	rule.AddTarget(&queueTarget{queue: b.Queues[r.Queue], retried: retried{
		rule: rule, dlq: b.Queues[manifest.EventDeliveryDLQ], retries: 185, maxAge: awscdk.Duration_Hours(jsii.Number(24)),
	}})
}
