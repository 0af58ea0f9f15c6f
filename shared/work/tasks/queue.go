package tasks

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// An agent's queue is its queued work items (WorkItem: a board task, with
// no parent and not executed), best first: by priority (urgent, high,
// normal, low), then oldest first (task ids grow with their creation
// time, so the id breaks a tie in the same millisecond too). The store
// keeps the queue in that order (Store.QueuedWork), so listing it pages
// like any list and the next task is the first entry.

// SortPriority is the listing order of ?sort=priority (Filter.Sort).
const SortPriority = "priority"

// PriorityRank is a priority's place in the queue: 0 for urgent, 3 for
// low. A priority that is not one of Priorities (never stored: Create
// refuses it) ranks as normal.
func PriorityRank(p string) int {
	i := slices.Index(Priorities, p)
	if i < 0 {
		i = slices.Index(Priorities, "normal")
	}
	return len(Priorities) - 1 - i
}

// WorkItem reports whether t is a work item: a board task, created without
// a parent and without execution, that a person or the agent drives with
// the lifecycle verbs (and that next-task picks). A session's stage is
// not one: its workflow drives it, and it holds a slot (SessionID; a
// stage stored before SessionID existed is known by its creator, the
// session, when the lead is its agent).
func (t Task) WorkItem() bool {
	return t.ParentID == "" && !t.Execute && t.SessionID == "" && t.PlanID == "" && !strings.HasPrefix(t.CreatedBy.ID, SessionCreatorPrefix)
}

// PlanRoot reports whether t is a compound plan's root task.
func (t Task) PlanRoot() bool { return t.PlanID != "" && t.ParentID == "" }

// PlanStep reports whether t is a step of a compound plan: a child of its
// plan's root. The plan composes skills of any agents, so a step is not
// held to the delegation chain (the lead's own step, two steps of one
// agent); depth and the tree's budget hold as for any child.
func (t Task) PlanStep() bool { return t.PlanID != "" && t.ParentID != "" }

// SessionCreatorPrefix begins the creator id of a session's stage task
// ("session:" + the session id) that the session's creator gives the lead.
const SessionCreatorPrefix = "session:"

// InQueue reports whether t is in its assignee's queue.
func (t Task) InQueue() bool { return t.WorkItem() && t.Status == Queued }

// QueueOrder compares two tasks in queue order (best first): priority,
// then creation, then id.
func QueueOrder(a, b Task) int {
	return cmp.Or(
		cmp.Compare(PriorityRank(a.Priority), PriorityRank(b.Priority)),
		a.CreatedAt.Compare(b.CreatedAt),
		cmp.Compare(a.ID, b.ID),
	)
}

// nextTaskCandidates is how many queue entries one next-task read takes:
// each is tried in order until one starts, so a call loses at most this
// many races before it reads the queue again.
const nextTaskCandidates = 10

// nextTaskRounds bounds the reads of one next-task call: a call that lost
// every candidate of a read to concurrent calls reads the queue again.
const nextTaskRounds = 3

// NextTask starts the agent's best queued work item (queued → running,
// the transition Start makes, with its checks and events) and returns it;
// ok is false when the agent's queue is empty. Concurrent calls never
// start the same task: the start is conditioned on the version read and
// on queued, and a call that loses a candidate to another tries the next.
// Returns ENOTFOUND for an agent that is not the team's (a malformed slug
// included).
func (s *Service) NextTask(ctx context.Context, teamID, slug, by string) (t Task, ok bool, err error) {
	if !agents.ValidSlug(slug) {
		return Task{}, false, apperr.NotFound("agent", slug)
	}
	for range nextTaskRounds {
		queue, _, err := s.Store.QueuedWork(ctx, teamID, slug, paging.Page{Limit: nextTaskCandidates})
		if err != nil {
			return Task{}, false, err
		}
		if len(queue) == 0 {
			break
		}
		for _, c := range queue {
			t, err := s.startQueued(ctx, teamID, c, slug, by)
			if err == nil {
				return t, true, nil
			}
			if !errLostRace(err) {
				return Task{}, false, err
			}
		}
	}
	// An empty queue: the agent's, or no agent of the team at all.
	if _, err := s.Store.GetAgent(ctx, teamID, slug); err != nil {
		return Task{}, false, err
	}
	return Task{}, false, nil
}

// errNotInQueue is a candidate that left the agent's queue between the
// queue's read and the start (reassigned, or started by another call).
var errNotInQueue = apperr.New(apperr.ECONFLICT, "the task is no longer in the agent's queue").WithReason(ReasonState)

// errLostRace reports whether err means the candidate was taken or
// changed by a concurrent writer, so the next one is worth trying.
func errLostRace(err error) bool {
	return err == errNotInQueue || apperr.Is(err, apperr.ECONFLICT) || apperr.Is(err, apperr.ENOTFOUND)
}

// startQueued starts candidate c of slug's queue as Start does: the first
// attempt writes from the queue's copy (no second read; a stale copy fails
// the version condition and is read again), and the task must still be a
// queued work item of slug's.
func (s *Service) startQueued(ctx context.Context, teamID string, c Task, slug, by string) (Task, error) {
	tr := Transitions[ActStart]
	return s.applyFrom(ctx, &c, teamID, c.ID, []Status{Queued}, tr.To, by, func(before Task, _ *Task) ([]Event, error) {
		if before.Assignee != slug || !before.InQueue() {
			return nil, errNotInQueue
		}
		return []Event{{Type: EvStarted}}, nil
	})
}
