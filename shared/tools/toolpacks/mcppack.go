package toolpacks

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/conclave-ai/conclave/shared/platform/apperr"
	"github.com/conclave-ai/conclave/shared/platform/clip"
	"github.com/conclave-ai/conclave/shared/platform/clock"
	"github.com/conclave-ai/conclave/shared/platform/ids"
)

// A team registers an external MCP server as a pack (an MCP pack, seed 003
// phase 8's "external tools"): PUT /v1/tool-packs/{name} with the server's
// streamable-HTTP URL and, optionally, a credential. The registry connects
// once, reads the server's tools and their schemas (tools/list) and keeps
// that list on the pack: what a model is offered is what the server
// answered when the pack was last put (a PUT again refreshes it), so no
// turn waits on a tools/list. A call goes to the server (tools/call) with
// the credential, which lives in AWS Secrets Manager only: the table holds
// the secret's name, and no route ever shows the credential again.

// The MCP packs' limits.
const (
	// MaxMCPPacks bounds a team's MCP packs (a condition of the write
	// that adds one: concurrent registrations cannot pass it).
	MaxMCPPacks = 10
	// MaxMCPTools bounds the tools a pack keeps: a server listing more
	// is refused (a model offered hundreds of tools chooses badly).
	MaxMCPTools = 32
	// MaxSchemaBytes bounds one tool's input schema, as JSON;
	// MaxToolsBytes all of a pack's schemas and descriptions (the pack is
	// one item, and every step given it sends them to the model).
	MaxSchemaBytes = 16 * 1024
	MaxToolsBytes  = 128 * 1024
	// MaxResultBytes is the most of a call's result the model reads; the
	// rest is cut and the cut said.
	MaxResultBytes = 16 * 1024
	// MaxResponseBytes bounds what is read of any one HTTP response of
	// the server (the adapter stops reading past it and the call fails).
	MaxResponseBytes = 1 << 20
	// CallTimeout bounds one tools/call, connection included; ListTimeout
	// bounds the connection and tools/list of a PUT.
	CallTimeout = 20 * time.Second
	ListTimeout = 10 * time.Second
	// MaxCredential bounds a credential, in bytes.
	MaxCredential = 4096
	// ModelNameMax is the longest tool name Bedrock's Converse accepts
	// (and its alphabet, ModelNamePattern).
	ModelNameMax = 64
	// DefaultCredentialHeader carries the credential as "Bearer <it>";
	// any other header carries it as is.
	DefaultCredentialHeader = "Authorization"
)

// MCPPackNamePattern is what an MCP pack's name is made of: short, so that
// "{pack}__{tool}" leaves a tool most of Bedrock's 64 characters.
const MCPPackNamePattern = `^[a-z][a-z0-9-]{1,22}[a-z0-9]$`

// ServerToolNamePattern is what a server's tool name may be made of (the
// MCP specification's tool-name alphabet).
const ServerToolNamePattern = `^[A-Za-z0-9_./-]{1,128}$`

// ModelNamePattern is the alphabet of a tool name a model is given.
const ModelNamePattern = `^[a-zA-Z0-9_-]{1,64}$`

var (
	mcpPackName    = regexp.MustCompile(MCPPackNamePattern)
	serverToolName = regexp.MustCompile(ServerToolNamePattern)
	fenceTag       = regexp.MustCompile(`(?i)<(\s*/?\s*tool_output)`)
	modelName      = regexp.MustCompile(ModelNamePattern)
	headerName     = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
)

// MCPPack is a team's MCP pack.
type MCPPack struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// URL is the server's streamable-HTTP endpoint.
	URL string `json:"url"`
	// CredentialHeader is the header the credential is sent in.
	CredentialHeader string `json:"credential_header,omitempty"`
	// HasCredential says whether a credential is kept (never what it is).
	HasCredential bool `json:"has_credential"`
	// SecretID is the Secrets Manager secret that keeps the credential;
	// never shown.
	SecretID string `json:"-"`
	// Tools are the server's tools as tools/list answered at ListedAt.
	Tools     []MCPTool `json:"tools"`
	ListedAt  time.Time `json:"listed_at"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	UpdatedBy string    `json:"updated_by,omitempty"`
}

// MCPTool is one tool of an MCP pack.
type MCPTool struct {
	// Name is the server's name of the tool (what tools/call is sent).
	Name string `json:"name"`
	// ModelName is what a model calls it (ModelToolName).
	ModelName   string          `json:"model_name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Tool returns the pack's tool a model calls modelName.
func (r MCPPack) Tool(modelName string) (MCPTool, bool) {
	i := slices.IndexFunc(r.Tools, func(t MCPTool) bool { return t.ModelName == modelName })
	if i < 0 {
		return MCPTool{}, false
	}
	return r.Tools[i], true
}

// Conn is how to reach a server: its URL and the credential's header.
type Conn struct {
	URL        string
	Header     string
	Credential string
}

// Headers are the request headers the credential adds (none without
// one), by name. (A map, not net/http's Header: the domain links no
// HTTP client; the adapter sets them.)
func (c Conn) Headers() map[string]string {
	if c.Credential == "" {
		return map[string]string{}
	}
	if c.Header == "" || strings.EqualFold(c.Header, DefaultCredentialHeader) {
		return map[string]string{DefaultCredentialHeader: "Bearer " + c.Credential}
	}
	return map[string]string{c.Header: c.Credential}
}

// CallResult is what a tools/call answered, as text.
type CallResult struct {
	Text string
	// IsError: the server says the tool failed (its text says why).
	IsError bool
}

// MCP speaks to MCP servers (shared/tools/mcppack, the official Go SDK).
// Both calls connect under the network policy; the context bounds them.
type MCP interface {
	// ListTools returns the server's tools (ModelName unset).
	ListTools(ctx context.Context, c Conn) ([]MCPTool, error)
	// CallTool calls tool with args (a JSON object).
	CallTool(ctx context.Context, c Conn, tool string, args json.RawMessage) (CallResult, error)
}

// MCPPackStore keeps the MCP packs (shared/store/mcppackstore,
// shared/testkit/memstore).
type MCPPackStore interface {
	// CreateMCPPack stores a new pack: ECONFLICT when one of that name
	// exists, ELIMIT (MCPPackLimit) when the team has MaxMCPPacks.
	CreateMCPPack(ctx context.Context, teamID string, r MCPPack) error
	// ReplaceMCPPack replaces an existing pack: ENOTFOUND when there is
	// none (deleted meanwhile).
	ReplaceMCPPack(ctx context.Context, teamID string, r MCPPack) error
	// GetMCPPack returns ENOTFOUND for an unknown pack.
	GetMCPPack(ctx context.Context, teamID, name string) (MCPPack, error)
	ListMCPPacks(ctx context.Context, teamID string) ([]MCPPack, error)
	// DeleteMCPPack returns ENOTFOUND for an unknown pack.
	DeleteMCPPack(ctx context.Context, teamID, name string) error
}

// Secrets keeps credentials (shared/tools/secretstore: Secrets Manager).
type Secrets interface {
	// PutSecret creates or overwrites the secret id with value.
	PutSecret(ctx context.Context, id, value string) error
	GetSecret(ctx context.Context, id string) (string, error)
	// DeleteSecret deletes id at once; a missing one is no error.
	DeleteSecret(ctx context.Context, id string) error
}

// Reasons of the MCP packs' refusals.
const (
	ReasonPackLimit   = "MCPPackLimit"
	ReasonUnreachable = "MCPServerUnreachable"
	ReasonTooManyTool = "MCPTooManyTools"
	ReasonURLRefused  = "MCPURLRefused"
)

// MCPPackInput is the body of PUT /v1/tool-packs/{name}.
type MCPPackInput struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	// Credential is kept in Secrets Manager. Left out, a replaced pack
	// keeps the one it has; "" removes it.
	Credential       *string `json:"credential,omitempty"`
	CredentialHeader string  `json:"credential_header,omitempty"`
}

// Registry is the MCP packs' service: registration, listing, and the
// calls a task makes.
type Registry struct {
	Store   MCPPackStore
	Secrets Secrets
	MCP     MCP
	// SecretPrefix names the stage's secrets: a credential is kept in
	// SecretPrefix + team + "/" + pack (the functions may read only
	// that prefix).
	SecretPrefix string
	// Policy is the network policy the URL is checked against (the
	// adapter checks each connection's address against it too).
	Policy NetPolicy
	Now    clock.Func
}

// ValidMCPPackName reports whether name may name an MCP pack: the pattern,
// and not a built-in pack's.
func ValidMCPPackName(name string) bool { return mcpPackName.MatchString(name) && !Known(name) }

// secretID names a new secret for the pack's credential: every credential
// written gets a secret of its own (a random suffix), so two requests on
// one pack never write, read or delete each other's, and a secret being
// deleted (Secrets Manager finishes a forced deletion later) never
// blocks the next one.
func (r *Registry) secretID(teamID, name string) string {
	return r.SecretPrefix + teamID + "/" + name + "/" + ids.New("cred")
}

// Put registers or replaces the MCP pack name: the URL is checked, the
// credential kept, the server listed, and the pack stored. Returns
// EINVALID (name, url, description, credential, credential_header),
// EREJECTED (MCPURLRefused, the network policy), EREJECTED naming url
// (MCPServerUnreachable: the server could not be listed; nothing is
// stored), EREJECTED (MCPTooManyTools), ELIMIT (MCPPackLimit). created
// says whether the pack is new.
func (r *Registry) Put(ctx context.Context, teamID, by, name string, in MCPPackInput) (out MCPPack, created bool, err error) {
	if err := r.checkPut(name, in); err != nil {
		return MCPPack{}, false, err
	}
	old, err := r.Store.GetMCPPack(ctx, teamID, name)
	exists := err == nil
	if err != nil && !apperr.Is(err, apperr.ENOTFOUND) {
		return MCPPack{}, false, err
	}
	if !exists {
		// A new pack: refused early when the team is at its cap (the
		// store's condition decides under concurrency).
		all, err := r.Store.ListMCPPacks(ctx, teamID)
		if err != nil {
			return MCPPack{}, false, err
		}
		if len(all) >= MaxMCPPacks {
			return MCPPack{}, false, limitErr()
		}
	}
	conn, err := r.conn(ctx, in, old, exists)
	if err != nil {
		return MCPPack{}, false, err
	}
	tools, err := r.list(ctx, name, conn)
	if err != nil {
		return MCPPack{}, false, err
	}
	now := r.Now.UTC()
	out = MCPPack{Name: name, Description: in.Description, URL: in.URL, Tools: tools, ListedAt: now, CreatedAt: now, UpdatedAt: now, UpdatedBy: by}
	if out.Description == "" {
		out.Description = "Tools of the MCP server at " + hostOf(in.URL) + "."
	}
	if exists {
		out.CreatedAt = old.CreatedAt
	}
	written := ""
	if conn.Credential != "" {
		out.HasCredential, out.CredentialHeader = true, cmp.Or(conn.Header, DefaultCredentialHeader)
		if in.Credential == nil {
			out.SecretID = old.SecretID // kept as it is
		} else {
			out.SecretID = r.secretID(teamID, name)
			if err := r.Secrets.PutSecret(ctx, out.SecretID, conn.Credential); err != nil {
				return MCPPack{}, false, err
			}
			written = out.SecretID
		}
	}
	if err := r.store(ctx, teamID, out, old, exists, written); err != nil {
		return MCPPack{}, false, err
	}
	return out, !exists, nil
}

// checkPut checks what a PUT can be refused for before any read.
func (r *Registry) checkPut(name string, in MCPPackInput) error {
	if !ValidMCPPackName(name) {
		if Known(name) {
			return apperr.New(apperr.ECONFLICT, "%q is a built-in tool pack", name)
		}
		return apperr.Invalid("name", "an MCP pack's name must match %s", MCPPackNamePattern)
	}
	if err := validateMCPPackInput(in); err != nil {
		return err
	}
	return r.Policy.CheckURL(in.URL)
}

// conn is how a PUT reaches the server: the credential given, or the one
// the pack keeps (read from Secrets Manager) when none is given.
func (r *Registry) conn(ctx context.Context, in MCPPackInput, old MCPPack, exists bool) (Conn, error) {
	conn := Conn{URL: in.URL, Header: in.CredentialHeader}
	switch {
	case in.Credential != nil:
		conn.Credential = *in.Credential
	case exists && old.HasCredential:
		if origin(in.URL) != origin(old.URL) {
			// A kept credential goes only where it was given for: a
			// pack moved to another server is given its credential again.
			return Conn{}, apperr.Invalid("credential", "the url's scheme, host or port changed: give the credential again (a kept credential is sent only to the server it was given for)")
		}
		cred, err := r.Secrets.GetSecret(ctx, old.SecretID)
		if err != nil {
			return Conn{}, err
		}
		conn.Credential, conn.Header = cred, cmp.Or(conn.Header, old.CredentialHeader)
	}
	return conn, nil
}

// list reads the server's tools before anything is stored: a pack that
// cannot be reached is refused, not kept half-made.
func (r *Registry) list(ctx context.Context, name string, conn Conn) ([]MCPTool, error) {
	lctx, cancel := context.WithTimeout(ctx, ListTimeout)
	defer cancel()
	listed, err := r.MCP.ListTools(lctx, conn)
	if err != nil {
		if e, ok := apperr.As(err); ok && e.Code == apperr.EREJECTED {
			return nil, err
		}
		// The caller's input is at fault (a URL that does not answer as
		// an MCP server, or a credential it refuses), not this service: a
		// 422 naming url, as the contract fuzzer argued (issue 43), where
		// it was a 502.
		e := apperr.Wrap(apperr.EREJECTED, err, "the MCP server at %s could not be listed: the url must answer tools/list as an MCP server over streamable HTTP (with the credential, if it needs one)", redact(conn.URL)).WithReason(ReasonUnreachable)
		e.Field = "url"
		return nil, e
	}
	return modelTools(name, listed)
}

// store writes the pack, then deletes the secret nothing names any more:
// the one this request wrote when the pack could not be stored (a racing
// create took the name or the last place, the pack was deleted meanwhile),
// the old one once the pack names another or none. Best effort: nothing
// reads a secret no pack names.
func (r *Registry) store(ctx context.Context, teamID string, out, old MCPPack, exists bool, written string) error {
	var err error
	if exists {
		err = r.Store.ReplaceMCPPack(ctx, teamID, out)
	} else {
		err = r.Store.CreateMCPPack(ctx, teamID, out)
	}
	switch {
	case err != nil && written != "":
		_ = r.Secrets.DeleteSecret(ctx, written)
	case err == nil && exists && old.HasCredential && old.SecretID != out.SecretID:
		_ = r.Secrets.DeleteSecret(ctx, old.SecretID)
	}
	return err
}

// origin is a URL's scheme, host and port.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// redact is a URL without its query and user info, for messages (a
// token in a query string stays out of errors and prompts).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(the pack's url)"
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}

func limitErr() error {
	return apperr.New(apperr.ELIMIT, "a team has at most %d MCP packs", MaxMCPPacks).WithReason(ReasonPackLimit).
		WithDetail("limit", MaxMCPPacks)
}

// LimitError is the refusal of a pack past MaxMCPPacks (stores return
// it when their condition fails).
func LimitError() error { return limitErr() }

func validateMCPPackInput(in MCPPackInput) error {
	if strings.TrimSpace(in.URL) == "" {
		return apperr.Invalid("url", "url is required")
	}
	if len(in.URL) > 2048 {
		return apperr.Invalid("url", "url is longer than 2048 characters")
	}
	if utf8.RuneCountInString(in.Description) > 500 {
		return apperr.Invalid("description", "description is longer than 500 characters")
	}
	if in.Credential != nil && len(*in.Credential) > MaxCredential {
		return apperr.Invalid("credential", "credential is longer than %d bytes", MaxCredential)
	}
	if in.Credential != nil && strings.ContainsAny(*in.Credential, "\r\n\x00") {
		return apperr.Invalid("credential", "credential must be one line")
	}
	if in.CredentialHeader != "" {
		h := strings.ToLower(in.CredentialHeader)
		if !headerName.MatchString(in.CredentialHeader) || h == "host" || h == "cookie" || strings.HasPrefix(h, "content-") ||
			strings.HasPrefix(h, "mcp-") || h == "accept" || h == "connection" || h == "transfer-encoding" {
			return apperr.Invalid("credential_header", "credential_header must be a header name other than Host, Cookie, Accept, Connection, Transfer-Encoding, Content-* and Mcp-*")
		}
	}
	return nil
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

// modelTools names the listed tools for models and checks them: at most
// MaxMCPTools, each with a name, an object schema of at most
// MaxSchemaBytes, and names that stay distinct once named for models.
func modelTools(pack string, listed []MCPTool) ([]MCPTool, error) {
	if len(listed) > MaxMCPTools {
		return nil, apperr.New(apperr.EREJECTED, "the MCP server lists %d tools; a pack holds at most %d", len(listed), MaxMCPTools).
			WithReason(ReasonTooManyTool)
	}
	out := make([]MCPTool, 0, len(listed))
	seen := map[string]bool{}
	total := 0
	for _, t := range listed {
		if !serverToolName.MatchString(t.Name) {
			// The name is shown to the model (in the result's fence) and
			// sent back to the server: the MCP spec's alphabet only.
			return nil, apperr.New(apperr.EREJECTED, "the MCP server lists a tool whose name is not 1 to 128 characters of %s", ServerToolNamePattern)
		}
		schema := t.InputSchema
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		if len(schema) > MaxSchemaBytes {
			return nil, apperr.New(apperr.EREJECTED, "the input schema of MCP tool %q is larger than %d bytes", t.Name, MaxSchemaBytes)
		}
		var obj map[string]any
		if err := json.Unmarshal(schema, &obj); err != nil || (obj["type"] != nil && obj["type"] != "object") {
			return nil, apperr.New(apperr.EREJECTED, "the input schema of MCP tool %q is not a JSON Schema of an object", t.Name)
		}
		if obj["type"] == nil {
			// A model provider wants an object schema to say so (Bedrock
			// refuses the whole request otherwise).
			obj["type"] = "object"
			schema, _ = json.Marshal(obj)
		}
		// Every call is checked against the schema before it is sent: a
		// schema that cannot be checked (a remote $ref, a malformed
		// keyword) makes a tool that could never be called.
		var js jsonschema.Schema
		if err := json.Unmarshal(schema, &js); err != nil {
			return nil, apperr.New(apperr.EREJECTED, "the input schema of MCP tool %q is not a JSON Schema: %v", t.Name, err)
		}
		if _, err := js.Resolve(nil); err != nil {
			return nil, apperr.New(apperr.EREJECTED, "the input schema of MCP tool %q cannot be checked: %v", t.Name, err)
		}
		t.ModelName = ModelToolName(pack, t.Name)
		if seen[t.ModelName] {
			return nil, apperr.New(apperr.EREJECTED, "the MCP server lists tool %q twice, or two tools whose model names collide", t.Name)
		}
		if total += len(schema) + len(t.Description); total > MaxToolsBytes {
			return nil, apperr.New(apperr.EREJECTED, "the MCP server's tools' schemas and descriptions are larger than %d bytes in all", MaxToolsBytes).
				WithReason(ReasonTooManyTool)
		}
		seen[t.ModelName] = true
		t.InputSchema = schema
		t.Description = clip.Prefix(t.Description, 1000)
		out = append(out, t)
	}
	return out, nil
}

// Get returns the team's MCP pack name. Returns ENOTFOUND.
func (r *Registry) Get(ctx context.Context, teamID, name string) (MCPPack, error) {
	if !mcpPackName.MatchString(name) {
		return MCPPack{}, apperr.NotFound("tool pack", name)
	}
	return r.Store.GetMCPPack(ctx, teamID, name)
}

// List returns the team's MCP packs, by name.
func (r *Registry) List(ctx context.Context, teamID string) ([]MCPPack, error) {
	out, err := r.Store.ListMCPPacks(ctx, teamID)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b MCPPack) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Delete removes the pack and its credential. Tasks that named it lose
// its tools from their next step (a pack is read when a step starts).
// Returns ENOTFOUND; a built-in pack is ECONFLICT.
func (r *Registry) Delete(ctx context.Context, teamID, name string) error {
	if Known(name) {
		return apperr.New(apperr.ECONFLICT, "%q is a built-in tool pack", name)
	}
	old, err := r.Get(ctx, teamID, name)
	if err != nil {
		return err
	}
	if err := r.Store.DeleteMCPPack(ctx, teamID, name); err != nil {
		return err
	}
	if old.HasCredential {
		_ = r.Secrets.DeleteSecret(ctx, old.SecretID)
	}
	return nil
}

// Exists reports whether name is a pack the team may name: a built-in
// one or one of its MCP packs.
func (r *Registry) Exists(ctx context.Context, teamID, name string) (bool, error) {
	if Known(name) {
		return true, nil
	}
	if r == nil || !mcpPackName.MatchString(name) {
		return false, nil
	}
	_, err := r.Store.GetMCPPack(ctx, teamID, name)
	if apperr.Is(err, apperr.ENOTFOUND) {
		return false, nil
	}
	return err == nil, err
}

// Call calls the pack's tool a model named modelName with args (already
// valid against its schema), within CallTimeout, and returns what the
// model reads: the result, cut at MaxResultBytes, fenced as untrusted
// data (UntrustedResult). A failure is text too: the model reads it and
// the task goes on.
func (r *Registry) Call(ctx context.Context, teamID string, pack MCPPack, tool MCPTool, args json.RawMessage) string {
	conn := Conn{URL: pack.URL, Header: pack.CredentialHeader}
	if pack.HasCredential {
		cred, err := r.Secrets.GetSecret(ctx, pack.SecretID)
		if err != nil {
			return fmt.Sprintf("error: the credential of tool pack %s could not be read", pack.Name)
		}
		conn.Credential = cred
	}
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	res, err := r.MCP.CallTool(cctx, conn, tool.Name, args)
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return fmt.Sprintf("error: the MCP server of tool pack %s did not answer within %s", pack.Name, CallTimeout)
		}
		// The error may carry the server's own words (a JSON-RPC error,
		// an HTTP body): fenced like a result, without the URL's query.
		msg := strings.ReplaceAll(err.Error(), pack.URL, redact(pack.URL))
		return UntrustedResult(pack.Name, tool.Name, CallResult{Text: "the call failed: " + clip.Prefix(msg, 300), IsError: true})
	}
	return UntrustedResult(pack.Name, tool.Name, res)
}
