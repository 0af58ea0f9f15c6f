// Package work is the wing of work agents do beyond one reply: tasks and
// delegation (tasks), an agent working on a task (worker, taskbrief), a
// human's approvals (approvals), collaboration sessions (sessions),
// reports, consultations, compound plans (plans) and the results posted
// back into conversations (results). It imports every wing below it,
// chat included, and never agenttools or a2a.
package work
