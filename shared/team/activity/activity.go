// Package activity keeps each team's activity log: every event Conclave
// publishes on its bus, delivered through a rule and an SQS queue, recorded
// once per event id. It is the audit trail a team reads, and the proof that
// the bus → rule → queue → function path works.
package activity

import (
	"context"
	"encoding/json"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/paging"
)

// Entry is one recorded event.
type Entry struct {
	TeamID     string          `json:"-"`
	EventID    string          `json:"event_id"`
	DetailType string          `json:"detail_type"`
	Source     string          `json:"source"`
	Time       time.Time       `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// Store persists entries.
type Store interface {
	// Record stores e; recording the same event id twice is not an error
	// and stores it once (SQS delivers at least once).
	Record(ctx context.Context, e Entry) error
	// List returns the team's entries, newest first.
	List(ctx context.Context, teamID string, p paging.Page) ([]Entry, string, error)
}
