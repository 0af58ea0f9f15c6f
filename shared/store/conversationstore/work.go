package conversationstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
)

var _ conversations.WorkLister = (*Store)(nil)

// workItem is what the work listing reads of the items on a
// conversation's gsi4 partition: each kind's own item (taskstore's,
// sessionstore's, planstore's, reportstore's, consultationstore's), of
// which it names the attributes it lists; which of them an entry takes
// is decided by the item's type (entry).
type workItem struct {
	Type      string    `dynamodbav:"type"`
	ID        string    `dynamodbav:"id"`
	Status    string    `dynamodbav:"status"`
	CreatedAt time.Time `dynamodbav:"created_at"`
	// A task's.
	Assignee string `dynamodbav:"assignee"`
	// A task's and a report's.
	Title string `dynamodbav:"title"`
	// A session's.
	Lead string `dynamodbav:"lead"`
	Goal string `dynamodbav:"goal"`
	// A report's author.
	To string `dynamodbav:"to"`
	// A consultation's specialist, and its document (the question).
	ConsultedAgent string `dynamodbav:"consulted_agent"`
	Body           string `dynamodbav:"body_json"`
	// A plan's document (its lead, message and creation time).
	Doc string `dynamodbav:"doc"`
}

// entry is the listing's entry of it.
func (it workItem) entry() (conversations.WorkEntry, error) {
	e := conversations.WorkEntry{Type: it.Type, ID: it.ID, Status: it.Status, CreatedAt: it.CreatedAt}
	switch it.Type {
	case conversations.WorkTask:
		e.Agent, e.Label = it.Assignee, it.Title
	case conversations.WorkSession:
		e.Agent, e.Label = it.Lead, it.Goal
	case conversations.WorkReport:
		e.Agent, e.Label = it.To, it.Title
	case conversations.WorkConsultation:
		var body struct {
			Question string `json:"question"`
		}
		if err := json.Unmarshal([]byte(it.Body), &body); err != nil {
			return e, fmt.Errorf("consultation %s: %w", it.ID, err)
		}
		e.Agent, e.Label = it.ConsultedAgent, body.Question
	case conversations.WorkPlan:
		var doc struct {
			Lead      string    `json:"lead"`
			Message   string    `json:"message"`
			CreatedAt time.Time `json:"created_at"`
		}
		if err := json.Unmarshal([]byte(it.Doc), &doc); err != nil {
			return e, fmt.Errorf("plan %s: %w", it.ID, err)
		}
		e.Agent, e.Label, e.CreatedAt = doc.Lead, doc.Message, doc.CreatedAt
	default:
		return e, fmt.Errorf("item %s of type %q on a conversation's work index", it.ID, it.Type)
	}
	e.Label = clip.Clip(e.Label, conversations.MaxWorkLabel)
	return e, nil
}

// ListWork implements conversations.WorkLister: one Query of the
// conversation's gsi4 partition, newest first, without the tasks of
// reports and consultations (a report's or a consultation's own task
// carries its conversation so that GET /v1/tasks?conversation_id= lists
// it; here the report or the consultation stands for it), refilled while
// that filter leaves the page short (QueryFill).
func (s *Store) ListWork(ctx context.Context, teamID, convID string, p paging.Page) ([]conversations.WorkEntry, string, error) {
	notReportTask := dynamo.Name("type").NotEqual(dynamo.Value(conversations.WorkTask)).
		Or(dynamo.Name("report").AttributeNotExists().And(dynamo.Name("consultation_id").AttributeNotExists()))
	in, err := dynamo.BuiltQuery(dynamo.IndexGSI4, dynamo.KeyIs(dynamo.AttrGSI4PK, dynamo.ConvWorkGSI4PK(teamID, convID)), notReportTask, false)
	if err != nil {
		return nil, "", dynamo.Internal(err, "expression")
	}
	list := []conversations.WorkEntry{}
	next, err := s.QueryFill(ctx, in, "convwork:"+teamID+":"+convID, p, func(m map[string]types.AttributeValue) error {
		var it workItem
		if err := dynamo.Unmarshal(m, &it); err != nil {
			return err
		}
		e, err := it.entry()
		list = append(list, e)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return list, next, nil
}
