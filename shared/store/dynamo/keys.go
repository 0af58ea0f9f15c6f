package dynamo

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// Key design of the single table (architecture decision 3). Every key
// prefix and every function that builds a key is in this file.
//
// Every item of a team lives under the partition TEAM#<team id>, so a query
// can never cross teams and a team's data is one partition range. Items that
// must be found without knowing the team (API keys, by their hash) have their
// own partition and carry team_id. Each item is stored from its item struct
// (named in the last column; see the file beside it), nested values as maps
// and lists of item structs.
//
//	item            pk                    sk                               gsi1pk / gsi1sk                     struct
//	team            TEAM#<team>           TEAM                             A2A#<a2a id> / TEAM (once it has one)  teamItem
//	api key         APIKEY#<sha256>       APIKEY                           TEAM#<team> / KEY#<key id>          apiKeyItem
//	identity        TEAM#<team>           IDENTITY  (its OIDC provider)  /  issuer pair  OIDC#<iss>#<aud>     providerItem
//	                  IDENTITY (one team's; the provider copied, so the authorizer reads one item: identitystore)
//	agent           TEAM#<team>           AGENT#<slug>                                                         agentItem
//	                  gsi3 (A2A agents only): A2ACARD / <next card check>#<team>#<slug>
//	push config     TEAM#<team>           A2APUSH#<task id>#<config id>                                        configItem (pushstore)
//	push counter    TEAM#<team>           A2APUSHN#<task id>  (configs: the task's count, below MaxPushConfigs)
//	idempotency     TEAM#<team>           IDEMP#<key>   (expires_at TTL)                                       idemItem
//	activity entry  TEAM#<team>           ACTIVITY#<time>#<event id> (expires_at TTL, 90 days)                 activityItem
//	task            TEAM#<team>           TASK#<task id>                   TEAM#<team>#ASSIGNEE#<slug> / TASK#<id>  taskItem
//	                  gsi2 (delegations only): TEAM#<team>#PARENT#<parent id> / TASK#<id>
//	                  gsi2 (queued work items only): TEAM#<team>#QUEUE#<slug> / QUEUE#<priority rank 0-3>#<id>
//	                  gsi3 (running only):     DUE#<shard 0-7> / <deadline>#<team>#<id>
//	                  gsi4 (with a conversation_id): CONVWORK#<team>#<conv id> / <created_at, WorkKey>#<id>
//	task due entry  TEAM#<team>           TDUE#<task id>  (while the task has a due_at, is not terminal and    dueItem
//	                  not flagged overdue; written and deleted in the task's own transactions)
//	                  gsi3: TDUE / <due_at>#<team>#<id>
//	escalation      TEAM#<team>           ESC#<id>  (esc_status filters it; a consultation's, or a task's    escalationItem
//	                  task_overdue one written in the task's transactions: consultationstore, taskstore)
//	board policy    TEAM#<team>           BOARDPOLICY  (escalate_overdue)                                  boardPolicyItem
//	task event      TEAM#<team>           TEV#<task id>#<seq, 8 digits>                                        taskEventItem
//	agent load      TEAM#<team>           LOAD#<slug>                                                          loadItem
//	                  (active_tasks: running-or-queued count; active_conversations: open conversations
//	                  it is current in; latency_ms: moving average; written only by ADD/SET updates)
//	conversation    TEAM#<team>           CONV#<conv id>  (version, status, current_agent, last_handoff map;  convItem
//	                  event_seq: its stream's last number)
//	participant     TEAM#<team>           CPART#<conv id>#<slug>  (written only by updates)                    participantItem
//	                  gsi4 (joined since gsi4 exists): CONVAGENT#<team>#<slug> / <conv id>
//	message         TEAM#<team>           MSG#<conv id>#<msg id>  (role; rating set by a rating)               messageItem
//	routing log     TEAM#<team>           RDEC#<decision id>               TEAM#<team>#CONV#<conv id> / RDEC#<id>  decisionItem
//	                  (strategy, fallback_used, selected_agents, confidence filter it; expires_at TTL, 180 days)
//	rating          TEAM#<team>           FB#<msg id>#<agent>  (rating, query, rated_at; expires_at TTL, 31 days)  feedbackItem
//	handoff         TEAM#<team>           HOFF#<conv id>#<handoff id>                                          handoffItem
//	agent message   TEAM#<team>           AMSG#<message id>  (expires_at TTL, 90 days)                         AgentMessageItem
//	inbox entry     TEAM#<team>           INBOX#<agent>#<message id>  (read_at; expires_at TTL, 90 days)       inboxItem
//	memory          TEAM#<team>           MEM#<memory id>  (visibility)                                        memoryItem
//	memory context  TEAM#<team>           CTX#<agent>  (an agent's cached memory context; expires_at TTL, 1 hour)  contextItem
//	memory epoch    TEAM#<team>           MEMEPOCH  (bumped by every invalidation; a context is cached only if unchanged)  epochItem
//	rate window     TEAM#<team>           RATE#<unix second>  (requests: the team's count in that second; expires_at TTL, 2 minutes)
//	user rate       TEAM#<team>           RATE#<unix second>#USER#<user>  (requests: one person's count in that second; expires_at TTL, 2 minutes)
//	queue attempts  QATTEMPT#<queue>#<message id>  ATTEMPTS  (failed processing attempts; expires_at TTL, 14 days; written only by ADD)
//	session         TEAM#<team>           SES#<session id>  (event_seq: its stream's last number)             sessionItem
//	                  gsi3 (unfinished, not awaiting a human): SDUE / <deadline>#<team>#<id>
//	                  gsi4 (with a conversation_id): CONVWORK#<team>#<conv id> / <created_at, WorkKey>#<id>
//	session message TEAM#<team>           SMSG#<session id>#<message id>  (the trace, append-only)             sessionMsgItem
//	report          TEAM#<team>           REPORT#<report id>  (report_type, to, from, status filter it)       reportItem
//	                  gsi4 (with a conversation_id): CONVWORK#<team>#<conv id> / <created_at, WorkKey>#<id>
//	(plans, PLAN#<id>, and consultations, CONS#<id> (consultationstore), carry the same gsi4 keys when
//	they have a conversation_id: a conversation's work is one gsi4 partition of five kinds of item)
//	posted result   TEAM#<team>           RESULT#<task, report id | session id#r<run>>  (message_id; never expires)  resultItem
//	approval        TEAM#<team>           APPROVAL#<approval id>  (status filters it; never expires)            approvalItem
//	approval policy TEAM#<team>           APPROVALPOLICY                                                       policyItem
//	team budget     TEAM#<team>           BUDGET  (limit_nanos, warn_at)                                        budgetItem
//	budget month    TEAM#<team>           SPEND#<YYYY-MM>  (the CostGuard's ledger: spent, reserved, committed,  monthItem
//	                  headroom in nano-dollars; limited, limit, warn_at, warned; written only by updates)
//	user month      TEAM#<team>           SPEND#<YYYY-MM>#USER#<user>  (one person's spent, reserved, committed; per_user_usd)  userItem
//	usage counter   TEAM#<team>           USAGE#<YYYY-MM-DD>#<hash of agent, model, conversation, session[, user]>  usageItem
//	                  (calls, input_tokens, output_tokens, nanos; written only by ADD; expires_at TTL, 400 days)
//	clipboard value TEAM#<team>           CLIP#<scope>#<key>  (scope task:<root task id> or conv:<conversation id>;  clipItem
//	                  value, stored_by; expires_at TTL, 1 day: toolpacks.ClipTTL)
//	stream event    TEAM#<team>           EVT#<stream>#<seq, 12 digits>  (stream: session#<id>, plan#<id>, conv#<id>;  streamEventItem
//	                  type (the detail type), at, detail (JSON), seq; expires_at TTL, 30 days: streams.Retention;
//	                  created with the change it tells of, numbered by the owner's event_seq: streamlog.go)
//	skill vectors   TEAM#<team>           SKILLVEC#<embedder id>#<slug>#<version>  (an agent version's skill embeddings,     skillVecItem
//	                  float32 little-endian in skill order; texts_hash; no TTL: see shared/routing/expertgate/vectors.go)
//	classifier      TEAM#<team>           CLASSIFIER#<embedder id>  (the team's fitted classifier but its weights:  classifierItem
//	                  JSON; read_at, the condition of a replace; fit_id, parts, weights: where its weights are)
//	classifier part TEAM#<team>           CLASSIFIERPART#<embedder id>#<fit id>#<n, 4 digits>  (≤ 350 KiB of the  classifierPartItem
//	                  weights as half floats, little-endian; written before the head, deleted with the fit it is of)
//	evaluation      TEAM#<team>           REVAL#<evaluation id>  (a routing evaluation: status, created_at,   evaluationItem
//	                  completed_at, message_count, threshold; doc: the whole evaluation as JSON, its messages
//	                  and result; expires_at TTL, 30 days: evaluations.Retention)
//	suggestion      TEAM#<team>           SUGG#<agent>#<msg id>  (an example suggestion: skill, content, created_at  suggestionItem
//	                  (the push-out's order), dismissed_at (hidden, still in its place); expires, and expires_at
//	                  TTL, 30 days: suggestions.Retention; expired is absent to every read before the TTL deletes it)
//	suggestion head TEAM#<team>           SUGGHEAD#<agent>  (version: moved by every add of the agent's, which     headItem
//	                  is conditioned on the version it read; expires_at TTL: its latest suggestion's)
//
// Access patterns and what serves them:
//
//	resolve an API key to its team        GetItem APIKEY#<hash>
//	list a team's keys                     Query gsi1 gsi1pk=TEAM#<team>, begins_with(gsi1sk, KEY#)
//	find a key by id (revoke, rotate)      Query gsi1 gsi1pk=TEAM#<team>, gsi1sk=KEY#<id>
//	the team of an A2A id                  Query gsi1 gsi1pk=A2A#<a2a id>, gsi1sk=TEAM
//	read a clipboard value                 GetItem TEAM#<team> / CLIP#<scope>#<key> (expired: ignored until TTL deletes it)
//	get a team / its default agent         GetItem TEAM#<team> / TEAM
//	get an agent by slug                   GetItem TEAM#<team> / AGENT#<slug>
//	list agents by slug                    Query pk=TEAM#<team>, begins_with(sk, AGENT#)
//	replay an idempotent POST              GetItem / conditional Put TEAM#<team> / IDEMP#<key>
//	list activity newest first             Query pk=TEAM#<team>, begins_with(sk, ACTIVITY#), descending
//	get a task                             GetItem TEAM#<team> / TASK#<id>
//	list a team's tasks newest first       Query pk=TEAM#<team>, begins_with(sk, TASK#), descending (ids sort by time)
//	list tasks of an assignee              Query gsi1 gsi1pk=TEAM#<team>#ASSIGNEE#<slug>, descending
//	list subtasks of a task                Query gsi2 gsi2pk=TEAM#<team>#PARENT#<id>, descending
//	an agent's queue (next-task, sort)     Query gsi2 gsi2pk=TEAM#<team>#QUEUE#<slug>, ascending (best first)
//	a task's timeline in order             Query pk=TEAM#<team>, begins_with(sk, TEV#<id>#)
//	an agent's active task count           GetItem TEAM#<team> / LOAD#<slug>
//	running tasks past their deadline      Query gsi3 gsi3pk=DUE#<n>, gsi3sk < <time>, for n in 0..7
//	tasks past their due date, unflagged   Query gsi3 gsi3pk=TDUE, gsi3sk < <time> (the due entries)
//	get the board policy                   GetItem TEAM#<team> / BOARDPOLICY
//	a team's agents' counters (the gate)   Query pk=TEAM#<team>, begins_with(sk, LOAD#)
//	conversations newest first             Query pk=TEAM#<team>, begins_with(sk, CONV#), descending
//	a conversation's participants          Query pk=TEAM#<team>, begins_with(sk, CPART#<id>#)
//	the conversations an agent took part in Query gsi4 gsi4pk=CONVAGENT#<team>#<slug>, descending, then BatchGetItem
//	                                       of their CONV#<id> items (one call: a page is at most 100)
//	what a conversation started            Query gsi4 gsi4pk=CONVWORK#<team>#<id>, descending (filter: not a report's
//	                                       own task; the page refilled while the filter left it short: QueryFill)
//	a conversation's tasks                 Query gsi4 gsi4pk=CONVWORK#<team>#<id>, descending, filter type = task
//	                                       (and status, agent, assignee; QueryFill)
//	messages in order / the last n         Query pk=TEAM#<team>, begins_with(sk, MSG#<id>#), ascending / descending
//	the routing log (since a time)         Query pk=TEAM#<team>, sk BETWEEN RDEC#<floor id of time> AND RDEC#~, descending
//	a conversation's decisions             Query gsi1 gsi1pk=TEAM#<team>#CONV#<id>, gsi1sk BETWEEN as above
//	ratings of the last 30 days (the gate) Query pk=TEAM#<team>, sk BETWEEN FB#<floor msg id> AND FB#~, filter rated_at
//	a conversation's handoffs in order     Query pk=TEAM#<team>, begins_with(sk, HOFF#<conv id>#)
//	an inbox newest first (unread)         Query pk=TEAM#<team>, begins_with(sk, INBOX#<agent>#), descending (filter attribute_not_exists(read_at))
//	a team's memories newest first         Query pk=TEAM#<team>, begins_with(sk, MEM#), descending
//	an agent's cached context / the epoch  GetItem TEAM#<team> / CTX#<agent>, TEAM#<team> / MEMEPOCH
//	get a session                          GetItem TEAM#<team> / SES#<id>
//	a team's sessions newest first         Query pk=TEAM#<team>, begins_with(sk, SES#), descending (filter status, pattern, contains(agents))
//	a session's trace in order             Query pk=TEAM#<team>, begins_with(sk, SMSG#<id>#)
//	sessions past their deadline           Query gsi3 gsi3pk=SDUE, gsi3sk < <time>
//	A2A agents whose card is due           Query gsi3 gsi3pk=A2ACARD, gsi3sk < <time>
//	count a team's request this second     UpdateItem TEAM#<team> / RATE#<second>, ADD requests 1, UPDATED_NEW
//	count a person's request this second   UpdateItem TEAM#<team> / RATE#<second>#USER#<user>, ADD requests 1, UPDATED_NEW
//	count a queue message's failure        UpdateItem QATTEMPT#<queue>#<id> / ATTEMPTS, ADD attempts 1, UPDATED_NEW
//	get a report                           GetItem TEAM#<team> / REPORT#<id>
//	a team's reports newest first          Query pk=TEAM#<team>, begins_with(sk, REPORT#), descending (ids sort by time)
//	post a work's result once              GetItem CONV#<id>, then TransactWriteItems: Put RESULT#<marker> (absent), Update CONV#<id>
//	                                       (version read), Put MSG#<id>#<msg id>, Put EVT#conv#<id>#<event_seq + 1> (absent)
//	a conversation's messages after an id  Query pk=TEAM#<team>, sk BETWEEN MSG#<id>#<after> AND MSG#<id>#DEL, ExclusiveStartKey MSG#<id>#<after>
//	get an approval / the policy           GetItem TEAM#<team> / APPROVAL#<id>, TEAM#<team> / APPROVALPOLICY
//	approvals newest first (pending)       Query pk=TEAM#<team>, begins_with(sk, APPROVAL#), descending (filter status, task_id)
//	decide an approval once                UpdateItem APPROVAL#<id>, condition status = pending (and expires_at > now)
//	a team's budget / a month's ledger     GetItem TEAM#<team> / BUDGET, TEAM#<team> / SPEND#<month>
//	reserve a model call's worst case      UpdateItem SPEND#<month>, ADD, condition limited = false OR headroom >= amount
//	… of a person, with per_user_usd       TransactWriteItems: that Update, and Update SPEND#<month>#USER#<user> ADD, condition committed <= per_user - amount
//	usage of a range of days               Query pk=TEAM#<team>, sk BETWEEN USAGE#<from># AND USAGE#<to>#DEL
//	a stream's events after n (resume)     Query pk=TEAM#<team>, sk BETWEEN EVT#<stream>#<n+1, 12 digits> AND EVT#<stream>#DEL, ascending, limit
//	a stream's last number (its head)      Query pk=TEAM#<team>, begins_with(sk, EVT#<stream>#), descending, limit 1
//	a team's skill vectors (the gate)      Query pk=TEAM#<team>, begins_with(sk, SKILLVEC#<embedder id>#)
//	an agent version's skill vectors       GetItem / Put / Delete TEAM#<team> / SKILLVEC#<embedder id>#<slug>#<version>
//	a team's classifier (the gate)         GetItem TEAM#<team> / CLASSIFIER#<embedder id>, then Query pk=TEAM#<team>,
//	                                       begins_with(sk, CLASSIFIERPART#<embedder id>#<fit id>#)
//	store a newer fit of the classifier    Put each CLASSIFIERPART#…, then Put CLASSIFIER#<embedder id>, condition absent OR
//	                                       read_at <= the new one's, ALL_OLD; then Delete the old fit's parts (or the new's if refused)
//	get a routing evaluation               GetItem TEAM#<team> / REVAL#<id>
//	a team's evaluations newest first      Query pk=TEAM#<team>, begins_with(sk, REVAL#), descending (ids sort by time)
//	finish a running evaluation once       GetItem REVAL#<id>, then Put REVAL#<id>, condition status = running, ALL_OLD
//	get an example suggestion              GetItem TEAM#<team> / SUGG#<agent>#<id> (expired or dismissed: not found)
//	an agent's suggestions newest first    Query pk=TEAM#<team>, begins_with(sk, SUGG#<agent>#), descending (ids sort by time;
//	                                       filter expires_at > now, attribute_not_exists(dismissed_at))
//	add a suggestion, at most max kept     GetItem SUGGHEAD#<agent>, Query begins_with(sk, SUGG#<agent>#) consistently, then
//	                                       TransactWriteItems: Put SUGG#<agent>#<id> (absent or expired), Update SUGGHEAD#<agent>
//	                                       (version read, or absent), Delete the oldest live ones past max-1 (existing)
//	dismiss / delete a suggestion          UpdateItem / DeleteItem SUGG#<agent>#<id>, condition exists and expires_at > now
//	                                       (a dismiss: and attribute_not_exists(dismissed_at))
//
// A "begins_with" above is sent as the range it is, BETWEEN p AND p+DEL (0x7F)
// (hasPrefix): the same for DynamoDB, and constant-time on DynamoDB Local,
// which reads a whole partition for begins_with.
//
// Status and "agent as creator or assignee" filters are filter expressions
// on those queries. The delegation limits are conditions on the task,
// parent, root, agent and load items of one TransactWriteItems (tasks.go).

// Key attributes and indexes.
const (
	AttrPK     = "pk"
	AttrSK     = "sk"
	AttrGSI1PK = "gsi1pk"
	AttrGSI1SK = "gsi1sk"
	AttrGSI2PK = "gsi2pk"
	AttrGSI3PK = "gsi3pk"
	AttrGSI3SK = "gsi3sk"
	AttrGSI4PK = "gsi4pk"
	AttrGSI4SK = "gsi4sk"

	IndexGSI1 = "gsi1"
	IndexGSI2 = "gsi2"
	IndexGSI3 = "gsi3"
	IndexGSI4 = "gsi4"
)

// Key prefixes.
const (
	prefixTeam      = "TEAM#"
	prefixAPIKey    = "APIKEY#"
	prefixA2A       = "A2A#"
	PrefixKey       = "KEY#"
	PrefixAgent     = "AGENT#"
	prefixIdem      = "IDEMP#"
	PrefixActivity  = "ACTIVITY#"
	PrefixTask      = "TASK#"
	prefixTaskEvent = "TEV#"
	PrefixLoad      = "LOAD#"
	prefixDue       = "DUE#"
	PrefixConv      = "CONV#"
	prefixPart      = "CPART#"
	prefixMsg       = "MSG#"
	PrefixDecision  = "RDEC#"
	PrefixFeedback  = "FB#"
	prefixHandoff   = "HOFF#"
	prefixAgentMsg  = "AMSG#"
	prefixInbox     = "INBOX#"
	PrefixMemory    = "MEM#"
	prefixContext   = "CTX#"
	PrefixSession   = "SES#"
	prefixSesMsg    = "SMSG#"
	PrefixReport    = "REPORT#"
	prefixResult    = "RESULT#"
	prefixSkillVec  = "SKILLVEC#"
	prefixClsHead   = "CLASSIFIER#"
	prefixClsPart   = "CLASSIFIERPART#"
	PrefixApproval  = "APPROVAL#"
	PrefixTicket    = "SLOTTICKET#"
	PrefixPlan      = "PLAN#"
	prefixTaskDue   = "TDUE#"
	// PrefixEscalation is the sort key prefix of escalations (of
	// consultations and of tasks alike).
	PrefixEscalation = "ESC#"
	prefixSpend      = "SPEND#"
	prefixUsage      = "USAGE#"
	prefixClip       = "CLIP#"
	prefixStreamEvt  = "EVT#"
	// PrefixToolPack is the sort key prefix of a team's MCP packs.
	PrefixToolPack = "TOOLPACK#"
	// PrefixEvaluation is the sort key prefix of a team's routing
	// evaluations.
	PrefixEvaluation = "REVAL#"
	// PrefixSuggestion is the sort key prefix of the teams' example
	// suggestions (SuggestionPrefix: an agent's).
	PrefixSuggestion     = "SUGG#"
	prefixSuggestionHead = "SUGGHEAD#"

	// Infixes of the GSI partition keys under a team.
	infixAssignee = "#ASSIGNEE#"
	infixParent   = "#PARENT#"
	infixQueue    = "#QUEUE#"
	infixLine     = "#SLOTLINE#"
	prefixQueue   = "QUEUE#"
	infixConv     = "#CONV#"

	// Partitions of gsi4 (each holds a team id, so a query of one is
	// one team's).
	prefixConvWork  = "CONVWORK#"
	prefixConvAgent = "CONVAGENT#"

	SKTeam     = "TEAM"
	SKAPIKey   = "APIKEY"
	SKIdentity = "IDENTITY"
	SKMemEpoch = "MEMEPOCH"
	SKPolicy   = "APPROVALPOLICY"
	// SKBoardPolicy is the sort key of a team's board policy.
	SKBoardPolicy = "BOARDPOLICY"
	SKBudget      = "BUDGET"
	// SKToolPacks is the counter of a team's MCP packs.
	SKToolPacks = "TOOLPACKS"

	// RangeEnd sorts after every id (ids are lower-case base32), so
	// BETWEEN <prefix><floor> AND <prefix>~ is "this prefix, from floor on".
	RangeEnd = "~"
)

// TeamPK is the partition of every item of a team.
func TeamPK(teamID string) string { return prefixTeam + teamID }

// OIDCPK is the partition of an (issuer, audience) pair (an issuer has no '#').
func OIDCPK(issuer, audience string) string { return "OIDC#" + issuer + "#" + audience }

// A2APK is a team's gsi1 partition by its A2A id (teams.Team.A2AID).
func A2APK(a2aID string) string { return prefixA2A + a2aID }

// APIKeyPK is the partition of an API key, by the hash of its secret.
func APIKeyPK(hash string) string { return prefixAPIKey + hash }

// KeyGSI1SK is an API key's sort key on gsi1 (a team's keys).
func KeyGSI1SK(keyID string) string { return PrefixKey + keyID }

// AgentSK is an agent's sort key.
func AgentSK(slug string) string { return PrefixAgent + slug }
func idemSK(key string) string   { return prefixIdem + key }

// LoadSK is the sort key of an agent's counters (LoadItem).
func LoadSK(slug string) string { return PrefixLoad + slug }

// ActivitySK is an activity entry's sort key: by time, then event id.
func ActivitySK(at time.Time, eventID string) string {
	return PrefixActivity + at.UTC().Format(time.RFC3339Nano) + "#" + eventID
}

// TaskSK is a task's sort key.
func TaskSK(id string) string { return PrefixTask + id }

// TaskEventPrefix is the sort key prefix of a task's timeline.
func TaskEventPrefix(taskID string) string { return prefixTaskEvent + taskID + "#" }

// TaskEventSK is a timeline entry's sort key, ordered by seq.
func TaskEventSK(taskID string, seq int) string {
	return fmt.Sprintf("%s%08d", TaskEventPrefix(taskID), seq)
}

// AssigneeGSI1PK is the gsi1 partition of an agent's tasks.
func AssigneeGSI1PK(teamID, slug string) string { return TeamPK(teamID) + infixAssignee + slug }

// ParentGSI2PK is the gsi2 partition of a task's children.
func ParentGSI2PK(teamID, parentID string) string {
	return TeamPK(teamID) + infixParent + parentID
}

// QueueGSI2PK is the gsi2 partition of an agent's queue: its queued work
// items (a task has a parent or a queue entry, never both).
func QueueGSI2PK(teamID, slug string) string { return TeamPK(teamID) + infixQueue + slug }

// PlanSK is a compound plan's sort key.
func PlanSK(id string) string { return PrefixPlan + id }

// TicketSK is a slot ticket's sort key (tasks.Ticket): its key.
func TicketSK(key string) string { return PrefixTicket + key }

// LineGSI2PK is the gsi2 partition of the tickets waiting for a slot of
// an agent: a sparse entry only while the ticket waits.
func LineGSI2PK(teamID, slug string) string { return TeamPK(teamID) + infixLine + slug }

// LineGSI2SK orders an agent's waiting tickets: priority rank, then the
// time they began waiting (milliseconds, fixed width), then the key.
func LineGSI2SK(rank int, since time.Time, key string) string {
	return fmt.Sprintf("%d#%013d#%s", rank, since.UnixMilli(), key)
}

// QueueGSI2SK is a queued work item's gsi2 sort key: its priority rank
// (0 urgent … 3 low), then its id, which grows with its creation time, so
// ascending is the queue order.
func QueueGSI2SK(rank int, taskID string) string {
	return fmt.Sprintf("%s%d#%s", prefixQueue, rank, taskID)
}

// DueShards spreads running tasks' deadlines over a few index partitions
// so the sweeper's index never has one hot key.
const DueShards = 8

// DueShard is the index partition of a task's deadline.
func DueShard(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % DueShards)
}

// DueKey sorts lexicographically by time (fixed width, UTC).
func DueKey(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// DueGSI3PK is the gsi3 partition of one deadline shard.
func DueGSI3PK(shard int) string { return fmt.Sprintf("%s%d", prefixDue, shard) }

// DueGSI3SK is a running task's gsi3 sort key: its deadline, then team and task.
func DueGSI3SK(deadline time.Time, teamID, taskID string) string {
	return DueKey(deadline) + "#" + teamID + "#" + taskID
}

// TaskDueSK is the sort key of a task's due entry.
func TaskDueSK(taskID string) string { return prefixTaskDue + taskID }

// TaskDueGSI3PK is the one gsi3 partition of tasks' due dates: people set
// them on board tasks, far below one partition's write rate.
const TaskDueGSI3PK = "TDUE"

// TaskDueGSI3SK is a due entry's gsi3 sort key: the due date, then team
// and task.
func TaskDueGSI3SK(dueAt time.Time, teamID, taskID string) string {
	return DueKey(dueAt) + "#" + teamID + "#" + taskID
}

// EscalationSK is an escalation's sort key.
func EscalationSK(id string) string { return PrefixEscalation + id }

// ConvSK is a conversation's sort key.
func ConvSK(id string) string { return PrefixConv + id }

// PartPrefix is the sort key prefix of a conversation's participants.
func PartPrefix(conv string) string { return prefixPart + conv + "#" }

// PartSK is a participant's sort key.
func PartSK(conv, slug string) string { return PartPrefix(conv) + slug }

// MsgPrefix is the sort key prefix of a conversation's messages.
func MsgPrefix(conv string) string { return prefixMsg + conv + "#" }

// MsgSK is a conversation message's sort key.
func MsgSK(conv, id string) string { return MsgPrefix(conv) + id }

// ConvWorkGSI4PK is the gsi4 partition of the work a conversation
// started: its tasks, sessions, plans, reports and consultations.
func ConvWorkGSI4PK(teamID, conv string) string { return prefixConvWork + teamID + "#" + conv }

// WorkKey sorts lexicographically by time: nanoseconds, fixed width, UTC
// (RFC 3339 with trailing zeros dropped would sort "…:05Z" after
// "…:05.1Z").
func WorkKey(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

// ConvWorkGSI4SK is a piece of work's gsi4 sort key: when it was created,
// then its id (ids of different kinds do not sort by time together).
func ConvWorkGSI4SK(createdAt time.Time, id string) string { return WorkKey(createdAt) + "#" + id }

// ConvWorkKeys are the gsi4 keys of a piece of work of conversation conv,
// both "" when it has none (a sparse index: the item stays out of it).
func ConvWorkKeys(teamID, conv string, createdAt time.Time, id string) (pk, sk string) {
	if conv == "" {
		return "", ""
	}
	return ConvWorkGSI4PK(teamID, conv), ConvWorkGSI4SK(createdAt, id)
}

// ConvAgentGSI4PK is the gsi4 partition of the conversations an agent took
// part in: its participant items, sorted by conversation id (ids grow with
// their creation time, so descending is newest first).
func ConvAgentGSI4PK(teamID, agent string) string { return prefixConvAgent + teamID + "#" + agent }

// HandoffPrefix is the sort key prefix of a conversation's handoffs.
func HandoffPrefix(conv string) string { return prefixHandoff + conv + "#" }

// HandoffSK is a handoff's sort key.
func HandoffSK(conv, id string) string { return HandoffPrefix(conv) + id }

// DecisionSK is a routing decision's sort key.
func DecisionSK(id string) string { return PrefixDecision + id }

// DecisionFloor is the first decision sort key made at or after since.
func DecisionFloor(since time.Time) string { return DecisionSK(ids.Floor("rdec", since)) }

// ConvGSI1PK is the gsi1 partition of a conversation's decisions.
func ConvGSI1PK(teamID, conv string) string { return TeamPK(teamID) + infixConv + conv }

// FeedbackSK is the sort key of one agent's rating of a message.
func FeedbackSK(msgID, agent string) string { return PrefixFeedback + msgID + "#" + agent }

// FeedbackFloor is the first rating sort key of messages made at or after since.
func FeedbackFloor(since time.Time) string { return PrefixFeedback + ids.Floor("msg", since) }

// AgentMsgSK is an agent message's sort key.
func AgentMsgSK(id string) string { return prefixAgentMsg + id }

// InboxPrefix is the sort key prefix of an agent's inbox.
func InboxPrefix(agent string) string { return prefixInbox + agent + "#" }

// InboxSK is an inbox entry's sort key.
func InboxSK(agent, msgID string) string { return InboxPrefix(agent) + msgID }

// MemorySK is a memory's sort key.
func MemorySK(id string) string { return PrefixMemory + id }

// ContextSK is the sort key of an agent's cached memory context.
func ContextSK(agent string) string { return prefixContext + agent }

// ReportSK is a report's sort key.
func ReportSK(id string) string { return PrefixReport + id }

// ResultSK is the sort key of a posted result's marker.
func ResultSK(marker string) string { return prefixResult + marker }

// ClipSK is a clipboard value's sort key: its scope (task:<root id> or
// conv:<conversation id>; neither holds "#") and its key.
func ClipSK(scope, key string) string { return prefixClip + scope + "#" + key }

// ToolPackSK is an MCP pack's sort key.
func ToolPackSK(name string) string { return PrefixToolPack + name }

// ApprovalSK is an approval request's sort key.
func ApprovalSK(id string) string { return PrefixApproval + id }

// EvaluationSK is a routing evaluation's sort key.
func EvaluationSK(id string) string { return PrefixEvaluation + id }

// SuggestionPrefix is the sort key prefix of an agent's example
// suggestions.
func SuggestionPrefix(agent string) string { return PrefixSuggestion + agent + "#" }

// SuggestionSK is an example suggestion's sort key: its agent, then its
// id (the corrected message's, so an agent's sort by time).
func SuggestionSK(agent, id string) string { return SuggestionPrefix(agent) + id }

// SuggestionHeadSK is the sort key of the head of an agent's example
// suggestions: the version every add moves.
func SuggestionHeadSK(agent string) string { return prefixSuggestionHead + agent }

// SkillVecPrefix is the sort key prefix of a team's skill vectors by one
// embedder; an embedder ID is printable ASCII without '#'
// ("amazon.titan-embed-text-v2:0/512").
func SkillVecPrefix(embedder string) string { return prefixSkillVec + embedder + "#" }

// SkillVecSK is the sort key of one agent version's skill vectors.
func SkillVecSK(embedder, slug string, version int) string {
	return SkillVecPrefix(embedder) + slug + "#" + strconv.Itoa(version)
}

// ClassifierSK is the sort key of a team's classifier for one embedder
// (an embedder ID is printable ASCII without '#', as for SkillVecPrefix).
func ClassifierSK(embedder string) string { return prefixClsHead + embedder }

// ClassifierPartPrefix is the sort key prefix of the weights of one fit
// of a team's classifier. A fit id is printable ASCII without '#'.
func ClassifierPartPrefix(embedder, fitID string) string {
	return prefixClsPart + embedder + "#" + fitID + "#"
}

// ClassifierPartSK is the sort key of part n of a fit's weights, n
// zero-padded to four digits so that the key order is the weights' order.
func ClassifierPartSK(embedder, fitID string, n int) string {
	return fmt.Sprintf("%s%04d", ClassifierPartPrefix(embedder, fitID), n)
}

// UsagePrefix is the sort key prefix of a day's (YYYY-MM-DD) usage
// counters.
func UsagePrefix(day string) string { return prefixUsage + day + "#" }

// UsageSK is the sort key of one usage counter: its day and a hash of what
// it counts (the item holds the names; a hash keeps any character of a
// model id or slug out of the key).
func UsageSK(day string, parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return UsagePrefix(day) + strconv.FormatUint(h.Sum64(), 36)
}

// StreamEventPrefix is the sort key prefix of a stream's events (a
// stream's name, streams.Session(id) …, holds one '#' and no other).
func StreamEventPrefix(stream string) string { return prefixStreamEvt + stream + "#" }

// StreamEventSK is the sort key of a stream's event: its sequence number
// zero-padded to twelve digits, so the key order is the number order.
func StreamEventSK(stream string, seq int64) string {
	return fmt.Sprintf("%s%012d", StreamEventPrefix(stream), seq)
}

// Key is the primary key of the item at pk, sk.
func Key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: str(pk), AttrSK: str(sk)}
}

// SessionSK is a collaboration session's sort key.
func SessionSK(id string) string { return PrefixSession + id }

// SessionMsgPrefix is the sort key prefix of a session's messages.
func SessionMsgPrefix(id string) string { return prefixSesMsg + id + "#" }

// SessionMsgSK is a session message's sort key.
func SessionMsgSK(id, msgID string) string { return SessionMsgPrefix(id) + msgID }

// SessionDueGSI3PK is the one partition of unfinished sessions' deadlines
// (sessions are few next to tasks).
const SessionDueGSI3PK = "SDUE"

// SessionStartGSI3PK is the partition of planning sessions, by when they
// last changed: the reconciler starts those left planning.
const SessionStartGSI3PK = "SSTART"

// PushConfigSK is an A2A push-notification config's sort key under its
// team: TEAM#<team> / A2APUSH#<task>#<id> (id "" gives the task's prefix).
func PushConfigSK(taskID, id string) string { return "A2APUSH#" + taskID + "#" + id }

// PushCounterSK is the counter of a task's push configs (server.MaxPushConfigs).
func PushCounterSK(taskID string) string { return "A2APUSHN#" + taskID }

// CardDueGSI3PK is the one partition of external A2A agents' next card
// checks (agents.Remote.NextCheck): a few per team, read by the sweeper.
const CardDueGSI3PK = "A2ACARD"

// PlanDueGSI3PK is the one partition of running plans' backstops
// (plans.Plan.Due): a handful at a time, read by the sweeper every minute.
const PlanDueGSI3PK = "PDUE"
