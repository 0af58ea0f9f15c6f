package memstore

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/work/approvals"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
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
	t.DueAt, t.Deadline = cloneTime(t.DueAt), cloneTime(t.Deadline)
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
	t.StartedAt, t.CompletedAt = cloneTime(t.StartedAt), cloneTime(t.CompletedAt)
	t.OverdueAt, t.Escalation = cloneTime(t.OverdueAt), cloneEscalation(t.Escalation)
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
		e.Payload = readDoc[map[string]any](doc(e.Payload))
	}
	return e
}

// slotFree is the condition of the adapter's takeSlot: the assignee's
// active-task counter is below the limit. Call with the lock held.
func (s *Store) slotFree(teamID, slug string) bool {
	l := s.loads[key{teamID, slug}]
	return l == nil || l.activeTasks < tasks.MaxActivePerAgent
}

// queueFree is the condition of the adapter's enterQueue: the assignee's
// queue of work items is below its bound. Call with the lock held.
func (s *Store) queueFree(teamID, slug string) bool {
	l := s.loads[key{teamID, slug}]
	return l == nil || l.queuedWork < tasks.MaxQueuedPerAgent
}

// assigneeActive is takeSlot's condition check on the agent item: it
// exists and is active. Call with the lock held.
func (s *Store) assigneeActive(teamID, slug string) bool {
	a, ok := s.agents[key{teamID, slug}]
	return ok && a.Status == agents.StatusActive
}

// budgetLeft is the adapter's "tree_cost_usd < cost_cap_usd" on a stored
// task; a missing task fails it, as a condition on a missing item does.
func (s *Store) budgetLeft(teamID, id string) bool {
	t, ok := s.tasks[key{teamID, id}]
	return ok && t.TreeCostUSD < t.CostCapUSD
}

// eventsFree is the append-only condition on the events: none exists yet.
func (s *Store) eventsFree(teamID, taskID string, events []tasks.Event) bool {
	have := s.taskEvents[key{teamID, taskID}]
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
func (s *Store) CreateTask(ctx context.Context, t tasks.Task, parent *tasks.Task, events []tasks.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refTaken(ctx, t.TeamID, tasks.RefKind); err != nil {
		return err
	}
	k := key{t.TeamID, t.ID}
	if _, ok := s.tasks[k]; ok || !s.eventsFree(t.TeamID, t.ID, events) {
		return &tasks.ConditionFailed{Item: tasks.ItemTask}
	}
	if t.ConversationID != "" && (parent == nil || parent.ConversationID != t.ConversationID) {
		if _, ok := s.convs[key{t.TeamID, t.ConversationID}]; !ok {
			return &tasks.ConditionFailed{Item: tasks.ItemConversation}
		}
	}
	if t.Ticket != "" && !t.WorkItem() {
		if tk, ok := s.tickets[key{t.TeamID, t.Ticket}]; !ok || tk.Status != tasks.TicketGranted || tk.Agent != t.Assignee {
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
		if _, ok := s.agents[key{t.TeamID, t.CreatedBy.ID}]; !ok {
			return &tasks.ConditionFailed{Item: tasks.ItemCreator}
		}
	}
	if parent != nil {
		p, ok := s.tasks[key{t.TeamID, parent.ID}]
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
	s.tasks[k] = copyTask(t)
	s.appendEvents(t.TeamID, t.ID, events)
	switch {
	case t.WorkItem():
		s.loadOf(t.TeamID, t.Assignee).queuedWork++ // a new task is queued
	case t.PlanRoot():
		// no slot (Task.HoldsSlot)
	case t.Ticket != "":
		delete(s.tickets, key{t.TeamID, t.Ticket}) // its slot is the ticket's
	default:
		s.loadOf(t.TeamID, t.Assignee).activeTasks++
	}
	s.refSet(ctx, t.TeamID, tasks.RefKind, t.ID)
	return nil
}

func (s *Store) appendEvents(teamID, taskID string, events []tasks.Event) {
	k := key{teamID, taskID}
	for _, e := range events {
		s.taskEvents[k] = append(s.taskEvents[k], copyEvent(e))
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
func (s *Store) ApplyTask(_ context.Context, c tasks.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, a := c.Before, c.After
	k := key{a.TeamID, a.ID}
	cur, ok := s.tasks[k]
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
		if ap, ok := s.approvalsRows().approvals[key{a.TeamID, e.ID}]; !ok || ap.Status != approvals.Pending {
			return &tasks.ConditionFailed{Item: tasks.ItemApproval + e.ID}
		}
	}
	if !s.escalationWritable(b, a) {
		return &tasks.ConditionFailed{Item: tasks.ItemEscalation}
	}
	s.writeEscalation(b, a)
	for _, e := range c.EndApprovals {
		rows := s.approvalsRows()
		ap := rows.approvals[key{a.TeamID, e.ID}]
		at := e.At
		ap.Status, ap.DecidedBy, ap.DecidedAt, ap.Reason = approvals.Canceled, e.By, &at, e.Reason
		rows.approvals[key{a.TeamID, e.ID}] = ap
	}
	s.tasks[k] = copyTask(a)
	s.appendEvents(a.TeamID, a.ID, c.Events)
	s.applyMoves(c, mv)
	if c.RootCharge > 0 && a.RootID != a.ID {
		rk := key{a.TeamID, a.RootID}
		if root, ok := s.tasks[rk]; ok {
			// The version bump makes a concurrent write of the root (which
			// read the old tree cost) fail its condition and re-read.
			root.TreeCostUSD += c.RootCharge
			root.Version++
			s.tasks[rk] = root
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
// transaction's order. Call with the lock held.
func (s *Store) checkMoves(c tasks.Change, mv moves) error {
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
func (s *Store) applyMoves(c tasks.Change, mv moves) {
	b, a := c.Before, c.After
	if mv.release {
		s.releaseSlot(b.TeamID, b.Assignee, c.Handoff)
	}
	if mv.take {
		s.loadOf(a.TeamID, a.Assignee).activeTasks++
	}
	if mv.leave {
		s.loadOf(b.TeamID, b.Assignee).queuedWork--
	}
	if mv.enter {
		s.loadOf(a.TeamID, a.Assignee).queuedWork++
	}
}

// ReleaseResult implements tasks.Store: DeliverInReply becomes
// DeliverToConversation (the version bumped) while the task is not
// terminal; otherwise the task is returned as stored. ENOTFOUND.
func (s *Store) ReleaseResult(_ context.Context, teamID, id string, at time.Time) (tasks.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key{teamID, id}
	t, ok := s.tasks[k]
	if !ok {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	if t.ResultDelivery == tasks.DeliverInReply && !t.Status.Terminal() {
		t.ResultDelivery, t.UpdatedAt = tasks.DeliverToConversation, at
		t.Version++
		s.tasks[k] = t
	}
	return copyTask(t), nil
}

// GetTask implements tasks.Store, without the timeline. Returns ENOTFOUND.
func (s *Store) GetTask(_ context.Context, teamID, id string) (tasks.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getTask(teamID, id)
}

func (s *Store) getTask(teamID, id string) (tasks.Task, error) {
	t, ok := s.tasks[key{teamID, id}]
	if !ok {
		return tasks.Task{}, apperr.NotFound("task", id)
	}
	return copyTask(t), nil
}

// ListTasks implements tasks.Store, newest first. As in the adapter the
// parent filter selects the parent's delegations (its index), else the
// assignee filter selects the assignee's tasks, else all of the team's;
// the other filters apply after the limit, so a page may hold fewer than
// Limit tasks while a next token is returned. The adapter sends p.Limit to
// DynamoDB as it is, and DynamoDB rejects a limit below 1: so does this
// store (EINTERNAL), since tasks.Service.List passes the page through
// without normalizing it.
func (s *Store) ListTasks(_ context.Context, teamID string, f tasks.Filter, p paging.Page) ([]tasks.Task, string, error) {
	if p.Limit < 1 {
		return nil, "", internal("ListTasks: limit must be at least 1 (DynamoDB rejects Limit 0)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	index := ""
	selected := func(t tasks.Task) bool { return true }
	switch {
	case f.Parent != "":
		index = "gsi2"
		selected = func(t tasks.Task) bool { return t.ParentID == f.Parent }
	case f.Assignee != "":
		index = "gsi1"
		selected = func(t tasks.Task) bool { return t.Assignee == f.Assignee }
	}
	var rows []row[tasks.Task]
	for k, t := range s.tasks {
		if k.team == teamID && selected(t) {
			rows = append(rows, row[tasks.Task]{sk: t.ID, v: copyTask(t)})
		}
	}
	keep := func(t tasks.Task) bool {
		if f.Parent != "" && f.Assignee != "" && t.Assignee != f.Assignee {
			return false
		}
		if f.Status != "" && t.Status != f.Status {
			return false
		}
		if f.Agent != "" && t.Assignee != f.Agent && (t.CreatedBy.Type != "agent" || t.CreatedBy.ID != f.Agent) {
			return false
		}
		return true
	}
	return query(rows, true, fmt.Sprintf("tasks:%s:%s", teamID, index), p, keep)
}

// QueuedWork implements tasks.Store as the adapter's sparse queue index:
// the agent's queued work items, ascending by priority rank, then id.
func (s *Store) QueuedWork(_ context.Context, teamID, assignee string, p paging.Page) ([]tasks.Task, string, error) {
	if p.Limit < 1 {
		return nil, "", internal("QueuedWork: limit must be at least 1 (DynamoDB rejects Limit 0)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var rows []row[tasks.Task]
	for k, t := range s.tasks {
		if k.team == teamID && t.Assignee == assignee && t.InQueue() {
			rows = append(rows, row[tasks.Task]{sk: fmt.Sprintf("%d#%s", tasks.PriorityRank(t.Priority), t.ID), v: copyTask(t)})
		}
	}
	return query(rows, false, fmt.Sprintf("queue:%s:%s", teamID, assignee), p, nil)
}

// maxTaskEvents is the adapter's bound on one timeline read: it stops
// after the page that reaches it, so a longer timeline is cut at (about)
// this many events.
const maxTaskEvents = 1000

// ListTaskEvents implements tasks.Store, oldest first (nil for a task
// without events, as the adapter).
func (s *Store) ListTaskEvents(_ context.Context, teamID, id string) ([]tasks.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs := s.taskEvents[key{teamID, id}]
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
func (s *Store) AgentLoad(_ context.Context, teamID, slug string) (tasks.Load, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.loads[key{teamID, slug}]; l != nil {
		return tasks.Load{Active: l.activeTasks, Queued: l.queuedWork}, nil
	}
	return tasks.Load{}, nil
}

// dueShards and dueShard are the adapter's: running tasks' deadlines are
// spread over 8 index partitions, and DueTasks reads up to limit from each.
const dueShards = 8

func dueShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % dueShards)
}

// dueKey is the adapter's index sort key: millisecond precision, UTC.
func dueKey(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// DueTasks implements tasks.Store: running tasks whose deadline is before
// the given time, across teams. It mirrors the adapter's sparse index
// exactly: keys compare as strings at millisecond precision (a deadline in
// the same millisecond as before is not due), each of the 8 shards returns
// up to limit tasks earliest first, and the shards come in order (so up to
// 8 × limit refs).
func (s *Store) DueTasks(_ context.Context, before time.Time, limit int) ([]tasks.Ref, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	type due struct {
		sk  string
		ref tasks.Ref
	}
	shards := make([][]due, dueShards)
	bound := dueKey(before)
	for _, t := range s.tasks {
		if t.Status != tasks.Running || t.Deadline == nil {
			continue
		}
		sk := dueKey(*t.Deadline) + "#" + t.TeamID + "#" + t.ID
		if sk < bound {
			n := dueShard(t.ID)
			shards[n] = append(shards[n], due{sk, tasks.Ref{TeamID: t.TeamID, ID: t.ID}})
		}
	}
	var refs []tasks.Ref
	for _, list := range shards {
		sort.Slice(list, func(i, j int) bool { return list[i].sk < list[j].sk })
		for i, d := range list {
			if limit > 0 && i == limit {
				break
			}
			refs = append(refs, d.ref)
		}
	}
	return refs, nil
}

// TaskAgents implements messaging.Directory: the task's assignee, its
// delegation chain and the agent that created it. Returns ENOTFOUND.
func (s *Store) TaskAgents(_ context.Context, teamID, taskID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.getTask(teamID, taskID)
	if err != nil {
		return nil, err
	}
	return t.Agents(), nil
}

// SessionAgents implements messaging.Directory: the lead and the
// participants of a collaboration session (ENOTFOUND for an unknown one).
func (s *Store) SessionAgents(ctx context.Context, teamID, sessionID string) ([]string, error) {
	v, err := s.GetSession(ctx, teamID, sessionID)
	if err != nil {
		return nil, apperr.NotFound("collaboration session", sessionID)
	}
	return v.Agents(), nil
}
