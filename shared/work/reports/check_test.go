package reports_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/statemachines/workflow"
)

func spec(typ, format string, max int) workflow.ReportCheck {
	return workflow.ReportCheck{ReportID: "rep_1", Type: typ, Format: format, MaxSections: max}
}

func names(secs []reports.Section) []string {
	out := []string{}
	for _, s := range secs {
		out = append(out, s.Name)
	}
	return out
}

func TestMarkdownSections(t *testing.T) {
	answer := "# Review of src/auth\nSome preamble that belongs to no section.\n\n" +
		"## Summary\nThe module is sound.\n\n" +
		"## 2. **Findings** (1)\n### Token expiry\nTokens never expire.\n\n" +
		"### Severity Breakdown\n1 high\n\n" +
		"## recommendations\n- Expire tokens\n\n" +
		"## Appendix\nextra notes\n\n" +
		"## test_coverage\n\n" // empty: not a section
	o := reports.Check(spec("code_review", reports.Markdown, 10), answer)
	assert.True(t, o.OK(), "%+v", o)
	assert.Equal(t, []string{"summary", "findings", "severity_breakdown", "recommendations", "appendix"}, names(o.Sections),
		"headings name sections at any level when the template knows them, at level 2 otherwise; sub-headings stay content")
	assert.Equal(t, "### Token expiry\nTokens never expire.", o.Sections[1].Content)
	assert.Equal(t, "The module is sound.", o.Sections[0].Content)
	assert.Nil(t, o.Sections[0].Value, "only json sections carry a value")
}

func TestMissingAndEmptyRequiredSections(t *testing.T) {
	answer := "## summary\nok\n## findings\n\n## recommendations\n- do it\n"
	o := reports.Check(spec("code_review", reports.Markdown, 10), answer)
	assert.False(t, o.OK())
	assert.Equal(t, []string{"findings", "severity_breakdown"}, o.Missing, "an empty section is missing too, in template order")
	toWrite, prompt := reports.Revision(spec("code_review", reports.Markdown, 10), o)
	assert.Equal(t, []string{"findings", "severity_breakdown"}, toWrite)
	assert.Contains(t, prompt, "Missing sections (absent or empty): findings, severity_breakdown\n")
	assert.Contains(t, prompt, "Sections to write: findings, severity_breakdown\n")
	assert.Contains(t, prompt, `"## summary"`, "the format's rule is repeated")
}

func TestBulletPointSections(t *testing.T) {
	answer := "Here is my report.\n\nExecutive summary:\n- JWTs are fine when short-lived\n" +
		"**Findings**: rotation matters\n- use kid headers\n" +
		"sources:\n* RFC 7519\nThis sentence, however, is long and ends with a colon: it stays text\n" +
		"Recommendations:\n1. rotate keys\n"
	o := reports.Check(spec("research_summary", reports.BulletPoints, 10), answer)
	require.True(t, o.OK(), "%+v", o)
	assert.Equal(t, []string{"executive_summary", "findings", "sources", "recommendations"}, names(o.Sections))
	assert.Equal(t, "rotation matters\n- use kid headers", o.Sections[1].Content, "text after a known label is its first point")
	assert.Contains(t, o.Sections[2].Content, "ends with a colon: it stays text")
}

func TestJSONReports(t *testing.T) {
	good := map[string]any{
		"summary":            "Sound overall.",
		"findings":           []any{map[string]any{"title": "Tokens never expire", "severity": "high"}},
		"severity_breakdown": map[string]any{"critical": 0, "high": 1, "medium": 0, "low": 0},
		"recommendations":    []any{"Expire tokens after 15 minutes"},
		"Test Coverage":      "62%",
	}
	raw, _ := json.Marshal(good)
	fenced := "Here you go:\n```json\n" + string(raw) + "\n```"
	o := reports.Check(spec("code_review", reports.JSON, 10), fenced)
	require.True(t, o.OK(), "%+v", o)
	assert.Equal(t, []string{"summary", "findings", "severity_breakdown", "recommendations", "test_coverage"}, names(o.Sections), "template order; keys normalized")
	assert.Equal(t, "Sound overall.", o.Sections[0].Content)
	assert.Equal(t, []any{"Expire tokens after 15 minutes"}, o.Sections[3].Value, "the structured value")
	assert.Equal(t, "- Expire tokens after 15 minutes", o.Sections[3].Content)

	bad := map[string]any{
		"summary":            "x",
		"findings":           []any{map[string]any{"title": "t", "severity": "catastrophic"}},
		"severity_breakdown": map[string]any{"critical": 0, "high": 1.5, "medium": 0, "low": 0},
		"recommendations":    []any{},
	}
	raw, _ = json.Marshal(bad)
	o = reports.Check(spec("code_review", reports.JSON, 10), string(raw))
	assert.Equal(t, []string{"recommendations"}, o.Missing, "an empty list is missing")
	assert.Equal(t, []reports.SectionError{
		{Section: "findings", Message: "findings[0].severity must be one of critical, high, medium, low, info"},
		{Section: "severity_breakdown", Message: "severity_breakdown.high must be an integer"},
	}, o.Invalid)
	toWrite, prompt := reports.Revision(spec("code_review", reports.JSON, 10), o)
	assert.Equal(t, []string{"recommendations", "findings", "severity_breakdown"}, toWrite)
	assert.Contains(t, prompt, "Invalid section findings: findings[0].severity must be one of")

	o = reports.Check(spec("code_review", reports.JSON, 10), "## summary\nnot JSON at all")
	assert.True(t, o.NotJSON)
	assert.Equal(t, reports.Templates["code_review"].Required, o.Missing)
	_, prompt = reports.Revision(spec("code_review", reports.JSON, 10), o)
	assert.Contains(t, prompt, "Your answer was not a JSON object.")
}

func TestMaxSectionsKeepsTheRequiredOnes(t *testing.T) {
	answer := "## preface\np\n## summary\ns\n## security_notes\nn\n## findings\nf\n## severity_breakdown\nb\n## test_coverage\nc\n## recommendations\nr\n"
	o := reports.Check(spec("code_review", reports.Markdown, 5), answer)
	require.True(t, o.OK())
	assert.Equal(t, []string{"summary", "findings", "severity_breakdown", "test_coverage", "recommendations"}, names(o.Sections),
		"the required ones, then optional ones in template order, in the answer's order")
	assert.Equal(t, []string{"preface", "security_notes"}, o.Dropped)
	o = reports.Check(spec("code_review", reports.Markdown, 10), answer)
	assert.Empty(t, o.Dropped)
	assert.Len(t, o.Sections, 7)
}

func TestMergeFoldsTheRevisionIn(t *testing.T) {
	md := spec("code_review", reports.Markdown, 10)
	first := "# Review\n## summary\nok\n## findings\n\n## recommendations\n- r\n"
	merged := reports.Merge(md, first, "Sure, here they are.\n## findings\n- token expiry\n## severity_breakdown\n1 high\n")
	o := reports.Check(md, merged)
	require.True(t, o.OK(), merged)
	assert.Equal(t, []string{"summary", "findings", "recommendations", "severity_breakdown"}, names(o.Sections))
	assert.Equal(t, "- token expiry", o.Sections[1].Content, "the empty section is completed")
	assert.NotContains(t, merged, "Sure, here they are", "text outside sections is left out")
	assert.Equal(t, first, reports.Merge(md, first, "I have nothing to add."), "a revision without sections changes nothing")

	bp := spec("research_summary", reports.BulletPoints, 10)
	merged = reports.Merge(bp, "executive_summary:\n- a\nsources:\n- b\nrecommendations:\n- c\n", "findings:\n- d\n")
	assert.True(t, reports.Check(bp, merged).OK(), merged)

	js := spec("comparison", reports.JSON, 10)
	first = `{"options":["a","b"],"criteria":["speed"],"comparison_matrix":[],"recommendation":{"choice":"a","rationale":"fast"}}`
	merged = reports.Merge(js, first, "```json\n"+`{"comparison_matrix":[{"option":"a","criterion":"speed","assessment":"fast"}],"criteria":[]}`+"\n```")
	o = reports.Check(js, merged)
	require.True(t, o.OK(), merged)
	assert.Equal(t, []any{"speed"}, o.Sections[1].Value, "an empty value in the revision does not erase the first answer's")
	assert.Equal(t, first, reports.Merge(js, first, "no JSON here"))
}

func TestUnknownTypeChecksNothing(t *testing.T) {
	o := reports.Check(spec("poem", reports.Markdown, 10), "roses")
	assert.True(t, o.OK())
}
