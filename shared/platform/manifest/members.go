package manifest

// MemberRoutes are the routes a person with the member role may call, by
// route key, on both APIs (HTTP and streaming). Keys, admins and a key
// acting for a user call every route; a member's request to any other
// route is 403 forbidden (reason RoleForbidden) before anything runs
// (httpapi.Router), so it changes nothing. Public routes (A2A) run no
// authorizer and see no role.
//
// A member uses their own conversations (the conversations service answers
// 404 on another person's), reads agents, skills and tool packs, reads and
// decides the approvals the policy names them for (the approvals service
// checks), and starts what a chat turn may start. Everything else — agent
// writes, keys, budgets, policies, identity, others' usage, routing analytics,
// acting on tasks, sessions and plans (their traces, cancels, approvals) —
// stays with keys and admins. A member reads the tasks, sessions, reports
// and plans they started (user_id) and the event streams of their
// sessions and plans, never another person's (404).
var MemberRoutes = map[string]bool{
	"GET /v1/health": true,

	// Their own conversations (owner: the conversations service).
	"POST /v1/conversations":                                     true,
	"GET /v1/conversations":                                      true,
	"GET /v1/conversations/{id}":                                 true,
	"GET /v1/conversations/{id}/context":                         true,
	"GET /v1/conversations/{id}/handoffs":                        true,
	"GET /v1/conversations/{id}/messages":                        true,
	"GET /v1/conversations/{id}/work":                            true,
	"GET /v1/conversations/{id}/events":                          true,
	"POST /v1/conversations/{id}/messages":                       true,
	"POST /v1/conversations/{id}/messages/{message_id}/feedback": true,
	"POST /v1/conversations/{id}/handoff":                        true,
	"POST /v1/conversations/{id}/return":                         true,
	"POST /v1/conversations/{id}/agents":                         true,
	"POST /v1/conversations/{id}/close":                          true,

	// Reading agents, skills and tool packs.
	"GET /v1/agents":                     true,
	"GET /v1/agents/{slug}":              true,
	"GET /v1/agents/experts":             true,
	"GET /v1/agents/recommend":           true,
	"GET /v1/agents/{slug}/availability": true,
	"GET /v1/agents/{slug}/tools":        true,
	"GET /v1/skills":                     true,
	"GET /v1/skills/{agent}/{name}":      true,
	"GET /v1/tool-packs":                 true,
	"GET /v1/tool-packs/{name}":          true,

	// Their own usage (the budget service narrows a member's report).
	"GET /v1/usage": true,

	// Approvals the policy names them for (approvals.Policy.Deciders).
	"GET /v1/approvals":       true,
	"GET /v1/approvals/{id}":  true,
	"POST /v1/approvals/{id}": true,

	// What a chat turn may start (plans a turn starts itself: no route),
	// and reading what they started: another person's is 404 and their
	// listings hold their own (user_id; shared/api/mine.go).
	"POST /v1/tasks":        true,
	"POST /v1/sessions":     true,
	"POST /v1/reports":      true,
	"GET /v1/tasks":         true,
	"GET /v1/tasks/{id}":    true,
	"GET /v1/sessions":      true,
	"GET /v1/sessions/{id}": true,
	"GET /v1/reports":       true,
	"GET /v1/reports/{id}":  true,
	// The plans their turns started, and the event streams of their own
	// sessions and plans (the streams function answers 404 on another
	// person's, as the GET routes do).
	"GET /v1/plans":                true,
	"GET /v1/plans/{id}":           true,
	"GET /v1/sessions/{id}/events": true,
	"GET /v1/plans/{id}/events":    true,
}
