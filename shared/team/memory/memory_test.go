package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/memory"
)

func TestVisibility(t *testing.T) {
	shared := memory.Memory{Author: "kyra", Visibility: memory.Shared}
	private := memory.Memory{Author: "kyra", Visibility: memory.Private}
	handoff := memory.Memory{Author: "kyra", Visibility: memory.Private, Agents: []string{"luke"}}
	for _, a := range []string{"kyra", "luke", "dana"} {
		assert.True(t, shared.VisibleTo(a), a)
	}
	assert.True(t, private.VisibleTo("kyra"))
	assert.False(t, private.VisibleTo("luke"))
	assert.True(t, handoff.VisibleTo("luke"), "a handoff memory is visible to both agents")
	assert.False(t, handoff.VisibleTo("dana"))
}

func TestNewValidates(t *testing.T) {
	s := &memory.Service{}
	m, err := s.New("kyra", memory.CreateInput{Content: "  likes tea  "}, "api")
	assert.NoError(t, err)
	assert.Equal(t, "fact", m.Type)
	assert.Equal(t, memory.Private, m.Visibility, "private unless said otherwise")
	assert.Equal(t, "likes tea", m.Content)
	for _, in := range []memory.CreateInput{{Content: ""}, {Content: "x", Type: "rumour"}, {Content: "x", Visibility: "public"}, {Content: "x", Type: "user_profile", Visibility: "private"}} {
		_, err := s.New("kyra", in, "api")
		assert.True(t, apperr.Is(err, apperr.EINVALID), "%+v", in)
	}
}
