package reports_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/work/reports"
)

func TestTheEightTemplates(t *testing.T) {
	assert.Equal(t, []string{"action_plan", "code_review", "comparison", "data_analysis", "performance_report", "research_summary", "risk_assessment", "security_audit"}, reports.Types)
	// The seed's three, as it gives them.
	assert.Equal(t, []string{"summary", "findings", "severity_breakdown", "recommendations"}, reports.Templates["code_review"].Required)
	assert.Equal(t, []string{"test_coverage", "performance_notes", "security_notes"}, reports.Templates["code_review"].Optional)
	assert.Equal(t, []string{"executive_summary", "findings", "sources", "recommendations"}, reports.Templates["research_summary"].Required)
	assert.Equal(t, []string{"risk_matrix", "identified_risks", "mitigations", "residual_risk"}, reports.Templates["risk_assessment"].Required)
	// A comparison has its options, criteria, matrix and recommendation.
	assert.Equal(t, []string{"options", "criteria", "comparison_matrix", "recommendation"}, reports.Templates["comparison"].Required)

	for _, tp := range reports.List() {
		t.Run(tp.Type, func(t *testing.T) {
			assert.Contains(t, []string{"review", "analyze"}, tp.TaskType, "a report is a review or analyze task")
			assert.NotEmpty(t, tp.Description)
			assert.GreaterOrEqual(t, len(tp.Required), 4)
			assert.LessOrEqual(t, len(tp.Sections()), reports.MaxSections)
			assert.Equal(t, map[string]string{reports.Standard: reports.TierBalanced, reports.Complex: reports.TierPowerful}[tp.Complexity], tp.ModelTier)
			assert.Subset(t, reports.AllFormats, tp.Formats)
			assert.Contains(t, tp.Formats, reports.Markdown)
			assert.Contains(t, tp.Formats, reports.JSON, "every type has a JSON schema")
			required := 0
			for _, p := range tp.Params {
				assert.Contains(t, []string{"string", "list", "object"}, p.Kind, p.Name)
				assert.NotEmpty(t, p.Description, p.Name)
				if p.Required {
					required++
				}
			}
			assert.Positive(t, required, "the template says which keys a request must give")

			// The schema: an object, one property per section, the
			// required sections required, only the keywords the
			// templates' building blocks use (a new one is a choice:
			// the author reads the schema in its prompt).
			raw, err := json.Marshal(tp.Schema)
			require.NoError(t, err)
			var schema map[string]any
			require.NoError(t, json.Unmarshal(raw, &schema))
			assert.Equal(t, "object", schema["type"])
			props := schema["properties"].(map[string]any)
			assert.Len(t, props, len(tp.Sections()))
			for _, s := range tp.Sections() {
				assert.Contains(t, props, s)
			}
			var req []string
			for _, r := range schema["required"].([]any) {
				req = append(req, r.(string))
			}
			assert.Equal(t, tp.Required, req)
			walkSchema(t, schema, tp.Type)
		})
	}
	assert.False(t, reports.Templates["comparison"].Supports(reports.BulletPoints), "a matrix is not a list of points")
}

var keywords = []string{"type", "properties", "required", "items", "enum", "minItems", "minLength", "pattern", "minimum", "maximum", "additionalProperties"}

func walkSchema(t *testing.T, s map[string]any, path string) {
	t.Helper()
	for k := range s {
		assert.True(t, slices.Contains(keywords, k), "%s uses %q, which no building block uses", path, k)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, sub := range props {
			walkSchema(t, sub.(map[string]any), path+"."+name)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		walkSchema(t, items, path+"[]")
	}
}
