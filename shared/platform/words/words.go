// Package words splits text into the content words the routing signals
// and the local model's router compare: lower-case, lightly stemmed, stop
// words dropped. It is pure computation on a string, so it sits in the
// platform wing, below both models (the local model) and routing.
package words

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// stopwords carry no topic; dropping them keeps TF-IDF and cosine on the
// words that say what a message is about.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from further
		had has have having he her here hers herself him himself his how i if in into is it its itself just
		me more most my myself no nor not now of off on once only or other our ours ourselves out over own
		same she should so some such than that the their theirs them themselves then there these they this
		those through to too under until up very was we were what when where which while who whom why will
		with would you your yours yourself yourselves let lets please thanks thank hi hello hey ok okay
		im ive id youre dont cant wont get got us also like one thing something anything`) {
		m[w] = true
	}
	return m
}()

// Tokens splits s into lower-case, lightly stemmed content words. Stemming
// is a few suffix rules (plural, -ing, -ed): enough for "reviews",
// "reviewing" and "reviewed" to meet "review" without a dictionary.
func Tokens(s string) []string { return tokens(s, false) }

// AllTokens is Tokens with the stop words kept: what a fitted model reads
// (the routing classifier), which learns for itself which of them say
// something ("when", "how much" and "what is" ask different things) where
// TF-IDF and cosine would weigh them as noise.
func AllTokens(s string) []string { return tokens(s, true) }

// tokens is Tokens (all: AllTokens), with room for the tokens of s
// allocated once: a word and its space are five bytes or more in nearly
// every message (growing from none took five allocations a message, and
// the gate splits every message twice). None is nil, as before.
func tokens(s string, all bool) []string {
	out := appendTokens(make([]string, 0, len(s)/5+1), nil, s, all)
	if len(out) == 0 {
		return nil
	}
	return out
}

// Split is Tokens and AllTokens of s at once, s lower-cased, split and
// stemmed once: the content words are the AllTokens that are not stop
// words, in their order (the ExpertGate reads both of every message).
func Split(s string) (content, all []string) {
	stops := make([]bool, 0, len(s)/5+1)
	all = appendTokens(make([]string, 0, len(s)/5+1), &stops, s, true)
	if len(all) == 0 {
		return nil, nil
	}
	content = make([]string, 0, len(all))
	for i, w := range all {
		if !stops[i] {
			content = append(content, w)
		}
	}
	if len(content) == 0 {
		content = nil
	}
	return content, all
}

// appendTokens appends the Tokens (all: AllTokens) of s to out, and, when
// stops is not nil (with all), whether each is a stop word to *stops.
// ASCII text, nearly every message, is split in one pass over its bytes;
// other text by runes.
func appendTokens(out []string, stops *[]bool, s string, all bool) []string {
	lower := strings.ToLower(s)
	for i := 0; i < len(lower); i++ {
		// Valid UTF-8 never starts a rune with 0x80 (> alike), and the rune
		// path gives what the ASCII one does (turned around alike).
		if lower[i] >= utf8.RuneSelf {
			return appendTokensRunes(out, stops, lower, all)
		}
	}
	// In lower-case ASCII the letters and digits are a–z and 0–9.
	for i := 0; i < len(lower); {
		for i < len(lower) && !isLowerAlnum(lower[i]) {
			i++
		}
		j := i
		for j < len(lower) && isLowerAlnum(lower[j]) {
			j++
		}
		if j > i { // j == i only at the end: "" is no token (>= alike)
			out = appendToken(out, stops, lower[i:j], all)
		}
		i = j
	}
	return out
}

// appendTokensRunes is appendTokens for any lower-case text.
func appendTokensRunes(out []string, stops *[]bool, lower string, all bool) []string {
	for _, f := range strings.FieldsFunc(lower, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		out = appendToken(out, stops, f, all)
	}
	return out
}

func appendToken(out []string, stops *[]bool, f string, all bool) []string {
	if len(f) < 2 {
		return out
	}
	if stops != nil {
		*stops = append(*stops, len(f) <= longestStopword && stopwords[f])
	} else if !all && len(f) <= longestStopword && stopwords[f] {
		return out
	}
	return append(out, Stem(f))
}

// longestStopword is the length of the longest stop word: a longer word
// needs no lookup.
var longestStopword = func() int {
	n := 0
	for w := range stopwords {
		n = max(n, len(w))
	}
	return n
}()

func isLowerAlnum(b byte) bool { return ('a' <= b && b <= 'z') || ('0' <= b && b <= '9') }

// Stem strips the common English suffixes. A singular and its plural
// share one stem: "movie" and "movies" ("movi"), "query" and "queries"
// ("queri"): a final y after a consonant becomes i, as "-ies" does, since
// the e-rule below leaves "movie" as "movi".
func Stem(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-2]
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = w[:len(w)-3]
	case len(w) > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "es") && (strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	// "running" → "runn" → "run": undo a doubled final consonant.
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) {
		w = w[:n-1]
	}
	// A final silent e goes too, so "code" meets "coding" and "write" meets
	// "writing" ("cod", "writ").
	if n := len(w); n > 3 && w[n-1] == 'e' && w[n-2] != 'e' {
		w = w[:n-1]
	}
	// "query" → "queri" meets "queries" → "queri"; "day", "key" and
	// "play" keep their y (a vowel before it: the plural is a plain s).
	if n := len(w); n > 3 && w[n-1] == 'y' && !strings.ContainsRune("aeiouy", rune(w[n-2])) {
		w = w[:n-1] + "i"
	}
	return w
}
