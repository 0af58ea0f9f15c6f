// Package taskfake is the in-memory fake of tasks.Store, tasks.TicketStore
// and tasks.DueStore (tasks, their timelines, the agents' slots and
// queues, slot tickets, due dates and the board policy), as
// shared/store/taskstore is the DynamoDB one; both are held to the store
// contract (shared/testkit/storetest).
package taskfake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/agentfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/approvalfake"
	"github.com/conclave-ai/conclave/shared/testkit/memstore/memtable"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var (
	_ tasks.Store       = (*Tasks)(nil)
	_ tasks.TicketStore = (*Tasks)(nil)
	_ tasks.DueStore    = (*Tasks)(nil)
)

// Tasks is tasks.Store on a memtable.Table: its tasks, timelines, tickets
// and board policies, and what its writes check or move beside them: the
// agents and their counters (agentfake), a task's conversation
// (memtable.KindConversation), the approvals a task's end cancels
// (approvalfake) and its escalation's listing (memtable.KindEscalation).
// Safe for concurrent use.
type Tasks struct {
	*agentfake.Agents
	tb *memtable.Table
}

// New returns the tasks of tb (nil: a table of their own).
func New(tb *memtable.Table) *Tasks {
	if tb == nil {
		tb = memtable.New()
	}
	return &Tasks{Agents: agentfake.New(tb), tb: tb}
}

// state is the tasks' part of the table.
type state struct {
	tasks    map[memtable.Key]tasks.Task
	events   map[memtable.Key][]tasks.Event // by team and task id
	tickets  map[memtable.Key]tasks.Ticket  // by team and ticket key
	policies map[string]tasks.BoardPolicy   // by team
	// dueOut are the tasks whose due entry was dropped out of the index
	// (DropDueEntry) until a write puts it back (dueIn).
	dueOut map[memtable.Key]bool
}

// st is the tasks' part of the table. Call with the table locked.
func (s *Tasks) st() *state {
	return memtable.Part(s.tb, "tasks", func() *state {
		return &state{tasks: map[memtable.Key]tasks.Task{}, events: map[memtable.Key][]tasks.Event{},
			tickets: map[memtable.Key]tasks.Ticket{}, policies: map[string]tasks.BoardPolicy{}, dueOut: map[memtable.Key]bool{}}
	})
}

// copyTask deep-copies a task as the adapter's item stores it: the
// timeline (Events) is not part of the item, and nil lists read back empty.
func copyTask(t tasks.Task) tasks.Task {
	t.Events = nil
	t.InputArtifacts = slices.Clone(t.InputArtifacts)
	t.ResultArtifacts = slices.Clone(t.ResultArtifacts)
	t.Chain = slices.Clone(t.Chain)
	t.ApprovalIDs = slices.Clone(t.ApprovalIDs)
	// The payloads are JSON text in the adapter's item: empty reads back
	// absent, anything else byte for byte.
	t.Input, t.Output = cloneJSON(t.Input), cloneJSON(t.Output)
	if t.InputArtifacts == nil {
		t.InputArtifacts = []string{}
	}
	if t.ResultArtifacts == nil {
		t.ResultArtifacts = []string{}
	}
	if t.Chain == nil {
		t.Chain = []string{}
	}
	t.DueAt, t.Deadline = memtable.CloneTime(t.DueAt), memtable.CloneTime(t.Deadline)
	if t.Report != nil {
		r := *t.Report
		t.Report = &r
	}
	if t.HeldCall != nil {
		h := *t.HeldCall
		h.Reasons = slices.Clone(h.Reasons)
		h.Arguments = slices.Clone(h.Arguments)
		t.HeldCall = &h
	}
	t.StartedAt, t.CompletedAt = memtable.CloneTime(t.StartedAt), memtable.CloneTime(t.CompletedAt)
	t.OverdueAt, t.Escalation = memtable.CloneTime(t.OverdueAt), cloneEscalation(t.Escalation)
	return t
}

func cloneJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return slices.Clone(b)
}

// copyEvent copies an event; its payload goes through JSON, so numbers
// read back as float64 and times as strings, as from the adapter's map.
func copyEvent(e tasks.Event) tasks.Event {
	if e.Payload != nil {
		e.Payload = memtable.ReadDoc[map[string]any](memtable.Doc(e.Payload))
	}
	return e
}

// slotFree is the condition of the adapter's takeSlot: the assignee's
// active-task counter is below the limit. Call with the table locked.
func (s *Tasks) slotFree(teamID, slug string) bool {
	l := agentfake.LoadIf(s.tb, teamID, slug)
	return l == nil || l.ActiveTasks < tasks.MaxActivePerAgent
}

// queueFree is the condition of the adapter's enterQueue: the assignee's
// queue of work items is below its bound. Call with the table locked.
func (s *Tasks) queueFree(teamID, slug string) bool {
	l := agentfake.LoadIf(s.tb, teamID, slug)
	return l == nil || l.QueuedWork < tasks.MaxQueuedPerAgent
}

// assigneeActive is takeSlot's condition check on the agent item: it
// exists and is active. Call with the table locked.
func (s *Tasks) assigneeActive(teamID, slug string) bool {
	a, ok := agentfake.Agent(s.tb, teamID, slug)
	return ok && a.Status == agents.StatusActive
}

// budgetLeft is the adapter's "tree_cost_usd < cost_cap_usd" on a stored
// task; a missing task fails it, as a condition on a missing item does.
func (s *Tasks) budgetLeft(teamID, id string) bool {
	t, ok := s.st().tasks[memtable.Key{Team: teamID, ID: id}]
	return ok && t.TreeCostUSD < t.CostCapUSD
}

// eventsFree is the append-only condition on the events: none exists yet.
func (s *Tasks) eventsFree(teamID, taskID string, events []tasks.Event) bool {
	have := s.st().events[memtable.Key{Team: teamID, ID: taskID}]
	for _, e := range events {
		for _, h := range have {
			if h.Seq == e.Seq {
				return false
			}
		}
	}
	return true
}

// CreateTask implements tasks.Store: the task, its first events, the
// assignee's slot and every delegation rule at once. The conditions are
// those of the adapter's transaction, and when several fail the one
// reported is the first in the transaction's order, as the adapter does
// with the cancellation reasons: task, conversation, slot, assignee,
// creator, parent, root. The parent and root conditions read the stored items, not the
// parent passed in (whose RootID only decides which item carries the
// budget, as in the adapter).
func (s *Tasks) CreateTask(ctx context.Context, t tasks.Task, parent *tasks.Task, events []tasks.Event) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	if err := memtable.RefTaken(ctx, s.tb, t.TeamID, tasks.RefKind); err != nil {
		return err
	}
	if err := s.createFree(t, parent, events); err != nil {
		return err
	}
	st := s.st()
	st.tasks[memtable.Key{Team: t.TeamID, ID: t.ID}] = copyTask(t)
	s.dueIn(nil, t)
	s.appendEvents(t.TeamID, t.ID, events)
	switch {
	case t.WorkItem():
		agentfake.LoadOf(s.tb, t.TeamID, t.Assignee).QueuedWork++ // a new task is queued
	case t.PlanRoot():
		// no slot (Task.HoldsSlot)
	case t.Ticket != "":
		delete(st.tickets, memtable.Key{Team: t.TeamID, ID: t.Ticket}) // its slot is the ticket's
	default:
		agentfake.LoadOf(s.tb, t.TeamID, t.Assignee).ActiveTasks++
	}
	memtable.RefSet(ctx, s.tb, t.TeamID, tasks.RefKind, t.ID)
	return nil
}

// createFree is the conditions of CreateTask, in the adapter's
// transaction's order. Call with the table locked.
func (s *Tasks) createFree(t tasks.Task, parent *tasks.Task, events []tasks.Event) error {
	st := s.st()
	if _, ok := st.tasks[memtable.Key{Team: t.TeamID, ID: t.ID}]; ok || !s.eventsFree(t.TeamID, t.ID, events) {
		return &tasks.ConditionFailed{Item: tasks.ItemTask}
	}
	if t.ConversationID != "" && (parent == nil || parent.ConversationID != t.ConversationID) {
		if _, ok := memtable.Docs(s.tb, memtable.KindConversation)[memtable.Key{Team: t.TeamID, ID: t.ConversationID}]; !ok {
			return &tasks.ConditionFailed{Item: tasks.ItemConversation}
		}
	}
	if t.Ticket != "" && !t.WorkItem() {
		if tk, ok := st.tickets[memtable.Key{Team: t.TeamID, ID: t.Ticket}]; !ok || tk.Status != tasks.TicketGranted || tk.Agent != t.Assignee {
			return &tasks.ConditionFailed{Item: tasks.ItemTicket}
		}
	} else if !t.WorkItem() && !t.PlanRoot() && !s.slotFree(t.TeamID, t.Assignee) {
		return &tasks.ConditionFailed{Item: tasks.ItemSlot}
	}
	if t.WorkItem() && !s.queueFree(t.TeamID, t.Assignee) {
		return &tasks.ConditionFailed{Item: tasks.ItemQueue}
	}
	if !s.assigneeActive(t.TeamID, t.Assignee) {
		return &tasks.ConditionFailed{Item: tasks.ItemAssignee}
	}
	if parent == nil && t.CreatedBy.Type == "agent" {
		if _, ok := agentfake.Agent(s.tb, t.TeamID, t.CreatedBy.ID); !ok {
			return &tasks.ConditionFailed{Item: tasks.ItemCreator}
		}
	}
	if parent != nil {
		p, ok := st.tasks[memtable.Key{Team: t.TeamID, ID: parent.ID}]
		okParent := ok && p.Status == tasks.Running && p.Depth < tasks.MaxDepth &&
			!slices.Contains(p.Chain, t.Assignee) && p.Assignee == t.CreatedBy.ID
		if t.PlanStep() {
			okParent = ok && p.Status == tasks.Running && p.Depth < tasks.MaxDepth && p.PlanID == t.PlanID
		}
		if okParent && parent.RootID == parent.ID {
			okParent = p.TreeCostUSD < p.CostCapUSD // the parent is the collaboration's root
		}
		if !okParent {
			return &tasks.ConditionFailed{Item: tasks.ItemParent}
		}
		if parent.RootID != parent.ID && !s.budgetLeft(t.TeamID, parent.RootID) {
			return &tasks.ConditionFailed{Item: tasks.ItemRoot}
		}
	}
	return nil
}

func (s *Tasks) appendEvents(teamID, taskID string, events []tasks.Event) {
	st := s.st()
	k := memtable.Key{Team: teamID, ID: taskID}
	for _, e := range events {
		st.events[k] = append(st.events[k], copyEvent(e))
	}
}

// ApplyTask implements tasks.Store: the new state conditioned on the
// version read and the allowed source states, its events, the slot moves
// and the charge to the collaboration's root, at once. As in the adapter:
// a slot is released when the task stops holding one or changes assignee
// (unconditionally, so a counter can go below zero if the books were
// already wrong), and taken (below the limit, assignee active) when it
// starts holding one or changes assignee; failures are reported in the
// transaction's order: task, slot, assignee.
//
// One difference: the adapter's charge is an unconditional ADD on the root
// item, which would create a stub item if the root were missing; here a
// missing root is not charged (a root is never deleted, so this does not
// arise).
func (s *Tasks) ApplyTask(_ context.Context, c tasks.Change) error {
	s.tb.Lock()
	defer s.tb.Unlock()
	b, a := c.Before, c.After
	k := memtable.Key{Team: a.TeamID, ID: a.ID}
	cur, ok := s.st().tasks[k]
	if !ok || cur.Version != b.Version || (len(c.From) > 0 && !slices.Contains(c.From, cur.Status)) ||
		!s.eventsFree(a.TeamID, a.ID, c.Events) {
		return &tasks.ConditionFailed{Item: tasks.ItemTask}
	}
	mv := movesOf(c)
	if err := s.checkMoves(c, mv); err != nil {
		return err
	}
	// The task's approvals still pending end with it, each conditioned
	// on pending, as in the adapter's transaction.
	for _, e := range c.EndApprovals {
		if !approvalfake.Pending(s.tb, a.TeamID, e.ID) {
			return &tasks.ConditionFailed{Item: tasks.ItemApproval + e.ID}
		}
	}
	if !s.escalationWritable(b, a) {
		return &tasks.ConditionFailed{Item: tasks.ItemEscalation}
	}
	s.writeEscalation(b, a)
	for _, e := range c.EndApprovals {
		approvalfake.Cancel(s.tb, a.TeamID, e.ID, e.By, e.Reason, e.At)
	}
	s.st().tasks[k] = copyTask(a)
	s.dueIn(&b, a)
	s.appendEvents(a.TeamID, a.ID, c.Events)
	s.applyMoves(c, mv)
	if c.RootCharge > 0 && a.RootID != a.ID {
		rk := memtable.Key{Team: a.TeamID, ID: a.RootID}
		if root, ok := s.st().tasks[rk]; ok {
			// The version bump makes a concurrent write of the root (which
			// read the old tree cost) fail its condition and re-read.
			root.TreeCostUSD += c.RootCharge
			root.Version++
			s.st().tasks[rk] = root
		}
	}
	return nil
}

// moves are the counter moves of a change: a slot released (or handed to
// a ticket) and taken, a work item leaving and entering a queue.
type moves struct{ release, take, leave, enter bool }

func movesOf(c tasks.Change) moves {
	b, a := c.Before, c.After
	moved := b.Assignee != a.Assignee
	return moves{
		release: b.HoldsSlot() && (moved || !a.HoldsSlot()),
		take:    a.HoldsSlot() && (moved || !b.HoldsSlot()),
		leave:   b.InQueue() && (moved || !a.InQueue()),
		enter:   a.InQueue() && (moved || !b.InQueue()),
	}
}

// checkMoves is the conditions of the adapter's counter writes, in its
// transaction's order. Call with the table locked.
func (s *Tasks) checkMoves(c tasks.Change, mv moves) error {
	b, a := c.Before, c.After
	if mv.enter {
		if !s.queueFree(a.TeamID, a.Assignee) {
			return &tasks.ConditionFailed{Item: tasks.ItemQueue}
		}
		if !s.assigneeActive(a.TeamID, a.Assignee) {
			return &tasks.ConditionFailed{Item: tasks.ItemAssignee}
		}
	}
	if mv.release {
		if err := s.releaseCheck(b.TeamID, b.Assignee, c.Handoff, c.ForceRelease); err != nil {
			return err
		}
	}
	if mv.take {
		// The release item comes before the slot in the adapter's
		// transaction but has no condition, and it is another agent's
		// counter whenever both happen: the take sees the counter as is.
		if !s.slotFree(a.TeamID, a.Assignee) {
			return &tasks.ConditionFailed{Item: tasks.ItemSlot}
		}
		if !s.assigneeActive(a.TeamID, a.Assignee) {
			return &tasks.ConditionFailed{Item: tasks.ItemAssignee}
		}
	}
	return nil
}

// applyMoves moves the counters checkMoves allowed. Call with the lock
// held.
func (s *Tasks) applyMoves(c tasks.Change, mv moves) {
	b, a := c.Before, c.After
	if mv.release {
		s.releaseSlot(b.TeamID, b.Assignee, c.Handoff)
	}
	if mv.take {
		agentfake.LoadOf(s.tb, a.TeamID, a.Assignee).ActiveTasks++
	}
	if mv.leave {
		agentfake.LoadOf(s.tb, b.TeamID, b.Assignee).QueuedWork--
	}
	if mv.enter {
		agentfake.LoadOf(s.tb, a.TeamID, a.Assignee).QueuedWork++
	}
}

// ReleaseResult implements tasks.Store: DeliverInReply becomes
// DeliverToConversation (the version bumped) while the task is not
// terminal; otherwise the task is returned as stored. ENOTFOUND.
func (s *Tasks) ReleaseResult(_ context.Context, teamID, id string, at time.Time) (tasks.Task, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	k := memtable.Key{Team: teamID, ID: id}
	t, ok := s.st().tasks[k]
	if !ok {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	if t.ResultDelivery == tasks.DeliverInReply && !t.Status.Terminal() {
		t.ResultDelivery, t.UpdatedAt = tasks.DeliverToConversation, at
		t.Version++
		s.st().tasks[k] = t
	}
	return copyTask(t), nil
}

// GetTask implements tasks.Store, without the timeline. Returns ENOTFOUND.
func (s *Tasks) GetTask(_ context.Context, teamID, id string) (tasks.Task, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	return s.getTask(teamID, id)
}

func (s *Tasks) getTask(teamID, id string) (tasks.Task, error) {
	t, ok := s.st().tasks[memtable.Key{Team: teamID, ID: id}]
	if !ok {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	return copyTask(t), nil
}

// ListTasks implements tasks.Store, newest first. As in the adapter the
// conversation filter selects the conversation's tasks (its index, by
// creation time, the page refilled while the other filters leave it
// short: memtable.QueryFill; the index's other kinds of work are not
// among its rows here), else the parent filter selects the parent's
// delegations (its index), else the assignee filter selects the
// assignee's tasks, else all of the team's;
// the other filters apply after the limit, so a page may hold fewer than
// Limit tasks while a next token is returned. The adapter sends p.Limit to
// DynamoDB as it is, and DynamoDB rejects a limit below 1: so does this
// store (EINTERNAL), since tasks.Service.List passes the page through
// without normalizing it.
func (s *Tasks) ListTasks(_ context.Context, teamID string, f tasks.Filter, p paging.Page) ([]tasks.Task, string, error) {
	if p.Limit < 1 {
		return nil, "", memtable.Internal("ListTasks: limit must be at least 1 (DynamoDB rejects Limit 0)")
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	index := ""
	selected := func(t tasks.Task) bool { return true }
	switch {
	case f.ConversationID != "":
		index = "gsi4:" + f.ConversationID
		selected = func(t tasks.Task) bool { return t.ConversationID == f.ConversationID }
	case f.Parent != "":
		index = "gsi2"
		selected = func(t tasks.Task) bool { return t.ParentID == f.Parent }
	case f.Assignee != "":
		index = "gsi1"
		selected = func(t tasks.Task) bool { return t.Assignee == f.Assignee }
	}
	var rows []memtable.Row[tasks.Task]
	for k, t := range s.st().tasks {
		if k.Team == teamID && selected(t) {
			sk := t.ID
			if f.ConversationID != "" {
				sk = memtable.WorkKey(t.CreatedAt, t.ID)
			}
			rows = append(rows, memtable.Row[tasks.Task]{SK: sk, V: copyTask(t)})
		}
	}
	keep := func(t tasks.Task) bool {
		if (f.Parent != "" || f.ConversationID != "") && f.Assignee != "" && t.Assignee != f.Assignee {
			return false
		}
		if f.Status != "" && t.Status != f.Status {
			return false
		}
		if f.UserID != "" && t.UserID != f.UserID {
			return false
		}
		if f.Agent != "" && t.Assignee != f.Agent && (t.CreatedBy.Type != "agent" || t.CreatedBy.ID != f.Agent) {
			return false
		}
		return true
	}
	if f.ConversationID != "" {
		return memtable.QueryFill(rows, true, fmt.Sprintf("tasks:%s:%s", teamID, index), p, keep)
	}
	return memtable.Query(rows, true, fmt.Sprintf("tasks:%s:%s", teamID, index), p, keep)
}

// QueuedWork implements tasks.Store as the adapter's sparse queue index:
// the agent's queued work items, ascending by priority rank, then id.
func (s *Tasks) QueuedWork(_ context.Context, teamID, assignee string, p paging.Page) ([]tasks.Task, string, error) {
	if p.Limit < 1 {
		return nil, "", memtable.Internal("QueuedWork: limit must be at least 1 (DynamoDB rejects Limit 0)")
	}
	s.tb.Lock()
	defer s.tb.Unlock()
	var rows []memtable.Row[tasks.Task]
	for k, t := range s.st().tasks {
		if k.Team == teamID && t.Assignee == assignee && t.InQueue() {
			rows = append(rows, memtable.Row[tasks.Task]{SK: fmt.Sprintf("%d#%s", tasks.PriorityRank(t.Priority), t.ID), V: copyTask(t)})
		}
	}
	return memtable.Query(rows, false, fmt.Sprintf("queue:%s:%s", teamID, assignee), p, nil)
}

// maxTaskEvents is the adapter's bound on one timeline read: it stops
// after the page that reaches it, so a longer timeline is cut at (about)
// this many events.
const maxTaskEvents = 1000

// ListTaskEvents implements tasks.Store, oldest first (nil for a task
// without events, as the adapter).
func (s *Tasks) ListTaskEvents(_ context.Context, teamID, id string) ([]tasks.Event, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	evs := s.st().events[memtable.Key{Team: teamID, ID: id}]
	var out []tasks.Event
	for _, e := range evs {
		out = append(out, copyEvent(e))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	if len(out) > maxTaskEvents {
		out = out[:maxTaskEvents]
	}
	return out, nil
}

// AgentLoad implements tasks.Store: the agent's counters as stored (zero
// when it has none; not clamped, as in the adapter).
func (s *Tasks) AgentLoad(_ context.Context, teamID, slug string) (tasks.Load, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	if l := agentfake.LoadIf(s.tb, teamID, slug); l != nil {
		return tasks.Load{Active: l.ActiveTasks, Queued: l.QueuedWork}, nil
	}
	return tasks.Load{}, nil
}

// TaskAgents implements messaging.Directory: the task's assignee, its
// delegation chain and the agent that created it. Returns ENOTFOUND.
func (s *Tasks) TaskAgents(_ context.Context, teamID, taskID string) ([]string, error) {
	s.tb.Lock()
	defer s.tb.Unlock()
	t, err := s.getTask(teamID, taskID)
	if err != nil {
		return nil, err
	}
	return t.Agents(), nil
}
