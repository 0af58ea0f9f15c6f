package sessions_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

// A "session:<pattern>" skill names a pattern: the agents domain keeps the
// list (sessions imports agents), equal to the patterns.
func TestSkillKindsNameTheSessionPatterns(t *testing.T) {
	var want []string
	for _, p := range sessions.Patterns {
		want = append(want, string(p))
	}
	sort.Strings(want)
	assert.Equal(t, want, agents.SessionPatterns)
}
