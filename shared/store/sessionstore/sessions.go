package sessionstore

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/platform/streams"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

var _ sessions.Store = (*Store)(nil)

// sessionItem is a collaboration session; see keys.go. Participants and
// stage outputs are nested lists (a session has at most ten participants
// and five rounds). total_cost_usd, tokens and model_calls are also
// written by Charge's conditional ADD, which bumps the version so a put
// from an older read fails its condition and re-reads.
type sessionItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	Type   string `dynamodbav:"type"`
	GSI3PK string `dynamodbav:"gsi3pk,omitempty"`
	GSI3SK string `dynamodbav:"gsi3sk,omitempty"`
	// GSI4PK and GSI4SK: the work of its conversation (with a
	// conversation_id only).
	GSI4PK string `dynamodbav:"gsi4pk,omitempty"`
	GSI4SK string `dynamodbav:"gsi4sk,omitempty"`

	TeamID          string             `dynamodbav:"team_id"`
	ID              string             `dynamodbav:"id"`
	ConversationID  string             `dynamodbav:"conversation_id"`
	Pattern         string             `dynamodbav:"pattern"`
	Lead            string             `dynamodbav:"lead"`
	Agents          []string           `dynamodbav:"agents"`
	Goal            string             `dynamodbav:"goal"`
	Context         string             `dynamodbav:"context"`
	Participants    []participantEntry `dynamodbav:"participants"`
	MaxDuration     int                `dynamodbav:"max_duration_seconds"`
	MaxCostUSD      float64            `dynamodbav:"max_cost_usd"`
	MaxRounds       int                `dynamodbav:"max_rounds"`
	Approval        string             `dynamodbav:"approval"`
	Status          string             `dynamodbav:"status"`
	StatusReason    string             `dynamodbav:"status_reason"`
	CurrentStage    string             `dynamodbav:"current_stage"`
	StagesCompleted int                `dynamodbav:"stages_completed"`
	Rounds          int                `dynamodbav:"rounds"`
	TotalCostUSD    float64            `dynamodbav:"total_cost_usd"`
	ModelCalls      int                `dynamodbav:"model_calls"`
	Tokens          int                `dynamodbav:"tokens"`
	BudgetExhausted bool               `dynamodbav:"budget_exhausted"`
	StageOutputs    []stageOutputEntry `dynamodbav:"stage_outputs"`
	SlotWaits       []slotWaitEntry    `dynamodbav:"slot_waits,omitempty"`
	RemoteWaits     []remoteWaitEntry  `dynamodbav:"remote_waits,omitempty"`
	FinalOutput     string             `dynamodbav:"final_output"`
	Outcome         string             `dynamodbav:"outcome"`
	Convergence     string             `dynamodbav:"convergence_reason"`
	ApprovalComment string             `dynamodbav:"approval_comment"`
	ExecutionARN    string             `dynamodbav:"execution_arn"`
	Runs            int                `dynamodbav:"runs"`
	Deadline        *time.Time         `dynamodbav:"deadline,omitempty"`
	CreatedBy       string             `dynamodbav:"created_by"`
	UserID          string             `dynamodbav:"user_id,omitempty"`
	TraceID         string             `dynamodbav:"trace_id,omitempty"`
	Version         int                `dynamodbav:"version"`
	EventSeq        int64              `dynamodbav:"event_seq"`
	Waiter          string             `dynamodbav:"waiter_token,omitempty"`
	CreatedAt       time.Time          `dynamodbav:"created_at"`
	UpdatedAt       time.Time          `dynamodbav:"updated_at"`
	StartedAt       *time.Time         `dynamodbav:"started_at,omitempty"`
	CompletedAt     *time.Time         `dynamodbav:"completed_at,omitempty"`
}

type participantEntry struct {
	Agent  string `dynamodbav:"agent"`
	Role   string `dynamodbav:"role"`
	Stage  int    `dynamodbav:"stage"`
	TaskID string `dynamodbav:"task_id"`
	Status string `dynamodbav:"status"`
}

type stageOutputEntry struct {
	Key             string         `dynamodbav:"key"`
	Stage           int            `dynamodbav:"stage"`
	Round           int            `dynamodbav:"round"`
	Kind            string         `dynamodbav:"kind"`
	Agent           string         `dynamodbav:"agent"`
	TaskID          string         `dynamodbav:"task_id"`
	Output          string         `dynamodbav:"output"`
	Tokens          int            `dynamodbav:"tokens"`
	CostUSD         float64        `dynamodbav:"cost_usd"`
	DurationSeconds float64        `dynamodbav:"duration_seconds"`
	Data            map[string]any `dynamodbav:"data,omitempty"`
	Remote          bool           `dynamodbav:"remote,omitempty"`
}

// remoteWaitEntry is a stage waiting for an agent outside the team (a
// nested map), converted from sessions.RemoteWait.
type remoteWaitEntry struct {
	Key          string    `dynamodbav:"stage"`
	Agent        string    `dynamodbav:"agent"`
	TaskID       string    `dynamodbav:"task_id"`
	RemoteTaskID string    `dynamodbav:"remote_task_id"`
	Attempt      int       `dynamodbav:"attempt"`
	Polls        int       `dynamodbav:"polls"`
	Tokens       int       `dynamodbav:"tokens"`
	SentAt       time.Time `dynamodbav:"sent_at"`
}

// sessionMsgItem is one message of a session's trace (append-only).
type sessionMsgItem struct {
	PK        string         `dynamodbav:"pk"`
	SK        string         `dynamodbav:"sk"`
	Type      string         `dynamodbav:"type"`
	SessionID string         `dynamodbav:"session_id"`
	Round     int            `dynamodbav:"round"`
	Sender    string         `dynamodbav:"sender"`
	Recipient string         `dynamodbav:"recipient"`
	MsgType   string         `dynamodbav:"message_type"`
	Content   string         `dynamodbav:"content"`
	Data      map[string]any `dynamodbav:"data,omitempty"`
	Status    string         `dynamodbav:"status"`
	Violation string         `dynamodbav:"violation"`
	At        time.Time      `dynamodbav:"at"`
}

// slotWaitEntry is a stage's wait for a slot (a nested map); it converts
// from sessions.SlotWait like the other entries.
type slotWaitEntry struct {
	Agent     string     `dynamodbav:"agent"`
	Stage     string     `dynamodbav:"stage"`
	Since     time.Time  `dynamodbav:"since"`
	GrantedAt *time.Time `dynamodbav:"granted_at,omitempty"`
}

func toSessionItem(v sessions.Session) sessionItem {
	it := sessionItem{
		PK: dynamo.TeamPK(v.TeamID), SK: dynamo.SessionSK(v.ID), Type: "session", TeamID: v.TeamID, ID: v.ID, ConversationID: v.ConversationID,
		Pattern: string(v.Pattern), Lead: v.Lead, Agents: v.Agents(), Goal: v.Goal, Context: v.Context, MaxDuration: v.MaxDurationSeconds,
		MaxCostUSD: v.MaxCostUSD, MaxRounds: v.MaxRounds, Approval: v.Approval, Status: string(v.Status), StatusReason: v.StatusReason,
		CurrentStage: v.CurrentStage, StagesCompleted: v.StagesCompleted, Rounds: v.Rounds, TotalCostUSD: v.TotalCostUSD,
		ModelCalls: v.ModelCalls, Tokens: v.Tokens, BudgetExhausted: v.BudgetExhausted, FinalOutput: v.FinalOutput, Outcome: v.Outcome,
		Convergence: v.Convergence, ApprovalComment: v.ApprovalComment, ExecutionARN: v.ExecutionARN, Runs: v.Runs, Deadline: v.Deadline,
		CreatedBy: v.CreatedBy, UserID: v.UserID, TraceID: v.TraceID, Version: v.Version, EventSeq: v.EventSeq, Waiter: v.Waiter, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
		StartedAt: v.StartedAt, CompletedAt: v.CompletedAt,
		Participants: []participantEntry{}, StageOutputs: []stageOutputEntry{},
	}
	it.GSI4PK, it.GSI4SK = dynamo.ConvWorkKeys(v.TeamID, v.ConversationID, v.CreatedAt, v.ID)
	for _, p := range v.Participants {
		it.Participants = append(it.Participants, participantEntry(p))
	}
	for _, o := range v.StageOutputs {
		it.StageOutputs = append(it.StageOutputs, stageOutputEntry(o))
	}
	for _, w := range v.SlotWaits {
		it.SlotWaits = append(it.SlotWaits, slotWaitEntry(w))
	}
	for _, w := range v.RemoteWaits {
		it.RemoteWaits = append(it.RemoteWaits, remoteWaitEntry(w))
	}
	// A planning session is in the reconciler's index by when it last
	// changed (sessions.Reconcile); other unfinished sessions with a
	// deadline in the sweeper's, by their deadline.
	switch {
	case v.Status == sessions.Planning:
		it.GSI3PK, it.GSI3SK = dynamo.SessionStartGSI3PK, dynamo.DueGSI3SK(v.UpdatedAt, v.TeamID, v.ID)
	case !v.Status.Terminal() && v.Status != sessions.AwaitingApproval && v.Deadline != nil:
		it.GSI3PK, it.GSI3SK = dynamo.SessionDueGSI3PK, dynamo.DueGSI3SK(*v.Deadline, v.TeamID, v.ID)
	}
	return it
}

func fromSessionItem(m map[string]types.AttributeValue) (sessions.Session, error) {
	var it sessionItem
	if err := dynamo.Unmarshal(m, &it); err != nil {
		return sessions.Session{}, err
	}
	v := sessions.Session{
		TeamID: it.TeamID, ID: it.ID, ConversationID: it.ConversationID, Pattern: sessions.Pattern(it.Pattern), Lead: it.Lead,
		Goal: it.Goal, Context: it.Context, MaxDurationSeconds: it.MaxDuration, MaxCostUSD: it.MaxCostUSD, MaxRounds: it.MaxRounds,
		Approval: it.Approval, Status: sessions.Status(it.Status), StatusReason: it.StatusReason, CurrentStage: it.CurrentStage,
		StagesCompleted: it.StagesCompleted, Rounds: it.Rounds, TotalCostUSD: it.TotalCostUSD, ModelCalls: it.ModelCalls, Tokens: it.Tokens,
		BudgetExhausted: it.BudgetExhausted, FinalOutput: it.FinalOutput, Outcome: it.Outcome, Convergence: it.Convergence,
		ApprovalComment: it.ApprovalComment, ExecutionARN: it.ExecutionARN, Runs: it.Runs, Deadline: it.Deadline, CreatedBy: it.CreatedBy, UserID: it.UserID, TraceID: it.TraceID,
		Version: it.Version, EventSeq: it.EventSeq, Waiter: it.Waiter, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, StartedAt: it.StartedAt, CompletedAt: it.CompletedAt,
		StageOutputs: []sessions.StageOutput{},
	}
	for _, p := range it.Participants {
		v.Participants = append(v.Participants, sessions.Participant(p))
	}
	for _, o := range it.StageOutputs {
		v.StageOutputs = append(v.StageOutputs, sessions.StageOutput(o))
	}
	for _, w := range it.SlotWaits {
		v.SlotWaits = append(v.SlotWaits, sessions.SlotWait(w))
	}
	for _, w := range it.RemoteWaits {
		v.RemoteWaits = append(v.RemoteWaits, sessions.RemoteWait(w))
	}
	return v, nil
}

// roleSession is the session's write in a transaction.
const roleSession = "session"

// CreateSession implements sessions.Store: the session with its first
// events (on its stream) and, for a request with an Idempotency-Key, the
// reference to it, in one transaction (one put when there is neither).
func (s *Store) CreateSession(ctx context.Context, v sessions.Session) error {
	if len(v.Events) == 0 {
		created, err := s.PutNewKeyed(ctx, v.TeamID, sessions.RefKind, v.ID, toSessionItem(v))
		if err == nil && !created {
			return apperr.New(apperr.ECONFLICT, "session %q exists", v.ID)
		}
		return err
	}
	tx := s.Txn()
	tx.Keyed(ctx, v.TeamID, sessions.RefKind, v.ID, time.Now())
	tx.Create(roleSession, toSessionItem(v))
	tx.StreamEvents(v.TeamID, streams.Session(v.ID), v.EventSeq, v.Events)
	err := dynamo.Replayed(tx.Run(ctx), sessions.RefKind)
	if c, ok := dynamo.AsCanceled(err); ok {
		if c.Role == roleSession {
			return apperr.New(apperr.ECONFLICT, "session %q exists", v.ID)
		}
		return dynamo.RetryConflict(err, "the session's create conflicted with a concurrent write; try again")
	}
	return err
}

// GetSession implements sessions.Store.
func (s *Store) GetSession(ctx context.Context, teamID, id string) (sessions.Session, error) {
	return dynamo.Get(ctx, s, dynamo.Key(dynamo.TeamPK(teamID), dynamo.SessionSK(id)), "session", id, fromSessionItem)
}

// PutSession implements sessions.Store: conditioned on the version read.
// With events, the session (its event_seq their last number) and the
// events in one transaction, so the version condition numbers them: a
// concurrent writer that took those numbers moved the version on, and
// this write is refused whole (ErrChanged). Without, one PutItem.
func (s *Store) PutSession(ctx context.Context, v sessions.Session) error {
	cond := dynamo.Name("version").Equal(dynamo.Value(v.Version - 1))
	if len(v.Events) > 0 {
		tx := s.Txn()
		tx.Put(roleSession, toSessionItem(v), cond)
		tx.StreamEvents(v.TeamID, streams.Session(v.ID), v.EventSeq, v.Events)
		err := tx.RunConflicting(ctx)
		if c, ok := dynamo.AsCanceled(err); ok {
			if c.Role == dynamo.RoleStreamEvent {
				return dynamo.Internal(err, "TransactWriteItems")
			}
			// The session's condition, or a concurrent transaction on
			// it that outlasted the reruns: read again.
			return errors.Join(sessions.ErrChanged, err)
		}
		return err
	}
	item, err := dynamo.Marshal(toSessionItem(v))
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	expr, err := dynamo.Build(nil, cond)
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if _, failed := dynamo.ConditionFailed(err); failed {
		return sessions.ErrChanged
	}
	if err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// Charge implements sessions.Store: ADD the cost if total ≤ cap − cost
// (DynamoDB conditions do no arithmetic; the right side is computed here
// from the cap, which never changes) and the session is not exhausted.
// The call that fails the condition marks the session exhausted.
func (s *Store) Charge(ctx context.Context, teamID, id string, cost float64, tokens int) error {
	v, err := s.GetSession(ctx, teamID, id)
	if err != nil {
		return err
	}
	k := dynamo.Key(dynamo.TeamPK(teamID), dynamo.SessionSK(id))
	u := expression.Add(dynamo.Name("total_cost_usd"), dynamo.Value(cost)).Add(dynamo.Name("tokens"), dynamo.Value(tokens)).
		Add(dynamo.Name("model_calls"), dynamo.Value(1)).Add(dynamo.Name("version"), dynamo.Value(1))
	cond := dynamo.Name("total_cost_usd").LessThanEqual(dynamo.Value(v.MaxCostUSD - cost)).And(dynamo.Name("budget_exhausted").Equal(dynamo.Value(false)))
	expr, err := dynamo.Build(&u, cond)
	if err != nil {
		return dynamo.Internal(err, "expression")
	}
	_, err = s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.Table, Key: k, UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values()})
	if _, failed := dynamo.ConditionFailed(err); failed {
		mark := expression.Set(dynamo.Name("budget_exhausted"), dynamo.Value(true)).Add(dynamo.Name("version"), dynamo.Value(1))
		mexpr, berr := dynamo.Build(&mark, expression.ConditionBuilder{})
		if berr != nil {
			return dynamo.Internal(berr, "expression")
		}
		if _, uerr := s.DB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.Table, Key: k, UpdateExpression: mexpr.Update(),
			ExpressionAttributeNames: mexpr.Names(), ExpressionAttributeValues: mexpr.Values()}); uerr != nil {
			return dynamo.Internal(uerr, "UpdateItem")
		}
		return sessions.ErrBudget
	}
	if err != nil {
		return dynamo.Internal(err, "UpdateItem")
	}
	return nil
}

// ListSessions implements sessions.Store, newest first.
func (s *Store) ListSessions(ctx context.Context, teamID string, f sessions.Filter, p paging.Page) ([]sessions.Session, string, error) {
	var filters []expression.ConditionBuilder
	if f.Status != "" {
		filters = append(filters, dynamo.Name("status").Equal(dynamo.Value(string(f.Status))))
	}
	if f.Pattern != "" {
		filters = append(filters, dynamo.Name("pattern").Equal(dynamo.Value(string(f.Pattern))))
	}
	if f.Agent != "" {
		filters = append(filters, dynamo.Name("agents").Contains(f.Agent))
	}
	if f.UserID != "" {
		filters = append(filters, dynamo.Name("user_id").Equal(dynamo.Value(f.UserID)))
	}
	keyCond := dynamo.KeyIs(dynamo.AttrPK, dynamo.TeamPK(teamID)).And(dynamo.HasPrefix(dynamo.AttrSK, dynamo.PrefixSession))
	in, err := dynamo.BuiltQuery("", keyCond, dynamo.AllOf(filters), false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []sessions.Session{}
	next, err := s.QueryPage(ctx, in, "sessions:"+teamID, p, func(m map[string]types.AttributeValue) error {
		v, err := fromSessionItem(m)
		list = append(list, v)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}

// AppendSessionMessage implements sessions.Store: a new item whose key
// sorts by time (ids do), written once.
func (s *Store) AppendSessionMessage(ctx context.Context, teamID, id string, m sessions.Message) error {
	item, err := dynamo.Marshal(sessionMsgItem{PK: dynamo.TeamPK(teamID), SK: dynamo.SessionMsgSK(id, ids.New("smsg")), Type: "session_message", SessionID: id,
		Round: m.Round, Sender: m.Sender, Recipient: m.Recipient, MsgType: string(m.Type), Content: m.Content, Data: m.Data,
		Status: m.Status, Violation: m.Violation, At: m.At})
	if err != nil {
		return dynamo.Internal(err, "marshal")
	}
	if _, err := s.DB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.Table, Item: item, ConditionExpression: dynamo.CondNew}); err != nil {
		return dynamo.Internal(err, "PutItem")
	}
	return nil
}

// maxSessionMessages bounds one trace read.
const maxSessionMessages = 1000

// ListSessionMessages implements sessions.Store, oldest first.
func (s *Store) ListSessionMessages(ctx context.Context, teamID, id string) ([]sessions.Message, error) {
	out := []sessions.Message{}
	in := dynamo.PrefixQuery(dynamo.TeamPK(teamID), dynamo.SessionMsgPrefix(id), true)
	in.TableName, in.ConsistentRead = &s.Table, aws.Bool(true)
	err := s.QueryAll(ctx, in, func(m map[string]types.AttributeValue) error {
		var it sessionMsgItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		if len(out) >= maxSessionMessages {
			return errors.New("trace too long")
		}
		out = append(out, sessions.Message{Seq: len(out) + 1, Round: it.Round, Sender: it.Sender, Recipient: it.Recipient,
			Type: sessions.MessageType(it.MsgType), Content: it.Content, Data: it.Data, Status: it.Status, Violation: it.Violation, At: it.At})
		return nil
	})
	return out, err
}

// DueSessions implements sessions.Store: unfinished sessions whose
// deadline is before the given time (the sweeper's index).
func (s *Store) DueSessions(ctx context.Context, before time.Time, limit int) ([]sessions.Ref, error) {
	return s.refsBefore(ctx, dynamo.SessionDueGSI3PK, before, limit)
}

// UnstartedSessions implements sessions.Store: planning sessions last
// changed before the given time (the reconciler's index).
func (s *Store) UnstartedSessions(ctx context.Context, before time.Time, limit int) ([]sessions.Ref, error) {
	return s.refsBefore(ctx, dynamo.SessionStartGSI3PK, before, limit)
}

// refsBefore lists the sessions of the gsi3 partition pk keyed before t.
func (s *Store) refsBefore(ctx context.Context, pk string, before time.Time, limit int) ([]sessions.Ref, error) {
	var refs []sessions.Ref
	err := s.DueBefore(ctx, pk, before, limit, func(m map[string]types.AttributeValue) error {
		var it sessionItem
		err := dynamo.Unmarshal(m, &it)
		refs = append(refs, sessions.Ref{TeamID: it.TeamID, ID: it.ID})
		return err
	})
	if err != nil {
		return nil, err
	}
	return refs, nil
}

// SessionAgents implements messaging.Directory: the lead and the
// participants of a collaboration session (ENOTFOUND for an unknown one).
func (s *Store) SessionAgents(ctx context.Context, teamID, sessionID string) ([]string, error) {
	v, err := s.GetSession(ctx, teamID, sessionID)
	if err != nil {
		return nil, apperr.NotFound("collaboration session", sessionID)
	}
	return v.Agents(), nil
}
