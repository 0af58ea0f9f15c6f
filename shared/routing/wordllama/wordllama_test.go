package wordllama_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/routing"
	"github.com/conclave-ai/conclave/shared/routing/wordllama"
)

var _ routing.Embedder = (*wordllama.Model)(nil)

// loaded is the real model, loaded once per test binary.
var loaded = sync.OnceValues(func() (*wordllama.Model, error) {
	dir, err := wordllama.Dir()
	if err != nil {
		return nil, err
	}
	return wordllama.Load(dir)
})

// mustLoad returns the real model. Without the files it fails, not skips:
// a machine that has not run `make wordllama` does not test the port, and
// Dir's error says so.
func mustLoad(tb testing.TB) *wordllama.Model {
	tb.Helper()
	m, err := loaded()
	require.NoError(tb, err)
	return m
}

// reference is testdata/reference.json, written by testdata/reference.py.
type reference struct {
	Version   string            `json:"version"`
	Files     map[string]string `json:"files"`
	Sentences []struct {
		Text   string    `json:"text"`
		IDs    []int32   `json:"ids"`
		Vector []float64 `json:"vector"`
	} `json:"sentences"`
}

func readReference(t *testing.T) reference {
	t.Helper()
	data, err := os.ReadFile("testdata/reference.json")
	require.NoError(t, err)
	var ref reference
	require.NoError(t, json.Unmarshal(data, &ref))
	require.NotEmpty(t, ref.Sentences)
	return ref
}

func dot(a, b []float64) float64 {
	var sum float64
	for i := range a {
		sum += a[i] * b[i]
	}
	return sum
}

func cosine(a, b []float64) float64 { return dot(a, b) / math.Sqrt(dot(a, a)*dot(b, b)) }

func norm(v []float64) float64 { return math.Sqrt(dot(v, v)) }

// The reference was computed from the very files the model is loaded from:
// another wheel's files would make every comparison below meaningless.
func TestReferenceFiles(t *testing.T) {
	ref := readReference(t)
	assert.Equal(t, wordllama.Version, ref.Version)
	dir, err := wordllama.Dir()
	require.NoError(t, err)
	for _, name := range []string{wordllama.WeightsFile, wordllama.TokenizerFile} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		sum := sha256.Sum256(data)
		assert.Equal(t, ref.Files[name], hex.EncodeToString(sum[:]), name)
	}
}

// Every reference sentence tokenizes to the Python ids exactly and embeds to
// the Python vector (rounded to 6 decimals there, float32 arithmetic).
func TestReference(t *testing.T) {
	m := mustLoad(t)
	ref := readReference(t)
	require.Equal(t, 256, m.Dim())
	texts := make([]string, len(ref.Sentences))
	for i, s := range ref.Sentences {
		texts[i] = s.Text
	}
	vectors, err := m.Embed(context.Background(), texts)
	require.NoError(t, err)
	require.Len(t, vectors, len(texts))
	worst := 1.0
	for i, s := range ref.Sentences {
		assert.Equal(t, s.IDs, wordllama.TokenIDs(m, s.Text), "ids of %q", s.Text)
		require.Len(t, vectors[i], m.Dim(), s.Text)
		assert.InDelta(t, 1, norm(vectors[i]), 1e-9, "unit length: %q", s.Text)
		c := cosine(vectors[i], s.Vector)
		assert.GreaterOrEqual(t, c, 0.999, "cosine with the Python vector of %q", s.Text)
		worst = min(worst, c)
	}
	t.Logf("%d sentences, lowest cosine with the Python vectors 1 - %.2g", len(texts), 1-worst)
}

// Splitting a word into cached segments (before each "▁" that follows a
// character) gives the tokens of merging it whole, cached or not.
func TestSegmentsMergeAsTheWholeWord(t *testing.T) {
	m := mustLoad(t)
	require.True(t, wordllama.Segmented(m), "no token of this vocabulary has ▁ after a character")
	dir, err := wordllama.Dir()
	require.NoError(t, err)
	whole, err := wordllama.Load(dir)
	require.NoError(t, err)
	wordllama.WholeWords(whole)
	texts := []string{"Is my login flow safe against attackers?", "a  b   c    d", "  leading and trailing  ", "x▁y ▁▁z", "tab\tand\nnewline", "日本語 と 😀 emoji"}
	for _, s := range readReference(t).Sentences {
		texts = append(texts, s.Text)
	}
	for _, text := range texts {
		want := wordllama.TokenIDs(whole, text)
		assert.Equal(t, want, wordllama.TokenIDs(m, text), "first: %q", text)
		assert.Equal(t, want, wordllama.TokenIDs(m, text), "cached: %q", text)
	}
}

// A text's vector does not depend on the texts embedded with it (Python pads
// a batch to its longest text, and masks the padding out).
func TestEmbedBatchEqualsSingle(t *testing.T) {
	m := mustLoad(t)
	texts := []string{"Is my login flow safe against attackers?", "a", "", "日本語 😀 <s>"}
	batch, err := m.Embed(context.Background(), texts)
	require.NoError(t, err)
	for i, text := range texts {
		one, err := m.Embed(context.Background(), []string{text})
		require.NoError(t, err)
		assert.Equal(t, one[0], batch[i], text)
	}
}

// The empty string has no token: the zero vector, where Python divides 0 by
// 0 and returns NaN. Whitespace has tokens and a unit vector.
func TestEmbedEmptyAndWhitespace(t *testing.T) {
	m := mustLoad(t)
	vectors, err := m.Embed(context.Background(), []string{"", " ", "\t\n"})
	require.NoError(t, err)
	assert.Equal(t, make([]float64, m.Dim()), vectors[0])
	assert.Empty(t, wordllama.TokenIDs(m, ""))
	for _, v := range vectors[1:] {
		assert.InDelta(t, 1, norm(v), 1e-9)
	}

	none, err := m.Embed(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestEmbedCanceled(t *testing.T) {
	m := mustLoad(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Embed(ctx, []string{"hello"})
	assert.ErrorIs(t, err, context.Canceled)
}

// The vectors carry meaning: a security question is nearer the security
// reviewer's description than the code reviewer's.
func TestMeaning(t *testing.T) {
	m := mustLoad(t)
	v, err := m.Embed(context.Background(), []string{
		"Is my login flow safe against attackers?",
		"Security review: vulnerabilities, authentication, threat modelling",
		"Code review: bugs, readability, Go and Python functions",
	})
	require.NoError(t, err)
	security, code := cosine(v[0], v[1]), cosine(v[0], v[2])
	assert.Greater(t, security, code, "security %.3f, code %.3f", security, code)
	t.Logf("cosine with the security description %.3f, with the code description %.3f", security, code)
}

// writeSafetensors writes a safetensors file: header, then data.
func writeSafetensors(t *testing.T, path, header string, data []byte) {
	t.Helper()
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	out = append(out, data...)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}

// toyTable is a valid 14 × 2 F16 table for testdata/toy_tokenizer.json:
// row i is (i, 1).
func toyTable(t *testing.T, dir string) {
	t.Helper()
	var data []byte
	for i := range 14 {
		data = binary.LittleEndian.AppendUint16(data, half(float64(i)))
		data = binary.LittleEndian.AppendUint16(data, 0x3C00)
	}
	writeSafetensors(t, filepath.Join(dir, wordllama.WeightsFile),
		`{"__metadata__":{"format":"pt"},"embedding.weight":{"dtype":"F16","shape":[14,2],"data_offsets":[0,56]}}`, data)
}

// half encodes a small non-negative integer as IEEE 754 half precision.
func half(x float64) uint16 {
	if x == 0 {
		return 0
	}
	exp := math.Floor(math.Log2(x))
	frac := x/math.Exp2(exp) - 1
	return uint16(exp+15)<<10 | uint16(frac*1024)
}

func toyTokenizer(t *testing.T, dir string) {
	t.Helper()
	data, err := os.ReadFile("testdata/toy_tokenizer.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, wordllama.TokenizerFile), data, 0o644))
}

// The toy model averages its rows: "abc" is [▁a, bc] = rows 7 and 9, so
// (7+9, 1+1) normalized.
func TestLoadToyModel(t *testing.T) {
	dir := t.TempDir()
	toyTable(t, dir)
	toyTokenizer(t, dir)
	m, err := wordllama.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, 2, m.Dim())
	v, err := m.Embed(context.Background(), []string{"abc"})
	require.NoError(t, err)
	n := math.Hypot(16, 2)
	assert.InDeltaSlice(t, []float64{16 / n, 2 / n}, v[0], 1e-12)
}

func TestLoadErrors(t *testing.T) {
	valid := func(t *testing.T, dir string) { toyTable(t, dir); toyTokenizer(t, dir) }
	weights := func(header string, data []byte) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			writeSafetensors(t, filepath.Join(dir, wordllama.WeightsFile), header, data)
			toyTokenizer(t, dir)
		}
	}
	cases := []struct {
		name  string
		setup func(*testing.T, string)
		want  []string
	}{
		{"missing directory", nil, []string{wordllama.WeightsFile, "make wordllama"}},
		{"header shorter than its length", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, wordllama.WeightsFile), []byte{1, 2, 3, 4}, 0o644))
		}, []string{"truncated safetensors header"}},
		{"header longer than the file", func(t *testing.T, dir string) {
			out := binary.LittleEndian.AppendUint64(nil, 1000)
			require.NoError(t, os.WriteFile(filepath.Join(dir, wordllama.WeightsFile), append(out, `{"a":`...), 0o644))
		}, []string{"truncated or not a safetensors file"}},
		{"header not JSON", weights(`{"embedding.weight":`, nil), []string{"not JSON"}},
		{"no such tensor", weights(`{"other":{"dtype":"F16","shape":[1,1],"data_offsets":[0,2]}}`, []byte{0, 0}), []string{`no tensor "embedding.weight"`}},
		{"not F16", weights(`{"embedding.weight":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]}}`, make([]byte, 4)), []string{"only F16"}},
		{"not two dimensions", weights(`{"embedding.weight":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, make([]byte, 8)), []string{"shape"}},
		{"offsets do not match the shape", weights(`{"embedding.weight":{"dtype":"F16","shape":[2,2],"data_offsets":[0,6]}}`, make([]byte, 8)), []string{"take 8"}},
		{"data truncated", weights(`{"embedding.weight":{"dtype":"F16","shape":[14,2],"data_offsets":[0,56]}}`, make([]byte, 40)), []string{"truncated"}},
		{"tokenizer missing", func(t *testing.T, dir string) { toyTable(t, dir) }, []string{wordllama.TokenizerFile, "make wordllama"}},
		{"tokenizer not JSON", func(t *testing.T, dir string) {
			valid(t, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, wordllama.TokenizerFile), []byte(`{"model":`), 0o644))
		}, []string{wordllama.TokenizerFile, "not a tokenizer configuration"}},
		{"tokenizer of another kind", func(t *testing.T, dir string) {
			valid(t, dir)
			require.NoError(t, os.WriteFile(filepath.Join(dir, wordllama.TokenizerFile), []byte(`{"model":{"type":"Unigram"}}`), 0o644))
		}, []string{wordllama.TokenizerFile, "only BPE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "model")
			if c.setup != nil {
				require.NoError(t, os.Mkdir(dir, 0o755))
				c.setup(t, dir)
			}
			m, err := wordllama.Load(dir)
			require.Error(t, err)
			assert.Nil(t, m)
			for _, want := range c.want {
				assert.Contains(t, err.Error(), want)
			}
		})
	}
}

func TestDirFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(wordllama.DirEnv, dir)
	_, err := wordllama.Dir()
	require.Error(t, err, "a directory without the files")
	assert.Contains(t, err.Error(), "make wordllama")
	assert.Contains(t, err.Error(), dir)

	toyTable(t, dir)
	toyTokenizer(t, dir)
	got, err := wordllama.Dir()
	require.NoError(t, err)
	assert.Equal(t, dir, got)
}

// A typical chat message of 12 words.
func BenchmarkEmbedQuery(b *testing.B) {
	m := mustLoad(b)
	texts := []string{"Can you check whether my login handler is safe against session fixation?"}
	ctx := context.Background()
	for b.Loop() {
		if _, err := m.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}

// The cold-start cost of a function that embeds: reading and checking both
// files.
func BenchmarkLoad(b *testing.B) {
	dir, err := wordllama.Dir()
	require.NoError(b, err)
	for b.Loop() {
		if _, err := wordllama.Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// Only word-sized segments are cached: a long run of text without a space
// (a pasted blob) is merged but not kept, so no caller can fill the
// shared cache with kilobytes an entry.
func TestOnlyWordSizedSegmentsAreCached(t *testing.T) {
	dir, err := wordllama.Dir()
	require.NoError(t, err)
	m, err := wordllama.Load(dir)
	require.NoError(t, err)
	blob := strings.Repeat("abcdefghij", 800)
	first := wordllama.TokenIDs(m, blob)
	assert.Zero(t, wordllama.CacheLen(m), "an 8,000-character segment is not cached")
	assert.Equal(t, first, wordllama.TokenIDs(m, blob))
	wordllama.TokenIDs(m, "hello world")
	assert.Equal(t, 2, wordllama.CacheLen(m), "two words, two entries")
}

// routing sums a classifier's logits over a message's tokens: Embed's
// vector is the sum of the rows of Tokens' ids, scaled to unit length,
// whether Tokens reads the text again or the query Embed just embedded.
func TestEmbedIsTheSumOfTheTokensRows(t *testing.T) {
	m := mustLoad(t)
	for _, text := range []string{"Can you review the SQL behind our billing API?", "the the", "zxqv!!", " "} {
		ids := m.Tokens(text, nil)
		v, err := m.Embed(context.Background(), []string{text})
		require.NoError(t, err)
		assert.Equal(t, ids, m.Tokens(text, []int32{}), text)
		sum := make([]float32, m.Dim())
		for _, id := range ids {
			require.Less(t, int(id), m.Vocabulary())
			for j, x := range m.Row(id) {
				sum[j] += x
			}
		}
		norm := 0.0
		for _, x := range sum {
			norm += float64(x) * float64(x)
		}
		for j, x := range sum {
			assert.InDelta(t, float64(x)/math.Sqrt(norm), v[0][j], 1e-12, "%q %d", text, j)
		}
	}
}
