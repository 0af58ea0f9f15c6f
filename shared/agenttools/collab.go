package agenttools

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/worker"
)

// SessionStarter starts collaboration sessions (sessions.Service).
type SessionStarter interface {
	Create(ctx context.Context, teamID, by string, in sessions.CreateInput) (sessions.Session, error)
}

// collabParticipant is one colleague of a session.
type collabParticipant struct {
	Slug  string `json:"slug" jsonschema:"the colleague's slug"`
	Role  string `json:"role" jsonschema:"their role: worker (supervisor_worker, pipeline, peer_review's author), reviewer (peer_review) or contributor (brainstorm, consensus)"`
	Stage int    `json:"stage,omitempty" jsonschema:"their stage in a pipeline, from 1"`
}

type collabInput struct {
	Pattern      string              `json:"pattern" jsonschema:"how the participants work together"`
	Goal         string              `json:"goal" jsonschema:"what the session must produce"`
	Context      string              `json:"context,omitempty" jsonschema:"what the participants need to know (default: your task's context)"`
	Participants []collabParticipant `json:"participants" jsonschema:"the colleagues taking part (you lead: do not list yourself)"`
}

func (collabInput) constrain(c constraints) {
	patterns := make([]string, len(sessions.Patterns))
	for i, p := range sessions.Patterns {
		patterns[i] = string(p)
	}
	c.enum("pattern", patterns...)
	c.length("goal", 1, 4000)
	c.length("context", 0, 20000)
	c.items("participants", 10, 0)
	c.prop("participants").MinItems = jsonschema.Ptr(1)
	c.slug("participants.slug")
	c.enum("participants.role", sessions.RoleWorker, sessions.RoleReviewer, sessions.RoleContributor)
	c.between("participants.stage", 1, 10)
}

// startCollaboration starts a session led by the calling agent, from the
// task it works on or the chat it answers in (the conversation, if any,
// receives the outcome when the session ends).
func (t *Tools) startCollaboration(ctx context.Context, c caller, in collabInput) (result, error) {
	if t.Sessions == nil {
		return text("collaboration sessions are not available")
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
	for _, x := range in.Participants {
		create.Participants = append(create.Participants, sessions.ParticipantInput{Agent: x.Slug, Role: x.Role, Stage: x.Stage})
	}
	by := "agent:" + c.agent
	if c.forUser != "" {
		by = "user:" + c.forUser // as POST /v1/sessions records it
	}
	ses, err := t.Sessions.Create(ctx, c.teamID, by, create)
	if err != nil {
		return refused(err)
	}
	worker.Produced(ctx, ses.ID)
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
