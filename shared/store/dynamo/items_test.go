package dynamo

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/idempotency"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

func TestIdempotencyItemKeepsEveryStoredField(t *testing.T) {
	rec := dynamotest.Filled[idempotency.Record](t)
	assert.Equal(t, &rec, dynamotest.RoundTrip(t, toIdemItem("t", rec, dynamotest.At)).toRecord())
}
