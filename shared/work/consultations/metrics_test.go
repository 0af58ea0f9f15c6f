package consultations_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/work/consultations"
)

// The average response time is over the exchanges answered; a pair with
// none has 0, not the average of nothing.
func TestTheAverageResponseTimeIsOverTheExchanges(t *testing.T) {
	m := consultations.Aggregate([]consultations.Consultation{
		{RequestingAgent: "frontend", ConsultedAgent: "backend", Status: consultations.Completed,
			Exchanges: []consultations.Exchange{{Number: 1, ResponseMS: 100}, {Number: 2, ResponseMS: 300}}},
		{RequestingAgent: "frontend", ConsultedAgent: "security", Status: consultations.Escalated},
	})
	require.Len(t, m.Pairs, 2)
	avg := map[string]float64{}
	for _, p := range m.Pairs {
		avg[p.ConsultedAgent] = p.AvgResponseMS
	}
	assert.Equal(t, map[string]float64{"backend": 200, "security": 0}, avg)
}
