package dynamo

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The key shapes are the table's contract with its queries and indexes:
// changing one strands every item written with the old shape.
func TestKeyShapes(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	cases := [][2]string{
		{TeamPK("t1"), "TEAM#t1"},
		{APIKeyPK("abc"), "APIKEY#abc"},
		{KeyGSI1SK("key_1"), "KEY#key_1"},
		{AgentSK("luke"), "AGENT#luke"},
		{idemSK("k"), "IDEMP#k"},
		{LoadSK("luke"), "LOAD#luke"},
		{ActivitySK(when, "ev1"), "ACTIVITY#2026-01-02T03:04:05.6Z#ev1"},
		{TaskSK("task_1"), "TASK#task_1"},
		{TaskEventSK("task_1", 12), "TEV#task_1#00000012"},
		{AssigneeGSI1PK("t1", "luke"), "TEAM#t1#ASSIGNEE#luke"},
		{ParentGSI2PK("t1", "task_0"), "TEAM#t1#PARENT#task_0"},
		{DueGSI3PK(3), "DUE#3"},
		{DueGSI3SK(when, "t1", "task_1"), "2026-01-02T03:04:05.600Z#t1#task_1"},
		{ConvSK("conv_1"), "CONV#conv_1"},
		{PartSK("conv_1", "luke"), "CPART#conv_1#luke"},
		{MsgSK("conv_1", "msg_1"), "MSG#conv_1#msg_1"},
		{HandoffSK("conv_1", "hoff_1"), "HOFF#conv_1#hoff_1"},
		{DecisionSK("rdec_1"), "RDEC#rdec_1"},
		{ConvGSI1PK("t1", "conv_1"), "TEAM#t1#CONV#conv_1"},
		{FeedbackSK("msg_1", "luke"), "FB#msg_1#luke"},
		{AgentMsgSK("amsg_1"), "AMSG#amsg_1"},
		{InboxSK("luke", "amsg_1"), "INBOX#luke#amsg_1"},
		{MemorySK("mem_1"), "MEM#mem_1"},
		{ContextSK("luke"), "CTX#luke"},
		{DecisionFloor(time.UnixMilli(0)), "RDEC#rdec_00000000000000000000000000"},
		{FeedbackFloor(time.UnixMilli(0)), "FB#msg_00000000000000000000000000"},
		{PrefixDecision + RangeEnd, "RDEC#~"},
		{TaskEventPrefix("task_1"), "TEV#task_1#"},
		{InboxPrefix("luke"), "INBOX#luke#"},
		{MsgPrefix("conv_1"), "MSG#conv_1#"},
		{PartPrefix("conv_1"), "CPART#conv_1#"},
		{HandoffPrefix("conv_1"), "HOFF#conv_1#"},
		{ApprovalSK("apr_1"), "APPROVAL#apr_1"},
		{StreamEventSK("session#ses_1", 42), "EVT#session#ses_1#000000000042"},
		{StreamEventPrefix("conv#conv_1"), "EVT#conv#conv_1#"},
		{ConvWorkGSI4PK("t1", "conv_1"), "CONVWORK#t1#conv_1"},
		{ConvWorkGSI4SK(when, "task_1"), "2026-01-02T03:04:05.600000000Z#task_1"},
		{ConvAgentGSI4PK("t1", "luke"), "CONVAGENT#t1#luke"},
		{SKTeam + "|" + SKAPIKey + "|" + SKMemEpoch + "|" + SKPolicy, "TEAM|APIKEY|MEMEPOCH|APPROVALPOLICY"},
	}
	for _, c := range cases {
		assert.Equal(t, c[1], c[0])
	}
	assert.Equal(t, DueShard("task_1"), DueShard("task_1"))
	for _, id := range []string{"a", "b", "task_01j", "task_zz"} {
		assert.Less(t, DueShard(id), DueShards)
	}
}

// Work keys sort as the times they hold, whatever their fraction of a
// second; work without a conversation is out of the index.
func TestWorkKeysSortByTime(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	times := []time.Time{base, base.Add(time.Nanosecond), base.Add(100 * time.Millisecond), base.Add(time.Second), base.Add(time.Second + 5)}
	for i := 1; i < len(times); i++ {
		assert.Less(t, ConvWorkGSI4SK(times[i-1], "task_z"), ConvWorkGSI4SK(times[i], "task_a"))
	}
	assert.Equal(t, ConvWorkGSI4SK(base.In(time.FixedZone("x", 3600)), "x"), ConvWorkGSI4SK(base, "x"), "in UTC")
	pk, sk := ConvWorkKeys("t1", "", base, "task_1")
	assert.Empty(t, pk+sk)
	pk, sk = ConvWorkKeys("t1", "conv_1", base, "task_1")
	assert.Equal(t, [2]string{"CONVWORK#t1#conv_1", "2026-01-02T03:04:05.000000000Z#task_1"}, [2]string{pk, sk})
}

// hasPrefix's range holds exactly the keys that begin with the prefix,
// for every character a key can hold.
func TestPrefixRangeIsBeginsWith(t *testing.T) {
	for c := byte(0x20); c < 0x7f; c++ {
		k := "TEV#tsk_1#" + string(c) + "0001"
		assert.True(t, k >= "TEV#tsk_1#" && k <= "TEV#tsk_1#"+PrefixEnd, "%q is in the range", k)
	}
	for _, outside := range []string{"TEV#tsk_2#0001", "TEV#tsk_1", "TEV#tsk_1$", "TEV#tsk_10#0001"[:8]} {
		assert.False(t, outside >= "TEV#tsk_1#" && outside <= "TEV#tsk_1#"+PrefixEnd, "%q is not", outside)
	}
}
