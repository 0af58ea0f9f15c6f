package wordllama

// TokenIDs is the tokenizer's output for text, for the reference test.
func TokenIDs(m *Model, text string) []int32 { return m.tok.encode(text, nil, &word{}) }

// WholeWords makes m merge every piece as one word, uncached, as the
// Python tokenizer does: the segments and their cache must not change a
// token.
func WholeWords(m *Model) {
	m.tok.segments = false
	m.tok.mu.Lock()
	m.tok.cache = nil
	m.tok.mu.Unlock()
}

// Segmented reports whether m splits words into cached segments.
func Segmented(m *Model) bool { return m.tok.segments }

// CacheLen is how many segments m's tokenizer has cached.
func CacheLen(m *Model) int {
	m.tok.mu.RLock()
	defer m.tok.mu.RUnlock()
	return len(m.tok.cache)
}
