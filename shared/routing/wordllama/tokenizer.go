package wordllama

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// metaspace is the character the LLaMA tokenizer writes for a space.
const metaspace = "▁"

// tokenizer is the part of a Hugging Face `tokenizers` Tokenizer that the
// l2_supercat configuration uses, evaluated as tokenizers 0.23 does with
// encode_batch(texts, add_special_tokens=False):
//
//  1. the text is split around its added tokens (<unk>, <s>, </s>), which
//     become their ids whatever add_special_tokens says;
//  2. each other piece is normalized: "▁" prepended (to a non-empty piece),
//     every " " replaced by "▁";
//  3. with no pre-tokenizer the normalized piece is one BPE word: one
//     symbol per character, a character missing from the vocabulary
//     becoming its UTF-8 bytes as "<0xNN>" tokens (byte fallback);
//  4. merges are applied lowest rank first over the whole word.
//
// Load refuses a configuration that asks for anything else, rather than
// tokenizing it differently from Python without a word.
type tokenizer struct {
	vocab   map[string]int32
	merges  map[uint64]merge // by pairKey(left, right)
	byteIDs [256]int32       // "<0xNN>" per byte; -1 when absent
	unkID   int32            // -1 without an unknown token
	fuseUnk bool
	added   []addedToken
	// addedFirst marks the bytes an added token starts with, so that the
	// scan for them skips every other byte with one lookup.
	addedFirst [256]bool
	// segments: a word may be split into segments (encodePiece); cache
	// holds the ids of segments seen before (encodeSegment).
	segments bool
	mu       sync.RWMutex
	cache    map[string][]int32
}

// merge is what a pair of adjacent symbols becomes and how early.
type merge struct {
	rank int32 // position in the merges list: lower merges first
	id   int32 // the merged token
}

// addedToken is a token matched in the raw text before normalization.
type addedToken struct {
	content string
	id      int32
}

func pairKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

// tokenizerConfig is the subset of tokenizer.json that tokenizing reads or
// that must hold a value this port implements. truncation, padding, the
// post-processor and the decoder are not read: the package overrides the
// first two (padding, masked out of the average; no truncation), and
// add_special_tokens=False skips the post-processor.
type tokenizerConfig struct {
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        struct {
		Type                    string           `json:"type"`
		Dropout                 *float64         `json:"dropout"`
		UnkToken                *string          `json:"unk_token"`
		ContinuingSubwordPrefix *string          `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string          `json:"end_of_word_suffix"`
		FuseUnk                 bool             `json:"fuse_unk"`
		ByteFallback            bool             `json:"byte_fallback"`
		IgnoreMerges            bool             `json:"ignore_merges"`
		Vocab                   map[string]int32 `json:"vocab"`
		Merges                  json.RawMessage  `json:"merges"`
	} `json:"model"`
}

// wantNormalizer is the only normalizer implemented (compared as decoded
// JSON, so key order and spacing do not matter).
const wantNormalizer = `{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},{"type":"Replace","pattern":{"String":" "},"content":"▁"}]}`

// loadTokenizer reads a tokenizer.json and checks that it asks for nothing
// beyond what tokenizer implements.
func loadTokenizer(path string) (*tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c tokenizerConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: not a tokenizer configuration: %w", path, err)
	}
	t, err := newTokenizer(&c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

func newTokenizer(c *tokenizerConfig) (*tokenizer, error) {
	m := &c.Model
	switch {
	case m.Type != "BPE":
		return nil, fmt.Errorf("model type %q: only BPE is supported", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, fmt.Errorf("BPE dropout %v is not supported", *m.Dropout)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, fmt.Errorf("BPE subword prefixes and suffixes are not supported")
	case m.IgnoreMerges:
		return nil, fmt.Errorf("BPE ignore_merges is not supported")
	case len(m.Vocab) == 0:
		return nil, fmt.Errorf("empty vocabulary")
	}
	if !jsonNull(c.PreTokenizer) {
		return nil, fmt.Errorf("pre_tokenizer %s is not supported (only none)", c.PreTokenizer)
	}
	if equal, err := jsonEqual(c.Normalizer, wantNormalizer); err != nil || !equal {
		return nil, fmt.Errorf("normalizer %s is not supported (only %s)", c.Normalizer, wantNormalizer)
	}
	t := &tokenizer{vocab: m.Vocab, unkID: -1, fuseUnk: m.FuseUnk}
	if m.UnkToken != nil {
		id, ok := m.Vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("unknown token %q is not in the vocabulary", *m.UnkToken)
		}
		t.unkID = id
	}
	for b := range t.byteIDs {
		t.byteIDs[b] = -1
		if id, ok := m.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok && m.ByteFallback {
			t.byteIDs[b] = id
		}
	}
	for _, a := range c.AddedTokens {
		if a.SingleWord || a.LStrip || a.RStrip || a.Normalized {
			return nil, fmt.Errorf("added token %q: single_word, lstrip, rstrip and normalized are not supported", a.Content)
		}
		if a.Content == "" {
			return nil, fmt.Errorf("added token %d is empty", a.ID)
		}
		t.added = append(t.added, addedToken{content: a.Content, id: a.ID})
		t.addedFirst[a.Content[0]] = true
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	t.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		left, okL := m.Vocab[p[0]]
		right, okR := m.Vocab[p[1]]
		id, okM := m.Vocab[p[0]+p[1]]
		if !okL || !okR || !okM {
			return nil, fmt.Errorf("merge %d (%q %q) names a token that is not in the vocabulary", rank, p[0], p[1])
		}
		// A pair listed twice keeps its last rank, as the Rust map does.
		t.merges[pairKey(left, right)] = merge{rank: int32(rank), id: id}
	}
	// Segments merge alone only if no token has "▁" after another
	// character (encodePiece); a vocabulary with one is merged whole.
	t.segments = true
	for tok := range m.Vocab {
		if i := strings.Index(strings.TrimLeft(tok, metaspace), metaspace); i >= 0 {
			t.segments = false
			break
		}
	}
	return t, nil
}

// parseMerges reads both spellings of the merges list: "left right"
// strings (older files, this one) and [left, right] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	var lines []string
	if err := json.Unmarshal(raw, &lines); err == nil {
		pairs := make([][2]string, len(lines))
		for i, l := range lines {
			parts := strings.Split(l, " ")
			if len(parts) != 2 {
				return nil, fmt.Errorf("merge %d %q is not two tokens separated by a space", i, l)
			}
			pairs[i] = [2]string{parts[0], parts[1]}
		}
		return pairs, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("merges: neither strings nor pairs: %w", err)
	}
	return pairs, nil
}

// jsonNull reports whether raw is absent or null.
func jsonNull(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s == "" || s == "null"
}

// jsonEqual reports whether raw and want decode to the same value.
func jsonEqual(raw json.RawMessage, want string) (bool, error) {
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		return false, err
	}
	if err := json.Unmarshal([]byte(want), &b); err != nil {
		return false, err
	}
	x, _ := json.Marshal(a) // maps marshal with sorted keys
	y, _ := json.Marshal(b)
	return string(x) == string(y), nil
}

// encode appends the token ids of text to ids; w is scratch space.
func (t *tokenizer) encode(text string, ids []int32, w *word) []int32 {
	for text != "" {
		at, tok := t.nextAdded(text)
		if at < 0 {
			return t.encodePiece(text, ids, w)
		}
		ids = t.encodePiece(text[:at], ids, w)
		ids = append(ids, tok.id)
		text = text[at+len(tok.content):]
	}
	return ids
}

// nextAdded finds the leftmost added token in text, the longest one where
// several start there (the leftmost-longest match of the Rust
// implementation's Aho-Corasick automaton); at is -1 without one.
func (t *tokenizer) nextAdded(text string) (at int, tok addedToken) {
	for i := 0; i < len(text); i++ {
		if !t.addedFirst[text[i]] {
			continue
		}
		found := false
		for _, a := range t.added {
			if strings.HasPrefix(text[i:], a.content) && (!found || len(a.content) > len(tok.content)) {
				tok, found = a, true
			}
		}
		if found {
			return i, tok
		}
	}
	return -1, addedToken{}
}

// encodePiece normalizes a piece of text between added tokens and appends
// the ids of its one BPE word.
func (t *tokenizer) encodePiece(piece string, ids []int32, w *word) []int32 {
	if piece == "" {
		// Prepend leaves an empty piece empty: "" and the gaps between
		// adjacent added tokens yield no token.
		return ids
	}
	normalized := metaspace + strings.ReplaceAll(piece, " ", metaspace)
	// The piece is one BPE word, but no token of this vocabulary has "▁"
	// after another character (newTokenizer checks it): no merge ever
	// joins a character to a following "▁". So the word splits, before
	// each "▁" that follows another character, into segments that merge
	// alone to the same tokens, and a segment's tokens are cached: a
	// chat message is mostly words seen before (the Rust implementation
	// caches words the same way).
	for normalized != "" {
		end := len(normalized)
		if t.segments {
			end = segmentEnd(normalized)
		}
		ids = t.encodeSegment(normalized[:end], ids, w)
		normalized = normalized[end:]
	}
	return ids
}

// segmentEnd is where the first segment of s ends: before the first "▁"
// that follows another character.
func segmentEnd(s string) int {
	i := 0
	for i < len(s) && strings.HasPrefix(s[i:], metaspace) {
		i += len(metaspace)
	}
	if j := strings.Index(s[i:], metaspace); j >= 0 {
		return i + j
	}
	return len(s)
}

// maxCached bounds the segment cache's entries; past it the cache starts
// afresh. maxCachedSegment bounds what one entry may hold: a segment is a
// run of text without a space, up to a whole 8,000-character query, and
// the cache serves every team of a warm function, so only word-sized
// segments (nearly all of real text) are kept: 32,768 of them stay under
// a few MB.
const (
	maxCached        = 1 << 15
	maxCachedSegment = 48
)

// encodeSegment appends the ids of one segment, from the cache or merged.
func (t *tokenizer) encodeSegment(seg string, ids []int32, w *word) []int32 {
	cacheable := len(seg) <= maxCachedSegment
	if cacheable {
		t.mu.RLock()
		cached, ok := t.cache[seg]
		t.mu.RUnlock()
		if ok {
			return append(ids, cached...)
		}
	}
	t.symbols(seg, w)
	if len(w.syms) == 0 {
		return ids // only characters with no token and no unknown token
	}
	t.mergeAll(w)
	start := len(ids)
	for i := 0; i >= 0; i = int(w.syms[i].next) {
		ids = append(ids, w.syms[i].id)
	}
	if !cacheable {
		return ids
	}
	t.mu.Lock()
	if t.cache == nil || len(t.cache) >= maxCached {
		t.cache = map[string][]int32{}
	}
	t.cache[strings.Clone(seg)] = slices.Clone(ids[start:])
	t.mu.Unlock()
	return ids
}

// symbol is one token of a word being merged, linked to its live
// neighbours (-1 at either end).
type symbol struct {
	id         int32
	prev, next int32
	removed    bool // merged into its left neighbour
}

// word is the state of one BPE word, reused across pieces.
type word struct {
	syms []symbol
	heap mergeHeap
}

func (w *word) add(id int32) {
	n := int32(len(w.syms))
	if n > 0 {
		w.syms[n-1].next = n
	}
	w.syms = append(w.syms, symbol{id: id, prev: n - 1, next: -1})
}

// symbols fills w with the initial symbols of s: one per character in the
// vocabulary, else its bytes' tokens, else the unknown token (consecutive
// unknowns fused into one when fuse_unk is set).
func (t *tokenizer) symbols(s string, w *word) {
	w.syms = w.syms[:0]
	pendingUnk := false
	for i := 0; i < len(s); {
		// An invalid UTF-8 byte decodes with size 1: the piece is the byte
		// itself, which byte fallback encodes as <0xNN>. (Python strings
		// are always valid, so there is nothing to match there.)
		_, size := utf8.DecodeRuneInString(s[i:])
		ch := s[i : i+size]
		i += size
		if id, ok := t.vocab[ch]; ok {
			if pendingUnk {
				w.add(t.unkID)
				pendingUnk = false
			}
			w.add(id)
			continue
		}
		if t.bytesKnown(ch) {
			// The Rust code adds the byte tokens without first flushing a
			// pending unknown, which therefore lands after them. Kept, for
			// the same ids; unreachable with this vocabulary, which has
			// all 256 byte tokens.
			for j := 0; j < len(ch); j++ {
				w.add(t.byteIDs[ch[j]])
			}
			continue
		}
		if t.unkID < 0 {
			continue // the Rust code errors here; no token is the nearest
		}
		if pendingUnk && t.fuseUnk {
			continue
		}
		if pendingUnk {
			w.add(t.unkID)
		}
		pendingUnk = true
	}
	if pendingUnk {
		w.add(t.unkID)
	}
}

func (t *tokenizer) bytesKnown(ch string) bool {
	for j := 0; j < len(ch); j++ {
		if t.byteIDs[ch[j]] < 0 {
			return false
		}
	}
	return true
}

// mergeAll applies the merges to w, lowest rank first and, within a rank,
// leftmost first, exactly as Word::merge_all in tokenizers: a heap of
// candidate merges, each checked when popped against the pair now at its
// position (a neighbour may have merged away since it was queued).
// O(n log n) in the word's length.
func (t *tokenizer) mergeAll(w *word) {
	h := &w.heap
	h.items = h.items[:0]
	for i := 0; i+1 < len(w.syms); i++ {
		if m, ok := t.merges[pairKey(w.syms[i].id, w.syms[i+1].id)]; ok {
			h.push(candidate{rank: m.rank, pos: int32(i), id: m.id})
		}
	}
	for len(h.items) > 0 {
		top := h.pop()
		cur := &w.syms[top.pos]
		if cur.removed || cur.next < 0 {
			continue
		}
		right := w.syms[cur.next]
		// Stale when the pair here no longer merges into the same token
		// (the Rust check compares the new id only, and so does this).
		if m, ok := t.merges[pairKey(cur.id, right.id)]; !ok || m.id != top.id {
			continue
		}
		cur.id = top.id
		w.syms[cur.next].removed = true
		cur.next = right.next
		if right.next >= 0 {
			w.syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if m, ok := t.merges[pairKey(w.syms[cur.prev].id, cur.id)]; ok {
				h.push(candidate{rank: m.rank, pos: cur.prev, id: m.id})
			}
		}
		if cur.next >= 0 {
			if m, ok := t.merges[pairKey(cur.id, w.syms[cur.next].id)]; ok {
				h.push(candidate{rank: m.rank, pos: top.pos, id: m.id})
			}
		}
	}
}

// candidate is a queued merge of the symbol at pos with its right
// neighbour.
type candidate struct {
	rank, pos, id int32
}

// mergeHeap is a binary min-heap of candidates by (rank, pos). Hand-written
// rather than container/heap: no interface call per comparison, and the
// slice is reused across words.
type mergeHeap struct{ items []candidate }

func (c candidate) less(d candidate) bool {
	return c.rank < d.rank || (c.rank == d.rank && c.pos < d.pos)
}

func (h *mergeHeap) push(c candidate) {
	h.items = append(h.items, c)
	i := len(h.items) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h.items[i].less(h.items[parent]) {
			break
		}
		h.items[i], h.items[parent] = h.items[parent], h.items[i]
		i = parent
	}
}

func (h *mergeHeap) pop() candidate {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < last && h.items[l].less(h.items[least]) {
			least = l
		}
		if r < last && h.items[r].less(h.items[least]) {
			least = r
		}
		if least == i {
			return top
		}
		h.items[i], h.items[least] = h.items[least], h.items[i]
		i = least
	}
}
