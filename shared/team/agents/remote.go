package agents

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// ProviderA2A is the model provider of an agent outside the team: an
// A2A agent (docs/a2a.md, "Outbound") that answers through the A2A
// protocol instead of a model Conclave calls.
const ProviderA2A = "a2a"

// Remote is what Conclave keeps of an external A2A agent that is a team
// member: where its card is, what the card said when it was last
// fetched, and whether it answered then. Its credential is kept in
// Secrets Manager (SecretID), never in the table or an answer.
type Remote struct {
	CardURL string `json:"card_url"`
	// Endpoint and ProtocolVersion are the card's JSON-RPC interface the
	// calls go to ("1.0" or "0.3").
	Endpoint        string `json:"endpoint"`
	ProtocolVersion string `json:"protocol_version"`
	CardName        string `json:"card_name"`
	CardVersion     string `json:"card_version"`
	// HasCredential: a credential is kept (sent as a bearer token).
	HasCredential bool   `json:"has_credential"`
	SecretID      string `json:"-"`
	// Available is false once the card could not be fetched (the gate
	// does not route to the agent; it stays a member); FetchedAt is the
	// card's last successful fetch, CheckedAt the last try.
	Available bool      `json:"available"`
	FetchedAt time.Time `json:"fetched_at"`
	CheckedAt time.Time `json:"checked_at"`
	LastError string    `json:"last_error,omitempty"`
}

// IsRemote reports whether a answers through A2A.
func (a Agent) IsRemote() bool { return a.Remote != nil }

// Unavailable reports whether a is a remote agent whose card could not be
// fetched at its last check: the gate leaves it out.
func (a Agent) Unavailable() bool { return a.Remote != nil && !a.Remote.Available }

// RemoteInput is the a2a object of POST /v1/agents.
type RemoteInput struct {
	CardURL string `json:"card_url"`
	// Credential, if any, is sent to the remote agent as a bearer token.
	Credential string `json:"credential"`
}

// RemoteCard is an agent card as Conclave reads it (the adapter,
// shared/a2a/remote, fetches and checks it).
type RemoteCard struct {
	Name            string
	Description     string
	Version         string
	Endpoint        string
	ProtocolVersion string
	Skills          []RemoteSkill
}

// RemoteSkill is one skill of a card.
type RemoteSkill struct {
	ID, Name, Description string
	Tags, Examples        []string
}

// Cards fetches an agent card and checks it (the URL against the stage's
// network policy, the card's fields, a JSON-RPC interface Conclave
// speaks). Returns EINVALID (card_url), EREJECTED (the network policy),
// EUPSTREAM (unreachable, not a card).
type Cards interface {
	Fetch(ctx context.Context, cardURL, credential string) (RemoteCard, error)
}

// Secrets keeps remote agents' credentials (secretstore.Store).
type Secrets interface {
	PutSecret(ctx context.Context, id, value string) error
	GetSecret(ctx context.Context, id string) (string, error)
	DeleteSecret(ctx context.Context, id string) error
}

// When cards are fetched again (the task-sweeper's schedule, every
// minute, at most MaxRefreshPerSweep at a time): an available agent's
// every CardRefreshEvery, an unavailable one's every CardRetryEvery (it
// comes back to the gate at the first fetch that works).
const (
	CardRefreshEvery   = time.Hour
	CardRetryEvery     = 5 * time.Minute
	MaxRefreshPerSweep = 20
)

// NextCheck is when r's card is due to be fetched again.
func (r Remote) NextCheck() time.Time {
	if r.Available {
		return r.CheckedAt.Add(CardRefreshEvery)
	}
	return r.CheckedAt.Add(CardRetryEvery)
}

// DueCards lists the remote agents, of every team, whose card is due
// (NextCheck before a time): the store's index of them.
type DueCards interface {
	DueCards(ctx context.Context, before time.Time, limit int) ([]Agent, error)
}

// Refresh fetches agent slug's card now (POST /v1/agents/{slug}/refresh):
// its skills follow the card; an unreachable card marks it unavailable.
// Returns ENOTFOUND, EINVALID (not an A2A agent).
func (s *Service) Refresh(ctx context.Context, teamID, slug string) (Agent, error) {
	a, err := s.Get(ctx, teamID, slug)
	if err != nil {
		return Agent{}, err
	}
	if a.Remote == nil {
		return Agent{}, apperr.Invalid("slug", "agent %q is not an A2A agent: it has no card to fetch", slug)
	}
	a, err = s.refresh(ctx, a)
	if err != nil {
		return Agent{}, err
	}
	return s.markDefault(ctx, teamID, a, nil)
}

// RefreshDue fetches again the cards that are due (the sweeper); an
// agent changed meanwhile (ECONFLICT) is left to the next sweep. Returns
// how many were fetched.
func (s *Service) RefreshDue(ctx context.Context, due DueCards) (int, error) {
	list, err := due.DueCards(ctx, s.Now().UTC(), MaxRefreshPerSweep)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, a := range list {
		if _, err := s.refresh(ctx, a); err != nil && !apperr.Is(err, apperr.ECONFLICT) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// refresh reads the credential and fetches the card.
func (s *Service) refresh(ctx context.Context, a Agent) (Agent, error) {
	cred := ""
	if a.Remote.HasCredential {
		if s.Secrets == nil {
			return Agent{}, apperr.Invalid("a2a", "this stage does not take A2A agents")
		}
		var err error
		if cred, err = s.Secrets.GetSecret(ctx, a.Remote.SecretID); apperr.Is(err, apperr.ENOTFOUND) {
			// A credential deleted outside Conclave: the agent is
			// unavailable until it is registered again, and checked again
			// later like any failing card (not every sweep).
			return s.recordCheck(ctx, a, RemoteCard{}, errors.New("its credential is missing from Secrets Manager"))
		} else if err != nil {
			return Agent{}, err
		}
	}
	return s.RefreshCard(ctx, a, cred)
}

// MaxCredential bounds a credential (a bearer token).
const MaxCredential = 4096

// RemoteSkills turns a card's skills into skills of Conclave's rules: a
// name of the skill pattern made from the skill's id (or its name), no
// duplicates, at most MaxSkills, descriptions within MaxDescription, the
// tags as keywords and domains (at most MaxListItems of MaxItemLength).
// A remote skill is never public (the team decides what it offers) and
// never internal only. Skills with nothing to describe them are dropped.
func RemoteSkills(card RemoteCard) []Skill {
	out := []Skill{}
	seen := map[string]bool{}
	budget := MaxExampleBytes
	for _, rs := range card.Skills {
		if len(out) == MaxSkills {
			break
		}
		name := skillName(rs.ID)
		if name == "" {
			name = skillName(rs.Name)
		}
		if name == "" || seen[name] {
			continue
		}
		desc := strings.TrimSpace(rs.Description)
		if desc == "" {
			desc = strings.TrimSpace(rs.Name)
		}
		if desc == "" {
			continue
		}
		seen[name] = true
		tags := cleanList(rs.Tags)
		out = append(out, Skill{Name: name, Description: clip.Prefix(desc, MaxDescription), Domains: tags, Keywords: tags,
			Priority: 50, Kind: KindChat, Examples: cardExamples(rs.Examples, &budget)})
	}
	return out
}

// cardExamples are a remote skill's examples as a skill of the team keeps
// them (validateExamples): trimmed, blank and repeated ones dropped, each
// clipped to MaxExampleLength, at most MaxExamples, within what is left of
// the agent's budget of MaxExampleBytes. A card is the remote party's and
// is never refused for its examples: what does not fit is left out.
func cardExamples(list []string, budget *int) []string {
	var out []string
	seen := map[string]bool{}
	for _, e := range list {
		e = clip.Prefix(strings.TrimSpace(e), MaxExampleLength)
		if e = strings.TrimSpace(e); e == "" || seen[strings.ToLower(e)] || len(out) == MaxExamples || len(e) > *budget {
			continue
		}
		seen[strings.ToLower(e)] = true
		*budget -= len(e)
		out = append(out, e)
	}
	return out
}

var nonSkill = regexp.MustCompile(`[^a-z0-9]+`)

// skillName is s in the skill pattern: lower case, runs of anything else
// as one '-', trimmed to 64 characters, "" when nothing is left or it
// does not start with a letter.
func skillName(s string) string {
	n := strings.Trim(nonSkill.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(n) > 64 {
		n = strings.TrimRight(n[:64], "-")
	}
	if !skillRE.MatchString(n) {
		return ""
	}
	return n
}

func cleanList(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range in {
		t = clip.Prefix(strings.TrimSpace(strings.ToLower(t)), MaxItemLength)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		if out = append(out, t); len(out) == MaxListItems {
			break
		}
	}
	return out
}

// remote builds a new agent's Remote from in: the card fetched and
// checked, the credential kept under secretID. The agent's skills are
// the card's (what the request gave is refused: the remote agent's card
// says what it can do), its tagline the card's description unless given.
func (s *Service) remote(ctx context.Context, teamID string, in CreateInput, a *Agent) (written string, err error) {
	r := in.A2A
	if s.Cards == nil || s.Secrets == nil {
		return "", apperr.Invalid("a2a", "this stage does not take A2A agents")
	}
	if strings.TrimSpace(r.CardURL) == "" {
		return "", apperr.Invalid("a2a.card_url", "a2a.card_url is required")
	}
	if len(r.Credential) > MaxCredential || strings.ContainsAny(r.Credential, "\r\n") {
		return "", apperr.Invalid("a2a.credential", "a2a.credential must be at most %d characters on one line", MaxCredential)
	}
	if in.Model != nil {
		return "", apperr.Invalid("model", "an A2A agent answers with its own model: give a2a or model, not both")
	}
	if len(in.Skills) > 0 {
		return "", apperr.Invalid("skills", "an A2A agent's skills are its card's: leave skills out")
	}
	card, err := s.Cards.Fetch(ctx, r.CardURL, r.Credential)
	if err != nil {
		return "", err
	}
	a.Skills = RemoteSkills(card)
	if len(a.Skills) == 0 {
		return "", apperr.New(apperr.EREJECTED, "the agent card at %s lists no skill Conclave can route to", r.CardURL).WithReason("A2ACardWithoutSkills")
	}
	if a.Tagline == "" {
		a.Tagline = clip.Prefix(strings.TrimSpace(card.Description), 200)
	}
	now := s.Now().UTC()
	a.Model = &Model{Provider: ProviderA2A}
	a.Remote = &Remote{CardURL: r.CardURL, Endpoint: card.Endpoint, ProtocolVersion: card.ProtocolVersion,
		CardName: card.Name, CardVersion: card.Version, Available: true, FetchedAt: now, CheckedAt: now}
	if r.Credential != "" {
		a.Remote.HasCredential, a.Remote.SecretID = true, s.SecretPrefix+teamID+"/"+a.Slug+"/"+ids.New("cred")
		if err := s.Secrets.PutSecret(ctx, a.Remote.SecretID, r.Credential); err != nil {
			return "", err
		}
		written = a.Remote.SecretID
	}
	return written, nil
}

// RefreshCard fetches a remote agent's card again (Service.Refresh's
// schedule): its skills and endpoint follow the card, and an agent
// whose card cannot be fetched is marked unavailable (not an error: it
// stays a member, and the next refresh may bring it back).
func (s *Service) RefreshCard(ctx context.Context, a Agent, credential string) (Agent, error) {
	if a.Remote == nil || s.Cards == nil {
		return a, nil
	}
	card, err := s.Cards.Fetch(ctx, a.Remote.CardURL, credential)
	return s.recordCheck(ctx, a, card, err)
}

// recordCheck stores a check of a's card: the card fetched, or the error
// that made the agent unavailable (checked again after CardRetryEvery).
func (s *Service) recordCheck(ctx context.Context, a Agent, card RemoteCard, err error) (Agent, error) {
	now := s.Now().UTC()
	r := *a.Remote
	r.CheckedAt = now
	next := a
	if err != nil {
		r.Available, r.LastError = false, clip.Prefix(err.Error(), 300)
	} else if skills := RemoteSkills(card); len(skills) > 0 {
		r.Available, r.LastError, r.FetchedAt = true, "", now
		r.Endpoint, r.ProtocolVersion, r.CardName, r.CardVersion = card.Endpoint, card.ProtocolVersion, card.Name, card.Version
		next.Skills = skills
	} else {
		r.Available, r.LastError = false, "the card lists no skill Conclave can route to"
	}
	next.Remote = &r
	next.Version++
	next.UpdatedAt = now
	if err := s.Store.UpdateAgent(ctx, next); err != nil {
		return a, err
	}
	s.written(ctx, next, a.Version)
	return next, nil
}

// RemoteTasks runs work on agents outside the team as A2A tasks
// (shared/a2a/remote): a message sent returns at once, and the caller's
// workflow waits in a Wait state and reads the task again (Check) until
// it ends, or cancels it at its deadline. The worker (delegated tasks)
// and the session steps (session stages) use it.
type RemoteTasks interface {
	Send(ctx context.Context, a Agent, text string) (RemoteAnswer, error)
	Check(ctx context.Context, a Agent, id string) (RemoteAnswer, error)
	Cancel(ctx context.Context, a Agent, id string) error
}

// RemotePollSeconds is the wait before the n-th read of a remote task:
// 1, 2, 4, then 8 seconds (a quick answer is seen quickly, a long one
// costs few state transitions).
func RemotePollSeconds(n int) int { return 1 << min(max(n, 0), 3) }

// RemoteAnswer is where a remote agent's task stands: ended (Done), with
// its text or its failure, or still running under TaskID.
type RemoteAnswer struct {
	TaskID string
	Done   bool
	// Failed is the remote task's failure (failed, rejected, canceled,
	// or asking for input Conclave cannot give); "" when it completed.
	Failed string
	Text   string
}
