package reports_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/work/reports"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// blind hides the store's references from the read before a request, as
// when the first request's write lands while the repeat runs.
type blind struct{ reports.Store }

// A report requested again under the Idempotency-Key of one whose answer
// was lost is that report: read back first, no second task; when the read
// misses it, the report's reference refuses the second and the task made
// for it is canceled, so nothing works twice.
func TestAReportRequestedAgainUnderItsKeyIsTheStoredOne(t *testing.T) {
	for _, c := range []struct {
		name     string
		blind    bool
		tasks    int
		canceled int
	}{{"read back first", false, 1, 0}, {"refused by the reference", true, 2, 1}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := idempotency.Scope(idempotency.WithKey(context.Background(), "k-1"), reports.RefKind)
			in := reports.RequestInput{Type: "research_summary", To: "dana", Title: "JWT", Parameters: params(map[string]any{"topic": "JWT"})}
			first, err := f.svc.Request(ctx, team, user, in)
			require.NoError(t, err)
			if c.blind {
				f.svc.Store = blind{f.store}
			}
			again, err := f.svc.Request(ctx, team, user, in)
			require.NoError(t, err)
			assert.Equal(t, first.ID, again.ID)
			assert.Equal(t, first.TaskID, again.TaskID)
			list, _, err := f.store.ListTasks(context.Background(), team, tasks.Filter{}, paging.Page{Limit: 10})
			require.NoError(t, err)
			assert.Len(t, list, c.tasks)
			n := 0
			for _, tk := range list {
				if tk.Status == tasks.Canceled {
					n++
					assert.NotEqual(t, first.TaskID, tk.ID, "the stored report's task runs")
				}
			}
			assert.Equal(t, c.canceled, n)
		})
	}
}
