package taskstore

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/store/dynamo"
	"github.com/conclave-ai/conclave/shared/store/dynamotest"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

func TestTaskItemsKeepEveryStoredField(t *testing.T) {
	t.Run("task", func(t *testing.T) {
		task := dynamotest.Filled[tasks.Task](t)
		task.Events = nil // items of their own (taskEventItem)
		task.Ticket = ""  // never stored: the create spends the ticket (useTicket)
		m, err := dynamo.Marshal(toTaskItem(task))
		require.NoError(t, err)
		got, err := fromTaskItem(m)
		require.NoError(t, err)
		assert.Equal(t, task, got)
	})
}

// Items carry the keys and index attributes the queries in keys.go read.
func TestTaskItemKeys(t *testing.T) {
	deadline := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	task := tasks.Task{TeamID: "t1", ID: "task_1", Assignee: "luke", ParentID: "task_0", Status: tasks.Running, Deadline: &deadline}
	ti := toTaskItem(task)
	assert.Equal(t, []string{"TEAM#t1", "TASK#task_1", "TEAM#t1#ASSIGNEE#luke", "TASK#task_1", "TEAM#t1#PARENT#task_0", "TASK#task_1"},
		[]string{ti.PK, ti.SK, ti.GSI1PK, ti.GSI1SK, ti.GSI2PK, ti.GSI2SK})
	assert.Regexp(t, `^DUE#[0-7]$`, ti.GSI3PK)
	assert.Equal(t, "2026-01-02T03:04:05.000Z#t1#task_1", ti.GSI3SK)
	task.Status = tasks.Queued
	assert.Empty(t, toTaskItem(task).GSI3PK, "only running tasks are in the sweeper's index")
	assert.Empty(t, ti.GSI4PK+ti.GSI4SK, "only a conversation's tasks are on its work index")
	task.ConversationID, task.CreatedAt = "conv_1", deadline
	ti = toTaskItem(task)
	assert.Equal(t, []string{"CONVWORK#t1#conv_1", "2026-01-02T03:04:05.000000000Z#task_1"}, []string{ti.GSI4PK, ti.GSI4SK})
}

// The payloads are JSON text: they read back byte for byte, and a task
// stored before them (no input or output attribute) reads back without
// either key in its JSON.
func TestTaskItemPayloads(t *testing.T) {
	raw := json.RawMessage(`{"ünï":"\u00e9\ud83d\ude00 😀","big":123456789012345678901234567890,"tiny":1e-400,"huge":1e400,"list":[1.50,"x"]}`)
	task := tasks.Task{TeamID: "t1", ID: "task_1", Input: raw, Output: json.RawMessage(`"just text"`)}
	m, err := dynamo.Marshal(toTaskItem(task))
	require.NoError(t, err)
	require.IsType(t, &types.AttributeValueMemberS{}, m["input"], "stored as a string attribute")
	got, err := fromTaskItem(m)
	require.NoError(t, err)
	assert.Equal(t, string(raw), string(got.Input))
	assert.Equal(t, `"just text"`, string(got.Output))

	old, err := dynamo.Marshal(toTaskItem(tasks.Task{TeamID: "t1", ID: "task_0", Result: "text"}))
	require.NoError(t, err)
	assert.NotContains(t, old, "input")
	assert.NotContains(t, old, "output")
	got, err = fromTaskItem(old)
	require.NoError(t, err)
	assert.Nil(t, got.Input)
	assert.Nil(t, got.Output)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	var shape map[string]any
	require.NoError(t, json.Unmarshal(b, &shape))
	assert.NotContains(t, shape, "input")
	assert.NotContains(t, shape, "output")
	assert.Equal(t, "text", shape["result"])
}
