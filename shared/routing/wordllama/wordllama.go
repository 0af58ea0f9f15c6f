// Package wordllama evaluates the WordLlama l2_supercat static embedding
// model (256 dimensions) in Go, for routing.Embedder: a text's vector is the
// average of its tokens' rows of a 32,000 × 256 table, L2-normalized. What
// the Python package wordllama 0.4.0.post1 computes with
// embed(texts, norm=True), to within float rounding; testdata/reference.json
// holds its vectors and token ids, which the tests compare.
//
// The two model files are not in the repository (16 MB): `make wordllama`
// fetches them, pinned by sha256, into .local/wordllama; Dir says where a
// program finds them.
package wordllama

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/conclave-ai/conclave/shared/platform/bundled"
)

const (
	// ModelID names the model and its dimension. Stored vectors are keyed
	// by it, so that vectors of another model (or dimension) are never
	// compared with these.
	ModelID = "wordllama-l2_supercat-256"
	// Version is the wordllama package whose wheel the files come from
	// (pinned with their sha256 in localstack/wordllama.sh).
	Version = "0.4.0.post1"
	// WeightsFile is the embedding table's file name in the model directory.
	WeightsFile = "l2_supercat_256.safetensors"
	// TokenizerFile is the tokenizer configuration's file name in the model
	// directory.
	TokenizerFile = "l2_supercat_tokenizer_config.json"
	// DirEnv names the environment variable that overrides where Dir looks.
	DirEnv = "CONCLAVE_WORDLLAMA_DIR"
)

// tensorName is the table's name in the safetensors file.
const tensorName = "embedding.weight"

// Model is a loaded WordLlama model. It is read-only after Load, so one
// Model serves concurrent calls.
type Model struct {
	tok *tokenizer
	// table is rows × dim values, row-major, widened from half precision
	// once at load (32 MB): a query's rows are then added without a
	// conversion or a lookup each.
	table []float32
	rows  int
	dim   int
	// last is the text Embed embedded last when it embedded one (a
	// query), and its tokens: the gate embeds a message and then reads its
	// tokens (Tokens) for the same message.
	last atomic.Pointer[encoded]
}

// encoded is a text and its token ids (read only).
type encoded struct {
	text string
	ids  []int32
}

// Load reads the model from dir (WeightsFile and TokenizerFile). It fails
// with an error naming the file for a file that is missing, truncated, or
// asks for a tokenizer feature this port does not implement.
func Load(dir string) (*Model, error) {
	table, rows, dim, err := readTable(filepath.Join(dir, WeightsFile), tensorName)
	if err != nil {
		return nil, loadError(err)
	}
	tok, err := loadTokenizer(filepath.Join(dir, TokenizerFile))
	if err != nil {
		return nil, loadError(err)
	}
	halvesOnce.Do(fillHalves)
	wide := make([]float32, len(table))
	for i, h := range table {
		wide[i] = halves[h]
	}
	return &Model{tok: tok, table: wide, rows: rows, dim: dim}, nil
}

func loadError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("wordllama: %w (run `make wordllama`)", err)
	}
	return fmt.Errorf("wordllama: %w", err)
}

// ID is ModelID: routing.Embedder names its model with it, to key stored
// skill vectors and pick the model's calibration.
func (m *Model) ID() string { return ModelID }

// Dim is the length of the vectors Embed returns (256).
func (m *Model) Dim() int { return m.dim }

// Embed returns one unit-length vector of Dim values per text. A text with
// no token (only the empty string) gets the zero vector, where the Python
// package returns NaN; whitespace alone has tokens ("▁▁") and a vector.
// The only error is ctx's, checked between texts.
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	var ids []int32
	w := &word{}
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ids = m.tok.encode(text, ids[:0], w)
		out[i] = m.pool(ids)
	}
	if len(texts) == 1 {
		m.last.Store(&encoded{text: texts[0], ids: m.clip(ids, 0)})
	}
	return out, nil
}

// Tokens appends the ids of text's tokens to ids, clipped into the table
// as pool clips them: Embed's vector of text is the sum of their rows
// (Row) scaled to unit length. With them routing sums a classifier's
// dense logits over a message's tokens (routing.TokenEmbedder) instead of
// multiplying its weights by the whole vector.
func (m *Model) Tokens(text string, ids []int32) []int32 {
	if e := m.last.Load(); e != nil && e.text == text {
		return append(ids, e.ids...) // the query Embed just embedded
	}
	start := len(ids)
	return m.clip(m.tok.encode(text, ids, &word{}), start)
}

// clip clips ids[start:] into the table as pool does (np.clip).
func (m *Model) clip(ids []int32, start int) []int32 {
	for i := start; i < len(ids); i++ {
		ids[i] = int32(min(max(int(ids[i]), 0), m.rows-1))
	}
	return ids
}

// Row is token id's row of the table (Dim values; read only).
func (m *Model) Row(id int32) []float32 {
	r := int(id) * m.dim
	return m.table[r : r+m.dim : r+m.dim]
}

// Vocabulary is how many rows the table has: every id Tokens returns is
// below it.
func (m *Model) Vocabulary() int { return m.rows }

// pool sums the rows of ids and scales the sum to unit length. The Python
// package divides by the token count first; normalizing cancels that.
// The sum is float32, as numpy's.
func (m *Model) pool(ids []int32) []float64 {
	// The message's rows (on the stack up to 64 tokens), then summed a
	// block of eight columns at a time: each value is still the float32
	// sum of its column over the tokens in their order, as routing's
	// tokenNorm sums it (the same bits as adding row after row), with the
	// block's eight sums in registers instead of read and written back
	// once a token (the gate embeds every message).
	var stack [64][]float32
	rows := stack[:0]
	for _, id := range ids {
		// Clipped into the table as the package does (np.clip); every id
		// of this vocabulary is in it.
		row := min(max(int(id), 0), m.rows-1) * m.dim
		rows = append(rows, m.table[row:row+m.dim:row+m.dim])
	}
	v := make([]float64, m.dim)
	j := 0
	for ; j+8 <= len(v); j += 8 {
		var s0, s1, s2, s3, s4, s5, s6, s7 float32
		for _, r := range rows {
			r8 := r[j : j+8 : j+8]
			s0 += r8[0]
			s1 += r8[1]
			s2 += r8[2]
			s3 += r8[3]
			s4 += r8[4]
			s5 += r8[5]
			s6 += r8[6]
			s7 += r8[7]
		}
		v8 := v[j : j+8 : j+8]
		v8[0], v8[1], v8[2], v8[3] = float64(s0), float64(s1), float64(s2), float64(s3)
		v8[4], v8[5], v8[6], v8[7] = float64(s4), float64(s5), float64(s6), float64(s7)
	}
	for ; j < len(v); j++ {
		var s float32
		for _, r := range rows {
			s += r[j]
		}
		v[j] = float64(s)
	}
	var sum float64
	for _, x := range v {
		sum += x * x
	}
	if sum == 0 {
		return v
	}
	norm := math.Sqrt(sum)
	for j := range v {
		v[j] /= norm
	}
	return v
}

// halves is every half-precision value as float32: the table is widened
// through it at load.
var (
	halves     [1 << 16]float32
	halvesOnce sync.Once
)

func fillHalves() {
	for h := range halves {
		halves[h] = halfToFloat32(uint16(h))
	}
}

// Dir returns the directory that holds the model files: $CONCLAVE_WORDLLAMA_DIR
// when set; else "wordllama" beside the running executable (how a Lambda
// function is packaged: /var/task/wordllama); else .local/wordllama of the
// repository, found by walking up from the working directory to go.mod
// (tests and `go run`). The error, when none holds both files, says to run
// `make wordllama`.
func Dir() (string, error) {
	d, err := bundled.Dir(DirEnv, "wordllama", "wordllama", "wordllama", hasFiles)
	if err != nil {
		return "", fmt.Errorf("%w (model files %s and %s)", err, WeightsFile, TokenizerFile)
	}
	return d, nil
}

func hasFiles(dir string) bool {
	for _, name := range []string{WeightsFile, TokenizerFile} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}
