// Package expertgate is the ExpertGate as a service of its own: the
// expert-gate function loads a team's active agents, their load and recent
// ratings, and scores a query on the four signals (shared/routing). The
// chat and discovery functions reach it through the Gate port; its adapter,
// gateclient, calls the function synchronously through the Lambda Invoke
// API (locally through the edge, as in AWS), so this package links no AWS
// SDK.
package expertgate

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Request asks for the scores of a team's active agents for a query.
//
// Agents, when the caller has just read the team's active agents (a chat
// turn has, to route and to run them), are those agents: the gate scores
// them instead of reading them again, so a turn reads the agents once, and
// the gate scores exactly the agents the turn will run. Nil means the gate
// reads them itself (gateclient also sends none when they would make the
// invocation payload too large). Their TeamID is the request's.
//
// Include names agents whose score the caller needs wherever they rank (a
// consultation's suggested agent): each is answered after the best.
type Request struct {
	TeamID  string         `json:"team_id"`
	Query   string         `json:"query"`
	Exclude []string       `json:"exclude,omitempty"`
	Include []string       `json:"include,omitempty"`
	Agents  []agents.Agent `json:"agents,omitempty"`
	// Context is what the message carries for the eligibility gates.
	Context *routing.MessageContext `json:"context,omitempty"`
	// SkillsOnly asks for the skill match alone, the AgentRouter's
	// ranking when the expert_gate flag is off (cascade): no load or
	// rating is read, so past performance and load are neutral, and the
	// scores' Confidence is the calibrated skill match of the same index
	// (classifier, examples, descriptions) the gate scores with.
	SkillsOnly bool `json:"skills_only,omitempty"`
	// UserID is the person the query is from (routing.Signals.UserID):
	// their own ratings weigh more in past performance.
	UserID string `json:"user_id,omitempty"`
}

// Response is the best routing.ExplainedScores of the active agents'
// scores, best first, each with every signal, its matching skills and its
// explanation, then those of Include not among them (unexplained); with
// the query's complexity and the model tier it implies. AgentsScored is
// how many agents were scored and ranked: all of them are, but only the
// scores a caller can use are built and sent (no strategy selects more
// than MaxK or MaxEnsemble, both below ExplainedScores), which keeps the
// response and the routing decision that stores it small however large
// the team, and the gate's work in proportion to the query, not to the
// team (see docs/measurements.md, "The ExpertGate against the seed's design").
type Response struct {
	Scores        []routing.ExpertScore `json:"scores"`
	Complexity    routing.Complexity    `json:"complexity"`
	Tier          routing.TierChoice    `json:"tier"`
	Style         routing.Style         `json:"style"`
	Loads         routing.Loads         `json:"loads"`
	AgentsScored  int                   `json:"agents_scored"`
	GateLatencyMS float64               `json:"gate_latency_ms"`
}

// Gate scores queries: the Service in the expert-gate function, and
// gateclient.Client everywhere else.
type Gate interface {
	// Score returns EINVALID for a missing team or query, and EINTERNAL
	// when the gate cannot be reached.
	Score(ctx context.Context, req Request) (Response, error)
}

// Source is the data the gate reads.
type Source interface {
	ActiveAgents(ctx context.Context, teamID string) ([]agents.Agent, error)
	// AgentLoads is sorted by slug (routing.NewLoads): the order a
	// team's load items are read in.
	AgentLoads(ctx context.Context, teamID string) (routing.Loads, error)
	RecentRatings(ctx context.Context, teamID string, since time.Time, limit int) ([]routing.Rating, error)
}

// MaxRatings bounds the ratings one scoring reads (newest first).
const MaxRatings = 500

// MaxQuery bounds the query the gate accepts (characters).
const MaxQuery = 8000

// Service is the gate behind the expert-gate function.
type Service struct {
	Source Source
	Tiers  routing.TierModels
	Now    func() time.Time
	// Embedder gives the semantic signal (architecture decision 6b): the
	// skills are embedded once per index, the query once per call. Nil:
	// lexical only.
	Embedder routing.Embedder
	// Vectors, when set, keeps the skill vectors in the table (a remote
	// embedder: Titan, one Bedrock call per text): the index reads the
	// stored vectors of its agents' versions and embeds, and stores, only
	// the missing ones (vectors.go). Nil (wordllama: microseconds in
	// process): every index embeds its skills and nothing is stored.
	Vectors VectorStore
	// LexicalOnEmbedFailure scores by words alone, and says so in the log,
	// when the embedder fails (a remote one: throttled, unreachable, out
	// of time), instead of failing the call: routing a message less well
	// beats not routing it. An index built so is not kept, so the next
	// call tries again. Off, the failure is EINTERNAL.
	LexicalOnEmbedFailure bool
	// Classifiers, when set, holds the team's fitted classifier
	// (classifiers.go): an index scores with it when it fits. Nil: every
	// index scores by example similarity.
	Classifiers ClassifierStore
	// Recheck is how often a warm index without its own classifier reads
	// the store again (0: ClassifierRecheck).
	Recheck time.Duration

	mu    sync.Mutex
	cache map[string][]cachedIndex // by team, most recently used first
}

// cachedIndex is a team's index and the agent versions it was built from;
// a warm function reuses it until an agent changes.
type cachedIndex struct {
	key string
	ix  *routing.Index
	// checked is when the store was last read for its classifier; texts
	// is the index's TrainingHash, which its own classifier carries.
	checked time.Time
	texts   string
}

var _ Gate = (*Service)(nil)

// Score implements Gate (and is the expert-gate function's handler).
// Returns EINVALID for a missing team or query.
func (s *Service) Score(ctx context.Context, req Request) (Response, error) {
	if req.TeamID == "" {
		return Response{}, apperr.Invalid("team_id", "team_id is required")
	}
	if strings.TrimSpace(req.Query) == "" || len(req.Query) > MaxQuery {
		return Response{}, apperr.Invalid("query", "query must be 1 to %d characters", MaxQuery)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	list, err := s.candidates(ctx, req)
	if err != nil {
		return Response{}, err
	}
	if len(req.Exclude) > 0 {
		skip := map[string]bool{}
		for _, e := range req.Exclude {
			skip[e] = true
		}
		kept := list[:0:0]
		for _, a := range list {
			if !skip[a.Slug] {
				kept = append(kept, a)
			}
		}
		list = kept
	}
	var loads routing.Loads
	var ratings []routing.Rating
	t := now()
	if !req.SkillsOnly {
		if loads, err = s.Source.AgentLoads(ctx, req.TeamID); err != nil {
			return Response{}, err
		}
		if ratings, err = s.Source.RecentRatings(ctx, req.TeamID, t.Add(-routing.PerformanceWindow), MaxRatings); err != nil {
			return Response{}, err
		}
	}
	// Gate latency is the scoring itself (with the query's embedding),
	// not the reads before it.
	start := time.Now()
	ix, err := s.index(ctx, req.TeamID, list)
	if err != nil {
		return Response{}, err
	}
	sig := routing.Signals{Loads: loads, Ratings: ratings, Now: t, Context: req.Context, UserID: req.UserID}
	if ix.Semantic() {
		v, err := s.Embedder.Embed(ctx, []string{req.Query})
		switch {
		case err == nil:
			sig.QueryEmbedding = v[0]
		case s.LexicalOnEmbedFailure:
			// A query without a vector is scored on its words, with the
			// lexical calibration.
			slog.WarnContext(ctx, "query not embedded: scoring by words alone", "team_id", req.TeamID, "embedder", s.Embedder.ID(), "error", err)
		default:
			return Response{}, apperr.Wrap(apperr.EINTERNAL, err, "embedding the query")
		}
	}
	// Every agent is scored and ranked; the best are built and explained
	// in full, and those the caller asked to see wherever they rank.
	ranking := ix.Rank(req.Query, sig)
	scores := ranking.Best(routing.ExplainedScores, routing.ExplainedScores, req.Include...)
	c := routing.ComplexityOf(req.Query, ranking.Matched())
	tiers := s.Tiers
	if tiers == nil {
		tiers = routing.DefaultTierModels
	}
	return Response{
		Scores: scores, Complexity: c, Tier: tiers.Choose(req.Query, c), Style: routing.StyleOf(req.Query),
		Loads: loads, AgentsScored: ranking.Len(), GateLatencyMS: float64(time.Since(start).Microseconds()) / 1000,
	}, nil
}

// Lean is req as it travels to the gate: its agents' skills carry the
// count of their examples, not the examples (up to 24 KiB an agent, on
// every turn). The gate reads the examples itself when it builds an index
// for those agents' versions, and keeps that index while they last.
func Lean(req Request) Request {
	if req.Agents == nil {
		return req
	}
	list := make([]agents.Agent, len(req.Agents))
	for i, a := range req.Agents {
		list[i] = agents.WithoutExamples(a)
	}
	req.Agents = list
	return req
}

// withExamples gives back the examples of the agents a lean request
// carried (Lean): the team's active agents are read once, and each agent
// of list whose version they hold takes its skills from there. Only an
// index being built needs them.
func (s *Service) withExamples(ctx context.Context, teamID string, list []agents.Agent) ([]agents.Agent, error) {
	lean := false
	for _, a := range list {
		for _, sk := range a.Skills {
			lean = lean || (sk.ExampleCount > 0 && sk.Examples == nil)
		}
	}
	if !lean {
		return list, nil
	}
	stored, err := s.Source.ActiveAgents(ctx, teamID)
	if err != nil {
		return nil, err
	}
	byKey := map[string]agents.Agent{}
	for _, a := range stored {
		byKey[a.Slug+":"+strconv.Itoa(a.Version)] = a
	}
	out := slices.Clone(list)
	for i, a := range out {
		if full, ok := byKey[a.Slug+":"+strconv.Itoa(a.Version)]; ok {
			out[i].Skills = full.Skills
		}
	}
	return out, nil
}

// candidates are the agents of the request, or the team's active agents
// read from the source when it has none. Agents sent that are not active
// are left out, as the source would; so is an A2A agent outside the team
// whose card could not be fetched at its last check (unavailable, not an
// error for the user: another agent answers).
func (s *Service) candidates(ctx context.Context, req Request) ([]agents.Agent, error) {
	if req.Agents == nil {
		list, err := s.Source.ActiveAgents(ctx, req.TeamID)
		return slices.DeleteFunc(list, agents.Agent.Unavailable), err
	}
	list := make([]agents.Agent, 0, len(req.Agents))
	for _, a := range req.Agents {
		if a.Status == agents.StatusActive && !a.Unavailable() {
			a.TeamID = req.TeamID
			list = append(list, a)
		}
	}
	return list, nil
}

// index is the team's index for these agents, built (and its skills
// embedded) once per set of agent versions and kept while the function is
// warm.
func (s *Service) index(ctx context.Context, teamID string, list []agents.Agent) (*routing.Index, error) {
	key := agentsKey(list)
	if ix, recheck := s.cached(teamID, key); ix != nil {
		if recheck {
			s.classify(ctx, teamID, ix)
		}
		return ix, nil
	}
	// Built outside the lock: embedding a team's skills (Titan: Bedrock
	// calls) must not hold up another team's scoring in the same process.
	// Two calls of one team may both build; the second's index replaces
	// the first's, the same.
	list, err := s.withExamples(ctx, teamID, list)
	if err != nil {
		return nil, err
	}
	ix := routing.BuildIndex(list)
	if s.Embedder != nil {
		if s.Vectors != nil {
			err = s.embedStored(ctx, teamID, list, ix)
		} else {
			err = ix.Embed(ctx, s.Embedder)
		}
		if err != nil {
			if !s.LexicalOnEmbedFailure {
				return nil, apperr.Wrap(apperr.EINTERNAL, err, "embedding the skills")
			}
			// ix has no embeddings (they are set only once all are in
			// hand); it is not kept, so the next call tries again.
			slog.WarnContext(ctx, "skills not embedded: scoring by words alone", "team_id", teamID, "embedder", s.Embedder.ID(), "error", err)
			return ix, nil
		}
	}
	s.classify(ctx, teamID, ix)
	s.keep(teamID, key, ix)
	return ix, nil
}

// IndexesPerTeam is how many indexes of one team (sets of agents and
// versions) a warm function keeps: a chat turn scores the agents a
// conversation may route to (the active ones less those removed from
// it), find_colleagues the active and paused ones less the asker, so one
// team's calls alternate between a few sets, and a single cached index
// would be rebuilt (and re-embedded) at every switch.
const IndexesPerTeam = 4

// cached is the team's index for key, moved to the front (nil when
// none), and whether to read the store for its classifier again: it has
// none of its own agent versions, and was last checked ClassifierRecheck
// ago (the check is then counted as done).
func (s *Service) cached(teamID, key string) (*routing.Index, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.cache[teamID]
	for i, c := range list {
		if c.key == key {
			recheck := false
			// Not its own fit, nor the team's fit of these very versions.
			if cl := c.ix.Classifier(); s.Classifiers != nil && c.ix.Semantic() && c.ix.ClassifierReady() &&
				(cl == nil || (cl.Texts != c.texts && !fittedTo(cl, c.key))) &&
				time.Since(c.checked) >= cmp.Or(s.Recheck, ClassifierRecheck) {
				recheck, c.checked = true, time.Now()
			}
			copy(list[1:i+1], list[:i])
			list[0] = c
			return c.ix, recheck
		}
	}
	return nil, false
}

// keep caches ix as the team's most recent index, dropping the least
// recently used past IndexesPerTeam.
func (s *Service) keep(teamID, key string, ix *routing.Index) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil {
		s.cache = map[string][]cachedIndex{}
	}
	list := []cachedIndex{{key: key, ix: ix, checked: time.Now(), texts: ix.TrainingHash()}}
	for _, c := range s.cache[teamID] {
		if c.key != key && len(list) < IndexesPerTeam {
			list = append(list, c)
		}
	}
	s.cache[teamID] = list
}
