package messagestore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/store/dynamotest"
)

// Marking a page read is one transaction; entries read meanwhile cancel it
// and the rest are marked in a second one, never one update per entry.
func TestMarkReadIsOneTransactionPerPage(t *testing.T) {
	db := &dynamotest.SeqTxDB{}
	n, err := New(db, "tbl").MarkRead(context.Background(), "t", "dana", []string{"a", "b", "c"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	require.Len(t, db.Txs, 1)
	assert.Len(t, db.Txs[0].TransactItems, 3)
	assert.Zero(t, db.Updates)

	db = &dynamotest.SeqTxDB{Errs: []error{dynamotest.Canceled("None", "ConditionalCheckFailed", "None")}}
	n, err = New(db, "tbl").MarkRead(context.Background(), "t", "dana", []string{"a", "b", "c"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 2, n, "b was read already")
	require.Len(t, db.Txs, 2)
	assert.Equal(t, []string{"INBOX#dana#a", "INBOX#dana#c"}, dynamotest.TxKeys(db.Txs[1]))
	assert.Zero(t, db.Updates)

	db = &dynamotest.SeqTxDB{}
	n, err = New(db, "tbl").MarkRead(context.Background(), "t", "dana", []string{"a"}, time.Now())
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, db.Txs, "one entry is one plain update")
	assert.Equal(t, 1, db.Updates)
}
