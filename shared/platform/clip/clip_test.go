package clip_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/conclave-ai/conclave/shared/platform/clip"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "ab…"},
		{"abcd", 1, "…"},
		{"abcd", 0, ""},
		{"abcd", -1, ""},
		{"héllo", 5, "héllo"}, // 6 bytes, 5 runes: whole
		{"héllo", 3, "hé…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"👍🏽ok", 2, "👍…"},   // a skin-tone modifier is its own rune
		{"a\xffb", 2, "a…"}, // invalid UTF-8 counts a rune per bad byte
	} {
		got := clip.Clip(c.s, c.n)
		assert.Equal(t, c.want, got, "Clip(%q, %d)", c.s, c.n)
		if c.n > 0 {
			assert.LessOrEqual(t, utf8.RuneCountInString(got), c.n, "the marker fits the limit")
		}
		if utf8.ValidString(c.s) {
			assert.True(t, utf8.ValidString(got), "Clip(%q, %d) split a character", c.s, c.n)
		}
	}
}

// Every cut of a multi-byte text, at every limit, is valid UTF-8 within
// the limit: the byte slicing worker.truncate did is what this replaces.
func TestClipNeverSplitsACharacter(t *testing.T) {
	s := strings.Repeat("é日👍a", 20)
	for n := 1; n <= utf8.RuneCountInString(s)+1; n++ {
		got := clip.Clip(s, n)
		assert.True(t, utf8.ValidString(got), "n=%d", n)
		assert.LessOrEqual(t, utf8.RuneCountInString(got), n, "n=%d", n)
		assert.True(t, strings.HasPrefix(s, strings.TrimSuffix(got, clip.Marker)), "n=%d: a prefix", n)
	}
}

func FuzzClip(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := clip.Clip(s, n)
		if n <= 0 {
			if got != "" {
				t.Fatalf("Clip(%q, %d) = %q", s, n, got)
			}
			return
		}
		if utf8.RuneCountInString(got) > n {
			t.Fatalf("Clip(%q, %d) = %q: over the limit", s, n, got)
		}
		if got != s && (!strings.HasSuffix(got, clip.Marker) || !strings.HasPrefix(s, strings.TrimSuffix(got, clip.Marker))) {
			t.Fatalf("Clip(%q, %d) = %q: not a marked prefix", s, n, got)
		}
	})
}

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "hell"},
		{"héllo wörld", 7, "héllo w"},
		{"日本語テキスト", 3, "日本語"},
		{"abc", 0, ""},
		{"", 3, ""},
	} {
		assert.Equal(t, c.want, clip.Prefix(c.in, c.n), "Prefix(%q, %d)", c.in, c.n)
	}
}
