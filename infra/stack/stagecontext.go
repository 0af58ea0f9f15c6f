package stack

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/constructs-go/constructs/v10"

	"github.com/conclave-ai/conclave/shared/platform/settings"
)

// The context keys of a stage's feature flags, models, embedder and limits
// (and its tracing, tracing.go)
// (`cdk deploy -c key=value`, or the "context" of cdk.json, where a flag
// may be a boolean, a limit a number and models.extra a list). Each
// overrides what it names of the stage's configuration (Environments) and
// nothing else; a deploy that names none deploys the stage as configured.
// Context rather than a stage file: it is how ConfigFromContext already
// takes the deploy's choices, `cdk diff -c …` shows what one changes, and
// a team keeps its stage's choices in cdk.json (or cdk.context.json) under
// version control.
const (
	// ContextFlags prefixes one feature flag: -c flags.ensemble=true. The
	// names are settings.FlagNames; another is an error.
	ContextFlags = "flags."
	// ContextModels prefixes the models: models.tier_0, models.tier_1 and
	// models.tier_2 (a routing tier's model), models.extra (the model ids
	// agents may name besides the tiers', comma-separated) and
	// models.synthesis (the model writing ENSEMBLE replies; it follows
	// tier_1 unless named). Each is a Bedrock foundation model id; the
	// stage's Bedrock grants name exactly these models (EnvConfig.Models).
	ContextModels = "models."
	// ContextEmbedder is the stage's ROUTING_EMBEDDER: wordllama, titan or
	// none (titan grants InvokeModel on Titan to the embedder's functions).
	ContextEmbedder = "embedder"
	// ContextTeamRate is TeamRatePerSecond (0: no per-team limit).
	ContextTeamRate = "teamRatePerSecond"
	// ContextUserRate is UserRatePerSecond (0: a fifth of the team's).
	ContextUserRate = "userRatePerSecond"
	// ContextAPIRate and ContextAPIBurst are the HTTP and streaming APIs'
	// throttle (APIRatePerSecond, APIBurst).
	ContextAPIRate  = "apiRatePerSecond"
	ContextAPIBurst = "apiBurst"
)

// The keys under ContextModels besides the tiers'.
const (
	modelsExtra     = "extra"
	modelsSynthesis = "synthesis"
)

// modelKeys are the keys ContextModels takes, for the error naming them.
var modelKeys = []string{routingTier0, routingTier1, routingTier2, modelsExtra, modelsSynthesis}

// bedrockModelID is the shape of a Bedrock foundation model id:
// provider.model, then up to two ":"-parts (the version, a context
// window): amazon.nova-micro-v1:0, anthropic.claude-3-5-haiku-20241022-v1:0.
var bedrockModelID = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*\.[a-z0-9][a-z0-9._-]*(:[a-z0-9]+){0,2}$`)

// profilePrefixes begin the ids of Bedrock's cross-region inference
// profiles (us.anthropic.…): the grants name the foundation model and
// every profile of this account and region that fronts it
// (modelsPolicy), so a stage names the foundation model.
var profilePrefixes = []string{"us", "us-gov", "eu", "apac", "ca", "jp", "au", "global"}

// maxModelID is the longest model id an agent may name (agents.validate).
const maxModelID = 200

// CheckModelID returns an error naming key unless id is a Bedrock
// foundation model id.
func CheckModelID(key, id string) error {
	if len(id) > maxModelID || !bedrockModelID.MatchString(id) {
		return fmt.Errorf("-c %s: %q is not a Bedrock model id (provider.model-version:n, e.g. %s)", key, id, tier1)
	}
	if prefix, rest, _ := strings.Cut(id, "."); slices.Contains(profilePrefixes, prefix) {
		return fmt.Errorf("-c %s: %q is a cross-region inference profile; name its foundation model (%s): the stage's grants cover the profiles that front it",
			key, id, rest)
	}
	return nil
}

// applyStageContext applies the stage keys of node's context to cfg.
// Every key that is wrong is reported, each on its own.
func applyStageContext(node constructs.Node, cfg *EnvConfig) error {
	all, _ := node.GetAllContext(nil).(map[string]any)
	flags := settings.ParsePairs(cfg.Flags.String())
	tiers := cfg.TierModels()
	defaultTier1, synthesis := tiers[routingTier1], ""
	var errs []error
	fail := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, key := range sortedKeys(all) {
		v := all[key]
		name, isFlag := strings.CutPrefix(key, ContextFlags)
		model, isModel := strings.CutPrefix(key, ContextModels)
		switch {
		case key == strings.TrimSuffix(ContextFlags, ".") || key == strings.TrimSuffix(ContextModels, "."):
			fail(fmt.Errorf("-c %s: name each one, as -c %sensemble=true or -c %stier_1=<model id>", key, ContextFlags, ContextModels))
		case isFlag:
			fail(setFlag(flags, key, name, v))
		case isModel && slices.Contains([]string{routingTier0, routingTier1, routingTier2, modelsSynthesis}, model):
			id, err := modelID(key, v)
			fail(err)
			if err == nil && model == modelsSynthesis {
				synthesis = id
			} else if err == nil {
				tiers[model] = id
			}
		case isModel && model == modelsExtra:
			extra, err := parseModels(key, v)
			fail(err)
			cfg.ExtraModels = extra
		case isModel:
			fail(fmt.Errorf("-c %s: unknown model key (want %s%s)", key, ContextModels, strings.Join(modelKeys, ", "+ContextModels)))
		case key == ContextEmbedder:
			fail(setEmbedder(cfg, v))
		case key == ContextTeamRate:
			fail(setCount(&cfg.TeamRatePerSecond, key, v, 0))
		case key == ContextUserRate:
			fail(setCount(&cfg.UserRatePerSecond, key, v, 0))
		case key == ContextAPIRate:
			fail(setCount(&cfg.APIRatePerSecond, key, v, 1))
		case key == ContextAPIBurst:
			fail(setCount(&cfg.APIBurst, key, v, 1))
		case key == ContextCORSOrigins:
			origins, err := parseCORSOrigins(cfg.Name, v)
			fail(err)
			cfg.CORSOrigins = origins
		case isIdentityKey(key):
			fail(setIdentity(&cfg.Identity, cfg.Name, key, v))
		case isTracingKey(key):
			fail(setTracing(cfg, key, v))
		}
	}
	fail(cfg.Identity.check())
	fail(checkUserRate(*cfg))
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	cfg.Flags = settings.ParseFlags(settings.EncodePairs(flags))
	cfg.Tiers = tiers
	// The synthesis model follows tier_1 (the balanced model) unless the
	// deploy names one.
	switch {
	case synthesis != "":
		cfg.SynthesisModel = synthesis
	case cfg.SynthesisModel == defaultTier1:
		cfg.SynthesisModel = tiers[routingTier1]
	}
	return nil
}

// setFlag sets flags[name] from the context's value v.
func setFlag(flags map[string]string, key, name string, v any) error {
	if !slices.Contains(settings.FlagNames, name) {
		return fmt.Errorf("-c %s: unknown flag %q (flags are %s)", key, name, strings.Join(settings.FlagNames, ", "))
	}
	switch v := v.(type) {
	case bool:
		flags[name] = strconv.FormatBool(v)
		return nil
	case string:
		if s := strings.TrimSpace(v); s == "true" || s == "false" {
			flags[name] = s
			return nil
		}
	}
	return fmt.Errorf("-c %s must be true or false, got %v", key, v)
}

// modelID reads one model id.
func modelID(key string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("-c %s must be a Bedrock model id, got %v", key, v)
	}
	s = strings.TrimSpace(s)
	return s, CheckModelID(key, s)
}

// parseModels reads a comma-separated list (or a JSON list) of model ids,
// none twice; an empty one offers no extra model.
func parseModels(key string, v any) ([]string, error) {
	parts, err := contextList(key, "a model id", "model ids", v)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range parts {
		if err := CheckModelID(key, id); err != nil {
			return nil, err
		}
		if slices.Contains(out, id) {
			return nil, fmt.Errorf("-c %s: %q given twice", key, id)
		}
		out = append(out, id)
	}
	return out, nil
}

// contextList reads a context value that lists things: comma-separated
// in a string (-c key=a,b) or a list of strings (cdk.json); one and many
// name a thing and things in the errors.
func contextList(key, one, many string, v any) ([]string, error) {
	var parts []string
	switch v := v.(type) {
	case string:
		parts = settings.ParseList(v)
	case []any:
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("-c %s: %v is not %s", key, e, one)
			}
			parts = append(parts, strings.TrimSpace(s))
		}
	default:
		return nil, fmt.Errorf("-c %s must be comma-separated %s, got %v", key, many, v)
	}
	return parts, nil
}

// setEmbedder sets the stage's embedder, one of ROUTING_EMBEDDER's choices.
func setEmbedder(cfg *EnvConfig, v any) error {
	choices := settings.Vars[settings.EnvEmbedder].Choices
	s, _ := v.(string)
	if s = strings.TrimSpace(s); !slices.Contains(choices, s) {
		return fmt.Errorf("-c %s must be one of %s, got %v", ContextEmbedder, strings.Join(choices, ", "), v)
	}
	cfg.Embedder = s
	return nil
}

// checkUserRate refuses a person's rate the authorizer would not keep:
// above the team's, a person could never use it (the team's count stops
// them first), and without a team's limit nothing is counted at all, so
// the rate the deploy asked for would silently be off.
func checkUserRate(cfg EnvConfig) error {
	switch {
	case cfg.UserRatePerSecond == 0:
		return nil
	case cfg.TeamRatePerSecond == 0:
		return fmt.Errorf("-c %s=%d needs -c %s above 0: a person's requests are counted only within their team's limit, so without one it would limit nothing",
			ContextUserRate, cfg.UserRatePerSecond, ContextTeamRate)
	case cfg.UserRatePerSecond > cfg.TeamRatePerSecond:
		return fmt.Errorf("-c %s=%d is above the team's %s=%d: a person cannot be allowed more than their team, whose limit would stop them first",
			ContextUserRate, cfg.UserRatePerSecond, ContextTeamRate, cfg.TeamRatePerSecond)
	}
	return nil
}

// maxCount bounds the limits a deploy sets (API Gateway's account
// throttle is 10,000 requests a second by default).
const maxCount = 1_000_000

// setCount sets *dst to a whole number from least to maxCount.
func setCount(dst *int, key string, v any, least int) error {
	var n float64
	switch v := v.(type) {
	case string:
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("-c %s must be a whole number, got %q", key, v)
		}
		n = float64(i)
	case float64:
		n = v
	default:
		return fmt.Errorf("-c %s must be a whole number, got %v", key, v)
	}
	if n != math.Trunc(n) || n < float64(least) || n > maxCount {
		return fmt.Errorf("-c %s must be a whole number from %d to %d, got %v", key, least, maxCount, v)
	}
	*dst = int(n)
	return nil
}
