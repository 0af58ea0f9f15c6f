// Package team is the wing of the team and its members: teams and keys
// (teams), the agents and their skills (agents), agent messaging
// (messaging), the memory bus (memory), the CostGuard (budget), the
// activity log and its recorder (activity, recorder), the authorizer, the
// operator's actions (admin) and what an agent is told before it answers
// (prompts). It imports the wings below it (platform, models, aws, tools),
// never routing, chat or work.
package team
