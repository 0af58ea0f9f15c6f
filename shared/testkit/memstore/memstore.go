// Package memstore is the in-memory implementation of the domain's ports:
// one Store that every unit test shares (as serverless-go-demo's
// store/memory.go), instead of a hand-written fake per test, and a
// Publisher that records the events the services publish.
//
// The Store enforces the same invariants as the DynamoDB adapter
// (shared/store/dynamo), which enforces them with conditions on one transaction:
// every write here checks all of its conditions first and then applies all
// of its changes under one mutex, so a write is atomic and concurrent
// requests cannot break a limit, exactly as with TransactWriteItems. A
// failed condition comes back with the error the DynamoDB adapter maps the
// same cancellation to (apperr codes and reasons, *tasks.ConditionFailed
// naming the item). Where the adapter's behaviour is subtle the method says
// so and mirrors it; where this store differs, the method's comment says
// how.
//
// Values are copied in and out (documents through JSON, as the adapter
// stores them), so a caller mutating a returned value never changes what
// is stored.
package memstore

import (
	"encoding/base64"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/a2a/server"
	"github.com/conclave-ai/conclave/shared/chat/conversations"
	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/paging"
	"github.com/conclave-ai/conclave/shared/routing/discovery"
	"github.com/conclave-ai/conclave/shared/routing/expertgate"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/memory"
	"github.com/conclave-ai/conclave/shared/team/messaging"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/tools/toolpacks"
	"github.com/conclave-ai/conclave/shared/work/sessions"
	"github.com/conclave-ai/conclave/shared/work/tasks"
)

var (
	_ teams.Store                  = (*Store)(nil)
	_ agents.Store                 = (*Store)(nil)
	_ tasks.Store                  = (*Store)(nil)
	_ conversations.Store          = (*Store)(nil)
	_ conversations.MessageTail    = (*Store)(nil)
	_ conversations.AgentDirectory = (*Store)(nil)
	_ messaging.Store              = (*Store)(nil)
	_ messaging.Directory          = (*Store)(nil)
	_ memory.Store                 = (*Store)(nil)
	_ memory.Directory             = (*Store)(nil)
	_ discovery.Directory          = (*Store)(nil)
	_ expertgate.Source            = (*Store)(nil)
)

// key names an item of a team (a team id and the item's id or slug).
type key struct{ team, id string }

// Store holds every item of every team in memory. The zero value is not
// usable; call New. It is safe for concurrent use.
type Store struct {
	// Now is the clock of the store's own time checks (a cached memory
	// context expires an hour after it was built); tests with a fake clock
	// set it to the same clock as the services. Set it before use.
	Now func() time.Time

	mu sync.Mutex

	teams   map[string]teamRow // by team id
	rates   map[string]int     // requests by team and second
	apiKeys map[string]keyRow  // by hash
	agents  map[key]agents.Agent
	loads   map[key]*load // by team and agent slug

	tasks      map[key]tasks.Task
	taskEvents map[key][]tasks.Event // by team and task id

	convs     map[key][]byte                               // conversation documents
	parts     map[key]map[string]conversations.Participant // by team and conversation id, then slug
	messages  map[key]map[string]*messageRow               // by team and conversation id, then message id
	decisions map[key][]byte                               // routing decision documents
	ratings   map[key]ratingRow                            // by team and message id + "#" + agent
	handoffs  map[key]map[string][]byte                    // by team and conversation id, then handoff id

	agentMessages map[key][]byte              // agent message documents
	messageRefs   map[key]string              // (team, Idempotency-Key) → agent message id
	turnRefs      map[key][]string            // (team, Idempotency-Key) → a turn's message ids
	refs          map[key]string              // (team, kind#Idempotency-Key) → the id a create stored (refs.go)
	inboxes       map[key]map[string]inboxRow // by team and agent, then message id

	memories map[key][]byte // memory documents
	contexts map[key][]byte // cached memory contexts, by team and agent
	epochs   map[string]int // memory epoch per team; absent until the first invalidation

	// Collaboration sessions (sessions.go), made on first use.
	sessions    map[key]sessions.Session
	sessionMsgs map[key][]sessions.Message
	reports     map[key][]byte // report documents
	// resultMarkers are the results posted into conversations, by team
	// and marker (the message id), made on first use.
	resultMarkers map[key]string
	// clips are the clipboard values (toolpacks.Clip), by team, scope and
	// key.
	clips map[clipKey]toolpacks.Clip
	// remotes are the MCP packs, by team and name.
	remotes map[string]map[string]toolpacks.Remote
	// pushes are the A2A push configs, by team and task, oldest first
	// (push.go), made on first use.
	pushes map[key][]server.PushConfig

	// Consultations (consultations.go), made on first use.
	consultations map[key][]byte          // consultation documents
	escalations   map[key][]byte          // escalation documents
	consActive    map[key]int             // active consultations by team and requester
	consIDs       map[key]map[string]bool // the ids of those consultations (the counter's record)

	// Approvals of tool calls and the teams' policies (approvals.go),
	// made on first use.
	apr *approvalRows

	// Compound plans (plans.go), made on first use.
	plans map[key][]byte

	// Slot tickets by team and key (tickets.go), made on first use.
	tickets map[key]tasks.Ticket

	// boardPolicies are the teams' board policies (overdue.go), made on
	// first use.
	boardPolicies map[string]tasks.BoardPolicy

	// Team budgets, their months and usage counters (budget.go), made on
	// first use.
	bud *budgetRows

	// streamLog holds the streams' events by team and stream name
	// (streams.go), made on first use.
	streamLog map[key]*streamRow
}

// load is an agent's LOAD item: counters that may go below zero exactly as
// the adapter's unconditional ADDs can (readers clamp them).
type load struct {
	activeTasks         int
	queuedWork          int
	slotWaiters         int
	activeConversations int
	latencyMS           float64
}

// New returns an empty store on the wall clock.
func New() *Store {
	return &Store{
		Now:           time.Now,
		teams:         map[string]teamRow{},
		apiKeys:       map[string]keyRow{},
		agents:        map[key]agents.Agent{},
		loads:         map[key]*load{},
		tasks:         map[key]tasks.Task{},
		taskEvents:    map[key][]tasks.Event{},
		convs:         map[key][]byte{},
		parts:         map[key]map[string]conversations.Participant{},
		messages:      map[key]map[string]*messageRow{},
		decisions:     map[key][]byte{},
		ratings:       map[key]ratingRow{},
		handoffs:      map[key]map[string][]byte{},
		agentMessages: map[key][]byte{},
		inboxes:       map[key]map[string]inboxRow{},
		memories:      map[key][]byte{},
		contexts:      map[key][]byte{},
		epochs:        map[string]int{},
		reports:       map[key][]byte{},
	}
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// loadOf returns the agent's LOAD item, creating it as the adapter's
// ADD does.
func (s *Store) loadOf(teamID, slug string) *load {
	k := key{teamID, slug}
	l := s.loads[k]
	if l == nil {
		l = &load{}
		s.loads[k] = l
	}
	return l
}

// internal is the error the adapter returns for an infrastructure failure.
func internal(msg string) error { return apperr.New(apperr.EINTERNAL, "memstore: %s", msg) }

// doc encodes a value as the adapter's "doc" attribute does: fields tagged
// json:"-" (TeamID, most of them) are not stored.
func doc(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("memstore: marshal: " + err.Error())
	}
	return b
}

func readDoc[T any](b []byte) T {
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		panic("memstore: unmarshal: " + err.Error())
	}
	return v
}

// token is the opaque page token: the sort key of the last item evaluated,
// bound to the listing it was issued for (as the adapter's pageToken).
type token struct {
	Scope string `json:"s"`
	Key   string `json:"k"`
}

func encodeToken(scope, last string) string {
	return base64.RawURLEncoding.EncodeToString(doc(token{Scope: scope, Key: last}))
}

func decodeToken(scope, tok string) (string, error) {
	if tok == "" {
		return "", nil
	}
	bad := apperr.Invalid("next_token", "next_token is not valid for this listing")
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", bad
	}
	var t token
	if err := json.Unmarshal(b, &t); err != nil || t.Scope != scope || t.Key == "" {
		return "", bad
	}
	return t.Key, nil
}

// pageAll reads a whole listing (the adapter's loops over every page).
var pageAll = paging.Page{}

// row is one item of a listing: its sort key and its value.
type row[T any] struct {
	sk string
	v  T
}

// query is one page of a DynamoDB Query, mirrored: rows in key order
// (descending when desc), starting after the token's key; Limit counts the
// rows evaluated *before* the filter, so a filtered page may hold fewer than
// Limit items while a next token is still returned; and a full page always
// returns a next token, even when nothing follows (the next page is then
// empty), as DynamoDB returns LastEvaluatedKey whenever it stops at Limit.
// limit <= 0 reads everything.
func query[T any](rows []row[T], desc bool, scope string, p paging.Page, keep func(T) bool) ([]T, string, error) {
	after, err := decodeToken(scope, p.Token)
	if err != nil {
		return nil, "", err
	}
	sort.Slice(rows, func(i, j int) bool {
		if desc {
			return rows[i].sk > rows[j].sk
		}
		return rows[i].sk < rows[j].sk
	})
	out := []T{}
	evaluated, last := 0, ""
	for _, r := range rows {
		if after != "" && ((!desc && r.sk <= after) || (desc && r.sk >= after)) {
			continue
		}
		if p.Limit > 0 && evaluated == p.Limit {
			break
		}
		evaluated++
		last = r.sk
		if keep == nil || keep(r.v) {
			out = append(out, r.v)
		}
	}
	next := ""
	if p.Limit > 0 && evaluated == p.Limit {
		next = encodeToken(scope, last)
	}
	return out, next, nil
}
