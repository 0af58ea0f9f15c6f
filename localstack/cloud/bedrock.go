package cloud

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conclave-ai/conclave/localstack/servicemodel"
	"github.com/conclave-ai/conclave/shared/models"
)

// Bedrock answers Amazon Bedrock's runtime API on the edge the way DynamoDB
// Local answers DynamoDB (architecture decision 6): the functions run the
// production Bedrock adapter with the SDK's endpoint override, every
// request is checked against the bedrock-runtime service model botocore
// ships plus the Converse rules that model does not encode (checkConverse),
// and a scripted model (the deterministic local model) writes the answers.
//
// A request that breaks a rule gets the 400 ValidationException Bedrock
// would send, is counted (Counts, BackendCounts) and is logged at error
// level: the integration suite asserts that none was counted. A request a
// test sends malformed on purpose carries ExpectInvalidHeader and is counted
// apart.
type Bedrock struct {
	// Service is the bedrock-runtime service model.
	Service *servicemodel.Model
	// Model writes the answers: the local model reading agents (scripts,
	// voices) from the table.
	Model models.Model
	Log   *slog.Logger
	// Embedder, when set, gives the embedding model that stands in for
	// Titan Text Embeddings (InvokeModel); it is called on the first
	// embedding request, so a run that embeds nothing loads nothing.
	Embedder func() (TextEmbedder, error)
	// StreamChunkDelay is the pause between two text deltas of a
	// ConverseStream answer (DefaultStreamChunkDelay from NewBedrock; 0
	// sends them back to back), so a streamed reply arrives over time as a
	// real model's does.
	StreamChunkDelay time.Duration
	// StreamPace replaces that pause (delta from 1; false abandons).
	StreamPace func(r *http.Request, delta int) bool
	// PaceConverse makes a Converse answer take as long as its streamed
	// form would (the first byte's delay and every piece's pause), as a
	// real model writes a whole reply before Converse answers: what the
	// streaming benchmark compares a streamed turn against (make
	// bench-stream sets CONCLAVE_BEDROCK_PACE=1). Off for the tests: a
	// scripted answer at once keeps them fast.
	PaceConverse bool

	mu     sync.Mutex
	counts map[string]int64
}

// BackendBedrock names the edge's own Bedrock runtime in BackendCounts. Its
// counts are by operation: "Converse" (served), "Converse.invalid"
// (refused with a ValidationException), "Converse.invalid_expected"
// (malformed on purpose, ExpectInvalidHeader), "Converse.model_error"
// (a scripted failure), "Converse.abandoned" (the caller gave up), and the
// same for "ConverseStream" (and its ".bad_response": an answer the edge
// could not stream) and "InvokeModel".
const BackendBedrock = "edge-bedrock"

// ExpectInvalidHeader marks a request a test sends malformed on purpose, so
// it is not counted as an invalid request of the application.
const ExpectInvalidHeader = "X-Conclave-Expect-Invalid"

// NewBedrock returns the edge's Bedrock runtime over the service model.
func NewBedrock(service *servicemodel.Model, model models.Model, log *slog.Logger) *Bedrock {
	return &Bedrock{Service: service, Model: model, Log: log, StreamChunkDelay: DefaultStreamChunkDelay, counts: map[string]int64{}}
}

// bedrockPath is a runtime operation's path: /model/{modelId}/{operation}.
var bedrockPath = regexp.MustCompile(`^/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream|count-tokens)$`)

// isBedrock tells a Bedrock runtime call (signing name "bedrock", a
// /model/{modelId}/… path) from every other call on the edge.
func isBedrock(r *http.Request) bool {
	return r.Method == http.MethodPost && bedrockPath.MatchString(r.URL.EscapedPath())
}

func (b *Bedrock) count(key string) {
	b.mu.Lock()
	b.counts[key]++
	b.mu.Unlock()
}

// Counts is a copy of the counts by operation (see BackendBedrock).
func (b *Bedrock) Counts() map[string]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]int64, len(b.counts))
	for k, v := range b.counts {
		out[k] = v
	}
	return out
}

// ServeHTTP answers one Bedrock runtime call.
func (b *Bedrock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := bedrockPath.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil {
		awsError(w, http.StatusNotFound, "UnknownOperationException", "not a Bedrock runtime operation: "+r.URL.Path)
		return
	}
	modelID, err := url.PathUnescape(m[1])
	if err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", "modelId: "+err.Error())
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 26<<20))
	if err != nil {
		awsError(w, http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	switch m[2] {
	case "converse":
		b.serveConverse(w, r, modelID, body)
	case "converse-stream":
		b.serveConverseStream(w, r, modelID, body)
	case "invoke":
		b.serveInvokeModel(w, r, modelID, body)
	default:
		// The adapter uses Converse and ConverseStream only; an operation
		// nobody calls yet fails loudly rather than half-working.
		b.count(m[2] + ".unsupported")
		b.Log.Error("bedrock operation not served by the edge", "operation", m[2], "model_id", modelID)
		awsError(w, http.StatusNotImplemented, "InternalServerException", "the local edge does not serve "+m[2]+" yet")
	}
}

// invalid answers a request that breaks a rule.
func (b *Bedrock) invalid(w http.ResponseWriter, r *http.Request, op, modelID string, err error) {
	if r.Header.Get(ExpectInvalidHeader) != "" {
		b.count(op + ".invalid_expected")
	} else {
		b.count(op + ".invalid")
		b.Log.Error("INVALID Bedrock request: the real service would refuse it", "operation", op, "model_id", modelID, "error", err.Error())
	}
	awsError(w, http.StatusBadRequest, "ValidationException", err.Error())
}

func (b *Bedrock) serveConverse(w http.ResponseWriter, r *http.Request, modelID string, body []byte) {
	start := time.Now()
	resp, ok := b.converse(w, r, "Converse", modelID, body)
	if !ok {
		return
	}
	if b.PaceConverse {
		pause := streamFirstByteDelay + time.Duration(len(models.Chunks(resp.Text, streamChunkWords)))*b.StreamChunkDelay
		select {
		case <-r.Context().Done():
			return
		case <-time.After(pause):
		}
	}
	out, err := json.Marshal(converseResponse(resp, time.Since(start)))
	if err == nil {
		err = b.Service.ValidateShape("ConverseResponse", out)
	}
	if err != nil {
		b.badResponse(w, "Converse", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", newRequestID())
	_, _ = w.Write(out)
}

// converse checks a Converse or ConverseStream request (op: the two take
// the same input and follow the same rules) and has the model answer it.
// When it is not ok, the caller has had its answer: the ValidationException,
// the model's failure, or nothing for a caller that gave up.
func (b *Bedrock) converse(w http.ResponseWriter, r *http.Request, op, modelID string, body []byte) (models.Response, bool) {
	if err := b.Service.ValidateInput(op, servicemodel.Input{URI: map[string]string{"modelId": modelID}, Body: body}); err != nil {
		b.invalid(w, r, op, modelID, err)
		return models.Response{}, false
	}
	var in converseRequest
	if err := json.Unmarshal(body, &in); err != nil {
		b.invalid(w, r, op, modelID, err)
		return models.Response{}, false
	}
	if err := checkConverse(in); err != nil {
		b.invalid(w, r, op, modelID, err)
		return models.Response{}, false
	}
	b.count(op)
	resp, err := b.Model.Converse(r.Context(), in.modelsRequest(modelID))
	switch {
	case err != nil && r.Context().Err() != nil:
		// The caller gave up (its deadline, a timeout script): nobody reads
		// the answer.
		b.count(op + ".abandoned")
	case errors.Is(err, models.ErrModel):
		b.count(op + ".model_error")
		// Bedrock's ModelErrorException (424): the model failed; the SDK
		// does not retry it, as a scripted failure must not be retried.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-ErrorType", "ModelErrorException")
		w.WriteHeader(http.StatusFailedDependency)
		_ = json.NewEncoder(w).Encode(map[string]any{"message": err.Error(), "originalStatusCode": 500, "resourceName": modelID})
	case err != nil:
		b.count(op + ".error")
		b.Log.Error("bedrock "+op+" failed", "model_id", modelID, "error", err.Error())
		awsError(w, http.StatusInternalServerError, "InternalServerException", "Internal error")
	default:
		return resp, true
	}
	return models.Response{}, false
}

// badResponse answers when the edge's own answer breaks the service model:
// a bug here, not in the caller.
func (b *Bedrock) badResponse(w http.ResponseWriter, op string, err error) {
	b.count(op + ".bad_response")
	b.Log.Error("the edge's "+op+" answer breaks the service model", "error", err.Error())
	awsError(w, http.StatusInternalServerError, "InternalServerException", err.Error())
}

// The Converse request and response, as far as the edge reads and writes
// them (the service model checks the rest).
type (
	converseRequest struct {
		Messages        []converseMessage        `json:"messages"`
		System          []struct{ Text *string } `json:"system"`
		InferenceConfig *struct {
			MaxTokens *int `json:"maxTokens"`
		} `json:"inferenceConfig"`
		ToolConfig *struct {
			Tools []struct {
				ToolSpec *struct {
					Name        string `json:"name"`
					Description string `json:"description"`
					InputSchema struct {
						JSON json.RawMessage `json:"json"`
					} `json:"inputSchema"`
				} `json:"toolSpec"`
			} `json:"tools"`
		} `json:"toolConfig"`
		RequestMetadata map[string]string `json:"requestMetadata"`
	}
	converseMessage struct {
		Role    string         `json:"role"`
		Content []contentBlock `json:"content"`
	}
	contentBlock struct {
		Text       *string        `json:"text,omitempty"`
		ToolUse    *toolUseBlock  `json:"toolUse,omitempty"`
		ToolResult *toolResultBlk `json:"toolResult,omitempty"`
	}
	toolUseBlock struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	}
	toolResultBlk struct {
		ToolUseID string `json:"toolUseId"`
		Content   []struct {
			Text *string         `json:"text,omitempty"`
			JSON json.RawMessage `json:"json,omitempty"`
		} `json:"content"`
		Status string `json:"status,omitempty"`
	}
)

// ConverseRule is a rule of the Converse API that the service model does
// not encode; a ValidationException names the one broken.
type ConverseRule string

// The Converse rules checked by hand (Bedrock user guide, "Use the
// Converse API" and "Call a tool with the Converse API").
const (
	RuleMessages    ConverseRule = "messages"     // at least one message
	RuleAlternation ConverseRule = "alternation"  // user first, then user and assistant in turn
	RuleToolResult  ConverseRule = "tool-result"  // every toolUse answered by a toolResult with its id in the next user message, and no other
	RuleToolConfig  ConverseRule = "tool-config"  // toolUse/toolResult blocks need toolConfig
	RuleInputSchema ConverseRule = "input-schema" // each tool's inputSchema.json is a JSON Schema object
	RuleToolNames   ConverseRule = "tool-names"   // tool names are unique
	RuleBlankText   ConverseRule = "blank-text"   // a text block is not blank
)

// RuleError is a broken Converse rule.
type RuleError struct {
	Rule ConverseRule
	Path string
	Msg  string
}

func (e *RuleError) Error() string { return fmt.Sprintf("%s: %s: %s", e.Path, e.Rule, e.Msg) }

func ruleErr(rule ConverseRule, path, format string, args ...any) error {
	return &RuleError{Rule: rule, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// checkConverse checks the rules the service model leaves to prose.
//
// Kept whole: the rules one after another, in the order the service model's
// prose gives them; split, they would lose that order.
func checkConverse(in converseRequest) error {
	if len(in.Messages) == 0 {
		return ruleErr(RuleMessages, "messages", "a conversation needs at least one message")
	}
	usesTools := false
	for i, msg := range in.Messages {
		path := fmt.Sprintf("messages[%d]", i)
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if msg.Role != want {
			if i == 0 {
				return ruleErr(RuleAlternation, path+".role", "the first message must be a user message, not %s", msg.Role)
			}
			return ruleErr(RuleAlternation, path+".role", "two %s messages in a row: roles must alternate user, assistant, user…", msg.Role)
		}
		var uses, results []string
		for j, c := range msg.Content {
			if c.Text != nil && strings.TrimSpace(*c.Text) == "" {
				return ruleErr(RuleBlankText, fmt.Sprintf("%s.content[%d].text", path, j), "the text field is blank")
			}
			if c.ToolUse != nil {
				if msg.Role != "assistant" {
					return ruleErr(RuleToolResult, fmt.Sprintf("%s.content[%d].toolUse", path, j), "only an assistant message may hold a toolUse")
				}
				uses = append(uses, c.ToolUse.ToolUseID)
			}
			if c.ToolResult != nil {
				if msg.Role != "user" {
					return ruleErr(RuleToolResult, fmt.Sprintf("%s.content[%d].toolResult", path, j), "only a user message may hold a toolResult")
				}
				results = append(results, c.ToolResult.ToolUseID)
			}
		}
		if len(uses)+len(results) > 0 {
			usesTools = true
		}
		if len(results) > 0 {
			var asked []string
			if i > 0 {
				for _, c := range in.Messages[i-1].Content {
					if c.ToolUse != nil {
						asked = append(asked, c.ToolUse.ToolUseID)
					}
				}
			}
			for _, id := range results {
				if !slices.Contains(asked, id) {
					return ruleErr(RuleToolResult, path, "toolResult %q answers no toolUse of the previous assistant message", id)
				}
			}
		}
		if len(uses) > 0 {
			if i+1 == len(in.Messages) {
				return ruleErr(RuleToolResult, path, "toolUse %q is not answered: no user message with its toolResult follows", uses[0])
			}
			var answered []string
			for _, c := range in.Messages[i+1].Content {
				if c.ToolResult != nil {
					answered = append(answered, c.ToolResult.ToolUseID)
				}
			}
			for _, id := range uses {
				if !slices.Contains(answered, id) {
					return ruleErr(RuleToolResult, fmt.Sprintf("messages[%d]", i+1), "toolUse %q of messages[%d] is not answered by a toolResult with its id", id, i)
				}
			}
		}
	}
	if in.ToolConfig == nil {
		if usesTools {
			return ruleErr(RuleToolConfig, "toolConfig", "the conversation has toolUse or toolResult blocks, so toolConfig must be defined")
		}
		return nil
	}
	seen := map[string]bool{}
	for i, t := range in.ToolConfig.Tools {
		if t.ToolSpec == nil {
			continue
		}
		path := fmt.Sprintf("toolConfig.tools[%d].toolSpec", i)
		if seen[t.ToolSpec.Name] {
			return ruleErr(RuleToolNames, path+".name", "tool %q is defined twice", t.ToolSpec.Name)
		}
		seen[t.ToolSpec.Name] = true
		if err := checkInputSchema(path+".inputSchema.json", t.ToolSpec.InputSchema.JSON); err != nil {
			return err
		}
	}
	return nil
}

// jsonSchemaTypes are JSON Schema's type names.
var jsonSchemaTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// checkInputSchema checks that a tool's input schema is a JSON Schema
// object: type "object", properties (if any) an object of schemas, required
// (if any) names of properties, and every nested type a JSON Schema type.
// (A maintained validator replaces this once the module has one: the tool
// schemas' own generator, google/jsonschema-go.)
func checkInputSchema(path string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return ruleErr(RuleInputSchema, path, "the tool has no input schema")
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		return ruleErr(RuleInputSchema, path, "the input schema is not a JSON object: %v", err)
	}
	if s["type"] != "object" {
		return ruleErr(RuleInputSchema, path+".type", "the top-level type must be \"object\", not %v", s["type"])
	}
	return checkSchema(path, s)
}

func checkSchema(path string, s map[string]any) error {
	switch t := s["type"].(type) {
	case nil:
	case string:
		if !slices.Contains(jsonSchemaTypes, t) {
			return ruleErr(RuleInputSchema, path+".type", "%q is not a JSON Schema type", t)
		}
	case []any:
		for _, x := range t {
			if name, ok := x.(string); !ok || !slices.Contains(jsonSchemaTypes, name) {
				return ruleErr(RuleInputSchema, path+".type", "%v is not a JSON Schema type", x)
			}
		}
	default:
		return ruleErr(RuleInputSchema, path+".type", "type must be a string or an array of strings")
	}
	var props map[string]any
	if p, ok := s["properties"]; ok {
		if props, ok = p.(map[string]any); !ok {
			return ruleErr(RuleInputSchema, path+".properties", "properties must be an object, not %T", p)
		}
		for name, sub := range props {
			subSchema, ok := sub.(map[string]any)
			if !ok {
				return ruleErr(RuleInputSchema, path+".properties."+name, "a property's schema must be an object")
			}
			if err := checkSchema(path+".properties."+name, subSchema); err != nil {
				return err
			}
		}
	}
	if r, ok := s["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return ruleErr(RuleInputSchema, path+".required", "required must be an array of property names")
		}
		for _, x := range list {
			name, ok := x.(string)
			if !ok {
				return ruleErr(RuleInputSchema, path+".required", "required must be an array of property names")
			}
			if _, ok := props[name]; !ok {
				return ruleErr(RuleInputSchema, path+".required", "required names %q, which is not a property", name)
			}
		}
	}
	if items, ok := s["items"]; ok {
		sub, ok := items.(map[string]any)
		if !ok {
			return ruleErr(RuleInputSchema, path+".items", "items must be a schema object")
		}
		if err := checkSchema(path+".items", sub); err != nil {
			return err
		}
	}
	return nil
}

// modelsRequest is the Converse request as the models port's request, for
// the scripted model: every user text a user turn, every toolResult a tool
// turn, every assistant message one assistant turn with its tool calls.
func (in converseRequest) modelsRequest(modelID string) models.Request {
	req := models.Request{ModelID: modelID, Metadata: in.RequestMetadata}
	var system []string
	for _, s := range in.System {
		if s.Text != nil {
			system = append(system, *s.Text)
		}
	}
	req.System = strings.Join(system, "\n")
	if in.InferenceConfig != nil && in.InferenceConfig.MaxTokens != nil {
		req.MaxTokens = *in.InferenceConfig.MaxTokens
	}
	if in.ToolConfig != nil {
		for _, t := range in.ToolConfig.Tools {
			if t.ToolSpec == nil {
				continue
			}
			var schema map[string]any
			_ = json.Unmarshal(t.ToolSpec.InputSchema.JSON, &schema)
			req.Tools = append(req.Tools, models.Tool{Name: t.ToolSpec.Name, Description: t.ToolSpec.Description, Schema: schema})
		}
	}
	for _, msg := range in.Messages {
		if msg.Role == "assistant" {
			turn := models.Message{Role: "assistant"}
			var text []string
			for _, c := range msg.Content {
				if c.Text != nil {
					text = append(text, *c.Text)
				}
				if c.ToolUse != nil {
					turn.ToolCalls = append(turn.ToolCalls, models.ToolCall{ID: c.ToolUse.ToolUseID, Name: c.ToolUse.Name, Input: string(c.ToolUse.Input)})
				}
			}
			turn.Content = strings.Join(text, "")
			req.Messages = append(req.Messages, turn)
			continue
		}
		for _, c := range msg.Content {
			switch {
			case c.Text != nil:
				req.Messages = append(req.Messages, models.Message{Role: "user", Content: *c.Text})
			case c.ToolResult != nil:
				var parts []string
				for _, rc := range c.ToolResult.Content {
					if rc.Text != nil {
						parts = append(parts, *rc.Text)
					} else if len(rc.JSON) > 0 {
						parts = append(parts, string(rc.JSON))
					}
				}
				req.Messages = append(req.Messages, models.Message{Role: "tool", ToolCallID: c.ToolResult.ToolUseID, Content: strings.Join(parts, "")})
			}
		}
	}
	return req
}

// converseResponse is the model's answer as Converse returns it.
func converseResponse(resp models.Response, took time.Duration) map[string]any {
	var content []map[string]any
	if resp.Text != "" || len(resp.ToolCalls) == 0 {
		content = append(content, map[string]any{"text": resp.Text})
	}
	for _, c := range resp.ToolCalls {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": toolInput(c)}})
	}
	return map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stopReason(resp),
		"usage":      map[string]any{"inputTokens": resp.InputTokens, "outputTokens": resp.OutputTokens, "totalTokens": resp.InputTokens + resp.OutputTokens},
		"metrics":    map[string]any{"latencyMs": took.Milliseconds()},
	}
}

// toolInput is a tool call's input as a JSON value: an object when the
// model gave none or gave malformed JSON.
func toolInput(c models.ToolCall) any {
	var input any = map[string]any{}
	if c.Input != "" {
		if err := json.Unmarshal([]byte(c.Input), &input); err != nil {
			input = map[string]any{}
		}
	}
	return input
}

// stopReason is why the model stopped, as Converse says it.
func stopReason(resp models.Response) string {
	switch {
	case resp.Refused:
		return "content_filtered"
	case len(resp.ToolCalls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

// serveInvokeModel answers InvokeModel: the request checked against the
// service model, then, for Titan Text Embeddings V2, its body by the
// model's parameters (embed.go). Other models are reached through
// Converse.
func (b *Bedrock) serveInvokeModel(w http.ResponseWriter, r *http.Request, modelID string, body []byte) {
	in := servicemodel.Input{URI: map[string]string{"modelId": modelID}, Body: body,
		Header: map[string]string{"Content-Type": r.Header.Get("Content-Type"), "Accept": r.Header.Get("Accept")}}
	if err := b.Service.ValidateInput("InvokeModel", in); err != nil {
		b.invalid(w, r, "InvokeModel", modelID, err)
		return
	}
	if modelID == TitanEmbedModel {
		b.serveTitan(w, r, modelID, body)
		return
	}
	b.count("InvokeModel.unsupported")
	b.Log.Error("bedrock InvokeModel for a model the edge does not serve", "model_id", modelID)
	awsError(w, http.StatusNotFound, "ResourceNotFoundException", "the local edge serves no model "+modelID+" through InvokeModel")
}
