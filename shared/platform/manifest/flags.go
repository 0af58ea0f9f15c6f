package manifest

// RouteFlags are the routes a feature flag gates, by route key, with the
// flag (settings.Flag*): while the flag is off (settings.Flags.On, which
// follows the seed's progression) they answer 409 FeatureDisabled naming
// it. They are the routes that start new collaboration work; reading,
// finishing and canceling what exists stay open, so turning a flag off in
// an emergency stops new work without stranding work in flight. Sessions
// go further: the sessions service refuses every call while its flag is
// off (shared/work/sessions).
//
// The routing flags gate no route: expert_gate, ensemble and router_model
// (the tier-0 model deciding when the gate is unsure) change who answers
// a chat turn, not which routes answer (cascade.Flags, from the stage's
// FEATURE_FLAGS through shared/wire/conversationsfn).
var RouteFlags = map[string]string{
	// collaboration (the seed's enable_agent_collaboration): routing
	// beyond direct dispatch, handoff, multi-agent conversations, agent
	// messaging and the team memory bus.
	"POST /v1/conversations/{id}/handoff": "collaboration",
	"POST /v1/conversations/{id}/return":  "collaboration",
	"POST /v1/conversations/{id}/agents":  "collaboration",
	"POST /v1/agents/{slug}/messages":     "collaboration",
	"POST /v1/agents/{slug}/memories":     "collaboration",
	"POST /v1/consultations":              "collaboration",
	// task_delegation (enable_task_delegation): tasks and reports.
	"POST /v1/tasks":               "task_delegation",
	"POST /v1/tasks/{id}/delegate": "task_delegation",
	"POST /v1/reports":             "task_delegation",
	// sessions (enable_collaboration: the five patterns).
	"POST /v1/sessions":             "sessions",
	"POST /v1/sessions/{id}/resume": "sessions",
}
