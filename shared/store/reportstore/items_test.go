package reportstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/work/reports"
)

func TestReportItemsKeepEveryStoredField(t *testing.T) {
	t.Run("report", func(t *testing.T) {
		r := dynamotest.Filled[reports.Report](t)
		r.Parameters = map[string]any{"files": []any{"src/"}, "": map[string]any{"deep": 1.5}}
		r.Sections[0].Value = map[string]any{"list": []any{"a", true, nil}}
		it, err := toReportItem(r)
		require.NoError(t, err)
		got, err := dynamotest.RoundTrip(t, it).toReport(r.TeamID)
		require.NoError(t, err)
		assert.Equal(t, r, got)
		r.Sections, r.InvalidSections, r.DroppedSections, r.CompletedAt = []reports.Section{{Name: "summary", Content: "s"}}, nil, nil, nil
		it, err = toReportItem(r)
		require.NoError(t, err)
		got, err = dynamotest.RoundTrip(t, it).toReport(r.TeamID)
		require.NoError(t, err)
		assert.Equal(t, r, got, "a text section has no value")
	})
}

func TestReportItemKeys(t *testing.T) {
	rep, err := toReportItem(reports.Report{TeamID: "t1", ID: "rep_1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"TEAM#t1", "REPORT#rep_1", "report"}, []string{rep.PK, rep.SK, rep.Type})
}
