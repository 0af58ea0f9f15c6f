package routing

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// numberRE is what countNumbers counts the matches of.
var numberRE = regexp.MustCompile(`\b\d+(\.\d+)?(ms|s|%|k|m|gb|mb|x)?\b`)

func TestCountNumbersCountsTheRegularExpressionsMatches(t *testing.T) {
	for _, s := range []string{"", "3", "3 ms", "3ms", "3msx", "3m", "3mb", "3gbx", "1.5", "1.5.3", "1.5x", "1.", ".5", "50%", "50%x",
		"50% off", "a1", "_1", "1_", "é1", "1é", "12.34ms.", "v2.0", "2x3", "100k-200k", "10%-20%", "ms3", "3s", "3ss", "1.2.3.4",
		"within 3 months under a budget of 50k", "200ms p99, 1.5x cost, 16gb", "x1.5mb", "1.5mbb 2.5mb",
		"z1", "A1", "Z1", "1z", "1A", "1Z", "@1", "[1", "`1", "{1"} {
		if got, want := countNumbers(s), len(numberRE.FindAllString(s, -1)); got != want {
			t.Errorf("%q: countNumbers %d, the regular expression %d", s, got, want)
		}
	}
	alphabet := []string{"0", "1", "9", ".", "m", "s", "k", "g", "b", "x", "%", " ", "-", "_", "a", "é", "€", "\xff"}
	r := rand.New(rand.NewPCG(5, 6))
	for range 300_000 {
		var b strings.Builder
		for k := r.IntN(12); k > 0; k-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		s := b.String()
		if got, want := countNumbers(s), len(numberRE.FindAllString(s, -1)); got != want {
			t.Fatalf("%q: countNumbers %d, the regular expression %d", s, got, want)
		}
	}
}
