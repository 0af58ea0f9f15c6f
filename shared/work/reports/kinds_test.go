package reports_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

// A "report:<type>" skill names a template: the agents domain keeps the
// list (reports imports agents), equal to the templates.
func TestSkillKindsNameTheReportTemplates(t *testing.T) {
	assert.Equal(t, reports.Types, agents.ReportTypes)
}
