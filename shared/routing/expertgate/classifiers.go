package expertgate

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// The team's classifier (issue 42; routing/classifier.go): fitted by the
// classifier-fitter function whenever the team's agents change (Fitter,
// an event consumer: never in a chat turn), stored, and read by the gate
// when it builds an index. The gate never waits for a fit: an index
// scores with the stored classifier when it fits the index's skills (the
// one fitted to these agent versions, or to earlier ones whose skills
// kept their names), else by example similarity, and a warm index without
// the classifier of its agent versions looks for it again every
// ClassifierRecheck, so a fit that lands is used within that time.

// ClassifierStore keeps each team's classifier, one per embedder
// (shared/store/expertgatestore).
type ClassifierStore interface {
	// TeamClassifier returns the team's classifier for embedder and
	// whether one is stored.
	TeamClassifier(ctx context.Context, teamID, embedder string) (*routing.Classifier, bool, error)
	// PutClassifier stores c unless the stored one was fitted to agents
	// read later (c.ReadAt): a slow fit never replaces a newer one. false
	// when it was not stored for that reason.
	PutClassifier(ctx context.Context, teamID string, c *routing.Classifier) (bool, error)
	// DeleteClassifier removes the team's classifier for embedder (none
	// stored is no error).
	DeleteClassifier(ctx context.Context, teamID, embedder string) error
}

// ClassifierRecheck is how often a warm index without the classifier of
// its skills and examples (routing.Index.TrainingHash) reads the store
// again.
const ClassifierRecheck = 15 * time.Second

// agentsKey identifies a set of agent versions (sorted slug:version).
func agentsKey(list []agents.Agent) string {
	keys := make([]string, len(list))
	for i, a := range list {
		keys[i] = a.Slug + ":" + strconv.Itoa(a.Version)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// classify gives ix the team's stored classifier when it fits. A failure
// to read it is logged: the index scores by example similarity and looks
// again later.
func (s *Service) classify(ctx context.Context, teamID string, ix *routing.Index) {
	if s.Classifiers == nil || s.Embedder == nil || !ix.Semantic() || !ix.ClassifierReady() {
		return // no fit for these skills is ever stored: nothing to read
	}
	c, ok, err := s.Classifiers.TeamClassifier(ctx, teamID, s.Embedder.ID())
	switch {
	case err != nil:
		slog.WarnContext(ctx, "classifier not read: scoring by example similarity", "team_id", teamID, "error", err)
	case !ok:
		ix.ClearClassifier() // deleted (the team outgrew it): example similarity
	case !ix.SetClassifier(c):
		slog.InfoContext(ctx, "the stored classifier does not fit these skills yet: scoring by example similarity", "team_id", teamID)
	}
}

// Fitter fits a team's classifier (the classifier-fitter function, on
// every AgentsChanged event): the gate's own index of the team's active
// agents, with the gate's embedder and stored vectors, so that the
// classifier reads the vectors the gate scores with.
type Fitter struct {
	Gate  *Service
	Store ClassifierStore
	// Folds of the cross-validation that measures the classifier's
	// quality for the calibration endpoint (0: not measured).
	Folds int
	Now   func() time.Time
}

// FitResult says what a Fit did.
type FitResult struct {
	// Outcome: "fitted", "current" (the stored classifier is of these
	// agent versions), "stale" (a newer fit was stored meanwhile),
	// "too_large" (past routing's bounds) or "few_examples" (fewer than
	// half the skills have routing.ClassifierExamples examples): the
	// stored one is deleted and the team routes by example similarity;
	// or "none" (no agent with a skill, or no embedder).
	Outcome string
	Skills  int
	Samples int
}

// Fit fits the team's classifier to its active agents, unless the stored
// one is of their versions. ctx bounds the fit.
func (f *Fitter) Fit(ctx context.Context, teamID string) (FitResult, error) {
	s := f.Gate
	if s.Embedder == nil {
		return FitResult{Outcome: "none"}, nil
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	readAt := now().UTC()
	list, err := s.Source.ActiveAgents(ctx, teamID)
	if err != nil {
		return FitResult{}, err
	}
	list = slices.DeleteFunc(list, agents.Agent.Unavailable)
	key := agentsKey(list)
	id := s.Embedder.ID()
	stored, ok, err := f.Store.TeamClassifier(ctx, teamID, id)
	if err != nil {
		return FitResult{}, err
	}
	ix := routing.BuildIndex(list)
	if ix.Skills() == 0 {
		return FitResult{Outcome: "none"}, nil
	}
	if ok && !stored.Stale() && (stored.Agents == key || stored.Texts == ix.TrainingHash()) {
		// These agent versions, or others whose skills and examples read
		// the same (a pause and activate, a new name, a card checked
		// again): the same fit.
		return FitResult{Outcome: "current", Skills: len(stored.Skills)}, nil
	}
	if s.Vectors != nil {
		err = s.embedStored(ctx, teamID, list, ix)
	} else {
		err = ix.Embed(ctx, s.Embedder)
	}
	if err != nil {
		return FitResult{}, err
	}
	c, err := routing.FitClassifier(ctx, ix, s.Embedder, routing.FitOptions{Folds: f.Folds})
	switch {
	case errors.Is(err, routing.ErrTooLarge):
		return FitResult{Outcome: "too_large", Skills: ix.Skills()}, f.Store.DeleteClassifier(ctx, teamID, id)
	case errors.Is(err, routing.ErrFewExamples):
		return FitResult{Outcome: "few_examples", Skills: ix.Skills()}, f.Store.DeleteClassifier(ctx, teamID, id)
	}
	if err != nil {
		return FitResult{}, err
	}
	c.Agents, c.ReadAt, c.FittedAt = key, readAt, now().UTC()
	stored2, err := f.Store.PutClassifier(ctx, teamID, c)
	if err != nil {
		return FitResult{}, err
	}
	res := FitResult{Outcome: "fitted", Skills: len(c.Skills), Samples: len(ix.SkillTexts())}
	if !stored2 {
		res.Outcome = "stale"
	}
	return res, nil
}

// fittedTo reports whether c was fitted to every agent version of key
// (agentsKey): the team's fit serves an index of some of its agents, and
// such an index need not look for another.
func fittedTo(c *routing.Classifier, key string) bool {
	if c == nil {
		return false
	}
	have := map[string]bool{}
	for _, k := range strings.Split(c.Agents, ",") {
		have[k] = true
	}
	for _, k := range strings.Split(key, ",") {
		if !have[k] {
			return false
		}
	}
	return true
}
