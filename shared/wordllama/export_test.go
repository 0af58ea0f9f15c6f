package wordllama

// TokenIDs is the tokenizer's output for text, for the reference test.
func TokenIDs(m *Model, text string) []int32 { return m.tok.encode(text, nil, &word{}) }
