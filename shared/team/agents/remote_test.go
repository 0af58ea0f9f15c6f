package agents_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/testkit/memstore"
)

// fakeCards answers one card (or an error) and counts fetches.
type fakeCards struct {
	card  agents.RemoteCard
	err   error
	calls []string
}

func (f *fakeCards) Fetch(_ context.Context, url, credential string) (agents.RemoteCard, error) {
	f.calls = append(f.calls, url+" "+credential)
	return f.card, f.err
}

// fakeSecrets keeps secrets in a map.
type fakeSecrets struct {
	kept map[string]string
	err  error
}

func (f *fakeSecrets) PutSecret(_ context.Context, id, value string) error {
	if f.err != nil {
		return f.err
	}
	f.kept[id] = value
	return nil
}

func (f *fakeSecrets) GetSecret(_ context.Context, id string) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	v, ok := f.kept[id]
	if !ok {
		return "", apperr.NotFound("secret", id)
	}
	return v, nil
}

func (f *fakeSecrets) DeleteSecret(_ context.Context, id string) error {
	delete(f.kept, id)
	return nil
}

func taxCard() agents.RemoteCard {
	return agents.RemoteCard{Name: "Remote Tax Desk", Description: "Answers tax questions.", Version: "1.0.0",
		Endpoint: "http://127.0.0.1:1/", ProtocolVersion: "1.0", Skills: []agents.RemoteSkill{
			{ID: "vat-returns", Name: "VAT returns", Description: "Prepares VAT returns.", Tags: []string{"VAT", "tax", "vat"}},
			{ID: "Tax Planning & Strategy!!", Name: "Tax planning", Description: "Plans taxes.", Tags: []string{"tax"}},
		}}
}

func remoteService(t *testing.T) (*agents.Service, *memstore.Store, *fakeCards, *fakeSecrets) {
	t.Helper()
	store := memstore.New()
	for _, id := range []string{"t1", "t2"} {
		require.NoError(t, store.CreateTeam(context.Background(), teams.Team{ID: id, Name: id}, teams.APIKey{ID: "k-" + id}, "h-"+id))
	}
	cards, secrets := &fakeCards{card: taxCard()}, &fakeSecrets{kept: map[string]string{}}
	svc := agents.NewService(store)
	svc.Cards, svc.Secrets, svc.SecretPrefix = cards, secrets, "conclave/test/a2a/"
	return svc, store, cards, secrets
}

func TestAnA2AAgentTakesItsCardsSkillsAndKeepsItsCredentialAside(t *testing.T) {
	svc, store, cards, secrets := remoteService(t)
	a, err := svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "Tax Desk",
		A2A: &agents.RemoteInput{CardURL: "http://127.0.0.1:1", Credential: "s3cret"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"http://127.0.0.1:1 s3cret"}, cards.calls, "the card is fetched with the credential")
	require.Len(t, a.Skills, 2)
	assert.Equal(t, "vat-returns", a.Skills[0].Name)
	assert.Equal(t, []string{"vat", "tax"}, a.Skills[0].Keywords, "tags lower-cased, without duplicates")
	assert.Equal(t, "tax-planning-strategy", a.Skills[1].Name, "an id outside the skill pattern is normalized")
	assert.False(t, a.Skills[0].Public, "the team decides what it offers outside")
	assert.Equal(t, "Answers tax questions.", a.Tagline, "the card's description when no tagline is given")
	assert.Equal(t, &agents.Model{Provider: agents.ProviderA2A}, a.Model)
	require.NotNil(t, a.Remote)
	assert.True(t, a.Remote.Available)
	assert.True(t, a.Remote.HasCredential)
	assert.Equal(t, "http://127.0.0.1:1/", a.Remote.Endpoint)
	assert.True(t, strings.HasPrefix(a.Remote.SecretID, "conclave/test/a2a/t1/tax-desk/"), a.Remote.SecretID)
	assert.Equal(t, map[string]string{a.Remote.SecretID: "s3cret"}, secrets.kept)
	stored, err := store.GetAgent(context.Background(), "t1", "tax-desk")
	require.NoError(t, err)
	assert.Equal(t, a.Remote, stored.Remote)
	assert.True(t, stored.IsRemote())
}

func TestAnA2AAgentsBadInputWritesNothing(t *testing.T) {
	for name, c := range map[string]struct {
		in     agents.CreateInput
		cards  error
		field  string
		code   string
		fetchd bool
	}{
		"no card url":     {in: agents.CreateInput{A2A: &agents.RemoteInput{}}, field: "a2a.card_url", code: apperr.EINVALID},
		"skills given":    {in: agents.CreateInput{A2A: &agents.RemoteInput{CardURL: "u"}, Skills: []agents.Skill{{Name: "xy", Description: "d"}}}, field: "skills", code: apperr.EINVALID},
		"model given":     {in: agents.CreateInput{A2A: &agents.RemoteInput{CardURL: "u"}, Model: &agents.Model{Provider: "local"}}, field: "model", code: apperr.EINVALID},
		"two-line secret": {in: agents.CreateInput{A2A: &agents.RemoteInput{CardURL: "u", Credential: "a\r\nb"}}, field: "a2a.credential", code: apperr.EINVALID},
		"long secret":     {in: agents.CreateInput{A2A: &agents.RemoteInput{CardURL: "u", Credential: strings.Repeat("x", agents.MaxCredential+1)}}, field: "a2a.credential", code: apperr.EINVALID},
		"unreachable":     {in: agents.CreateInput{A2A: &agents.RemoteInput{CardURL: "u"}}, cards: apperr.New(apperr.EUPSTREAM, "down"), code: apperr.EUPSTREAM, fetchd: true},
	} {
		t.Run(name, func(t *testing.T) {
			svc, store, cards, secrets := remoteService(t)
			cards.err = c.cards
			c.in.Slug, c.in.Name = "tax-desk", "Tax Desk"
			_, err := svc.Create(context.Background(), "t1", c.in)
			require.Error(t, err)
			assert.True(t, apperr.Is(err, c.code), err)
			if c.field != "" {
				var e *apperr.Error
				require.True(t, errors.As(err, &e))
				assert.Equal(t, c.field, e.Field)
			}
			assert.Equal(t, c.fetchd, len(cards.calls) == 1, "the card is fetched only once the request is valid")
			_, err = store.GetAgent(context.Background(), "t1", "tax-desk")
			assert.True(t, apperr.Is(err, apperr.ENOTFOUND), "nothing stored")
			assert.Empty(t, secrets.kept)
		})
	}
}

// A card with no usable skill is refused; the credential of an agent the
// store refuses (a taken slug) is removed again.
func TestAnA2AAgentThatCannotBeStoredKeepsNoCredential(t *testing.T) {
	svc, _, cards, secrets := remoteService(t)
	cards.card.Skills = []agents.RemoteSkill{{ID: "!!", Name: "??"}}
	_, err := svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "T", A2A: &agents.RemoteInput{CardURL: "u", Credential: "c"}})
	assert.True(t, apperr.Is(err, apperr.EREJECTED), err)
	assert.Empty(t, secrets.kept)

	cards.card = taxCard()
	_, err = svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "T", Skills: []agents.Skill{{Name: "xy", Description: "d"}}})
	require.NoError(t, err)
	_, err = svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "T", A2A: &agents.RemoteInput{CardURL: "u", Credential: "c"}})
	assert.True(t, apperr.Is(err, apperr.ECONFLICT), err)
	assert.Empty(t, secrets.kept, "the credential of the agent not stored is deleted")
}

// The skill rules hold for any card: at most MaxSkills, names of the
// pattern and unique, descriptions and tags within their limits.
func TestRemoteSkillsFollowTheSkillRules(t *testing.T) {
	card := agents.RemoteCard{}
	var tags []string
	for i := range agents.MaxListItems + 5 {
		tags = append(tags, fmt.Sprintf("tag-%d", i))
	}
	tags = append(tags, strings.Repeat("t", agents.MaxItemLength+10))
	for i := range agents.MaxSkills + 3 {
		card.Skills = append(card.Skills, agents.RemoteSkill{ID: fmt.Sprintf("Skill %d", i), Description: strings.Repeat("d", agents.MaxDescription+5), Tags: tags})
	}
	card.Skills = append([]agents.RemoteSkill{{ID: "skill-0", Description: "dup"}, {ID: "9lives", Name: "", Description: "starts with a digit"}, {ID: "x", Name: "Named Only", Description: ""}}, card.Skills...)
	skills := agents.RemoteSkills(card)
	require.Len(t, skills, agents.MaxSkills)
	assert.Equal(t, "skill-0", skills[0].Name)
	assert.Equal(t, "dup", skills[0].Description, "the first of two equal names wins")
	assert.Equal(t, "named-only", skills[1].Name, "the name when the id does not fit; its name as the description")
	seen := map[string]bool{}
	for _, s := range skills {
		assert.False(t, seen[s.Name], s.Name)
		seen[s.Name] = true
		assert.LessOrEqual(t, len([]rune(s.Description)), agents.MaxDescription)
		assert.LessOrEqual(t, len(s.Keywords), agents.MaxListItems)
		for _, k := range s.Keywords {
			assert.LessOrEqual(t, len([]rune(k)), agents.MaxItemLength)
		}
	}
	long := agents.RemoteSkills(agents.RemoteCard{Skills: []agents.RemoteSkill{{ID: strings.Repeat("a", 70), Description: "d"}}})
	require.Len(t, long, 1)
	assert.Len(t, long[0].Name, 64)
}

// A refresh follows the card; an unreachable card leaves the agent a
// member, unavailable to the gate, until a refresh reaches it again.
func TestRefreshCardMarksAnUnreachableAgentUnavailable(t *testing.T) {
	svc, _, cards, _ := remoteService(t)
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	svc.Now = func() time.Time { return now }
	a, err := svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "T", A2A: &agents.RemoteInput{CardURL: "u"}})
	require.NoError(t, err)
	assert.False(t, a.Unavailable())

	now = now.Add(time.Hour)
	cards.err = apperr.New(apperr.EUPSTREAM, "connection refused")
	a, err = svc.RefreshCard(context.Background(), a, "")
	require.NoError(t, err, "an unreachable agent is not an error")
	assert.True(t, a.Unavailable())
	assert.Equal(t, now, a.Remote.CheckedAt)
	assert.Equal(t, now.Add(-time.Hour), a.Remote.FetchedAt)
	assert.Contains(t, a.Remote.LastError, "connection refused")
	assert.Len(t, a.Skills, 2, "the last card's skills stay")

	now = now.Add(time.Hour)
	cards.err = nil
	cards.card.Skills = cards.card.Skills[:1]
	a, err = svc.RefreshCard(context.Background(), a, "")
	require.NoError(t, err)
	assert.False(t, a.Unavailable())
	assert.Empty(t, a.Remote.LastError)
	assert.Len(t, a.Skills, 1, "the skills follow the card")
	assert.Equal(t, 3, a.Version)
}

// An agent's model cannot be made a2a by hand, nor an A2A agent's skills
// or model changed.
func TestA2AIsGivenByItsObjectAlone(t *testing.T) {
	svc, _, _, _ := remoteService(t)
	_, err := svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "faker", Name: "F", Model: &agents.Model{Provider: agents.ProviderA2A}})
	assert.True(t, apperr.Is(err, apperr.EINVALID), err)
	_, err = svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "T", A2A: &agents.RemoteInput{CardURL: "u"}})
	require.NoError(t, err)
	skills := []agents.Skill{{Name: "xy", Description: "d"}}
	_, err = svc.Update(context.Background(), "t1", "tax-desk", agents.UpdateInput{Skills: &skills})
	assert.True(t, apperr.Is(err, apperr.EINVALID), err)
	name := "Tax"
	a, err := svc.Update(context.Background(), "t1", "tax-desk", agents.UpdateInput{Name: &name})
	require.NoError(t, err)
	assert.True(t, a.IsRemote(), "a rename keeps it remote")

	svc.Cards = nil
	_, err = svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "other", Name: "O", A2A: &agents.RemoteInput{CardURL: "u"}})
	assert.True(t, apperr.Is(err, apperr.EINVALID), "a stage without an A2A client refuses a2a")
}

// POST /v1/agents/{slug}/refresh: the card fetched now with the agent's
// credential; a colleague that is not an A2A agent has no card; another
// team's agent is not found.
func TestRefreshFetchesTheCardWithTheAgentsCredential(t *testing.T) {
	svc, _, cards, _ := remoteService(t)
	_, err := svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "T", A2A: &agents.RemoteInput{CardURL: "u", Credential: "c1"}})
	require.NoError(t, err)
	_, err = svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "kyra", Name: "K", Skills: []agents.Skill{{Name: "xy", Description: "d"}}})
	require.NoError(t, err)
	cards.err = apperr.New(apperr.EUPSTREAM, "refused")
	a, err := svc.Refresh(context.Background(), "t1", "tax-desk")
	require.NoError(t, err)
	assert.True(t, a.Unavailable())
	assert.Equal(t, "u c1", cards.calls[len(cards.calls)-1], "fetched with the kept credential")
	_, err = svc.Refresh(context.Background(), "t1", "kyra")
	assert.True(t, apperr.Is(err, apperr.EINVALID), err)
	_, err = svc.Refresh(context.Background(), "t2", "tax-desk")
	assert.True(t, apperr.Is(err, apperr.ENOTFOUND), err)
}

// The sweeper fetches the cards that are due and no other: an available
// agent's an hour after its last check, an unavailable one's after five
// minutes, at most MaxRefreshPerSweep at a time.
func TestRefreshDueFetchesOnlyTheCardsThatAreDue(t *testing.T) {
	svc, store, cards, _ := remoteService(t)
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	svc.Now = func() time.Time { return now }
	for _, slug := range []string{"desk-a", "desk-b"} {
		_, err := svc.Create(context.Background(), "t1", agents.CreateInput{Slug: slug, Name: "D", A2A: &agents.RemoteInput{CardURL: slug}})
		require.NoError(t, err)
	}
	now = now.Add(agents.CardRefreshEvery)
	n, err := svc.RefreshDue(context.Background(), store)
	require.NoError(t, err)
	assert.Zero(t, n, "exactly an hour is not yet due")
	now = now.Add(time.Second)
	cards.err = apperr.New(apperr.EUPSTREAM, "down")
	n, err = svc.RefreshDue(context.Background(), store)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	a, err := store.GetAgent(context.Background(), "t1", "desk-a")
	require.NoError(t, err)
	assert.True(t, a.Unavailable())

	now = now.Add(agents.CardRetryEvery)
	cards.err = nil
	n, err = svc.RefreshDue(context.Background(), store)
	require.NoError(t, err)
	assert.Zero(t, n, "an unavailable card is tried again five minutes later, not before")
	now = now.Add(time.Second)
	n, err = svc.RefreshDue(context.Background(), store)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	a, err = store.GetAgent(context.Background(), "t1", "desk-a")
	require.NoError(t, err)
	assert.False(t, a.Unavailable(), "back once its card is fetched")

	for i := range agents.MaxRefreshPerSweep + 3 {
		_, err := svc.Create(context.Background(), "t2", agents.CreateInput{Slug: fmt.Sprintf("desk-%02d", i), Name: "D", A2A: &agents.RemoteInput{CardURL: "x"}})
		require.NoError(t, err)
	}
	now = now.Add(2 * agents.CardRefreshEvery)
	n, err = svc.RefreshDue(context.Background(), store)
	require.NoError(t, err)
	assert.Equal(t, agents.MaxRefreshPerSweep, n, "a bounded batch per sweep")
}

// A credential deleted outside Conclave makes the agent unavailable, not
// every sweep fail: the check is recorded and tried again after
// CardRetryEvery like any failing card.
func TestAMissingCredentialMakesTheAgentUnavailableNotTheSweepFail(t *testing.T) {
	svc, store, cards, secrets := remoteService(t)
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	svc.Now = func() time.Time { return now }
	_, err := svc.Create(context.Background(), "t1", agents.CreateInput{Slug: "tax-desk", Name: "T", A2A: &agents.RemoteInput{CardURL: "u", Credential: "c1"}})
	require.NoError(t, err)
	secrets.kept = map[string]string{}
	now = now.Add(agents.CardRefreshEvery + time.Second)
	fetches := len(cards.calls)
	n, err := svc.RefreshDue(context.Background(), store)
	require.NoError(t, err, "the sweep goes on")
	assert.Equal(t, 1, n)
	assert.Len(t, cards.calls, fetches, "no fetch without the credential")
	a, err := store.GetAgent(context.Background(), "t1", "tax-desk")
	require.NoError(t, err)
	assert.True(t, a.Unavailable())
	assert.Contains(t, a.Remote.LastError, "credential is missing")
	n, err = svc.RefreshDue(context.Background(), store)
	require.NoError(t, err)
	assert.Zero(t, n, "checked again later, not every sweep")

	// Any other failure to read it (Secrets Manager throttling) is the
	// sweep's error, and the card stays due for the next sweep.
	secrets.err = errors.New("throttled")
	now = now.Add(agents.CardRetryEvery + time.Second)
	_, err = svc.RefreshDue(context.Background(), store)
	assert.Error(t, err)
	secrets.err = nil
	secrets.kept[a.Remote.SecretID] = "c1"
	n, err = svc.RefreshDue(context.Background(), store)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "still due after the failed read")
	a, err = store.GetAgent(context.Background(), "t1", "tax-desk")
	require.NoError(t, err)
	assert.False(t, a.Unavailable(), "back with its credential")
}
