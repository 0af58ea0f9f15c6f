package words_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/conclave-ai/conclave/shared/platform/words"
)

func TestTokens(t *testing.T) {
	assert.Equal(t, []string{"review", "cod", "bug"}, words.Tokens("Reviewing the code for bugs"))
	assert.Equal(t, words.Tokens("writing"), words.Tokens("write"))
	assert.Equal(t, words.Tokens("databases"), words.Tokens("database"))
	// Words of two letters count, from a to z and 0 to 9; stop words do not,
	// the longest included, in any script.
	assert.Equal(t, []string{"ml", "ci", "jazz", "99"}, words.Tokens("ML ci, jazz 99"))
	assert.Empty(t, words.Tokens("themselves yourselves ourselves"))
	assert.Equal(t, []string{"café"}, words.Tokens("themselves café"))
	// Non-ASCII text takes the rune path: letters of any script are words.
	assert.Equal(t, []string{"überprüf", "die", "api", "café"}, words.Tokens("Überprüfe die API, café"))
}

// The one-pass split of ASCII text is an optimisation: on any message it
// must give what the rune path gives.
func TestASCIIFastPathMatchesTheRunePath(t *testing.T) {
	vocabulary := []string{"Please", "hey", "API", "sql", "func()", "user_id", "x.y", "e.g.", "don't", "it's", "Review",
		"reviews", "reviewing", "coding", "queries", "the", "I", "1.5x", "200MS", "50%", "v2.0", "trade-offs", "```",
		"a", "ab", "to", "themselves", "foo=bar", "[x]", "<b>", "@luke", "#1", "\t", "\n", "\v", "\f", "\r", "  "}
	separators := " \t\n,.;!?-'"
	r := rand.New(rand.NewPCG(4, 2))
	messages := []string{"", " ", "!", "hi", "Fix it PLZ", "9!!"}
	for range 20_000 {
		var b strings.Builder
		for k := r.IntN(12); k > 0; k-- {
			b.WriteString(vocabulary[r.IntN(len(vocabulary))])
			b.WriteByte(separators[r.IntN(len(separators))])
		}
		messages = append(messages, b.String())
	}
	for _, m := range messages {
		require.Equal(t, words.TokensOfRunes(m), words.Tokens(m), "%q", m)
	}
	// Split is Tokens and AllTokens at once, on the same messages and on
	// text that is not ASCII, or all stop words.
	messages = append(messages, "Größe der Datenbank prüfen, bitte!", "naïve café résumé", "the of and to", "Ünïcödé the")
	for _, m := range messages {
		content, all := words.Split(m)
		require.Equal(t, words.Tokens(m), content, "%q", m)
		require.Equal(t, words.AllTokens(m), all, "%q", m)
	}
}
