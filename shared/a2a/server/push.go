package server

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Push notifications (A2A's task push-notification configs): a client
// names a URL (and a token, and the credentials the URL wants) on a task
// this agent created for it (SendMessage); every status change of that
// task is then POSTed there by the a2a-push function (Notifier), with the
// official SDK's sender, under the network policy of the MCP packs.

// Limits of push configs.
const (
	// MaxPushConfigs per task: enforced by the store in the transaction
	// that writes one (a counter beside the configs).
	MaxPushConfigs  = 5
	MaxPushToken    = 256
	MaxPushCredLen  = 4096
	MaxPushURLBytes = 2048
)

// ReasonPushLimit is the refusal of a config past MaxPushConfigs.
const ReasonPushLimit = "PushConfigLimit"

// PushLimitError is a task at MaxPushConfigs (ELIMIT).
func PushLimitError() error {
	return apperr.New(apperr.ELIMIT, "a task has at most %d push configs; delete one first", MaxPushConfigs).WithReason(ReasonPushLimit)
}

// PushConfig is one push-notification config of a task.
type PushConfig struct {
	ID              string
	TaskID          string
	URL             string
	Token           string
	AuthScheme      string
	AuthCredentials string
	CreatedAt       time.Time
}

// PushConfigs keeps the configs, scoped by team.
type PushConfigs interface {
	// PutPushConfig stores c; ELIMIT (reason PushConfigLimit) when the task
	// has MaxPushConfigs already.
	PutPushConfig(ctx context.Context, teamID string, c PushConfig) error
	// GetPushConfig returns ENOTFOUND.
	GetPushConfig(ctx context.Context, teamID, taskID, id string) (PushConfig, error)
	// ListPushConfigs returns the task's configs, oldest first.
	ListPushConfigs(ctx context.Context, teamID, taskID string) ([]PushConfig, error)
	// DeletePushConfig returns ENOTFOUND.
	DeletePushConfig(ctx context.Context, teamID, taskID, id string) error
}

// URLPolicy checks a push URL (toolpacks.NetPolicy: https to public
// addresses deployed, loopback only locally).
type URLPolicy interface {
	CheckURL(raw string) error
}

// pushEnabled: a stage wires the store and the policy, or offers none.
func (s *Service) pushEnabled() bool { return s.Push != nil && s.PushPolicy != nil }

// pushTask reads the task a config is for: the team's, created over A2A.
func (s *Service) pushTask(ctx context.Context, taskID string) (Endpoint, tasks.Task, error) {
	e, ok := endpoint(ctx)
	if !ok {
		return Endpoint{}, tasks.Task{}, a2a.ErrUnauthenticated
	}
	if !s.pushEnabled() {
		return Endpoint{}, tasks.Task{}, errNoPush
	}
	t, err := s.Tasks.Get(ctx, e.TeamID, taskID)
	if err != nil {
		return Endpoint{}, tasks.Task{}, protocolError(err)
	}
	if !tasks.CreatedOverA2A(t) {
		return Endpoint{}, tasks.Task{}, a2a.NewError(a2a.ErrUnsupportedOperation, "push notifications are sent for the tasks this agent created (SendMessage), not for the team's other tasks").
			WithDetails(map[string]any{"code": apperr.EREJECTED, "reason": "NotAnA2ATask"})
	}
	return e, t, nil
}

// checkPushConfig validates a config a client sends.
func (s *Service) checkPushConfig(c *a2a.PushConfig) error {
	bad := func(msg string) error {
		return a2a.NewError(a2a.ErrInvalidParams, msg).WithDetails(map[string]any{"code": apperr.EINVALID})
	}
	if c == nil || strings.TrimSpace(c.URL) == "" {
		return bad("a push config needs a url")
	}
	if len(c.URL) > MaxPushURLBytes {
		return bad("the push url is longer than 2048 bytes")
	}
	if err := s.PushPolicy.CheckURL(c.URL); err != nil {
		msg := "the push url is refused"
		var ae *apperr.Error
		if errors.As(err, &ae) {
			msg = "the push url is refused: " + ae.Message
		}
		return bad(msg)
	}
	if len(c.Token) > MaxPushToken || !printable(c.Token) {
		return bad("the token must be at most 256 printable characters")
	}
	if c.Auth != nil {
		switch c.Auth.Scheme {
		case "Bearer", "Basic":
		default:
			return bad("authentication.scheme must be Bearer or Basic")
		}
		if c.Auth.Credentials == "" || len(c.Auth.Credentials) > MaxPushCredLen || !printable(c.Auth.Credentials) {
			return bad("authentication.credentials must be 1-4096 printable characters")
		}
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// savePush stores c for task t of e's team and returns it as A2A shows it.
func (s *Service) savePush(ctx context.Context, e Endpoint, taskID string, c *a2a.PushConfig) (*a2a.PushConfig, error) {
	if err := s.checkPushConfig(c); err != nil {
		return nil, err
	}
	pc := PushConfig{ID: ids.New("push"), TaskID: taskID, URL: c.URL, Token: c.Token, CreatedAt: time.Now().UTC()}
	if c.Auth != nil {
		pc.AuthScheme, pc.AuthCredentials = c.Auth.Scheme, c.Auth.Credentials
	}
	if err := s.Push.PutPushConfig(ctx, e.TeamID, pc); err != nil {
		return nil, protocolError(err)
	}
	return pushOut(pc), nil
}

// pushOut is a config as the protocol shows it: its credentials never.
func pushOut(c PushConfig) *a2a.PushConfig {
	out := &a2a.PushConfig{ID: c.ID, TaskID: a2a.TaskID(c.TaskID), URL: c.URL, Token: c.Token}
	if c.AuthScheme != "" {
		out.Auth = &a2a.PushAuthInfo{Scheme: c.AuthScheme}
	}
	return out
}

// GetTaskPushConfig implements a2asrv.RequestHandler.
func (s *Service) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	e, _, err := s.pushTask(ctx, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	c, err := s.Push.GetPushConfig(ctx, e.TeamID, string(req.TaskID), req.ID)
	if err != nil {
		return nil, protocolError(err)
	}
	return pushOut(c), nil
}

// ListTaskPushConfigs implements a2asrv.RequestHandler (at most
// MaxPushConfigs: one page).
func (s *Service) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	e, _, err := s.pushTask(ctx, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	list, err := s.Push.ListPushConfigs(ctx, e.TeamID, string(req.TaskID))
	if err != nil {
		return nil, protocolError(err)
	}
	out := &a2a.ListTaskPushConfigResponse{Configs: []*a2a.PushConfig{}}
	for _, c := range list {
		out.Configs = append(out.Configs, pushOut(c))
	}
	return out, nil
}

// CreateTaskPushConfig implements a2asrv.RequestHandler.
func (s *Service) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	if req == nil {
		return nil, a2a.NewError(a2a.ErrInvalidParams, "a push config is required")
	}
	e, _, err := s.pushTask(ctx, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	return s.savePush(ctx, e, string(req.TaskID), req)
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler.
func (s *Service) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	e, _, err := s.pushTask(ctx, string(req.TaskID))
	if err != nil {
		return err
	}
	return protocolError(s.Push.DeletePushConfig(ctx, e.TeamID, string(req.TaskID), req.ID))
}

// Sender delivers one push (a2asrv/push.HTTPPushSender).
type Sender interface {
	SendPush(ctx context.Context, config *a2a.PushConfig, event a2a.Event) error
}

// Notifier is the a2a-push function's body: a task created over A2A
// changed status; each of its push configs is sent the task as A2A shows
// it. A failed send fails the message (two retries, then the dead-letter
// queue: the queue's rule); a client dedupes by the task's state.
type Notifier struct {
	Tasks interface {
		GetTask(ctx context.Context, teamID, id string) (tasks.Task, error)
	}
	Configs PushConfigs
	Sender  Sender
}

// Notify sends task taskID of teamID to its push configs; a task without
// any costs one query.
func (n *Notifier) Notify(ctx context.Context, teamID, taskID string) (int, error) {
	list, err := n.Configs.ListPushConfigs(ctx, teamID, taskID)
	if err != nil || len(list) == 0 {
		return 0, err
	}
	t, err := n.Tasks.GetTask(ctx, teamID, taskID)
	if err != nil {
		return 0, err
	}
	ev := Task(t, nil)
	sent := 0
	var errs []error
	for _, c := range list {
		cfg := pushOut(c)
		if c.AuthScheme != "" {
			cfg.Auth = &a2a.PushAuthInfo{Scheme: c.AuthScheme, Credentials: c.AuthCredentials}
		}
		if err := n.Sender.SendPush(ctx, cfg, ev); err != nil {
			errs = append(errs, err)
			continue
		}
		sent++
	}
	return sent, errors.Join(errs...)
}
