package expertgate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
	"github.com/conclave-ai/conclave/shared/team/agents"
)

// MinExamples is how many examples a skill needs before the calibration
// report stops warning about it (routing.ClassifierExamples): below five,
// a held-out fold of the cross-validation has no example of it, and
// users' words rarely meet a one-line description (issue 42: the
// specialist answered 3 everyday questions in 50 on descriptions alone).
const MinExamples = routing.ClassifierExamples

// MaxReportedSkills bounds the skills one report lists (those with the
// fewest examples first, then by agent and name).
const MaxReportedSkills = 1000

// CalibrationReport is GET /v1/routing/calibration: what the team's
// routing confidence rests on.
type CalibrationReport struct {
	// Embedder is the stage's embedder ID ("" when the stage routes by
	// words alone, and so without a classifier).
	Embedder string `json:"embedder"`
	// Threshold is the default confidence threshold of a chat turn.
	Threshold  float64          `json:"threshold"`
	Classifier ClassifierStatus `json:"classifier"`
	// Skills: every skill of the team's active agents with its number of
	// examples (at most MaxReportedSkills; Truncated says more exist).
	Skills    []SkillExamples `json:"skills"`
	Truncated bool            `json:"truncated"`
	// Warnings are plain sentences: skills with fewer than MinExamples
	// examples, a classifier not current.
	Warnings []string `json:"warnings"`
}

// ClassifierStatus is the team's classifier as the gate sees it.
type ClassifierStatus struct {
	// Status: current (fitted to the active agents' skills and examples
	// as they read now), pending (they changed since the stored fit, or
	// none is stored yet: the classifier-fitter fits on AgentsChanged, and
	// meanwhile the gate scores with the stored one where its skills
	// still map, else by example similarity), too_large (past the
	// classifier's bounds: example similarity), few_examples (fewer than
	// half the skills have routing.ClassifierExamples examples: example
	// similarity), none (no agent with a skill) or off (the stage has no
	// embedder).
	Status   string     `json:"status"`
	FittedAt *time.Time `json:"fitted_at"`
	// Skills is how many skills the stored classifier covers.
	Skills int `json:"skills"`
	// CrossValidation is its quality on the team's own examples, each
	// held out of the fit (null when not measured).
	CrossValidation *routing.ClassifierQuality `json:"cross_validation"`
}

// SkillExamples is one skill and its number of examples.
type SkillExamples struct {
	Agent    string `json:"agent"`
	Skill    string `json:"skill"`
	Examples int    `json:"examples"`
}

// EmbedderID is the ID of the embedder a ROUTING_EMBEDDER value names,
// without loading it ("" for none): the key of the stored classifier.
func EmbedderID(name string) (string, error) {
	switch name {
	case "", settings.EmbedderWordLlama:
		return wordllama.ModelID, nil
	case settings.EmbedderTitan:
		return settings.TitanEmbedModel + "/" + strconv.Itoa(settings.TitanEmbedDimensions), nil
	case settings.EmbedderNone:
		return "", nil
	}
	return "", fmt.Errorf("%s=%q: want %s, %s or %s", settings.EnvEmbedder, name, settings.EmbedderWordLlama, settings.EmbedderTitan, settings.EmbedderNone)
}

// Calibrations reports on a team's routing calibration (the routing
// function's GET /v1/routing/calibration).
type Calibrations struct {
	Source Source
	Store  ClassifierStore
	// Embedder is the stage's embedder ID (EmbedderID; "": none).
	Embedder string
}

// Report is the team's CalibrationReport.
func (c *Calibrations) Report(ctx context.Context, teamID string) (CalibrationReport, error) {
	list, err := c.Source.ActiveAgents(ctx, teamID)
	if err != nil {
		return CalibrationReport{}, err
	}
	list = slices.DeleteFunc(list, agents.Agent.Unavailable)
	rep := CalibrationReport{Embedder: c.Embedder, Threshold: routing.DefaultThreshold, Skills: []SkillExamples{}, Warnings: []string{}}
	samples := 0
	for _, a := range list {
		for _, s := range a.Skills {
			if s.InternalOnly {
				continue
			}
			rep.Skills = append(rep.Skills, SkillExamples{Agent: a.Slug, Skill: s.Name, Examples: len(s.Examples)})
			samples += 1 + len(s.Examples)
		}
	}
	slices.SortFunc(rep.Skills, func(a, b SkillExamples) int {
		if a.Examples != b.Examples {
			return a.Examples - b.Examples
		}
		if a.Agent != b.Agent {
			return strings.Compare(a.Agent, b.Agent)
		}
		return strings.Compare(a.Skill, b.Skill)
	})
	few := 0
	for _, s := range rep.Skills {
		if s.Examples < MinExamples {
			few++
			if few <= 20 {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s's skill %q has %d examples: with fewer than %d, messages worded unlike its description may not reach it; add messages users send for it.",
					s.Agent, s.Skill, s.Examples, MinExamples))
			}
		}
	}
	if few > 20 {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%d more skills have fewer than %d examples.", few-20, MinExamples))
	}
	if len(rep.Skills) > MaxReportedSkills {
		rep.Skills, rep.Truncated = rep.Skills[:MaxReportedSkills], true
	}
	rep.Classifier, err = c.status(ctx, teamID, list, len(rep.Skills), samples)
	if err != nil {
		return CalibrationReport{}, err
	}
	if rep.Classifier.Status == "pending" {
		rep.Warnings = append(rep.Warnings, "The agents changed since the classifier was fitted: the gate uses the stored fit where its skills still match, else example similarity, until the new fit is stored (seconds to a minute).")
	}
	return rep, nil
}

// status is the stored classifier's standing against the active agents.
func (c *Calibrations) status(ctx context.Context, teamID string, list []agents.Agent, skills, samples int) (ClassifierStatus, error) {
	if c.Embedder == "" {
		return ClassifierStatus{Status: "off"}, nil
	}
	ix := routing.BuildIndex(list)
	switch {
	case ix.Skills() == 0:
		return ClassifierStatus{Status: "none"}, nil
	case ix.Skills() > routing.MaxClassifierSkills || samples > routing.MaxClassifierSamples:
		return ClassifierStatus{Status: "too_large"}, nil
	case !ix.ClassifierReady():
		return ClassifierStatus{Status: "few_examples"}, nil
	}
	stored, ok, err := c.Store.TeamClassifier(ctx, teamID, c.Embedder)
	if err != nil || !ok {
		return ClassifierStatus{Status: "pending"}, err
	}
	st := ClassifierStatus{Status: "pending", Skills: len(stored.Skills), CrossValidation: stored.Quality}
	if !stored.FittedAt.IsZero() {
		t := stored.FittedAt
		st.FittedAt = &t
	}
	if stored.Texts == ix.TrainingHash() && !stored.Stale() {
		st.Status = "current"
	}
	return st, nil
}
