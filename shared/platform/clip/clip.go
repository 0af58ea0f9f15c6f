// Package clip shortens text to a limit counted in characters (runes),
// never splitting a UTF-8 character, and marks the cut.
//
// The convention: a clipped text ends in "…" (U+2026, one rune) and, the
// marker included, fits the limit it was clipped to; text within the limit
// comes back unchanged. So a reader (a person, a model, a log) can tell a
// cut text from a whole one, and a clipped value still passes the
// maxLength it was clipped for.
package clip

import "unicode/utf8"

// Marker ends a clipped text.
const Marker = "…"

// Clip returns s when it has at most n runes, else its first n-1 runes
// followed by Marker (n runes in all). n <= 0 gives "".
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s // len(s) <= n: n bytes hold at most n runes
	}
	// Walk to the start of rune n-1 without decoding the rest.
	i, k := 0, 0
	for k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + Marker
}

// Prefix returns s when it has at most n runes, else its first n runes,
// unmarked: for values read as data rather than prose (a skill keyword, a
// card's description kept to a field's maxLength, an MCP tool's
// description), where a marker would become part of the value. n <= 0
// gives "".
func Prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}
