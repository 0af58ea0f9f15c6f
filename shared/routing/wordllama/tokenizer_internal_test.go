package wordllama

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// toyConfig is testdata/toy_tokenizer.json, a 14-token LLaMA-style
// configuration whose merges make the order of merging visible.
func toyConfig(t *testing.T) *tokenizerConfig {
	t.Helper()
	data, err := os.ReadFile("testdata/toy_tokenizer.json")
	require.NoError(t, err)
	var c tokenizerConfig
	require.NoError(t, json.Unmarshal(data, &c))
	return &c
}

// The expected ids are what tokenizers 0.23.3 (Python) returns for the toy
// configuration with add_special_tokens=False.
func TestToyTokenizer(t *testing.T) {
	fused := toyConfig(t)
	unfused := toyConfig(t)
	unfused.Model.FuseUnk = false
	tokFused, err := newTokenizer(fused)
	require.NoError(t, err)
	tokUnfused, err := newTokenizer(unfused)
	require.NoError(t, err)

	cases := []struct {
		name, text     string
		fused, unfused []int32
	}{
		// "b c" (rank 0) merges first; "a b" is then stale, "▁ a" merges,
		// and "a bc" finds its a merged away: [▁a, bc], not [▁, abc].
		{"lowest rank first over the whole word", "abc", []int32{7, 9}, nil},
		// Two "a a" candidates of one rank: the leftmost merges first,
		// which leaves "▁" and the last "a" unmerged.
		{"leftmost first within a rank", "aaa", []int32{3, 11, 4}, nil},
		{"byte fallback", "é", []int32{3, 12, 13}, nil},
		{"unknowns fused", "日本", []int32{3, 0}, []int32{3, 0, 0}},
		// The pending unknown lands after the byte tokens of "é", as in
		// the Rust code.
		{"unknown after byte fallback", "日é日", []int32{3, 12, 13, 0}, []int32{3, 12, 13, 0, 0}},
		{"added token splits the text", "a<s>b", []int32{7, 1, 3, 5}, nil},
		{"adjacent added tokens", "<s><s>", []int32{1, 1}, nil},
		{"added token alone", "</s>", []int32{2}, nil},
		{"partial added token is text", "<s", []int32{3, 0}, []int32{3, 0, 0}},
		{"spaces become ▁", "a b", []int32{7, 3, 5}, nil},
		{"double space", "ab  c", []int32{3, 8, 3, 3, 6}, nil},
		{"empty", "", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.unfused == nil {
				c.unfused = c.fused
			}
			assert.Equal(t, c.fused, tokFused.encode(c.text, nil, &word{}), "fuse_unk")
			assert.Equal(t, c.unfused, tokUnfused.encode(c.text, nil, &word{}), "no fuse_unk")
		})
	}
}

func TestToyTokenizerRefusesWhatItDoesNotImplement(t *testing.T) {
	cases := []struct {
		name   string
		change func(*tokenizerConfig)
		want   string
	}{
		{"model type", func(c *tokenizerConfig) { c.Model.Type = "WordPiece" }, "only BPE"},
		{"pre-tokenizer", func(c *tokenizerConfig) { c.PreTokenizer = json.RawMessage(`{"type":"Whitespace"}`) }, "pre_tokenizer"},
		{"normalizer", func(c *tokenizerConfig) { c.Normalizer = json.RawMessage(`{"type":"NFKC"}`) }, "normalizer"},
		{"no normalizer", func(c *tokenizerConfig) { c.Normalizer = json.RawMessage(`null`) }, "normalizer"},
		{"dropout", func(c *tokenizerConfig) { d := 0.1; c.Model.Dropout = &d }, "dropout"},
		{"ignore_merges", func(c *tokenizerConfig) { c.Model.IgnoreMerges = true }, "ignore_merges"},
		{"lstrip", func(c *tokenizerConfig) { c.AddedTokens[1].LStrip = true }, "lstrip"},
		{"merge out of vocabulary", func(c *tokenizerConfig) { c.Model.Merges = json.RawMessage(`["b c", "c a"]`) }, "not in the vocabulary"},
		{"merge not a pair", func(c *tokenizerConfig) { c.Model.Merges = json.RawMessage(`["b c a"]`) }, "two tokens"},
		{"unknown token", func(c *tokenizerConfig) { s := "<oov>"; c.Model.UnkToken = &s }, "unknown token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := toyConfig(t)
			c.change(cfg)
			_, err := newTokenizer(cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestMergesAsPairs(t *testing.T) {
	cfg := toyConfig(t)
	cfg.Model.Merges = json.RawMessage(`[["b","c"],["a","a"],["a","b"],["▁","a"],["a","bc"]]`)
	tok, err := newTokenizer(cfg)
	require.NoError(t, err)
	assert.Equal(t, []int32{7, 9}, tok.encode("abc", nil, &word{}))
}

// A 2,001-character word of one letter: 2,000 candidate merges of one rank,
// which must merge left to right, a pair at a time (tokenizers gives the
// same 1,002 ids). BenchmarkEncodeLongWord measures the time of a long word.
func TestLongWord(t *testing.T) {
	tok, err := newTokenizer(toyConfig(t))
	require.NoError(t, err)
	ids := tok.encode(strings.Repeat("a", 2001), nil, &word{})
	// ▁ a a … : the "a a" pairs merge left to right, 1,000 of them, then
	// the last "a" is alone, and "▁ aa" is no merge.
	require.Len(t, ids, 1002)
	assert.Equal(t, int32(3), ids[0])
	assert.Equal(t, int32(4), ids[1001])
	for _, id := range ids[1:1001] {
		require.Equal(t, int32(11), id)
	}
}

func BenchmarkEncodeLongWord(b *testing.B) {
	data, err := os.ReadFile("testdata/toy_tokenizer.json")
	require.NoError(b, err)
	var c tokenizerConfig
	require.NoError(b, json.Unmarshal(data, &c))
	tok, err := newTokenizer(&c)
	require.NoError(b, err)
	text := strings.Repeat("abc aab ", 250)
	w := &word{}
	var ids []int32
	for b.Loop() {
		ids = tok.encode(text, ids[:0], w)
	}
}

func TestHalfToFloat32(t *testing.T) {
	cases := []struct {
		half uint16
		want float32
	}{
		{0x3C00, 1},
		{0xC000, -2},
		{0x3555, 0.333251953125},
		{0x7BFF, 65504},                 // largest normal
		{0x0400, 1.0 / (1 << 14)},       // smallest normal
		{0x0001, 1.0 / (1 << 24)},       // smallest subnormal
		{0x83FF, -1023.0 / (1 << 24)},   // largest negative subnormal
		{0x7C00, float32(math.Inf(1))},  // infinity
		{0xFC00, float32(math.Inf(-1))}, // negative infinity
		{0x0000, 0},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, halfToFloat32(c.half), "%#04x", c.half)
	}
	assert.True(t, math.Signbit(float64(halfToFloat32(0x8000))), "negative zero")
	assert.True(t, math.IsNaN(float64(halfToFloat32(0x7E00))), "NaN")
}
