// Package eventbus publishes Conclave's domain events on the custom
// EventBridge bus (architecture decision 5). Every event carries the team id
// in its detail so consumers stay team-scoped.
package eventbus

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/conclave-ai/conclave/shared/platform/manifest"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// API is the part of the EventBridge client used here.
type API interface {
	PutEvents(context.Context, *eventbridge.PutEventsInput, ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
	DescribeEventBus(context.Context, *eventbridge.DescribeEventBusInput, ...func(*eventbridge.Options)) (*eventbridge.DescribeEventBusOutput, error)
}

// Bus publishes to one event bus.
type Bus struct {
	Client API
	Name   string
}

// Publish puts one event. detail must marshal to a JSON object holding team_id.
func (b *Bus) Publish(ctx context.Context, detailType string, detail any) error {
	raw, err := json.Marshal(detail)
	if err != nil {
		return fmt.Errorf("marshal %s: %w", detailType, err)
	}
	// The rules' targets continue the publisher's trace: the detail's
	// trace field (every event's schema declares it).
	raw = tracing.Inject(ctx, raw)
	out, err := b.Client.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []types.PutEventsRequestEntry{{
		EventBusName: aws.String(b.Name),
		Source:       aws.String(manifest.EventSource),
		DetailType:   aws.String(detailType),
		Detail:       aws.String(string(raw)),
	}}})
	if err != nil {
		return fmt.Errorf("put %s: %w", detailType, err)
	}
	if out.FailedEntryCount > 0 {
		return fmt.Errorf("put %s: %s", detailType, aws.ToString(out.Entries[0].ErrorMessage))
	}
	return nil
}

// Ping checks that the bus exists.
func (b *Bus) Ping(ctx context.Context) error {
	_, err := b.Client.DescribeEventBus(ctx, &eventbridge.DescribeEventBusInput{Name: aws.String(b.Name)})
	return err
}

// FromConfig is the bus called name on a client built from cfg.
func FromConfig(cfg aws.Config, name string) *Bus {
	return &Bus{Client: eventbridge.NewFromConfig(cfg), Name: name}
}
