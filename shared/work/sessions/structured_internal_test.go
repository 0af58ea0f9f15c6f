package sessions

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A vote's confidence is from 0 to 1, both included; a request for
// changes in the last round is a rejection, before it a critique, and
// without a round limit never a rejection.
func TestStructuredAnswersAtTheirBounds(t *testing.T) {
	vote := turn{Agent: "luke", Tool: voteTool()}
	for _, c := range []float64{0, 1} {
		_, err := structured(vote, Message{}, map[string]any{"vote": "approve", "confidence": c, "reasoning": "ok"})
		assert.NoError(t, err, c)
	}
	for _, c := range []float64{-0.01, 1.01} {
		_, err := structured(vote, Message{}, map[string]any{"vote": "approve", "confidence": c, "reasoning": "ok"})
		assert.Error(t, err, c)
	}

	review := map[string]any{"verdict": "request_changes", "summary": "needs work", "issues": []any{"the tests"}}
	for _, c := range []struct {
		round, max int
		want       MessageType
	}{{3, 3, MsgRejection}, {2, 3, MsgCritique}, {3, 0, MsgCritique}} {
		m, err := structured(turn{Agent: "sage", Tool: reviewTool(), Round: c.round, MaxRounds: c.max}, Message{}, review)
		assert.NoError(t, err)
		assert.Equal(t, c.want, m.Type, "round %d of %d", c.round, c.max)
	}
}

// A vote is approve, reject or abstain, and nothing else.
func TestAVoteIsApproveRejectOrAbstain(t *testing.T) {
	vote := turn{Agent: "luke", Tool: voteTool()}
	for _, v := range []string{"approve", "reject", "abstain"} {
		_, err := structured(vote, Message{}, map[string]any{"vote": v, "confidence": 0.5, "reasoning": "ok"})
		assert.NoError(t, err, v)
	}
	_, err := structured(vote, Message{}, map[string]any{"vote": "maybe", "confidence": 0.5, "reasoning": "ok"})
	assert.Error(t, err)
}
