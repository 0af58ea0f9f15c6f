// Package app wires adapters and services into the handler of each function
// in the manifest. Function mains and the local cloud's edge both get their
// handlers here, so a handler runs the same code in AWS and locally.
package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	lambdasvc "github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/conclave-ai/conclave/shared/admin"
	"github.com/conclave-ai/conclave/shared/agents"
	"github.com/conclave-ai/conclave/shared/api"
	"github.com/conclave-ai/conclave/shared/authorizer"
	"github.com/conclave-ai/conclave/shared/consumers"
	"github.com/conclave-ai/conclave/shared/conversations"
	"github.com/conclave-ai/conclave/shared/discovery"
	"github.com/conclave-ai/conclave/shared/dispatch"
	"github.com/conclave-ai/conclave/shared/dynamo"
	"github.com/conclave-ai/conclave/shared/eventbus"
	"github.com/conclave-ai/conclave/shared/executions"
	"github.com/conclave-ai/conclave/shared/expertgate"
	"github.com/conclave-ai/conclave/shared/httpapi"
	"github.com/conclave-ai/conclave/shared/memory"
	"github.com/conclave-ai/conclave/shared/messaging"
	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/recorder"
	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/tasks"
	"github.com/conclave-ai/conclave/shared/tasktools"
	"github.com/conclave-ai/conclave/shared/teams"
	"github.com/conclave-ai/conclave/shared/worker"
)

// Environment variables every function reads.
const (
	EnvStage         = "STAGE"
	EnvTable         = "TABLE_NAME"
	EnvBus           = "EVENT_BUS_NAME"
	EnvStateMachines = "STATE_MACHINE_ARNS" // name=arn,name=arn
	EnvQueues        = "QUEUE_URLS"         // name=url,name=url
	EnvFunctions     = "FUNCTION_NAMES"     // name=physical name (functions it invokes)
	EnvFlags         = "FEATURE_FLAGS"      // collaboration=true,expert_gate=true,ensemble=false
	EnvModelProvider = "MODEL_PROVIDER"     // local (default), bedrock or openai
	EnvModelTiers    = "MODEL_TIERS"        // tier_0=model id,tier_1=…,tier_2=…
	EnvSynthesis     = "SYNTHESIS_MODEL"    // model id that synthesizes ENSEMBLE replies; empty merges
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"
	EnvOpenAIAPIKey  = "OPENAI_API_KEY"
)

// Config names the resources a function uses.
type Config struct {
	Stage         string
	TableName     string
	BusName       string
	StateMachines map[string]string
	Queues        map[string]string
	Functions     map[string]string
	Flags         dispatch.Flags
	ModelProvider string
	Tiers         routing.TierModels
	Synthesis     string
	OpenAIBaseURL string
	OpenAIAPIKey  string
}

// ParseFlags reads "collaboration=true,expert_gate=true,ensemble=false";
// missing flags are off (the safe default, as in prod).
func ParseFlags(s string) dispatch.Flags {
	m := parsePairs(s)
	on := func(k string) bool { return m[k] == "true" }
	return dispatch.Flags{Collaboration: on("collaboration"), ExpertGate: on("expert_gate"), Ensemble: on("ensemble")}
}

// ConfigFromEnv reads Config from the environment the CDK app sets.
func ConfigFromEnv() Config {
	return Config{
		Stage:         os.Getenv(EnvStage),
		TableName:     os.Getenv(EnvTable),
		BusName:       os.Getenv(EnvBus),
		StateMachines: parsePairs(os.Getenv(EnvStateMachines)),
		Queues:        parsePairs(os.Getenv(EnvQueues)),
		Functions:     parsePairs(os.Getenv(EnvFunctions)),
		Flags:         ParseFlags(os.Getenv(EnvFlags)),
		ModelProvider: os.Getenv(EnvModelProvider),
		Tiers:         routing.TierModels(parsePairs(os.Getenv(EnvModelTiers))),
		Synthesis:     os.Getenv(EnvSynthesis),
		OpenAIBaseURL: os.Getenv(EnvOpenAIBaseURL),
		OpenAIAPIKey:  os.Getenv(EnvOpenAIAPIKey),
	}
}

// EncodePairs is the inverse of the pair lists in the environment.
func EncodePairs(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

func parsePairs(s string) map[string]string {
	out := map[string]string{}
	for _, p := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(p, "="); ok {
			out[k] = v
		}
	}
	return out
}

// App holds the adapters and services of one process.
type App struct {
	Config Config
	Log    *slog.Logger
	Store  *dynamo.Store
	Bus    *eventbus.Bus
	SFN    *sfn.Client
	SQS    *sqs.Client
	Teams  *teams.Service
	Agents *agents.Service
	Tasks  *tasks.Service
	Model  models.Model
	// Gate scores in process (the expert-gate function's handler); the
	// chat and discovery services reach it through Lambda Invoke.
	Gate          *expertgate.Service
	Conversations *conversations.Service
	Decisions     *dispatch.Service
	Discovery     *discovery.Service
	Messages      *messaging.Service
	Memory        *memory.Service
}

// New builds an App from an AWS configuration (loaded once per cold start).
func New(cfg Config, awsCfg aws.Config, log *slog.Logger) *App {
	store := dynamo.New(dynamodb.NewFromConfig(awsCfg), cfg.TableName)
	a := &App{
		Config: cfg,
		Log:    log,
		Store:  store,
		Bus:    &eventbus.Bus{Client: eventbridge.NewFromConfig(awsCfg), Name: cfg.BusName},
		SFN:    sfn.NewFromConfig(awsCfg),
		SQS:    sqs.NewFromConfig(awsCfg),
		Teams:  teams.NewService(store),
		Agents: agents.NewService(store),
	}
	a.Model = newModel(cfg, awsCfg)
	tiers := cfg.Tiers
	if len(tiers) == 0 {
		tiers = routing.DefaultTierModels
	}
	a.Gate = &expertgate.Service{Source: store, Tiers: tiers}
	var gate expertgate.Gate
	if fn := cfg.Functions["expert-gate"]; fn != "" {
		gate = &expertgate.Client{Lambda: lambdasvc.NewFromConfig(awsCfg), FunctionName: fn}
	}
	var synth *routing.Synthesizer
	if cfg.Synthesis != "" {
		synth = &routing.Synthesizer{Model: a.Model, ModelID: cfg.Synthesis}
	}
	a.Messages = &messaging.Service{Store: store, Dir: store, Bus: a.Bus}
	a.Memory = &memory.Service{Store: store, Dir: store, Bus: a.Bus}
	router := &dispatch.Router{Gate: gate, Flags: cfg.Flags, Tiers: tiers, Log: log}
	a.Conversations = &conversations.Service{Store: store, Agents: store, Router: router, Model: a.Model, Synth: synth,
		Memories: a.Memory, Bus: a.Bus, Log: log}
	a.Decisions = &dispatch.Service{Store: store}
	a.Discovery = &discovery.Service{Dir: store, Gate: gate}
	var runner tasks.Runner
	if arn := cfg.StateMachines["delegation"]; arn != "" {
		runner = &executions.Runner{Client: a.SFN, StateMachineARN: arn}
	}
	a.Tasks = tasks.NewService(store, runner, a.Bus, log)
	return a
}

// newModel is the model port: the configured provider by default, and
// every provider an agent may name (agents.Model.Provider).
func newModel(cfg Config, awsCfg aws.Config) models.Model {
	providers := map[string]models.Model{
		"local":   models.Local{},
		"bedrock": models.Bedrock{Client: bedrockruntime.NewFromConfig(awsCfg), DefaultModelID: routing.DefaultTierModels[routing.Tier1]},
	}
	if cfg.OpenAIBaseURL != "" {
		providers["openai"] = models.OpenAI{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, HTTP: &http.Client{Timeout: 60 * time.Second}}
	}
	def, ok := providers[cfg.ModelProvider]
	if !ok {
		def = models.Local{}
	}
	return models.Switch{Default: def, Providers: providers}
}

// NewLogger returns the JSON logger every function uses.
func NewLogger(function string) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("function", function)
}

// Handler returns the Lambda handler of the manifest function name.
func (a *App) Handler(name string) (any, error) {
	log := a.Log.With("function", name)
	router := func() *httpapi.Router { return httpapi.NewRouter(log, a.Store) }
	switch name {
	case "authorizer":
		return (&authorizer.Handler{Teams: a.Teams, Log: log}).Handle, nil
	case "health":
		rt := router()
		api.HealthRoutes(rt, a.Config.Stage, a.healthChecks())
		return rt.Serve, nil
	case "agents":
		rt := router()
		api.AgentRoutes(rt, a.Agents)
		return rt.Serve, nil
	case "team":
		rt := router()
		api.TeamRoutes(rt, a.Teams, a.Store)
		return rt.Serve, nil
	case "admin":
		return (&admin.Handler{Teams: a.Teams, Log: log}).Handle, nil
	case "tasks":
		rt := router()
		api.TaskRoutes(rt, a.Tasks)
		return rt.Serve, nil
	case "task-lifecycle":
		return a.Tasks.Step, nil
	case "task-worker":
		w := &worker.Worker{Agents: a.Store, Model: a.Model, Tools: &tasktools.Tools{Tasks: a.Tasks, Messages: a.Messages}, Tracker: tasks.Tracker{Svc: a.Tasks}}
		return w.Run, nil
	case "task-sweeper":
		return func(ctx context.Context) (map[string]int, error) {
			n, err := a.Tasks.Sweep(ctx)
			return map[string]int{"timed_out": n}, err
		}, nil
	case "activity-recorder":
		return (&recorder.Handler{Store: a.Store, Log: log}).Handle, nil
	case "expert-gate":
		return a.Gate.Score, nil
	case "message-fanout":
		return (&consumers.Handler{DetailType: messaging.DetailType, Log: log, Apply: func(ctx context.Context, detail json.RawMessage) error {
			var ev messaging.SentEvent
			if err := json.Unmarshal(detail, &ev); err != nil || ev.TeamID == "" || ev.MessageID == "" {
				return fmt.Errorf("bad AgentMessageSent detail")
			}
			n, err := a.Messages.FanOut(ctx, ev.TeamID, ev.MessageID)
			log.Info("fanned out", "message_id", ev.MessageID, "inbox_entries_written", n)
			return err
		}}).Handle, nil
	case "memory-invalidator":
		return (&consumers.Handler{DetailType: memory.DetailType, Log: log, Apply: func(ctx context.Context, detail json.RawMessage) error {
			var ev memory.SharedEvent
			if err := json.Unmarshal(detail, &ev); err != nil || ev.TeamID == "" {
				return fmt.Errorf("bad MemoryShared detail")
			}
			n, err := a.Memory.InvalidateTeam(ctx, ev.TeamID)
			log.Info("contexts dropped", "memory_id", ev.MemoryID, "agents", n)
			return err
		}}).Handle, nil
	case "conversations", "discovery", "routing", "messages", "memories":
		rt, err := a.Router(name)
		if err != nil {
			return nil, err
		}
		return rt.Serve, nil
	}
	return nil, fmt.Errorf("no handler for function %q", name)
}

// Router returns the router of an HTTP function, for tests and tooling that
// need its route keys.
func (a *App) Router(name string) (*httpapi.Router, error) {
	rt := httpapi.NewRouter(a.Log, a.Store)
	switch name {
	case "health":
		api.HealthRoutes(rt, a.Config.Stage, nil)
	case "agents":
		api.AgentRoutes(rt, a.Agents)
	case "team":
		api.TeamRoutes(rt, a.Teams, a.Store)
	case "tasks":
		api.TaskRoutes(rt, a.Tasks)
	case "conversations":
		api.ConversationRoutes(rt, a.Conversations)
	case "discovery":
		api.DiscoveryRoutes(rt, a.Discovery)
	case "routing":
		api.RoutingRoutes(rt, a.Decisions)
	case "messages":
		api.MessageRoutes(rt, a.Messages)
	case "memories":
		api.MemoryRoutes(rt, a.Memory)
	default:
		return nil, fmt.Errorf("%q is not an HTTP function", name)
	}
	return rt, nil
}

func (a *App) healthChecks() []api.Check {
	checks := []api.Check{
		{Name: "dynamodb", Ping: a.Store.Ping},
		{Name: "eventbridge", Ping: a.Bus.Ping},
	}
	for _, name := range sortedKeys(a.Config.StateMachines) {
		arn := a.Config.StateMachines[name]
		checks = append(checks, api.Check{Name: "stepfunctions:" + name, Ping: func(ctx context.Context) error {
			_, err := a.SFN.DescribeStateMachine(ctx, &sfn.DescribeStateMachineInput{StateMachineArn: &arn})
			return err
		}})
	}
	for _, name := range sortedKeys(a.Config.Queues) {
		url := a.Config.Queues[name]
		checks = append(checks, api.Check{Name: "sqs:" + name, Ping: func(ctx context.Context) error {
			_, err := a.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
			return err
		}})
	}
	return checks
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Main is the whole main() of a function: load configuration once per cold
// start, wire, and hand the handler to the Lambda runtime.
func Main(name string) {
	log := NewLogger(name)
	awsCfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		log.Error("load aws config", "error", err.Error())
		os.Exit(1)
	}
	h, err := New(ConfigFromEnv(), awsCfg, log).Handler(name)
	if err != nil {
		log.Error("wire", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(h)
}
