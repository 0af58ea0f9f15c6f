package agenttools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// ColleagueFinder finds who fits a need (discovery.Service, on the
// ExpertGate).
type ColleagueFinder interface {
	// FindColleagues returns EINVALID.
	FindColleagues(ctx context.Context, teamID, asker, need string, limit int) ([]discovery.Colleague, error)
}

var _ ColleagueFinder = (*discovery.Service)(nil)

// defaultColleagues is how many find_colleagues answers without max.
const defaultColleagues = 3

type colleaguesInput struct {
	Need string `json:"need" jsonschema:"what you need a colleague for, in a sentence (a skill, a question, a piece of work)"`
	Max  int    `json:"max,omitempty" jsonschema:"how many colleagues at most (default 3)"`
}

func (colleaguesInput) constrain(c constraints) {
	c.length("need", 1, expertgate.MaxQuery)
	c.between("max", 1, discovery.MaxColleagues)
}

// colleaguesAnswer is find_colleagues' result.
type colleaguesAnswer struct {
	Colleagues []discovery.Colleague `json:"colleagues"`
	// Note says how to read the list.
	Note string `json:"note"`
}

// findColleagues asks the gate who fits a need: best first, with each
// one's availability and load, the asking agent left out.
func (t *Tools) findColleagues(ctx context.Context, c caller, in colleaguesInput) (result, error) {
	limit := in.Max
	if limit == 0 {
		limit = defaultColleagues
	}
	list, err := t.Colleagues.FindColleagues(ctx, c.teamID, c.agent, in.Need, limit)
	if err != nil {
		return refused(err)
	}
	note := fmt.Sprintf("best fit first; a paused colleague cannot take work, and one with %d active tasks is at its limit", tasks.MaxActivePerAgent)
	if len(list) == 0 {
		note = "no colleague fits this need"
	}
	b, err := json.Marshal(colleaguesAnswer{Colleagues: list, Note: note})
	if err != nil {
		return result{}, err
	}
	return text(string(b))
}
