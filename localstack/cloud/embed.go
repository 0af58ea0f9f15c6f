package cloud

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/conclave-ai/conclave/shared/models"
)

// TitanEmbedModel is the embedding model the edge answers InvokeModel for:
// Amazon Titan Text Embeddings V2 (settings.TitanEmbedModel, the
// production embedder of ROUTING_EMBEDDER=titan).
const TitanEmbedModel = "amazon.titan-embed-text-v2:0"

// TextEmbedder embeds texts into unit vectors (wordllama.Model does).
type TextEmbedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

// titanBody is Titan V2's InvokeModel request body. Titan refuses a key it
// does not know ("extraneous key"), so the edge does too.
type titanBody struct {
	InputText      *string  `json:"inputText"`
	Dimensions     *int     `json:"dimensions"`
	Normalize      *bool    `json:"normalize"`
	EmbeddingTypes []string `json:"embeddingTypes"`
}

// checkTitan checks a Titan V2 body by the model's documented parameters
// (Bedrock user guide, "Amazon Titan Embeddings Text").
func checkTitan(contentType string, body []byte) (titanBody, error) {
	var in titanBody
	if ct := strings.TrimSpace(strings.Split(contentType, ";")[0]); ct != "application/json" {
		return in, fmt.Errorf("contentType: titan: the body must be application/json, not %q", contentType)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return in, fmt.Errorf("body: titan: Malformed input request: %v", err)
	}
	switch {
	case in.InputText == nil:
		return in, fmt.Errorf("body.inputText: titan: required key [inputText] not found")
	case len(*in.InputText) == 0 || len([]rune(*in.InputText)) > 50000:
		return in, fmt.Errorf("body.inputText: titan: length must be between 1 and 50000 characters")
	case in.Dimensions != nil && *in.Dimensions != 256 && *in.Dimensions != 512 && *in.Dimensions != 1024:
		return in, fmt.Errorf("body.dimensions: titan: %d is not one of [256, 512, 1024]", *in.Dimensions)
	}
	for _, t := range in.EmbeddingTypes {
		if t != "float" && t != "binary" {
			return in, fmt.Errorf("body.embeddingTypes: titan: %q is not one of [float, binary]", t)
		}
	}
	return in, nil
}

// serveTitan answers a valid Titan V2 InvokeModel with a deterministic
// vector: the wordllama embedding of the text (256 values, unit length),
// zero-padded to the dimensions asked (still unit length) or cut to them
// and normalized again.
func (b *Bedrock) serveTitan(w http.ResponseWriter, r *http.Request, modelID string, body []byte) {
	in, err := checkTitan(r.Header.Get("Content-Type"), body)
	if err != nil {
		b.invalid(w, r, "InvokeModel", modelID, err)
		return
	}
	if b.Embedder == nil {
		b.count("InvokeModel.error")
		awsError(w, http.StatusInternalServerError, "InternalServerException", "the local edge has no embedder")
		return
	}
	emb, err := b.Embedder()
	var vecs [][]float64
	if err == nil {
		vecs, err = emb.Embed(r.Context(), []string{*in.InputText})
	}
	if err != nil {
		b.count("InvokeModel.error")
		b.Log.Error("titan stand-in failed", "error", err.Error())
		awsError(w, http.StatusInternalServerError, "InternalServerException", "Internal error")
		return
	}
	dims := 1024
	if in.Dimensions != nil {
		dims = *in.Dimensions
	}
	vec := make([]float64, dims)
	copy(vec, vecs[0])
	if len(vecs[0]) > dims {
		var norm float64
		for _, x := range vec {
			norm += x * x
		}
		if norm = math.Sqrt(norm); norm > 0 {
			for i := range vec {
				vec[i] /= norm
			}
		}
	}
	b.count("InvokeModel")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", fmt.Sprint(models.EstimateTokens(*in.InputText)))
	_ = json.NewEncoder(w).Encode(map[string]any{"embedding": vec, "inputTextTokenCount": models.EstimateTokens(*in.InputText)})
}
