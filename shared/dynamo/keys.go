package dynamo

import "fmt"

// Key design of the single table (architecture decision 3).
//
// Every item of a team lives under the partition TEAM#<team id>, so a query
// can never cross teams and a team's data is one partition range. Items that
// must be found without knowing the team (API keys, by their hash) have their
// own partition and carry team_id.
//
//	item            pk                    sk                               gsi1pk / gsi1sk
//	team            TEAM#<team>           TEAM
//	api key         APIKEY#<sha256>       APIKEY                           TEAM#<team> / KEY#<key id>
//	agent           TEAM#<team>           AGENT#<slug>
//	idempotency     TEAM#<team>           IDEMP#<key>   (expires_at TTL)
//	activity entry  TEAM#<team>           ACTIVITY#<time>#<event id> (expires_at TTL, 90 days)
//	task            TEAM#<team>           TASK#<task id>                   TEAM#<team>#ASSIGNEE#<slug> / TASK#<id>
//	                  gsi2 (delegations only): TEAM#<team>#PARENT#<parent id> / TASK#<id>
//	                  gsi3 (running only):     DUE#<shard 0-7> / <deadline>#<team>#<id>
//	task event      TEAM#<team>           TEV#<task id>#<seq, 8 digits>
//	agent load      TEAM#<team>           LOAD#<slug>  (active_tasks: running-or-queued count;
//	                  active_conversations: open conversations it is current in; latency_ms: moving average)
//	conversation    TEAM#<team>           CONV#<conv id>  (doc + version, status, current_agent)
//	participant     TEAM#<team>           CPART#<conv id>#<slug>
//	message         TEAM#<team>           MSG#<conv id>#<msg id>  (doc + role, rating)
//	routing log     TEAM#<team>           RDEC#<decision id>               TEAM#<team>#CONV#<conv id> / RDEC#<id>
//	                  (doc + strategy, fallback_used, selected_agents, confidence; expires_at TTL, 180 days)
//	rating          TEAM#<team>           FB#<msg id>#<agent>  (rating, query, rated_at; expires_at TTL, 31 days)
//	handoff         TEAM#<team>           HOFF#<conv id>#<handoff id>
//	agent message   TEAM#<team>           AMSG#<message id>  (expires_at TTL, 90 days)
//	inbox entry     TEAM#<team>           INBOX#<agent>#<message id>  (doc + read_at; expires_at TTL, 90 days)
//	memory          TEAM#<team>           MEM#<memory id>  (doc + visibility)
//	memory context  TEAM#<team>           CTX#<agent>  (an agent's cached memory context; expires_at TTL, 1 hour)
//	memory epoch    TEAM#<team>           MEMEPOCH  (bumped by every invalidation; a context is cached only if unchanged)
//
// Access patterns and what serves them:
//
//	resolve an API key to its team        GetItem APIKEY#<hash>
//	list a team's keys                     Query gsi1 gsi1pk=TEAM#<team>, begins_with(gsi1sk, KEY#)
//	get a team / its default agent         GetItem TEAM#<team> / TEAM
//	get an agent by slug                   GetItem TEAM#<team> / AGENT#<slug>
//	list agents by slug                    Query pk=TEAM#<team>, begins_with(sk, AGENT#)
//	replay an idempotent POST              GetItem / conditional Put TEAM#<team> / IDEMP#<key>
//	list activity newest first             Query pk=TEAM#<team>, begins_with(sk, ACTIVITY#), descending
//	get a task                             GetItem TEAM#<team> / TASK#<id>
//	list a team's tasks newest first       Query pk=TEAM#<team>, begins_with(sk, TASK#), descending (ids sort by time)
//	list tasks of an assignee              Query gsi1 gsi1pk=TEAM#<team>#ASSIGNEE#<slug>, descending
//	list subtasks of a task                Query gsi2 gsi2pk=TEAM#<team>#PARENT#<id>, descending
//	a task's timeline in order             Query pk=TEAM#<team>, begins_with(sk, TEV#<id>#)
//	an agent's active task count           GetItem TEAM#<team> / LOAD#<slug>
//	running tasks past their deadline      Query gsi3 gsi3pk=DUE#<n>, gsi3sk < <time>, for n in 0..7
//	a team's agents' counters (the gate)   Query pk=TEAM#<team>, begins_with(sk, LOAD#)
//	conversations newest first             Query pk=TEAM#<team>, begins_with(sk, CONV#), descending
//	a conversation's participants          Query pk=TEAM#<team>, begins_with(sk, CPART#<id>#)
//	messages in order / the last n         Query pk=TEAM#<team>, begins_with(sk, MSG#<id>#), ascending / descending
//	the routing log (since a time)         Query pk=TEAM#<team>, sk BETWEEN RDEC#<floor id of time> AND RDEC#~, descending
//	a conversation's decisions             Query gsi1 gsi1pk=TEAM#<team>#CONV#<id>
//	ratings of the last 30 days (the gate) Query pk=TEAM#<team>, sk BETWEEN FB#<floor msg id> AND FB#~, filter rated_at
//	a conversation's handoffs in order     Query pk=TEAM#<team>, begins_with(sk, HOFF#<conv id>#)
//	an inbox newest first (unread)         Query pk=TEAM#<team>, begins_with(sk, INBOX#<agent>#), descending (filter attribute_not_exists(read_at))
//	a team's memories newest first         Query pk=TEAM#<team>, begins_with(sk, MEM#), descending
//
// Status and "agent as creator or assignee" filters are filter expressions
// on those queries. The delegation limits are conditions on the task,
// parent, root, agent and load items of one TransactWriteItems (tasks.go).

const (
	attrPK     = "pk"
	attrSK     = "sk"
	attrGSI1PK = "gsi1pk"
	attrGSI1SK = "gsi1sk"

	prefixTeam      = "TEAM#"
	prefixAPIKey    = "APIKEY#"
	prefixKey       = "KEY#"
	prefixAgent     = "AGENT#"
	prefixIdem      = "IDEMP#"
	prefixActivity  = "ACTIVITY#"
	prefixTask      = "TASK#"
	prefixTaskEvent = "TEV#"
	prefixLoad      = "LOAD#"
	prefixDue       = "DUE#"

	skTeam   = "TEAM"
	skAPIKey = "APIKEY"
)

func teamPK(teamID string) string   { return prefixTeam + teamID }
func apiKeyPK(hash string) string   { return prefixAPIKey + hash }
func agentSK(slug string) string    { return prefixAgent + slug }
func idemSK(key string) string      { return prefixIdem + key }
func keyGSI1SK(keyID string) string { return prefixKey + keyID }

func taskSK(id string) string { return prefixTask + id }
func taskEventSK(id string, seq int) string {
	return fmt.Sprintf("%s%s#%08d", prefixTaskEvent, id, seq)
}
func loadSK(slug string) string { return prefixLoad + slug }
func assigneeGSI1PK(teamID, slug string) string {
	return teamPK(teamID) + "#ASSIGNEE#" + slug
}
func parentGSI2PK(teamID, parentID string) string {
	return teamPK(teamID) + "#PARENT#" + parentID
}
