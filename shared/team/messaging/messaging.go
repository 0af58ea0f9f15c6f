// Package messaging lets agents message each other: a message is stored
// once and announced with an AgentMessageSent event; a rule sends the event
// to a queue whose consumer (the message-fanout function) writes one inbox
// entry per recipient, idempotently (architecture decision 5). Messages are
// internal: users see them only when an agent surfaces them.
package messaging

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Message types.
var Types = []string{"task_request", "task_result", "task_status", "info_request", "info_response",
	"notification", "collab_invite", "collab_update", "handoff_request", "feedback"}

// Channels. A channel with an id is "task:<id>" or "collab:<id>".
const (
	ChannelDirect = "direct"
	ChannelTeam   = "team"
	prefixTask    = "task:"
	prefixCollab  = "collab:"
)

// DetailType is the event announcing a stored message.
const DetailType = "AgentMessageSent"

// Limits.
const (
	MaxContent  = 8000
	MaxMetadata = 4096 // bytes of JSON
)

// Message is one agent message. In an inbox it carries the recipient's
// read time.
type Message struct {
	ID        string         `json:"id"`
	TeamID    string         `json:"-"`
	From      string         `json:"from"`
	To        string         `json:"to,omitempty"`
	Channel   string         `json:"channel"`
	Type      string         `json:"type"`
	Content   string         `json:"content"`
	Metadata  map[string]any `json:"metadata"`
	CreatedAt time.Time      `json:"created_at"`
	ReadAt    *time.Time     `json:"read_at"`
	// IdempotencyKey is the sending request's key: the store keeps a
	// reference from it to the message in the message's own write, and a
	// second message under the key is Replayed.
	IdempotencyKey string `json:"-"`
}

// RefKind is the kind of a message's idempotency reference: only POST
// /v1/agents/{slug}/messages takes its request's key (idempotency.Scope),
// not the messages a turn's tools send.
const RefKind = "amsg"

// Replayed is a message sent again under the Idempotency-Key of one the
// team stored before (its answer was lost): ID is that message.
type Replayed struct{ ID string }

func (r Replayed) Error() string { return "a message was stored under this Idempotency-Key: " + r.ID }

// SentEvent is the AgentMessageSent detail.
type SentEvent struct {
	TeamID    string    `json:"team_id"`
	MessageID string    `json:"message_id"`
	From      string    `json:"from"`
	To        string    `json:"to,omitempty"`
	Channel   string    `json:"channel"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
}

// Store persists messages and inboxes, scoped by team.
type Store interface {
	PutAgentMessage(ctx context.Context, m Message) error
	GetAgentMessage(ctx context.Context, teamID, id string) (Message, error)
	// Deliver writes recipient's inbox entry unless it exists; it reports
	// whether it wrote one (a redelivered event writes nothing).
	Deliver(ctx context.Context, teamID, recipient string, m Message) (bool, error)
	// ListInbox returns entries newest first.
	ListInbox(ctx context.Context, teamID, agent string, unreadOnly bool, p paging.Page) ([]Message, string, error)
	// MarkRead sets read_at on unread entries and returns how many changed.
	MarkRead(ctx context.Context, teamID, agent string, ids []string, at time.Time) (int, error)
}

// Directory resolves senders and channel members.
type Directory interface {
	GetAgent(ctx context.Context, teamID, slug string) (agents.Agent, error)
	ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
	// TaskAgents returns the agents on a task and its delegation chain
	// (ENOTFOUND for an unknown task).
	TaskAgents(ctx context.Context, teamID, taskID string) ([]string, error)
	// SessionAgents returns a collaboration session's participants
	// (ENOTFOUND for an unknown session).
	SessionAgents(ctx context.Context, teamID, sessionID string) ([]string, error)
}

// Publisher announces events.
type Publisher interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Service implements messaging.
type Service struct {
	Store Store
	Dir   Directory
	Bus   Publisher
	Now   clock.Func
}

// SendInput is the body of POST /v1/agents/{slug}/messages.
type SendInput struct {
	To       string         `json:"to"`
	Channel  string         `json:"channel"`
	Type     string         `json:"type"`
	Content  string         `json:"content"`
	Metadata map[string]any `json:"metadata"`
}

func validType(t string) bool {
	for _, v := range Types {
		if v == t {
			return true
		}
	}
	return false
}

// Send stores a message from an active agent and announces it; the inboxes
// are written by the fan-out. Returns EINVALID, ENOTFOUND, ECONFLICT.
func (s *Service) Send(ctx context.Context, teamID, from string, in SendInput) (Message, error) {
	if in.Channel == "" {
		in.Channel = ChannelDirect
		if in.To == "" {
			return Message{}, apperr.Invalid("to", "to is required for a direct message (or give a channel: team, task:<id>, collab:<id>)")
		}
	}
	if in.Type == "" {
		in.Type = "notification"
	}
	if !validType(in.Type) {
		return Message{}, apperr.Invalid("type", "type must be one of %s", strings.Join(Types, ", "))
	}
	n := utf8.RuneCountInString(strings.TrimSpace(in.Content))
	if n == 0 || n > MaxContent {
		return Message{}, apperr.Invalid("content", "content must be 1 to %d characters", MaxContent)
	}
	if in.Metadata == nil {
		in.Metadata = map[string]any{}
	}
	if raw, _ := json.Marshal(in.Metadata); len(raw) > MaxMetadata {
		return Message{}, apperr.Invalid("metadata", "metadata must be at most %d bytes of JSON", MaxMetadata)
	}
	switch {
	case in.Channel == ChannelDirect:
		if in.To == from {
			return Message{}, apperr.Invalid("to", "an agent cannot message itself")
		}
	case in.Channel == ChannelTeam:
		if in.To != "" {
			return Message{}, apperr.Invalid("to", "a channel message has no single recipient")
		}
	case strings.HasPrefix(in.Channel, prefixTask) && len(in.Channel) > len(prefixTask),
		strings.HasPrefix(in.Channel, prefixCollab) && len(in.Channel) > len(prefixCollab):
		if in.To != "" {
			return Message{}, apperr.Invalid("to", "a channel message has no single recipient")
		}
	default:
		return Message{}, apperr.Invalid("channel", "channel must be direct, team, task:<id> or collab:<id>")
	}
	if err := s.activeSender(ctx, teamID, from); err != nil {
		return Message{}, err
	}
	// Resolve now so an unknown recipient, task or session is the sender's
	// error, not a message nobody receives.
	if _, err := s.recipients(ctx, teamID, Message{From: from, To: in.To, Channel: in.Channel}); err != nil {
		return Message{}, err
	}
	m := Message{ID: ids.New("amsg"), TeamID: teamID, From: from, To: in.To, Channel: in.Channel, Type: in.Type,
		Content: strings.TrimSpace(in.Content), Metadata: in.Metadata, CreatedAt: s.Now.UTC()}
	m.IdempotencyKey = idempotency.KeyFor(ctx, RefKind)
	if err := s.Store.PutAgentMessage(ctx, m); err != nil {
		var r Replayed
		if !errors.As(err, &r) {
			return Message{}, err
		}
		// Stored by an earlier request with this key whose answer was
		// lost: that message is the answer, announced again (delivery is
		// once per message and recipient, so a second announcement adds
		// nothing to an inbox that has it, and delivers it if the first
		// announcement was lost).
		if m, err = s.Store.GetAgentMessage(ctx, teamID, r.ID); err != nil {
			return Message{}, err
		}
	}
	if err := s.Bus.Publish(ctx, DetailType, SentEvent{TeamID: teamID, MessageID: m.ID, From: m.From, To: m.To, Channel: m.Channel, Type: m.Type, CreatedAt: m.CreatedAt}); err != nil {
		// The message is stored; without its event nobody would receive it.
		return Message{}, apperr.Wrap(apperr.EINTERNAL, err, "message %s stored but not announced", m.ID)
	}
	return m, nil
}

func (s *Service) activeSender(ctx context.Context, teamID, slug string) error {
	if !agents.ValidSlug(slug) {
		return apperr.NotFound("agent", slug)
	}
	a, err := s.Dir.GetAgent(ctx, teamID, slug)
	if err != nil {
		return err
	}
	if a.Status != agents.StatusActive {
		return apperr.New(apperr.ECONFLICT, "agent %q is %s", slug, a.Status).WithReason("AgentUnavailable")
	}
	return nil
}

// recipients resolves a message's channel to agents, never the sender.
func (s *Service) recipients(ctx context.Context, teamID string, m Message) ([]string, error) {
	var list []string
	switch {
	case m.Channel == ChannelDirect:
		if !agents.ValidSlug(m.To) {
			return nil, apperr.NotFound("agent", m.To)
		}
		a, err := s.Dir.GetAgent(ctx, teamID, m.To)
		if err != nil {
			return nil, err
		}
		if a.Status == agents.StatusArchived {
			return nil, apperr.New(apperr.ECONFLICT, "agent %q is archived", m.To).WithReason("AgentUnavailable")
		}
		list = []string{m.To}
	case m.Channel == ChannelTeam:
		active, err := s.Dir.ActiveAgents(ctx, teamID)
		if err != nil {
			return nil, err
		}
		for _, a := range active {
			list = append(list, a.Slug)
		}
	case strings.HasPrefix(m.Channel, prefixTask):
		var err error
		if list, err = s.Dir.TaskAgents(ctx, teamID, strings.TrimPrefix(m.Channel, prefixTask)); err != nil {
			return nil, err
		}
	case strings.HasPrefix(m.Channel, prefixCollab):
		var err error
		if list, err = s.Dir.SessionAgents(ctx, teamID, strings.TrimPrefix(m.Channel, prefixCollab)); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{m.From: true}
	var out []string
	for _, a := range list {
		if a != "" && !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out, nil
}

// FanOut writes the inbox entries of a stored message; it is safe to run
// again for the same message (entries that exist are kept as they are).
// It returns how many entries this run wrote.
func (s *Service) FanOut(ctx context.Context, teamID, messageID string) (int, error) {
	m, err := s.Store.GetAgentMessage(ctx, teamID, messageID)
	if err != nil {
		return 0, err
	}
	to, err := s.recipients(ctx, teamID, m)
	if err != nil {
		return 0, err
	}
	wrote := 0
	var errs []error
	for _, r := range to {
		ok, err := s.Store.Deliver(ctx, teamID, r, m)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			wrote++
		}
	}
	return wrote, errors.Join(errs...)
}

// InboxQuery selects inbox entries.
type InboxQuery struct {
	All  bool // every entry, paginated; default: unread only
	Peek bool // do not mark the returned entries read
	Page paging.Page
}

// Inbox returns an agent's messages newest first: unread ones by default
// (marked read by this call unless Peek), or all of them with pagination.
// Returns ENOTFOUND, EINVALID.
//
// A page is at most two calls to the store: the page, then either marking
// its unread entries read (one write) or, for an empty page only, reading
// the agent to tell an unknown agent (404) from an empty inbox. A page
// with entries needs no such check: only an agent of the team gets any.
func (s *Service) Inbox(ctx context.Context, teamID, agent string, q InboxQuery) ([]Message, string, error) {
	p, err := q.Page.Normalize()
	if err != nil {
		return nil, "", err
	}
	if !agents.ValidSlug(agent) {
		return nil, "", apperr.NotFound("agent", agent)
	}
	list, next, err := s.Store.ListInbox(ctx, teamID, agent, !q.All, p)
	if err != nil {
		return nil, "", err
	}
	if len(list) == 0 {
		if _, err := s.Dir.GetAgent(ctx, teamID, agent); err != nil {
			return nil, "", err
		}
	}
	if q.Peek {
		return list, next, nil
	}
	var unread []string
	for _, m := range list {
		if m.ReadAt == nil {
			unread = append(unread, m.ID)
		}
	}
	if len(unread) > 0 {
		at := s.Now.UTC()
		if _, err := s.Store.MarkRead(ctx, teamID, agent, unread, at); err != nil {
			return nil, "", err
		}
		for i := range list {
			if list[i].ReadAt == nil {
				list[i].ReadAt = &at
			}
		}
	}
	return list, next, nil
}

// MarkRead acknowledges messages explicitly. Returns EINVALID, ENOTFOUND.
func (s *Service) MarkRead(ctx context.Context, teamID, agent string, ids []string) (int, error) {
	if len(ids) == 0 || len(ids) > paging.MaxLimit {
		return 0, apperr.Invalid("message_ids", "give 1 to %d message ids", paging.MaxLimit)
	}
	if !agents.ValidSlug(agent) {
		return 0, apperr.NotFound("agent", agent)
	}
	if _, err := s.Dir.GetAgent(ctx, teamID, agent); err != nil {
		return 0, err
	}
	return s.Store.MarkRead(ctx, teamID, agent, ids, s.Now.UTC())
}

// ContextScan is how many of an agent's newest inbox entries Unread reads
// (one Query). The unread filter applies after the limit, so an unread
// message older than the ContextScan newest entries is not summarized in
// a model context; get_agent_inbox and GET …/inbox still list it.
const ContextScan = paging.MaxLimit

// Unread returns the unread messages of agent's ContextScan newest inbox
// entries, newest first, without marking them read: a chat turn or task
// step summarizes them in the agent's context and marks those it showed
// with Acknowledge once its answer is committed. One store call; the agent
// is not checked (the caller has read it).
func (s *Service) Unread(ctx context.Context, teamID, agent string) ([]Message, error) {
	list, _, err := s.Store.ListInbox(ctx, teamID, agent, true, paging.Page{Limit: ContextScan})
	return list, err
}

// Acknowledge marks messages read that an agent's committed answer saw
// (Unread): one store write, entries already read are left as they are.
// An error leaves them unread, so they are shown again: a summary is
// shown at least once, never lost.
func (s *Service) Acknowledge(ctx context.Context, teamID, agent string, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return s.Store.MarkRead(ctx, teamID, agent, ids, s.Now.UTC())
}
