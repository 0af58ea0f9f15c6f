package tasktools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/sessions"
	"github.com/conclave-ai/conclave/statemachines/workflow"
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
// task it works on (its conversation, if any, receives the final output).
func (t *Tools) startCollaboration(ctx context.Context, p workflow.TaskInput, input []byte) (string, error) {
	if t.Sessions == nil {
		return "collaboration sessions are not available", nil
	}
	var in collabInput
	if err := json.Unmarshal(input, &in); err != nil {
		return "invalid input: " + err.Error(), nil
	}
	raw := in.Participants
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s) // the seed passes the list as a JSON string
	}
	var list []collabParticipant
	if err := json.Unmarshal(raw, &list); err != nil {
		return "invalid participants: " + err.Error(), nil
	}
	create := sessions.CreateInput{Pattern: sessions.Pattern(in.Pattern), Lead: p.Assignee, Goal: in.Goal, Context: in.Context}
	if create.Context == "" {
		create.Context = p.Context
	}
	if task, err := t.Tasks.Get(ctx, p.TeamID, p.TaskID); err == nil {
		create.ConversationID = task.ConversationID
	}
	for _, x := range list {
		slug := x.Slug
		if slug == "" {
			slug = x.Agent
		}
		create.Participants = append(create.Participants, sessions.ParticipantInput{Agent: slug, Role: x.Role, Stage: x.Stage})
	}
	ses, err := t.Sessions.Create(ctx, p.TeamID, "agent:"+p.Assignee, create)
	if err != nil {
		return rejected(err)
	}
	var names []string
	for _, x := range ses.Participants {
		names = append(names, x.Agent)
	}
	return fmt.Sprintf("started %s session %s led by you with %s; follow it on collab:%s", ses.Pattern, ses.ID, strings.Join(names, ", "), ses.ID), nil
}
