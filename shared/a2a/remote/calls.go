package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Answer is where a remote task stands (the worker's view of it).
type Answer = agents.RemoteAnswer

// session is one call's client; close drops its connections.
type session struct {
	*a2aclient.Client
	close func()
}

// open builds the client of agent a: its credential read, its card's
// interface, the policy's transport.
func (c *Client) open(ctx context.Context, a agents.Agent, timeout time.Duration) (*session, error) {
	r := a.Remote
	if r == nil {
		return nil, apperr.New(apperr.EINVALID, "agent %q is not an A2A agent", a.Slug)
	}
	if err := c.Policy.CheckURL(r.Endpoint); err != nil {
		return nil, err
	}
	cred := ""
	if r.HasCredential {
		var err error
		if cred, err = c.Secrets.GetSecret(ctx, r.SecretID); err != nil {
			return nil, err
		}
	}
	hc, tr := c.httpClient(cred, timeout)
	iface := &a2a.AgentInterface{URL: r.Endpoint, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.ProtocolVersion(r.ProtocolVersion)}
	cl, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{iface},
		a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(hc),
		a2av0.WithJSONRPCTransport(a2av0.JSONRPCTransportConfig{Client: hc}),
		a2aclient.WithConfig(a2aclient.Config{AcceptedOutputModes: []string{"text/plain", "application/json"}}))
	if err != nil {
		tr.CloseIdleConnections()
		return nil, fmt.Errorf("%w: the A2A client for %s: %v", models.ErrModel, a.Slug, err)
	}
	return &session{Client: cl, close: func() { _ = cl.Destroy(); tr.CloseIdleConnections() }}, nil
}

// Send sends text to agent a as a new remote task and returns at once
// (returnImmediately): the answer when the task ended already, its id
// otherwise. The delegation workflow waits for it (Check).
func (c *Client) Send(ctx context.Context, a agents.Agent, text string) (Answer, error) {
	s, err := c.open(ctx, a, callTimeout(ctx))
	if err != nil {
		return Answer{}, err
	}
	defer s.close()
	return c.send(ctx, s, a, text, true)
}

func (c *Client) send(ctx context.Context, s *session, a agents.Agent, text string, immediately bool) (Answer, error) {
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	res, err := s.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: immediately}})
	if err != nil {
		return Answer{}, callErr(a, "SendMessage", err)
	}
	switch r := res.(type) {
	case *a2a.Task:
		return answerOf(r), nil
	case *a2a.Message:
		// An agent may answer a message with a message: done at once.
		return Answer{Done: true, Text: clipText(partsText(r.Parts))}, nil
	default:
		return Answer{}, fmt.Errorf("%w: %s answered SendMessage with %T", models.ErrModel, a.Slug, res)
	}
}

// Check reads remote task id of agent a once.
func (c *Client) Check(ctx context.Context, a agents.Agent, id string) (Answer, error) {
	s, err := c.open(ctx, a, callTimeout(ctx))
	if err != nil {
		return Answer{}, err
	}
	defer s.close()
	t, err := s.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
	if err != nil {
		return Answer{}, callErr(a, "GetTask", err)
	}
	return answerOf(t), nil
}

// Cancel asks agent a to cancel remote task id (best effort: a task that
// ended already is not an error).
func (c *Client) Cancel(ctx context.Context, a agents.Agent, id string) error {
	s, err := c.open(ctx, a, callTimeout(ctx))
	if err != nil {
		return err
	}
	defer s.close()
	if _, err := s.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(id)}); err != nil && !errors.Is(err, a2a.ErrTaskNotCancelable) {
		return callErr(a, "CancelTask", err)
	}
	return nil
}

// Converse implements models.Model for a chat turn, a consultation or a
// session stage addressed to a remote agent: the last user message goes
// out, and the call blocks within ctx (the turn's deadline), reading the
// task every PollInterval when the agent returned before it ended. A
// task still running at the deadline is canceled. The answer's tokens
// are estimated from the text (ModelID: no price).
func (c *Client) Converse(ctx context.Context, req models.Request) (models.Response, error) {
	teamID, slug := req.Metadata[models.MetadataTeamID], req.Metadata[models.MetadataAgent]
	a, err := c.Agents.GetAgent(ctx, teamID, slug)
	if err != nil {
		return models.Response{}, err
	}
	text := lastUser(req.Messages)
	s, err := c.open(ctx, a, callTimeout(ctx))
	if err != nil {
		return models.Response{}, err
	}
	defer s.close()
	ans, err := c.send(ctx, s, a, text, false)
	for err == nil && !ans.Done {
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
			_, _ = s.CancelTask(cctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(ans.TaskID)})
			cancel()
			return models.Response{}, fmt.Errorf("%w: %s did not answer in time: %w", models.ErrModel, slug, ctx.Err())
		case <-time.After(PollInterval):
		}
		var t *a2a.Task
		if t, err = s.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(ans.TaskID)}); err == nil {
			ans = answerOf(t)
		} else {
			err = callErr(a, "GetTask", err)
		}
	}
	if err != nil {
		return models.Response{}, err
	}
	if ans.Failed != "" {
		return models.Response{}, fmt.Errorf("%w: %s: %s", models.ErrModel, slug, ans.Failed)
	}
	if req.OnDelta != nil && ans.Text != "" {
		// The remote agent's answer is read whole (SendMessage, then
		// GetTask): a watcher gets it as one piece (models.Request.OnDelta).
		req.OnDelta(ans.Text)
	}
	return models.Response{Text: ans.Text, InputTokens: models.EstimateTokens(text), OutputTokens: models.EstimateTokens(ans.Text), ModelID: ModelID}, nil
}

// lastUser is the request's last user message: what the remote agent is
// asked. The system prompt (the team's roster, memories, instructions)
// stays home.
func lastUser(ms []models.Message) string {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" && strings.TrimSpace(ms[i].Content) != "" {
			return ms[i].Content
		}
	}
	return ""
}

// answerOf reads a remote task: its artifacts' text once completed, its
// status message's when it failed.
func answerOf(t *a2a.Task) Answer {
	out := Answer{TaskID: string(t.ID)}
	st := t.Status.State
	switch {
	case st == a2a.TaskStateCompleted:
		var b strings.Builder
		for _, art := range t.Artifacts {
			if s := partsText(art.Parts); s != "" {
				if b.Len() > 0 {
					b.WriteString("\n\n")
				}
				b.WriteString(s)
			}
		}
		if b.Len() == 0 && t.Status.Message != nil {
			b.WriteString(partsText(t.Status.Message.Parts))
		}
		out.Done, out.Text = true, clipText(b.String())
	case st.Terminal() || st == a2a.TaskStateInputRequired || st == a2a.TaskStateAuthRequired:
		why := strings.ToLower(strings.TrimPrefix(string(st), "TASK_STATE_"))
		if t.Status.Message != nil {
			if s := partsText(t.Status.Message.Parts); s != "" {
				why += ": " + clipText(s)
			}
		}
		out.Done, out.Failed = true, "the remote task ended "+why
	}
	return out
}

func partsText(ps a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range ps {
		if p == nil {
			continue
		}
		if s := p.Text(); s != "" {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

func clipText(s string) string {
	if len(s) <= MaxAnswerBytes {
		return s
	}
	return strings.ToValidUTF8(s[:MaxAnswerBytes], "") + "\n(cut)"
}

// callTimeout is one HTTP call's bound: what is left of ctx, at most a
// minute.
func callTimeout(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return min(time.Until(d)+time.Second, time.Minute)
	}
	return time.Minute
}

// callErr is a failed protocol call: a model failure (retryable) unless
// the policy refused the address.
func callErr(a agents.Agent, op string, err error) error {
	if errors.Is(err, errAddress) || strings.Contains(err.Error(), errAddress.Error()) {
		return unreachable(a.Remote.Endpoint, err)
	}
	return fmt.Errorf("%w: %s of %s: %v", models.ErrModel, op, a.Slug, err)
}
