package words_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/words"
)

// A singular and its plural meet on one stem (issue 23: "movies" and
// "movie" did not), as do the other forms the stemmer folds.
func TestStemFoldsSingularAndPlural(t *testing.T) {
	for _, pair := range [][2]string{
		{"movie", "movies"}, {"query", "queries"}, {"policy", "policies"}, {"study", "studies"},
		{"entry", "entries"}, {"reply", "replies"}, {"reply", "replied"}, {"review", "reviews"},
		{"review", "reviewing"}, {"match", "matches"}, {"database", "databases"}, {"key", "keys"},
		{"day", "days"}, {"play", "plays"}, {"code", "coding"}, {"write", "writing"}, {"box", "boxes"},
		{"run", "running"},
	} {
		assert.Equal(t, words.Stem(pair[0]), words.Stem(pair[1]), "%s / %s", pair[0], pair[1])
	}
	// Different words stay apart.
	assert.NotEqual(t, words.Stem("movie"), words.Stem("move"))
	assert.NotEqual(t, words.Stem("play"), words.Stem("ply"))
}

// A word of three letters keeps its ending: no doubled letter, y or e is
// taken from it.
func TestStemKeepsThreeLetterWords(t *testing.T) {
	for _, w := range []string{"add", "sky", "use", "jazz"} {
		assert.Equal(t, w, words.Stem(w))
	}
	// A suffix is taken only from a word longer than it needs: "ties" is
	// "tie" + s, not "t" + ies; "thing", "shed", "xes" and "gas" stay.
	for w, want := range map[string]string{"ties": "tie", "thing": "thing", "shed": "shed", "xes": "xes", "gas": "gas"} {
		assert.Equal(t, want, words.Stem(w), w)
	}
}
