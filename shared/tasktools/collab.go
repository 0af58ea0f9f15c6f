package tasktools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/sessions"
)

// SessionStarter starts collaboration sessions (sessions.Service).
type SessionStarter interface {
	Create(ctx context.Context, teamID, by string, in sessions.CreateInput) (sessions.Session, error)
}

// startCollaborationSpec is the start_collaboration tool.
var startCollaborationSpec = models.Tool{Name: "start_collaboration",
	Description: `Start a multi-agent collaboration session that you lead. Input: {"pattern": "supervisor_worker"|"pipeline"|"peer_review"|"brainstorm"|"consensus", "goal", "context", "participants": [{"slug", "role": "worker"|"reviewer"|"contributor", "stage"}]} (participants may also be given as a JSON string). Follow it on the collab:<session id> channel.`}

// collabParticipant accepts the seed's "slug" and the API's "agent".
type collabParticipant struct {
	Slug  string `json:"slug"`
	Agent string `json:"agent"`
	Role  string `json:"role"`
	Stage int    `json:"stage"`
}

type collabInput struct {
	Pattern      string          `json:"pattern"`
	Goal         string          `json:"goal"`
	Context      string          `json:"context"`
	Participants json.RawMessage `json:"participants"`
}

// startCollaboration starts a session led by the calling agent, from the
// task it works on or the chat it answers in (the conversation, if any,
// receives the outcome when the session ends).
func (t *Tools) startCollaboration(ctx context.Context, c caller, input []byte) (result, error) {
	if t.Sessions == nil {
		return text("collaboration sessions are not available")
	}
	var in collabInput
	if err := json.Unmarshal(input, &in); err != nil {
		return text("invalid input: " + err.Error())
	}
	raw := in.Participants
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s) // the seed passes the list as a JSON string
	}
	var list []collabParticipant
	if err := json.Unmarshal(raw, &list); err != nil {
		return text("invalid participants: " + err.Error())
	}
	create := sessions.CreateInput{Pattern: sessions.Pattern(in.Pattern), Lead: c.agent, Goal: in.Goal, Context: in.Context, ConversationID: c.conversationID}
	if create.Context == "" {
		create.Context = c.context
	}
	if c.taskID != "" {
		if task, err := t.Tasks.Get(ctx, c.teamID, c.taskID); err == nil {
			create.ConversationID = task.ConversationID
		}
	}
	for _, x := range list {
		slug := x.Slug
		if slug == "" {
			slug = x.Agent
		}
		create.Participants = append(create.Participants, sessions.ParticipantInput{Agent: slug, Role: x.Role, Stage: x.Stage})
	}
	ses, err := t.Sessions.Create(ctx, c.teamID, "agent:"+c.agent, create)
	if err != nil {
		return refused(err)
	}
	var names []string
	for _, x := range ses.Participants {
		names = append(names, x.Agent)
	}
	out := fmt.Sprintf("started %s session %s led by you with %s; follow it on collab:%s", ses.Pattern, ses.ID, strings.Join(names, ", "), ses.ID)
	if create.ConversationID == "" {
		return text(out)
	}
	// A session takes minutes: it is never waited for in a reply.
	return result{text: out + "; its outcome will be posted in this conversation when it ends. Tell the user.",
		pending: &conversations.WorkRef{Type: "session", ID: ses.ID, Agent: c.agent, Status: string(ses.Status)}}, nil
}
