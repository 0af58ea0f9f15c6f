package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/smithy-go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclave-ai/conclave/shared/models"
	"github.com/conclave-ai/conclave/shared/platform/settings"
	"github.com/conclave-ai/conclave/shared/platform/tracing"
)

// The Titan Text Embeddings V2 defaults.
const (
	// TitanDimensions is the vector length asked of Titan V2 (256, 512 or
	// 1024). 512 keeps, by the model card, about 99% of the 1024-dimension
	// retrieval accuracy at half the storage: a skill's vector is 2 KiB
	// stored (float32), a 25-skill agent 50 KiB, far below DynamoDB's
	// 400 KB item limit even at 1024. (settings.TitanEmbedDimensions:
	// the functions that name the embedder without calling it read it
	// there.)
	TitanDimensions = settings.TitanEmbedDimensions
	// TitanConcurrency bounds the InvokeModel calls one Embed has in
	// flight (Titan embeds one text per call). Eight keeps a cold team's
	// skills within a few hundred milliseconds without spending the
	// account's requests-per-minute quota in one burst.
	TitanConcurrency = 8
)

// ErrThrottled marks an embedding refused for the account's request rate
// or quota (ThrottlingException, ServiceQuotaExceededException) after the
// SDK's own retries: a caller may degrade (the ExpertGate scores
// lexically) rather than fail.
var ErrThrottled = errors.New("bedrock throttled the request")

// InvokeAPI is the part of the Bedrock runtime client the embedder uses.
type InvokeAPI interface {
	InvokeModel(context.Context, *bedrockruntime.InvokeModelInput, ...func(*bedrockruntime.Options)) (*bedrockruntime.InvokeModelOutput, error)
}

// TitanEmbedder embeds texts with Amazon Titan Text Embeddings V2 through
// InvokeModel (architecture decision 6b: the production embedder behind
// routing.Embedder). Each text is one call; Embed runs them with bounded
// concurrency. Vectors come back normalized ("normalize": true), so
// cosines are dot products.
//
// Calibration: routing.CalibrationFor(ID()) has no fitted entry for Titan
// and answers routing.DefaultSemanticCalibration (wordllama's floor,
// ceiling and weights). Fitting one needs Titan's vectors of the BFCL
// tuning sets (`go run ./localstack/bench/bfclbench -fit`), which needs a
// Bedrock account; none was reachable where this adapter was written, so
// with Titan the 0.6 threshold is not yet the measured probability it is
// with wordllama (docs/routing.md, "Titan").
type TitanEmbedder struct {
	// Client is the Bedrock runtime client, built once per cold start.
	Client InvokeAPI
	// ModelID is the model (settings.TitanEmbedModel).
	ModelID string
	// Dimensions is 256, 512 or 1024 (0: TitanDimensions).
	Dimensions int
	// Concurrency bounds the calls in flight (0: TitanConcurrency).
	Concurrency int
}

// TitanFromConfig is the embedder of modelID on a client built from cfg,
// as a function's builder makes it once per cold start.
func TitanFromConfig(cfg aws.Config, modelID string) *TitanEmbedder {
	return &TitanEmbedder{Client: bedrockruntime.NewFromConfig(cfg), ModelID: modelID}
}

func (t *TitanEmbedder) dims() int {
	if t.Dimensions == 0 {
		return TitanDimensions
	}
	return t.Dimensions
}

// ID names the model and the vector length ("amazon.titan-embed-text-v2:0/512"):
// vectors of different lengths are different embeddings, so the stored
// skill vectors, keyed by it, never mix them.
func (t *TitanEmbedder) ID() string { return fmt.Sprintf("%s/%d", t.ModelID, t.dims()) }

// titanRequest and titanResponse are the Titan V2 InvokeModel bodies
// (https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-titan-embed-text.html).
type titanRequest struct {
	InputText  string `json:"inputText"`
	Dimensions int    `json:"dimensions"`
	Normalize  bool   `json:"normalize"`
}

type titanResponse struct {
	Embedding           []float64 `json:"embedding"`
	InputTextTokenCount int       `json:"inputTextTokenCount"`
}

// TitanMaxRunes bounds the text one Titan call embeds: its limit is 8,192
// tokens, and a character of some scripts takes more than one.
const TitanMaxRunes = 6000

// Embed implements routing.Embedder: one vector per text, in order. An
// empty (or blank) text is a zero vector without a call (Titan refuses an
// empty inputText; routing reads a zero vector as "similar to nothing").
// Texts are clipped to TitanMaxRunes: Conclave's longest are a skill
// (about 17,000 characters at the agents' validation limits) and a query
// (8,000), below Titan V2's 50,000 characters but not always below its
// 8,192 tokens (text in other scripts takes a token or more a character);
// what routing reads of a skill is in its first few thousand characters.
//
// The first failure cancels the calls still running and is returned:
// models.ErrModel with the service's error code, and ErrThrottled too when
// the request rate or quota refused it; the context's own end as it is.
func (t *TitanEmbedder) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	switch t.dims() {
	case 256, 512, 1024:
	default:
		return nil, fmt.Errorf("%w: titan dimensions %d: want 256, 512 or 1024", models.ErrModel, t.dims())
	}
	out := make([][]float64, len(texts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := t.Concurrency
	if n <= 0 {
		n = TitanConcurrency
	}
	sem := make(chan struct{}, n)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	for i, text := range texts {
		if strings.TrimSpace(text) == "" {
			out[i] = make([]float64, t.dims())
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, err := t.embedOne(ctx, text)
			if err != nil {
				fail(err)
				return
			}
			out[i] = v
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err // the caller's context ended before every call started
	}
	return out, nil
}

// embedOne is one InvokeModel call, an embeddings span (the GenAI
// conventions: the model, the input tokens Titan counted).
func (t *TitanEmbedder) embedOne(ctx context.Context, text string) (vec []float64, err error) {
	ctx, span := tracing.Start(ctx, "embeddings "+t.ModelID, trace.SpanKindClient,
		attribute.String("gen_ai.operation.name", "embeddings"), attribute.String("gen_ai.provider.name", "aws.bedrock"),
		attribute.String("gen_ai.request.model", t.ModelID), attribute.Int("gen_ai.embeddings.dimension.count", t.dims()))
	defer func() { tracing.End(ctx, span, err) }()
	if r := []rune(text); len(r) > TitanMaxRunes {
		text = string(r[:TitanMaxRunes])
	}
	body, err := json.Marshal(titanRequest{InputText: text, Dimensions: t.dims(), Normalize: true})
	if err != nil {
		return nil, err
	}
	res, err := t.Client.InvokeModel(ctx, &bedrockruntime.InvokeModelInput{
		ModelId: aws.String(t.ModelID), Body: body,
		ContentType: aws.String("application/json"), Accept: aws.String("application/json"),
	})
	if err != nil {
		return nil, embedError(err, t.ModelID)
	}
	var r titanResponse
	if err := json.Unmarshal(res.Body, &r); err != nil {
		return nil, fmt.Errorf("%w: bedrock %s: undecodable response: %v", models.ErrModel, t.ModelID, err)
	}
	span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", r.InputTextTokenCount))
	if len(r.Embedding) != t.dims() {
		return nil, fmt.Errorf("%w: bedrock %s: %d dimensions returned, %d asked", models.ErrModel, t.ModelID, len(r.Embedding), t.dims())
	}
	return r.Embedding, nil
}

// embedHints say what a Bedrock error code means for an embedding call,
// so a log line is actionable without the service documentation.
var embedHints = map[string]string{
	"ThrottlingException":           "the account's requests per minute for the model are used up (the SDK retried)",
	"ServiceQuotaExceededException": "the account's quota for the model is used up",
	"AccessDeniedException":         "the role may not invoke the model, or model access is not enabled in this region",
	"ValidationException":           "the request was refused (input too long, or dimensions not 256, 512 or 1024)",
	"ResourceNotFoundException":     "the model is not available in this region",
	"ModelTimeoutException":         "the model took too long",
	"ServiceUnavailableException":   "Bedrock is unavailable",
	"InternalServerException":       "Bedrock failed",
}

// embedError maps an InvokeModel failure to models.ErrModel (and
// ErrThrottled for rate and quota refusals), naming the service's error
// code, the model and what the code means; the context's end stays as it
// is, so a caller can tell its own deadline.
func embedError(err error, modelID string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return fmt.Errorf("%w: bedrock %s: %v", models.ErrModel, modelID, err)
	}
	code := api.ErrorCode()
	msg := fmt.Sprintf("bedrock %s %s", modelID, code)
	if h, ok := embedHints[code]; ok {
		msg += " (" + h + ")"
	}
	msg += ": " + api.ErrorMessage()
	if code == "ThrottlingException" || code == "ServiceQuotaExceededException" {
		return fmt.Errorf("%w: %w: %s", models.ErrModel, ErrThrottled, msg)
	}
	return fmt.Errorf("%w: %s", models.ErrModel, msg)
}
