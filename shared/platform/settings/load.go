package settings

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Kind is how a variable's value is written and checked.
type Kind string

// Kinds of variables.
const (
	// KindText is any text.
	KindText Kind = "text"
	// KindPairs is name=value pairs (EncodePairs), every name and value
	// non-empty, no name twice.
	KindPairs Kind = "pairs"
	// KindFlags is the feature flags (Flags.String): names from FlagNames,
	// values true or false.
	KindFlags Kind = "flags"
	// KindCount is a whole number, 0 or more.
	KindCount Kind = "count"
	// KindChoice is one of the variable's Choices.
	KindChoice Kind = "choice"
	// KindURL is an absolute http or https URL.
	KindURL Kind = "url"
	// KindList is comma-separated items, none empty, none twice.
	KindList Kind = "list"
)

// Var is one environment variable of the contract: how it is written and,
// when it may be absent, the default it then takes. A variable without a
// default is required: a function that declares it (manifest.Env) does
// not start without it.
type Var struct {
	Name string
	Kind Kind
	// Required: absent (or empty) is an error. Otherwise Default applies.
	Required bool
	// Default is the value an absent optional variable takes, written as
	// the variable would be ("" is the kind's zero: no pairs, no flags, 0).
	Default string
	// Choices are the values a KindChoice variable may take.
	Choices []string
	// Secret variables are never echoed in errors.
	Secret bool
	// Doc says what the variable is for (docs/operations.md).
	Doc string
}

// Vars is the catalog of variables, by name. Whether a variable is
// required is a property of the variable, not of the function that reads
// it: a table name has no sensible default anywhere, a rate limit's
// absence means "no limit" everywhere. The functions name the variables
// they read (manifest.Env); the catalog says how each is checked.
var Vars = map[string]Var{
	EnvStage: {Name: EnvStage, Kind: KindText, Required: true, Doc: "the stage's name (dev, staging, prod, …)"},
	EnvTable: {Name: EnvTable, Kind: KindText, Required: true, Doc: "the single table"},
	EnvBus:   {Name: EnvBus, Kind: KindText, Required: true, Doc: "the custom event bus"},
	EnvStateMachines: {Name: EnvStateMachines, Kind: KindPairs, Required: true,
		Doc: "state machine name=ARN, for the machines the function starts, stops or describes"},
	EnvQueues: {Name: EnvQueues, Kind: KindPairs, Required: true,
		Doc: "queue name=URL: a consumer's dead-letter queue, every queue for health"},
	EnvFunctions: {Name: EnvFunctions, Kind: KindPairs, Required: true,
		Doc: "function name=physical name, for the functions it invokes"},
	EnvFlags: {Name: EnvFlags, Kind: KindFlags, Required: true,
		Doc: "the stage's feature flags; a flag not listed is off"},
	EnvModelProvider: {Name: EnvModelProvider, Kind: KindChoice, Required: true, Choices: []string{"local", "bedrock", "openai"},
		Doc: "the agents' default model adapter"},
	EnvModelTiers: {Name: EnvModelTiers, Kind: KindPairs,
		Doc: "tier_N=model id; absent: the routing package's Bedrock defaults"},
	EnvExtraModels: {Name: EnvExtraModels, Kind: KindList,
		Doc: "model ids agents may name besides the tiers' (GET /v1/models); absent: the tiers' alone"},
	EnvSynthesis: {Name: EnvSynthesis, Kind: KindText,
		Doc: "the model that synthesizes ENSEMBLE replies; absent: replies are merged"},
	EnvOpenAIBaseURL: {Name: EnvOpenAIBaseURL, Kind: KindURL,
		Doc: "the OpenAI-compatible endpoint; absent: no openai provider (required when MODEL_PROVIDER=openai)"},
	EnvOpenAIAPIKey: {Name: EnvOpenAIAPIKey, Kind: KindText, Secret: true,
		Doc: "the OpenAI-compatible endpoint's key"},
	EnvOpenAIModel: {Name: EnvOpenAIModel, Kind: KindText,
		Doc: "the model every call to the OpenAI-compatible endpoint names (a local server's, e.g. llama3.2); absent: each call names its own"},
	EnvEmbedder: {Name: EnvEmbedder, Kind: KindChoice, Default: EmbedderWordLlama,
		Choices: []string{EmbedderWordLlama, EmbedderTitan, EmbedderNone}, Doc: "the ExpertGate's semantic signal"},
	EnvTeamRateLimit: {Name: EnvTeamRateLimit, Kind: KindCount, Default: "0",
		Doc: "requests per second one team may make; 0: no per-team limit"},
	EnvUserRateLimit: {Name: EnvUserRateLimit, Kind: KindCount, Default: "0",
		Doc: "requests per second one person of a team may make; 0: a fifth of the team's (at least 1); counted only under TEAM_RATE_LIMIT"},
	EnvMCPLoopbackOnly: {Name: EnvMCPLoopbackOnly, Kind: KindChoice, Default: "false", Choices: []string{"true", "false"},
		Doc: "true keeps MCP packs to servers on loopback, over http or https (the local cloud only; never set deployed, where packs reach public https servers only)"},
	EnvStreamURL: {Name: EnvStreamURL, Kind: KindURL,
		Doc: "the streaming API's base URL, which the A2A agent card lists as the streaming endpoint; absent: the card says streaming: false"},
	EnvCORSOrigins: {Name: EnvCORSOrigins, Kind: KindList,
		Doc: "the browser origins a streamed answer names in Access-Control-Allow-Origin (the stage's cors.origins and the console's); absent: none"},
	EnvConsoleIssuer: {Name: EnvConsoleIssuer, Kind: KindURL,
		Doc: "the OpenID Connect issuer the console signs people in with (authorization code with PKCE); absent: API keys only"},
	EnvConsoleClientID: {Name: EnvConsoleClientID, Kind: KindText,
		Doc: "the console's client id at CONSOLE_OIDC_ISSUER"},
	EnvTraceEndpoint: {Name: EnvTraceEndpoint, Kind: KindURL,
		Doc: "the OTLP/HTTP traces URL spans go to (X-Ray's, signed, when it is an amazonaws.com host); absent: spans go nowhere"},
	EnvTraceSamplePercent: {Name: EnvTraceSamplePercent, Kind: KindCount, Default: "100",
		Doc: "the percentage of new traces recorded (0-100; more is 100); a hop follows its parent's decision"},
	EnvTraceContent: {Name: EnvTraceContent, Kind: KindChoice, Default: "false", Choices: []string{"true", "false"},
		Doc: "true records prompts, completions and tool arguments as span events (never in prod)"},
}

// VarError is a variable that is missing or malformed.
type VarError struct {
	Name string
	Err  error
}

// Error implements error: `TEAM_RATE_LIMIT: not a number: "abc"`.
func (e *VarError) Error() string { return e.Name + ": " + e.Err.Error() }

// Unwrap returns the reason.
func (e *VarError) Unwrap() error { return e.Err }

// VarErrors are the variables err names (Load joins one per variable).
func VarErrors(err error) []*VarError {
	var out []*VarError
	var ve *VarError
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, VarErrors(e)...)
		}
	} else if errors.As(err, &ve) {
		out = append(out, ve)
	}
	return out
}

// Load reads the variables names (a function's declaration, manifest.Env)
// through get (os.LookupEnv, or a map in tests) and returns them as a
// Config; the fields of variables not named stay zero. A missing required
// variable, or one whose value does not parse as its kind, is a *VarError;
// every such variable is reported (errors.Join, see VarErrors). An absent
// optional variable takes its default. A name not in Vars is an error too:
// a declaration cannot name a variable the contract does not know.
func Load(names []string, get func(string) (string, bool)) (Config, error) {
	var c Config
	var errs []error
	for _, name := range names {
		v, ok := Vars[name]
		if !ok {
			errs = append(errs, &VarError{Name: name, Err: errors.New("not a variable of the contract (settings.Vars)")})
			continue
		}
		raw, set := get(name)
		if strings.TrimSpace(raw) == "" {
			set = false
		}
		if !set {
			if v.Required {
				errs = append(errs, &VarError{Name: name, Err: errors.New("required, not set")})
				continue
			}
			raw = v.Default
		}
		if err := v.set(&c, raw); err != nil {
			if v.Secret {
				err = errors.New("malformed (value not shown)")
			}
			errs = append(errs, &VarError{Name: name, Err: err})
		}
	}
	// The one rule across variables: the openai provider needs its
	// endpoint (without it providers.New fails the cold start, later and
	// less plainly).
	if c.ModelProvider == "openai" && c.OpenAIBaseURL == "" && slices.Contains(names, EnvOpenAIBaseURL) &&
		!slices.ContainsFunc(VarErrors(errors.Join(errs...)), func(e *VarError) bool { return e.Name == EnvOpenAIBaseURL }) {
		errs = append(errs, &VarError{Name: EnvOpenAIBaseURL, Err: fmt.Errorf("required when %s=openai", EnvModelProvider)})
	}
	return c, errors.Join(errs...)
}

// set parses raw as v's kind into its field of c.
func (v Var) set(c *Config, raw string) error {
	switch v.Kind {
	case KindText:
		return assign(c, v.Name, strings.TrimSpace(raw))
	case KindChoice:
		s := strings.TrimSpace(raw)
		if s != "" && !slices.Contains(v.Choices, s) {
			return fmt.Errorf("%q is not one of %s", s, strings.Join(v.Choices, ", "))
		}
		return assign(c, v.Name, s)
	case KindURL:
		s := strings.TrimSpace(raw)
		if s != "" {
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("not an http(s) URL: %q", s)
			}
		}
		return assign(c, v.Name, s)
	case KindCount:
		s := strings.TrimSpace(raw)
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("not a number: %q", s)
		}
		if n < 0 {
			return fmt.Errorf("negative: %d", n)
		}
		return assign(c, v.Name, n)
	case KindPairs:
		m, err := parsePairsStrict(raw)
		if err != nil {
			return err
		}
		return assign(c, v.Name, m)
	case KindList:
		l, err := parseListStrict(raw)
		if err != nil {
			return err
		}
		return assign(c, v.Name, l)
	case KindFlags:
		f, err := parseFlagsStrict(raw)
		if err != nil {
			return err
		}
		return assign(c, v.Name, f)
	}
	return fmt.Errorf("unknown kind %q", v.Kind)
}

// assign puts value into the Config field of the variable name. The
// fields keep the names the builders read (d.Config.TableName, …).
func assign(c *Config, name string, value any) error {
	switch name {
	case EnvStage:
		c.Stage = value.(string)
	case EnvTable:
		c.TableName = value.(string)
	case EnvBus:
		c.BusName = value.(string)
	case EnvStateMachines:
		c.StateMachines = value.(map[string]string)
	case EnvQueues:
		c.Queues = value.(map[string]string)
	case EnvFunctions:
		c.Functions = value.(map[string]string)
	case EnvFlags:
		c.Flags = value.(Flags)
	case EnvModelProvider:
		c.ModelProvider = value.(string)
	case EnvModelTiers:
		c.Tiers = value.(map[string]string)
	case EnvExtraModels:
		c.ExtraModels = value.([]string)
	case EnvSynthesis:
		c.Synthesis = value.(string)
	case EnvOpenAIBaseURL:
		c.OpenAIBaseURL = value.(string)
	case EnvOpenAIAPIKey:
		c.OpenAIAPIKey = value.(string)
	case EnvOpenAIModel:
		c.OpenAIModel = value.(string)
	case EnvEmbedder:
		c.Embedder = value.(string)
	case EnvTeamRateLimit:
		c.TeamRateLimit = value.(int)
	case EnvUserRateLimit:
		c.UserRateLimit = value.(int)
	case EnvMCPLoopbackOnly:
		c.MCPLoopbackOnly = value.(string) == "true"
	case EnvStreamURL:
		c.StreamURL = strings.TrimSuffix(value.(string), "/")
	case EnvCORSOrigins:
		c.CORSOrigins = value.([]string)
	case EnvConsoleIssuer:
		c.ConsoleIssuer = value.(string)
	case EnvConsoleClientID:
		c.ConsoleClientID = value.(string)
	case EnvTraceEndpoint:
		c.TraceEndpoint = value.(string)
	case EnvTraceSamplePercent:
		c.TraceSamplePercent = value.(int)
	case EnvTraceContent:
		c.TraceContent = value.(string) == "true"
	default:
		return fmt.Errorf("no Config field for %s", name)
	}
	return nil
}

// parsePairsStrict is ParsePairs that refuses what ParsePairs skips: a
// part without "=", an empty name or value, a name given twice.
func parsePairsStrict(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, p := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(p, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%q is not name=value", p)
		case k == "" || v == "":
			return nil, fmt.Errorf("%q: empty name or value", p)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%q given twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// parseListStrict is ParseList that refuses what ParseList skips: an
// empty item (a stray comma), and an item given twice.
func parseListStrict(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			return nil, fmt.Errorf("%q has an empty item", s)
		case slices.Contains(out, p):
			return nil, fmt.Errorf("%q given twice", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseFlagsStrict is ParseFlags that refuses an unknown flag (a typo
// would leave the flag meant off) and a value other than true or false.
func parseFlagsStrict(s string) (Flags, error) {
	m, err := parsePairsStrict(s)
	if err != nil {
		return Flags{}, err
	}
	for k, v := range m {
		if !slices.Contains(FlagNames, k) {
			return Flags{}, fmt.Errorf("unknown flag %q (want %s)", k, strings.Join(FlagNames, ", "))
		}
		if v != "true" && v != "false" {
			return Flags{}, fmt.Errorf("flag %s=%q: want true or false", k, v)
		}
	}
	return ParseFlags(s), nil
}
