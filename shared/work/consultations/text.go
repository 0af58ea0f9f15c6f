package consultations

import (
	"math"
	"regexp"
	"strings"
	"unicode"
)

// Similarity is the cosine of the two texts' term-frequency vectors
// (lower-cased letters and digits): 1 for the same words in any order,
// 0 for no word in common. Lexical on purpose: it is deterministic, needs
// no model, and "near-identical" (> 0.95) is a lexical notion.
func Similarity(a, b string) float64 {
	va, vb := terms(a), terms(b)
	if len(va) == 0 || len(vb) == 0 {
		return 0
	}
	var dot, na, nb float64
	for t, x := range va {
		na += x * x
		dot += x * vb[t]
	}
	for _, y := range vb {
		nb += y * y
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

func terms(s string) map[string]float64 {
	out := map[string]float64{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len(w) > 1 && !stop[w] {
			out[w]++
		}
	}
	return out
}

// stop words carry no meaning for similarity.
var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields("the a an is are was be to of and or in on for with how what why do does i we it this that my our at by as can should from") {
		stop[w] = true
	}
}

// secretPatterns are the kinds of text that look like secrets, most
// specific first (a private key block before the tokens inside it).
var secretPatterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"private_key", regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)`)},
	{"connection_string", regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:[^\s@]+@[^\s]+`)},
	{"aws_access_key", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"bearer_token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{8,}=*`)},
	{"api_key", regexp.MustCompile(`\b(sk|pk|rk)[-_](live|test|proj)?[-_]?[A-Za-z0-9]{16,}\b|\bgh[pousr]_[A-Za-z0-9]{20,}\b|\bxox[abprs]-[A-Za-z0-9-]{10,}\b|\bcnk_[A-Za-z0-9_]{16,}\b`)},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b`)},
	// key=value / key: value assignments of secret-named keys.
	{"credential", regexp.MustCompile(`(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?key|secret[_-]?key|aws_secret_access_key|token|auth[_-]?token|client[_-]?secret)\b(\s*[:=]\s*|\s+is\s+)("[^"]+"|'[^']+'|[^\s,;]+)`)},
}

// Redact replaces every secret-looking span of s by [REDACTED:<kind>] and
// counts the kinds in n.
func Redact(s string, n map[string]int) string {
	for _, p := range secretPatterns {
		s = p.re.ReplaceAllStringFunc(s, func(string) string {
			n[p.kind]++
			return "[REDACTED:" + p.kind + "]"
		})
	}
	return s
}

func redactAll(list []string, n map[string]int) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Redact(s, n)
	}
	return out
}
