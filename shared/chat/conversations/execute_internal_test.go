package conversations

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/routing/cascade"
)

// A cascade's first agent delegated and waited, then failed its answer; the
// second answered and its reply was kept. Only the kept reply carries its
// result once stored; every result is posted when nothing is stored.
func TestUndeliveredIsTheWorkOfRepliesNotStored(t *testing.T) {
	first := WorkRef{Type: "task", ID: "task_first", Agent: "luke"}
	second := WorkRef{Type: "task", ID: "task_second", Agent: "dana"}
	o := outcome{
		attempts: []cascade.Attempt{{Agent: "kyra", Outcome: cascade.OutcomeFailed}, {Agent: "archie", Outcome: cascade.OutcomeAnswered, Kept: true}},
		carried:  [][]WorkRef{{first}, {second}},
	}
	assert.Equal(t, []WorkRef{first}, o.undelivered(true), "the kept reply is stored and carries its own")
	assert.Equal(t, []WorkRef{first, second}, o.undelivered(false), "nothing is stored")
	assert.Empty(t, outcome{}.undelivered(false), "no tool ran")
}
