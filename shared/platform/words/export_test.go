package words

import "strings"

// TokensOfRunes is Tokens by the rune path alone, which the ASCII fast
// path must match.
func TokensOfRunes(s string) []string { return appendTokensRunes(nil, nil, strings.ToLower(s), false) }
