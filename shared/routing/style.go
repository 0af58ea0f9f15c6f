package routing

import (
	"strings"
	"unicode"

	"github.com/conclave-ai/conclave/shared/team/agents"
)

// Style places a message on the same three 0–1 scales as an agent's
// personality. It is a lexical classifier (markers of formality, humour and
// technical content): deterministic, microseconds per message, and good
// enough to prefer a playful writer for a playful question.
type Style struct {
	Formality      float64 `json:"formality"`
	Humor          float64 `json:"humor"`
	TechnicalDepth float64 `json:"technical_depth"`
}

var (
	formalMarkers = wordSet(`please kindly would could regards dear sincerely appreciate request assistance
		therefore however furthermore regarding`)
	casualMarkers = wordSet(`hey yo gonna wanna gotta pls plz thx lol haha hahaha lmao omg btw tbh kinda sorta dunno cool awesome yeah yep nope`)
	humorMarkers  = wordSet(`lol haha hahaha lmao rofl joke jokes funny fun hilarious silly pun puns meme witty playful`)
	// technical vocabulary: enough software, data and security words to
	// tell a technical question from a conversational one.
	techMarkers = wordSet(`api apis sql database query queries index schema code function functions method class
		bug bugs error exception stack trace latency throughput cache kubernetes docker lambda dynamodb
		aws cloud server servers endpoint http https json yaml regex algorithm complexity thread threads
		concurrency race deadlock memory cpu compile compiler runtime deploy deployment pipeline ci cd
		microservice microservices architecture scalability refactor refactoring test tests unit integration
		vulnerability xss injection encryption auth oauth jwt token tokens secret secrets tls ssl
		python go golang java javascript typescript rust react node git merge branch commit pull request
		statistics regression metric metrics dataset datasets model models tensor gpu vector embedding`)
)

// Word classes of StyleOf, one lookup a word.
const (
	styleFormal = 1 << iota
	styleCasual
	styleHumor
	styleTech
)

var styleWords, longestStyleWord = wordClasses(map[uint8]map[string]bool{
	styleFormal: formalMarkers, styleCasual: casualMarkers, styleHumor: humorMarkers, styleTech: techMarkers})

// wordClasses merges word sets into one map from word to the classes it is
// in, and the length of the longest word.
func wordClasses(sets map[uint8]map[string]bool) (map[string]uint8, int) {
	m, longest := map[string]uint8{}, 0
	for class, set := range sets {
		for w := range set {
			m[w] |= class
			longest = max(longest, len(w))
		}
	}
	return m, longest
}

func wordSet(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// StyleOf classifies a message.
func StyleOf(text string) Style {
	if isASCII(text) {
		return styleOfASCII(text)
	}
	return styleOfRunes(text)
}

// styleOfRunes is StyleOf for any text.
func styleOfRunes(text string) Style {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	st := Style{Formality: 0.5, Humor: 0.15, TechnicalDepth: 0.1}
	if len(words) == 0 {
		return st
	}
	var formal, casual, funny, tech int
	for _, w := range words {
		if formalMarkers[w] {
			formal++
		}
		if casualMarkers[w] {
			casual++
		}
		if humorMarkers[w] {
			funny++
		}
		if techMarkers[w] {
			tech++
		}
		if strings.Contains(w, "'") {
			casual++ // contractions read informal
		}
	}
	// Code-like tokens (snake_case, dotted.names, calls) are technical.
	for _, f := range strings.Fields(text) {
		if strings.ContainsAny(f, "_(){}[];=<>") || (strings.Count(f, ".") == 1 && !strings.HasSuffix(f, ".") && len(f) > 3) {
			tech++
		}
	}
	for _, r := range text {
		if r >= 0x2190 && !unicode.IsLetter(r) && !unicode.IsPunct(r) { // arrows (from U+2190 ←), symbols and emoji
			funny++
			casual++
		}
	}
	excl := strings.Count(text, "!")
	if excl > 1 {
		funny++
		casual++
	}
	// A text with words is not blank: len(first) >= 0 reads the same.
	if first := []rune(strings.TrimSpace(text)); len(first) > 0 && unicode.IsLower(first[0]) {
		casual++
	}
	st.Formality = clamp01(0.5 + 0.15*float64(formal) - 0.15*float64(casual))
	st.Humor = clamp01(0.15 + 0.25*float64(funny))
	st.TechnicalDepth = clamp01(0.1 + 0.3*float64(tech))
	return st
}

// styleOfASCII is StyleOf for ASCII text, in two passes over its bytes
// and without allocating: no rune is an arrow, symbol or emoji, a letter
// is A–Z or a–z, a space one of \t\n\v\f\r and the space.
func styleOfASCII(text string) Style {
	st := Style{Formality: 0.5, Humor: 0.15, TechnicalDepth: 0.1}
	var formal, casual, funny, tech, words int
	var buf [32]byte
	// Words: runs of letters, digits and apostrophes. (At i == len(text)
	// the break below ends the loop: <= would too.)
	for i := 0; i < len(text); {
		for i < len(text) && !isStyleWordByte(text[i]) {
			i++
		}
		j, apostrophe := i, false
		for j < len(text) && isStyleWordByte(text[j]) {
			apostrophe = apostrophe || text[j] == '\''
			j++
		}
		if j == i {
			break
		}
		words++
		if w := text[i:j]; len(w) <= longestStyleWord {
			c := styleWords[string(asciiLower(buf[:0], w))]
			formal += int(c & styleFormal)
			casual += int(c&styleCasual) >> 1
			funny += int(c&styleHumor) >> 2
			tech += int(c&styleTech) >> 3
		}
		if apostrophe {
			casual++ // contractions read informal
		}
		i = j
	}
	if words == 0 {
		return st
	}
	// Code-like tokens (snake_case, dotted.names, calls) are technical.
	for i := 0; i < len(text); {
		for i < len(text) && isASCIISpace(text[i]) {
			i++
		}
		j := i
		for j < len(text) && !isASCIISpace(text[j]) {
			j++
		}
		// j == i only at the end, an empty f that is no code (>= alike).
		if f := text[i:j]; j > i && (strings.ContainsAny(f, "_(){}[];=<>") || (strings.Count(f, ".") == 1 && f[len(f)-1] != '.' && len(f) > 3)) {
			tech++
		}
		i = j
	}
	if strings.Count(text, "!") > 1 {
		funny++
		casual++
	}
	if t := strings.TrimSpace(text); t != "" && 'a' <= t[0] && t[0] <= 'z' {
		casual++
	}
	st.Formality = clamp01(0.5 + 0.15*float64(formal) - 0.15*float64(casual))
	st.Humor = clamp01(0.15 + 0.25*float64(funny))
	st.TechnicalDepth = clamp01(0.1 + 0.3*float64(tech))
	return st
}

func isStyleWordByte(b byte) bool {
	return ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z') || ('0' <= b && b <= '9') || b == '\''
}

func isASCIISpace(b byte) bool { return b == ' ' || ('\t' <= b && b <= '\r') }

// asciiLower appends w in lower case to buf.
func asciiLower(buf []byte, w string) []byte {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf = append(buf, c)
	}
	return buf
}

// PersonalityFit is 1 minus the weighted distance between the message's
// style and the agent's personality; technical depth weighs most because a
// mismatch there makes the answer too shallow or too dense.
func PersonalityFit(s Style, p agents.Personality) float64 {
	return personalityFit(s, p.Formality, p.Humor, p.TechnicalDepth)
}

// personalityFit is PersonalityFit on the index's flat personality slices.
func personalityFit(s Style, formality, humor, depth float64) float64 {
	d := 0.3*abs(s.Formality-formality) + 0.2*abs(s.Humor-humor) + 0.5*abs(s.TechnicalDepth-depth)
	return clamp01(1 - d)
}

func abs(x float64) float64 {
	if x < 0 { // <= 0 gives -0, which reads as 0
		return -x
	}
	return x
}
