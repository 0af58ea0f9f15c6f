package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/ids"
	"github.com/conclave-ai/conclave/shared/team/agents"
	"github.com/conclave-ai/conclave/shared/team/teams"
	"github.com/conclave-ai/conclave/shared/work/consultations"
	"github.com/conclave-ai/conclave/shared/work/sessions"
)

// session is a new session of the team led by ann, capped at capUSD.
func (f *fixture) session(t *testing.T, capUSD float64) sessions.Session {
	t.Helper()
	now := time.Now().UTC()
	s := sessions.Session{TeamID: f.team, ID: ids.New("ses"), Pattern: sessions.Brainstorm, Lead: "ann", Goal: "contract",
		Participants: []sessions.Participant{{Agent: "bob", Role: "contributor"}}, MaxDurationSeconds: 600, MaxCostUSD: capUSD,
		MaxRounds: 5, Approval: "none", Status: sessions.Planning, StageOutputs: []sessions.StageOutput{}, Runs: 1,
		CreatedBy: "user:key_contract", Version: 1, CreatedAt: now, UpdatedAt: now, Deadline: ptrTime(now.Add(10 * time.Minute))}
	require.NoError(t, f.Sessions.CreateSession(context.Background(), s))
	return s
}

func sessionOnce(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.session(t, 0.5)
	again := s
	again.Goal = "written twice"
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(f.Sessions.CreateSession(ctx, again)), "an id is created once")

	// Planning: in the reconciler's index by its last change, not in the
	// sweep's; once active, the other way round.
	has := func(refs []sessions.Ref) bool {
		for _, r := range refs {
			if r.TeamID == f.team && r.ID == s.ID {
				return true
			}
		}
		return false
	}
	refs, err := f.Sessions.UnstartedSessions(ctx, s.UpdatedAt, 1000)
	require.NoError(t, err)
	assert.False(t, has(refs), "changed at the bound itself: not before it")
	refs, err = f.Sessions.UnstartedSessions(ctx, s.UpdatedAt.Add(time.Second), 1000)
	require.NoError(t, err)
	assert.True(t, has(refs))
	refs, err = f.Sessions.DueSessions(ctx, s.Deadline.Add(time.Hour), 1000)
	require.NoError(t, err)
	assert.False(t, has(refs), "a planning session is the reconciler's")

	next := s
	next.Version, next.Status = 2, sessions.Active
	require.NoError(t, f.Sessions.PutSession(ctx, next))
	refs, err = f.Sessions.UnstartedSessions(ctx, s.UpdatedAt.Add(time.Hour), 1000)
	require.NoError(t, err)
	assert.False(t, has(refs), "an active session is not")
	refs, err = f.Sessions.DueSessions(ctx, s.Deadline.Add(time.Hour), 1000)
	require.NoError(t, err)
	assert.True(t, has(refs))
	stale := s
	stale.Version, stale.Status = 2, sessions.Cancelled
	assert.True(t, errors.Is(f.Sessions.PutSession(ctx, stale), sessions.ErrChanged), "a write from a stale read")
	got, err := f.Sessions.GetSession(ctx, f.team, s.ID)
	require.NoError(t, err)
	assert.Equal(t, sessions.Active, got.Status)
	assert.Equal(t, "contract", got.Goal)

	// A stage waiting for a remote agent, and a remote agent's output,
	// read back as written.
	sent := time.Now().UTC().Truncate(time.Millisecond)
	got.Version++
	got.RemoteWaits = []sessions.RemoteWait{{Key: "stage:1", Agent: "bob", TaskID: "tsk_1", RemoteTaskID: "r-1", Attempt: 2, Polls: 3, Tokens: 40, SentAt: sent}}
	got.StageOutputs = []sessions.StageOutput{{Key: "stage:2", Stage: 2, Kind: "stage", Agent: "bob", Output: "remote words", Remote: true}}
	require.NoError(t, f.Sessions.PutSession(ctx, got))
	back, err := f.Sessions.GetSession(ctx, f.team, s.ID)
	require.NoError(t, err)
	require.Len(t, back.RemoteWaits, 1)
	assert.True(t, back.RemoteWaits[0].SentAt.Equal(sent))
	back.RemoteWaits[0].SentAt = sent
	assert.Equal(t, got.RemoteWaits, back.RemoteWaits)
	require.Len(t, back.StageOutputs, 1)
	assert.True(t, back.StageOutputs[0].Remote)
}

func sessionBudget(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.session(t, 0.10)
	require.NoError(t, f.Sessions.Charge(ctx, f.team, s.ID, 0.04, 100))
	require.NoError(t, f.Sessions.Charge(ctx, f.team, s.ID, 0.06, 100), "up to the cap exactly")
	assert.True(t, errors.Is(f.Sessions.Charge(ctx, f.team, s.ID, 0.001, 10), sessions.ErrBudget), "one past it")
	got, err := f.Sessions.GetSession(ctx, f.team, s.ID)
	require.NoError(t, err)
	assert.InDelta(t, 0.10, got.TotalCostUSD, 1e-9, "the refused charge is not added")
	assert.Equal(t, 200, got.Tokens)
	assert.Equal(t, 2, got.ModelCalls)
	assert.True(t, got.BudgetExhausted, "and the session is marked exhausted")
	assert.True(t, errors.Is(f.Sessions.Charge(ctx, f.team, s.ID, 0, 0), sessions.ErrBudget), "an exhausted session takes no charge")
}

func sessionTrace(t *testing.T, f *fixture) {
	ctx := context.Background()
	s := f.session(t, 0.5)
	for _, c := range []string{"first", "second", "third"} {
		require.NoError(t, f.Sessions.AppendSessionMessage(ctx, f.team, s.ID, sessions.Message{Sender: "ann", Recipient: "bob",
			Type: sessions.MsgProposal, Content: c, Status: sessions.MsgAccepted, At: time.Now().UTC()}))
	}
	list, err := f.Sessions.ListSessionMessages(ctx, f.team, s.ID)
	require.NoError(t, err)
	require.Len(t, list, 3)
	for i, m := range list {
		assert.Equal(t, i+1, m.Seq, "numbered from 1 in the order appended")
		assert.Equal(t, []string{"first", "second", "third"}[i], m.Content)
	}
}

func agentConditions(t *testing.T, f *fixture) {
	ctx := context.Background()
	a, err := f.Agents.GetAgent(ctx, f.team, "ann")
	require.NoError(t, err)
	taken := a
	taken.Name = "Another Ann"
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(f.Agents.CreateAgent(ctx, taken)), "a slug is taken once")

	newer := a
	newer.Version, newer.Name = a.Version+1, "Newer"
	require.NoError(t, f.Agents.UpdateAgent(ctx, newer))
	stale := a
	stale.Version, stale.Name = a.Version+1, "Stale"
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(f.Agents.UpdateAgent(ctx, stale)), "an update from a stale read")
	got, err := f.Agents.GetAgent(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.Equal(t, "Newer", got.Name)

	// An external A2A agent reads back whole, its secret's id included
	// (stored, never shown).
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	remote := a
	remote.Slug, remote.Version = "remote-ann", 1
	remote.Model = &agents.Model{Provider: agents.ProviderA2A}
	remote.Remote = &agents.Remote{CardURL: "https://agent.example/", Endpoint: "https://agent.example/rpc", ProtocolVersion: "1.0",
		CardName: "Ann outside", CardVersion: "2", HasCredential: true, SecretID: "conclave/x/a2a/t/remote-ann/cred_1",
		Available: false, FetchedAt: at, CheckedAt: at.Add(time.Hour), LastError: "refused"}
	require.NoError(t, f.Agents.CreateAgent(ctx, remote))
	back, err := f.Agents.GetAgent(ctx, f.team, "remote-ann")
	require.NoError(t, err)
	assert.Equal(t, remote.Remote, back.Remote)
	assert.Equal(t, remote.Model, back.Model)
	// It is listed for a card check once its next check has passed (an
	// unavailable agent's comes CardRetryEvery after its last).
	if due, ok := f.Agents.(agents.DueCards); assert.True(t, ok, "the store lists due cards") {
		next := remote.Remote.NextCheck()
		assert.Equal(t, at.Add(time.Hour+agents.CardRetryEvery), next)
		isDue := func(before time.Time) bool {
			list, err := due.DueCards(ctx, before, 1000)
			require.NoError(t, err)
			for _, d := range list {
				if d.TeamID == f.team && d.Slug == "remote-ann" {
					assert.Equal(t, remote.Remote, d.Remote, "read whole")
					return true
				}
			}
			return false
		}
		assert.False(t, isDue(next), "not before its time")
		assert.True(t, isDue(next.Add(time.Second)))
	}

	_, err = f.Agents.SetStatus(ctx, f.team, "cat", agents.StatusPaused, time.Now().UTC())
	require.NoError(t, err)
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(f.Agents.SetDefault(ctx, f.team, "cat")), "a paused agent cannot be the default")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(f.Agents.SetDefault(ctx, f.team, "nobody")))
	require.NoError(t, f.Agents.SetDefault(ctx, f.team, "bob"))
	_, err = f.Agents.SetStatus(ctx, f.team, "bob", agents.StatusPaused, time.Now().UTC())
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err), "the default agent stays active")
	def, err := f.Agents.DefaultAgent(ctx, f.team)
	require.NoError(t, err)
	assert.Equal(t, "bob", def)
	b, err := f.Agents.GetAgent(ctx, f.team, "bob")
	require.NoError(t, err)
	assert.Equal(t, agents.StatusActive, b.Status)
}

func keyConditions(t *testing.T, f *fixture) {
	ctx := context.Background()
	svc := teams.NewService(f.Teams)
	keys, err := f.Teams.ListAPIKeys(ctx, f.team)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	_, err = f.Teams.RevokeAPIKey(ctx, f.team, keys[0].ID, time.Now().UTC())
	require.NoError(t, err)
	_, err = f.Teams.RevokeAPIKey(ctx, f.team, keys[0].ID, time.Now().UTC())
	assert.Equal(t, apperr.ECONFLICT, apperr.Code(err), "revoked once")
	other, _, err := svc.CreateTeam(ctx, "other")
	require.NoError(t, err)
	theirs, err := f.Teams.ListAPIKeys(ctx, other.ID)
	require.NoError(t, err)
	_, err = f.Teams.RevokeAPIKey(ctx, f.team, theirs[0].ID, time.Now().UTC())
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "another team's key is not ours to revoke")
	still, err := f.Teams.ListAPIKeys(ctx, other.ID)
	require.NoError(t, err)
	assert.Nil(t, still[0].RevokedAt)
}

// a2aIDOnce: a team's A2A id is given at its creation, or, to a team made
// before A2A, once, whoever asks first; it resolves to that team only.
func a2aIDOnce(t *testing.T, f *fixture) {
	ctx := context.Background()
	svc := teams.NewService(f.Teams)
	_, err := f.Teams.TeamByA2AID(ctx, teams.NewA2AID())
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "an unknown A2A id")
	made, err := f.Teams.GetTeam(ctx, f.team)
	require.NoError(t, err)
	require.Regexp(t, `^a2a_[0-9a-f]{32}$`, made.A2AID, "given at creation")
	tm, err := f.Teams.TeamByA2AID(ctx, made.A2AID)
	require.NoError(t, err)
	assert.Equal(t, f.team, tm.ID)
	// A team as stored before A2A: no id until first use, then one, the
	// same for eight first uses at once.
	legacy := teams.Team{ID: ids.New("team"), Name: "legacy", CreatedAt: time.Now().UTC()}
	require.NoError(t, f.Teams.CreateTeam(ctx, legacy, teams.APIKey{ID: ids.New("key"), TeamID: legacy.ID, Name: "k", Prefix: "ck_x",
		Status: teams.KeyActive, CreatedAt: legacy.CreatedAt}, teams.Hash(ids.New("secret"))))
	stored, err := f.Teams.GetTeam(ctx, legacy.ID)
	require.NoError(t, err)
	require.Empty(t, stored.A2AID)
	got := make([]string, 8)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := svc.A2AID(ctx, legacy.ID)
			assert.NoError(t, err)
			got[i] = id
		}()
	}
	wg.Wait()
	require.Regexp(t, `^a2a_[0-9a-f]{32}$`, got[0])
	for _, id := range got {
		assert.Equal(t, got[0], id, "every first use agrees")
	}
	again, err := svc.A2AID(ctx, legacy.ID)
	require.NoError(t, err)
	assert.Equal(t, got[0], again, "given once")
	assert.NotEqual(t, made.A2AID, got[0])
	// gsi1 is eventually consistent: DynamoDB Local answers at once.
	tm, err = f.Teams.TeamByA2AID(ctx, got[0])
	require.NoError(t, err)
	assert.Equal(t, legacy.ID, tm.ID)
	assert.Equal(t, got[0], tm.A2AID)
	_, err = svc.A2AID(ctx, "team_missing")
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err))
}

// consultation is a new pending consultation of requester's.
func (f *fixture) consultation(requester string) consultations.Consultation {
	now := time.Now().UTC()
	return consultations.Consultation{TeamID: f.team, ID: ids.New("cons"), Status: consultations.Pending, RequestingAgent: requester,
		ConsultedAgent: "cat", Question: "contract?", Urgency: "normal", SuggestedNextSteps: []string{}, Exchanges: []consultations.Exchange{},
		Version: 1, CreatedAt: now, UpdatedAt: now}
}

func consultationLimit(t *testing.T, f *fixture) {
	ctx := context.Background()
	const limit = consultations.MaxActivePerAgent
	var made []string
	for range limit {
		c := f.consultation("ann")
		require.NoError(t, f.Consultations.CreateConsultation(ctx, c, limit))
		made = append(made, c.ID)
	}
	over := f.consultation("ann")
	assert.True(t, errors.Is(f.Consultations.CreateConsultation(ctx, over, limit), consultations.ErrActiveLimit), "one past the limit")
	_, err := f.Consultations.GetConsultation(ctx, f.team, over.ID)
	assert.Equal(t, apperr.ENOTFOUND, apperr.Code(err), "a refused create writes nothing")
	active, err := f.Consultations.ActiveConsultations(ctx, f.team, "ann")
	require.NoError(t, err)
	assert.ElementsMatch(t, made, active, "the counter records the ids that hold its slots")

	// Concurrent creates for one requester: exactly the limit.
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.Consultations.CreateConsultation(ctx, f.consultation("bob"), limit)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				created++
			}
		}()
	}
	wg.Wait()
	active, err = f.Consultations.ActiveConsultations(ctx, f.team, "bob")
	require.NoError(t, err)
	assert.LessOrEqual(t, created, limit, "never past the limit")
	assert.Len(t, active, created, "each create that succeeded holds one slot")
}

func ptrTime(t time.Time) *time.Time { return &t }
