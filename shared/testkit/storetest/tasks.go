package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var user = tasks.Creator{Type: "user", ID: "key_contract"}

// queued is an executed task of assignee's, created by the service (one
// slot; the service has no workflow runner, so it stays queued until a
// verb moves it).
func (f *fixture) queued(t *testing.T, assignee string) tasks.Task {
	t.Helper()
	tk, err := f.tasks.Create(context.Background(), f.team, user, tasks.CreateInput{Assignee: assignee, Title: "contract work"}, true)
	require.NoError(t, err)
	return tk
}

// workItem is a board task of assignee's (tasks.Task.WorkItem): no slot,
// one place in the assignee's queue.
func (f *fixture) workItem(t *testing.T, assignee string) tasks.Task {
	t.Helper()
	tk, err := f.tasks.Create(context.Background(), f.team, user, tasks.CreateInput{Assignee: assignee, Title: "board work"}, false)
	require.NoError(t, err)
	return tk
}

// running is an executed task of assignee's that has started.
func (f *fixture) running(t *testing.T, assignee string) tasks.Task {
	t.Helper()
	tk, err := f.tasks.Start(context.Background(), f.team, f.queued(t, assignee).ID, "user:key_contract")
	require.NoError(t, err)
	return tk
}

// child is a task delegated from parent to assignee by the service.
func (f *fixture) child(t *testing.T, parent tasks.Task, assignee string) tasks.Task {
	t.Helper()
	tk, err := f.tasks.Create(context.Background(), f.team, user, tasks.CreateInput{Assignee: assignee, ParentID: parent.ID, Title: "help"}, false)
	require.NoError(t, err)
	return tk
}

// another is t under a new id, as a fresh create would write it: a root
// task is its own root.
func another(t tasks.Task) tasks.Task {
	c := t
	c.ID = ids.New("task")
	if t.RootID == t.ID {
		c.RootID = c.ID
	}
	c.Chain = append([]string{}, t.Chain...)
	return c
}

// failedOn requires err to be the store's refusal naming item.
func failedOn(t *testing.T, err error, item string) {
	t.Helper()
	var cf *tasks.ConditionFailed
	require.True(t, errors.As(err, &cf), "want a condition failed on %q, got %v", item, err)
	assert.Equal(t, item, cf.Item)
}

// absent requires that the task was not written.
func (f *fixture) absent(t *testing.T, id string) {
	t.Helper()
	_, err := f.Tasks.GetTask(context.Background(), f.team, id)
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "task %s was written by a refused create: %v", id, err)
}

func (f *fixture) load(t *testing.T, slug string) int {
	t.Helper()
	return f.counters(t, slug).Active
}

func (f *fixture) counters(t *testing.T, slug string) tasks.Load {
	t.Helper()
	n, err := f.Tasks.AgentLoad(context.Background(), f.team, slug)
	require.NoError(t, err)
	return n
}

// taskWorkItems: a work item takes no slot but a place in its assignee's
// queue, which it leaves when it starts, moves with it when reassigned,
// and never takes back; an agent at its five slots still takes work
// items, and a paused one does not.
func taskWorkItems(t *testing.T, f *fixture) {
	ctx := context.Background()
	for range tasks.MaxActivePerAgent {
		f.queued(t, "ann")
	}
	items := []tasks.Task{f.workItem(t, "ann"), f.workItem(t, "ann"), f.workItem(t, "ann")}
	assert.Equal(t, tasks.Load{Active: tasks.MaxActivePerAgent, Queued: 3}, f.counters(t, "ann"), "work items beside five slots")

	start := func(tk tasks.Task, from tasks.Status, edit func(*tasks.Task)) tasks.Task {
		t.Helper()
		cur := f.get(t, tk.ID)
		require.NoError(t, f.Tasks.ApplyTask(ctx, change(cur, []tasks.Status{from}, edit)))
		return f.get(t, tk.ID)
	}
	start(items[0], tasks.Queued, func(a *tasks.Task) { a.Status = tasks.Running })
	assert.Equal(t, tasks.Load{Active: tasks.MaxActivePerAgent, Queued: 2}, f.counters(t, "ann"), "started: out of the queue, no slot")
	start(items[0], tasks.Running, func(a *tasks.Task) { a.Status = tasks.Blocked })
	start(items[0], tasks.Blocked, func(a *tasks.Task) { a.Status = tasks.Running })
	start(items[0], tasks.Running, func(a *tasks.Task) { a.Status = tasks.Completed })
	assert.Equal(t, tasks.Load{Active: tasks.MaxActivePerAgent, Queued: 2}, f.counters(t, "ann"), "blocked, resumed, ended: no slot moves")

	start(items[1], tasks.Queued, func(a *tasks.Task) { a.Assignee, a.Chain = "bob", []string{"bob"} })
	assert.Equal(t, tasks.Load{Active: tasks.MaxActivePerAgent, Queued: 1}, f.counters(t, "ann"), "reassigned: out of ann's queue")
	assert.Equal(t, tasks.Load{Queued: 1}, f.counters(t, "bob"), "into bob's")
	r := start(items[2], tasks.Queued, func(a *tasks.Task) { a.Status = tasks.Running })
	start(r, tasks.Running, func(a *tasks.Task) { a.Status, a.Assignee, a.Chain = tasks.Queued, "bob", []string{"bob"} })
	assert.Equal(t, tasks.Load{Active: tasks.MaxActivePerAgent}, f.counters(t, "ann"))
	assert.Equal(t, tasks.Load{Queued: 2}, f.counters(t, "bob"), "a running work item put back queued for another agent enters its queue")

	_, err := f.Agents.SetStatus(ctx, f.team, "cat", agents.StatusPaused, time.Now().UTC())
	require.NoError(t, err)
	tk := another(items[0])
	tk.Status, tk.Version, tk.Assignee, tk.Chain, tk.CompletedAt = tasks.Queued, 1, "cat", []string{"cat"}, nil
	failedOn(t, f.Tasks.CreateTask(ctx, tk, nil, nil), tasks.ItemAssignee)
	f.absent(t, tk.ID)
	assert.Zero(t, f.counters(t, "cat"))
}

func (f *fixture) get(t *testing.T, id string) tasks.Task {
	t.Helper()
	tk, err := f.Tasks.GetTask(context.Background(), f.team, id)
	require.NoError(t, err)
	return tk
}

// change is the write of after over before (one version up), allowed from
// the statuses from.
func change(before tasks.Task, from []tasks.Status, edit func(*tasks.Task)) tasks.Change {
	after := before
	after.Chain = append([]string{}, before.Chain...)
	after.Version = before.Version + 1
	after.UpdatedAt = time.Now().UTC()
	edit(&after)
	return tasks.Change{Before: before, After: after, From: from}
}

func taskSlots(t *testing.T, f *fixture) {
	var first tasks.Task
	for i := range tasks.MaxActivePerAgent {
		tk := f.queued(t, "ann")
		if i == 0 {
			first = tk
		}
	}
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "ann"))
	over := another(first)
	failedOn(t, f.Tasks.CreateTask(context.Background(), over, nil, nil), tasks.ItemSlot)
	f.absent(t, over.ID)
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "ann"), "a refused create takes no slot")
}

func taskSlotsConcurrent(t *testing.T, f *fixture) {
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, refused := 0, 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.tasks.Create(context.Background(), f.team, user, tasks.CreateInput{Assignee: "bob", Title: "race"}, true)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				created++
			} else if ae, ok := apperr.As(err); ok && ae.Reason == tasks.ReasonConcurrency {
				refused++
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, tasks.MaxActivePerAgent, created, "exactly the limit, whatever the interleaving")
	assert.Equal(t, n-tasks.MaxActivePerAgent, refused, "every other create refused on the limit")
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "bob"))
}

func taskAssignee(t *testing.T, f *fixture) {
	ctx := context.Background()
	tmpl := f.queued(t, "ann")
	_, err := f.Agents.SetStatus(ctx, f.team, "cat", agents.StatusPaused, time.Now().UTC())
	require.NoError(t, err)
	for _, slug := range []string{"cat", "nobody"} {
		tk := another(tmpl)
		tk.Assignee, tk.Chain = slug, []string{slug}
		failedOn(t, f.Tasks.CreateTask(ctx, tk, nil, nil), tasks.ItemAssignee)
		f.absent(t, tk.ID)
		assert.Zero(t, f.load(t, slug))
	}
	// A change that gives the task to an agent that is not active (a
	// reassignment, a resume) is refused on it too.
	r := f.running(t, "bob")
	failedOn(t, f.Tasks.ApplyTask(ctx, change(r, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Assignee = "cat" })), tasks.ItemAssignee)
	assert.Equal(t, "bob", f.get(t, r.ID).Assignee)
	assert.Equal(t, 1, f.load(t, "bob"))
}

func taskExists(t *testing.T, f *fixture) {
	tk := f.queued(t, "ann")
	again := tk
	again.Title = "written twice"
	failedOn(t, f.Tasks.CreateTask(context.Background(), again, nil, nil), tasks.ItemTask)
	assert.Equal(t, tk.Title, f.get(t, tk.ID).Title, "the task as first written")
	assert.Equal(t, 1, f.load(t, "ann"), "no second slot")
}

func taskConversation(t *testing.T, f *fixture) {
	ctx := context.Background()
	tmpl := f.queued(t, "ann")
	missing := another(tmpl)
	missing.ConversationID = ids.New("conv")
	failedOn(t, f.Tasks.CreateTask(ctx, missing, nil, nil), tasks.ItemConversation)
	f.absent(t, missing.ID)

	now := time.Now().UTC()
	conv := conversations.Conversation{ID: ids.New("conv"), TeamID: f.team, Title: "contract", Status: conversations.StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, f.Conversations.CreateConversation(ctx, conv, nil))
	linked := another(tmpl)
	linked.ConversationID = conv.ID
	require.NoError(t, f.Tasks.CreateTask(ctx, linked, nil, nil))
	assert.Equal(t, conv.ID, f.get(t, linked.ID).ConversationID)
}

func taskCreator(t *testing.T, f *fixture) {
	tk := another(f.queued(t, "ann"))
	tk.CreatedBy = tasks.Creator{Type: "agent", ID: "ghost"}
	failedOn(t, f.Tasks.CreateTask(context.Background(), tk, nil, nil), tasks.ItemCreator)
	f.absent(t, tk.ID)
}

func taskParent(t *testing.T, f *fixture) {
	ctx := context.Background()
	p := f.running(t, "ann")
	tmpl := f.child(t, p, "bob")
	read := f.get(t, p.ID) // the parent as a delegation reads it: running
	_, err := f.tasks.Complete(ctx, f.team, p.ID, "user:key_contract", "done", nil)
	require.NoError(t, err)
	late := another(tmpl)
	failedOn(t, f.Tasks.CreateTask(ctx, late, &read, nil), tasks.ItemParent)
	f.absent(t, late.ID)
}

func taskRoot(t *testing.T, f *fixture) {
	ctx := context.Background()
	root := f.running(t, "ann")
	mid, err := f.tasks.Start(ctx, f.team, f.child(t, root, "bob").ID, "user:key_contract")
	require.NoError(t, err)
	tmpl := f.child(t, mid, "cat")
	require.NotEqual(t, mid.RootID, mid.ID)
	// The collaboration's spend reaches its cap.
	cur := f.get(t, root.ID)
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(cur, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.TreeCostUSD = a.CostCapUSD })))
	read := f.get(t, mid.ID)
	late := another(tmpl)
	failedOn(t, f.Tasks.CreateTask(ctx, late, &read, nil), tasks.ItemRoot)
	f.absent(t, late.ID)
}

func taskVersion(t *testing.T, f *fixture) {
	ctx := context.Background()
	tk := f.queued(t, "ann")
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(tk, []tasks.Status{tasks.Queued}, func(a *tasks.Task) { a.Title = "first" })))
	failedOn(t, f.Tasks.ApplyTask(ctx, change(tk, []tasks.Status{tasks.Queued}, func(a *tasks.Task) { a.Title = "from a stale read" })), tasks.ItemTask)
	got := f.get(t, tk.ID)
	assert.Equal(t, "first", got.Title)
	assert.Equal(t, tk.Version+1, got.Version)
}

func taskFrom(t *testing.T, f *fixture) {
	tk := f.running(t, "ann")
	failedOn(t, f.Tasks.ApplyTask(context.Background(), change(tk, []tasks.Status{tasks.Queued}, func(a *tasks.Task) { a.Status = tasks.Canceled })), tasks.ItemTask)
	assert.Equal(t, tasks.Running, f.get(t, tk.ID).Status)
	assert.Equal(t, 1, f.load(t, "ann"))
}

func taskSlotMoves(t *testing.T, f *fixture) {
	ctx := context.Background()
	tk := f.running(t, "ann")
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(tk, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Assignee = "bob" })))
	assert.Zero(t, f.load(t, "ann"), "reassigned: the slot leaves its agent")
	assert.Equal(t, 1, f.load(t, "bob"), "and is taken on the new one")
	cur := f.get(t, tk.ID)
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(cur, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Status = tasks.Blocked })))
	assert.Zero(t, f.load(t, "bob"), "blocked holds no slot")
	cur = f.get(t, tk.ID)
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(cur, []tasks.Status{tasks.Blocked}, func(a *tasks.Task) { a.Status = tasks.Running })))
	assert.Equal(t, 1, f.load(t, "bob"), "resumed takes one again")
	cur = f.get(t, tk.ID)
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(cur, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Status = tasks.Completed })))
	assert.Zero(t, f.load(t, "bob"), "ended gives it back")

	// A resume beyond the limit is refused on the slot, and writes nothing.
	blocked := f.running(t, "cat")
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(blocked, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Status = tasks.Blocked })))
	for range tasks.MaxActivePerAgent {
		f.queued(t, "cat")
	}
	cur = f.get(t, blocked.ID)
	failedOn(t, f.Tasks.ApplyTask(ctx, change(cur, []tasks.Status{tasks.Blocked}, func(a *tasks.Task) { a.Status = tasks.Running })), tasks.ItemSlot)
	assert.Equal(t, tasks.Blocked, f.get(t, blocked.ID).Status)
	assert.Equal(t, tasks.MaxActivePerAgent, f.load(t, "cat"))
}

func (f *fixture) approval(t *testing.T, taskID string) approvals.Approval {
	t.Helper()
	now := time.Now().UTC()
	a := approvals.Approval{TeamID: f.team, ID: approvals.NewID(), Status: approvals.Pending, Tool: "send_agent_message",
		Arguments: json.RawMessage(`{"to_agent":"bob"}`), Agent: "ann", TaskID: taskID, CallID: "call-1", Reasons: []string{approvals.ReasonPolicyTool},
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Token: "token-1", ExecutionARN: "arn:x"}
	got, created, err := f.Approvals.RegisterApproval(context.Background(), a)
	require.NoError(t, err)
	require.True(t, created)
	return got
}

func taskEndsApprovals(t *testing.T, f *fixture) {
	ctx := context.Background()
	tk := f.running(t, "ann")
	pending, decided := f.approval(t, tk.ID), f.approval(t, tk.ID)
	require.NoError(t, f.Tasks.ApplyTask(ctx, change(tk, []tasks.Status{tasks.Running}, func(a *tasks.Task) {
		a.Status, a.StatusReason, a.ApprovalIDs = tasks.Blocked, tasks.ReasonAwaitingApproval, []string{pending.ID, decided.ID}
	})))
	_, err := f.Approvals.DecideApproval(ctx, f.team, decided.ID, approvals.Decision{Status: approvals.Approved, By: "user:key_contract", At: time.Now().UTC()})
	require.NoError(t, err)

	blocked := f.get(t, tk.ID)
	cancel := func(ends ...tasks.ApprovalEnd) tasks.Change {
		c := change(blocked, []tasks.Status{tasks.Blocked}, func(a *tasks.Task) { a.Status, a.StatusReason, a.ApprovalIDs = tasks.Canceled, "", nil })
		c.EndApprovals = ends
		return c
	}
	end := func(id string) tasks.ApprovalEnd {
		return tasks.ApprovalEnd{ID: id, Reason: "task canceled", By: "user:key_contract", At: time.Now().UTC()}
	}
	failedOn(t, f.Tasks.ApplyTask(ctx, cancel(end(pending.ID), end(decided.ID))), tasks.ItemApproval+decided.ID)
	assert.Equal(t, tasks.Blocked, f.get(t, tk.ID).Status, "a refused change writes nothing")
	p, err := f.Approvals.GetApproval(ctx, f.team, pending.ID)
	require.NoError(t, err)
	assert.Equal(t, approvals.Pending, p.Status, "not even the approval whose condition held")

	require.NoError(t, f.Tasks.ApplyTask(ctx, cancel(end(pending.ID))))
	p, err = f.Approvals.GetApproval(ctx, f.team, pending.ID)
	require.NoError(t, err)
	assert.Equal(t, approvals.Canceled, p.Status)
	assert.Equal(t, "user:key_contract", p.DecidedBy)
	d, err := f.Approvals.GetApproval(ctx, f.team, decided.ID)
	require.NoError(t, err)
	assert.Equal(t, approvals.Approved, d.Status, "a decided approval keeps its decision")
}

func taskOrder(t *testing.T, f *fixture) {
	ctx := context.Background()
	tk := f.running(t, "ann")
	_, err := f.tasks.Complete(ctx, f.team, tk.ID, "user:key_contract", "done", nil)
	require.NoError(t, err)
	evs, err := f.Tasks.ListTaskEvents(ctx, f.team, tk.ID)
	require.NoError(t, err)
	require.Len(t, evs, 3)
	for i, e := range evs {
		assert.Equal(t, i+1, e.Seq, "events in the order they happened")
	}
	assert.Equal(t, []string{tasks.EvCreated, tasks.EvStarted, tasks.EvCompleted}, []string{evs[0].Type, evs[1].Type, evs[2].Type})

	// Due: running tasks whose deadline is before the time asked, and only
	// those (a later deadline, an ended task are not).
	base := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	var due []string
	for i, slug := range []string{"ann", "bob", "cat"} {
		r := f.running(t, slug)
		deadline := base.Add(time.Duration(i) * time.Minute)
		require.NoError(t, f.Tasks.ApplyTask(ctx, change(r, []tasks.Status{tasks.Running}, func(a *tasks.Task) { a.Deadline = &deadline })))
		due = append(due, r.ID)
	}
	refs, err := f.Tasks.DueTasks(ctx, base.Add(90*time.Second), 1000)
	require.NoError(t, err)
	var ours []string
	for _, r := range refs {
		if r.TeamID == f.team {
			ours = append(ours, r.ID)
		}
	}
	assert.ElementsMatch(t, due[:2], ours, "the two due before then, not the third, not the completed one")
}

func approvalOnce(t *testing.T, f *fixture) {
	ctx := context.Background()
	tk := f.running(t, "ann")
	a := f.approval(t, tk.ID)
	retry := a
	retry.Token, retry.ExecutionARN = "token-2", "arn:y"
	got, created, err := f.Approvals.RegisterApproval(ctx, retry)
	require.NoError(t, err)
	assert.False(t, created, "a retried registration creates nothing")
	assert.Equal(t, "token-2", got.Token, "it replaces the token while pending")

	d := approvals.Decision{Status: approvals.Rejected, By: "user:key_contract", UserID: "alice", Reason: "no", At: time.Now().UTC()}
	decided, err := f.Approvals.DecideApproval(ctx, f.team, a.ID, d)
	require.NoError(t, err)
	assert.Equal(t, approvals.Rejected, decided.Status)
	assert.Equal(t, "alice", decided.UserID, "the person who decided")
	d.Status = approvals.Approved
	_, err = f.Approvals.DecideApproval(ctx, f.team, a.ID, d)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err), "decided once")
	late := a
	late.Token = "token-3"
	got, created, err = f.Approvals.RegisterApproval(ctx, late)
	require.NoError(t, err)
	assert.False(t, created)
	assert.Equal(t, approvals.Rejected, got.Status, "a decided approval comes back as decided")
	cur, err := f.Approvals.GetApproval(ctx, f.team, a.ID)
	require.NoError(t, err)
	assert.Equal(t, "token-2", cur.Token, "and keeps its token")
	_, err = f.Approvals.DecideApproval(ctx, f.team, approvals.NewID(), d)
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
}

func approvalOrder(t *testing.T, f *fixture) {
	ctx := context.Background()
	tk := f.running(t, "ann")
	var made []string
	for range 3 {
		made = append(made, f.approval(t, tk.ID).ID)
		time.Sleep(2 * time.Millisecond)
	}
	list, _, err := f.Approvals.ListApprovals(ctx, f.team, approvals.Filter{Status: approvals.Pending}, paging.Page{Limit: 10})
	require.NoError(t, err)
	var got []string
	for _, a := range list {
		got = append(got, a.ID)
	}
	assert.Equal(t, []string{made[2], made[1], made[0]}, got, "newest first")
}

// taskPayloads: a task's input and output read back exactly as written
// (unicode, escapes, numbers beyond float64 and DynamoDB's range), by get
// and by list; a task without them has none.
func taskPayloads(t *testing.T, f *fixture) {
	ctx := context.Background()
	in := json.RawMessage(`{"name":"Zoë \u00e9 😀","n":123456789012345678901234567890.10,"e":1e400,"list":[true,null,"x"]}`)
	tk, err := f.tasks.Create(ctx, f.team, user, tasks.CreateInput{Assignee: "ann", Title: "payload", Input: in}, false)
	require.NoError(t, err)
	_, err = f.tasks.Start(ctx, f.team, tk.ID, "user:key_contract")
	require.NoError(t, err)
	_, err = f.tasks.CompleteWith(ctx, f.team, tk.ID, "user:key_contract", tasks.CompleteInput{Output: json.RawMessage(`["ünïcode",-0.0000000000000000000001]`)})
	require.NoError(t, err)
	got := f.get(t, tk.ID)
	assert.Equal(t, string(in), string(got.Input))
	assert.Equal(t, `["ünïcode",-0.0000000000000000000001]`, string(got.Output))
	plain := f.queued(t, "bob")
	list, _, err := f.Tasks.ListTasks(ctx, f.team, tasks.Filter{}, paging.Page{Limit: 10})
	require.NoError(t, err)
	seen := 0
	for _, l := range list {
		switch l.ID {
		case tk.ID:
			seen++
			assert.Equal(t, string(in), string(l.Input))
			assert.Equal(t, string(got.Output), string(l.Output))
		case plain.ID:
			seen++
			assert.Nil(t, l.Input)
			assert.Nil(t, l.Output)
		}
	}
	assert.Equal(t, 2, seen)
}

// taskQueue: the queue holds an agent's queued work items best first
// (priority, then creation), pages in that order, and loses a task that
// starts or moves to another agent (which gains it); delegations are never
// in it.
func taskQueue(t *testing.T, f *fixture) {
	ctx := context.Background()
	mk := func(assignee, title, priority string) tasks.Task {
		t.Helper()
		tk, err := f.tasks.Create(ctx, f.team, user, tasks.CreateInput{Assignee: assignee, Title: title, Priority: priority}, false)
		require.NoError(t, err)
		return tk
	}
	low := mk("ann", "low", "low")
	mk("ann", "normal", "")
	urgent := mk("ann", "urgent", "urgent")
	mk("ann", "high", "high")
	parent := f.running(t, "bob")
	f.child(t, parent, "ann") // a delegation of ann's: a slot, not in the queue
	titles := func(slug string, size int) []string {
		t.Helper()
		var out []string
		p := paging.Page{Limit: size}
		for {
			list, next, err := f.Tasks.QueuedWork(ctx, f.team, slug, p)
			require.NoError(t, err)
			for _, tk := range list {
				out = append(out, tk.Title)
			}
			if next == "" {
				return out
			}
			p.Token = next
		}
	}
	assert.Equal(t, []string{"urgent", "high", "normal", "low"}, titles("ann", 3))
	_, err := f.tasks.Start(ctx, f.team, urgent.ID, "user:key_contract")
	require.NoError(t, err)
	_, err = f.tasks.Reassign(ctx, f.team, low.ID, "user:key_contract", "cat")
	require.NoError(t, err)
	assert.Equal(t, []string{"high", "normal"}, titles("ann", 1))
	assert.Equal(t, []string{"low"}, titles("cat", 10))
	assert.Empty(t, titles("bob", 10), "a running task is in no queue")
}
