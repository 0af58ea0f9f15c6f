//go:build integration

package cloud_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

// Work items on the table: ten for an agent already at its five slots are
// all accepted and left out of its active load; one started has no
// deadline and no entry in the sweeper's index (a sweep 136 s later, past
// the 120 s limit and the sweeper's 15 s grace, would not see it); and
// the queue's bound holds at its exact value under racing creates.
func TestWorkItemsHoldNoSlotAndNoDeadlineOnTheTable(t *testing.T) {
	e := mustEnv(t)
	team := mustTeam(t, e)
	mustAgent(t, e, team, "kyra", nil)
	mustAgent(t, e, team, "luke", nil)
	svc, _ := taskService(t, e)
	ctx := context.Background()
	holdSlots(t, svc, team, "kyra", "luke", tasks.MaxActivePerAgent)

	var items []tasks.Task
	for i := range 10 {
		tk, err := svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: fmt.Sprintf("board work %d", i)}, false)
		require.NoError(t, err, "work item %d", i+1)
		items = append(items, tk)
	}
	n, err := svc.Load(ctx, team, "luke")
	require.NoError(t, err)
	assert.Equal(t, tasks.Load{Active: tasks.MaxActivePerAgent, Queued: 10}, n)

	started, err := svc.Start(ctx, team, items[0].ID, "user:key_test")
	require.NoError(t, err)
	assert.Nil(t, started.Deadline)
	stored, err := e.db.tasks.GetTask(ctx, team, items[0].ID)
	require.NoError(t, err)
	assert.Equal(t, tasks.Running, stored.Status)
	assert.Nil(t, stored.Deadline, "no deadline stored")
	due, err := e.db.tasks.DueTasks(ctx, time.Now().Add(136*time.Second-tasks.SweepGrace), 1000)
	require.NoError(t, err)
	assert.NotContains(t, due, tasks.Ref{TeamID: team, ID: items[0].ID}, "not in the sweeper's index")
	// The delegated tasks beside it are: started, one has its deadline.
	held, _, err := svc.List(ctx, team, tasks.Filter{Assignee: "luke", Status: tasks.Queued}, pageOf(20))
	require.NoError(t, err)
	for _, h := range held {
		if !h.WorkItem() {
			r, err := svc.Start(ctx, team, h.ID, "user:key_test")
			require.NoError(t, err)
			require.NotNil(t, r.Deadline)
			due, err := e.db.tasks.DueTasks(ctx, r.Deadline.Add(time.Millisecond), 1000)
			require.NoError(t, err)
			assert.Contains(t, due, tasks.Ref{TeamID: team, ID: h.ID}, "a delegated task is in the sweeper's index")
			break
		}
	}

	// The queue's bound: three places left, ten racing creates.
	n, err = svc.Load(ctx, team, "luke")
	require.NoError(t, err)
	setQueued(t, e, team, "luke", tasks.MaxQueuedPerAgent-3)
	const racing = 10
	errs := make([]error, racing)
	var wg sync.WaitGroup
	for i := range racing {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = svc.Create(ctx, team, user, tasks.CreateInput{Assignee: "luke", Title: "race"}, false)
		}()
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		if err == nil {
			accepted++
			continue
		}
		ae, ok := apperr.As(err)
		require.True(t, ok, err)
		assert.Equal(t, tasks.ReasonQueueFull, ae.Reason)
		assert.Equal(t, apperr.ELIMIT, ae.Code)
	}
	assert.Equal(t, 3, accepted, "exactly the places left")
	after, err := svc.Load(ctx, team, "luke")
	require.NoError(t, err)
	assert.Equal(t, tasks.MaxQueuedPerAgent, after.Queued)
	assert.Equal(t, n.Active, after.Active, "work items moved no slot")
}

// setQueued sets an agent's queue counter, standing for that many queued
// work items (creating a thousand would test nothing more).
func setQueued(t *testing.T, e env, team, slug string, n int) {
	t.Helper()
	_, err := e.db.core.DB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(e.names.Table()), Key: dynamo.Key(dynamo.TeamPK(team), dynamo.LoadSK(slug)),
		UpdateExpression:          aws.String("SET queued_work = :n"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":n": &ddbtypes.AttributeValueMemberN{Value: strconv.Itoa(n)}},
	})
	require.NoError(t, err)
}
