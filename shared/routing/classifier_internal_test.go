package routing

import (
	"hash/fnv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A stored classifier's gram weights are read by bucket: the buckets are
// FNV-1a (32 bits) of each 4-gram of the word between "<" and ">", modulo
// Grams, now and in every later version.
func TestTheGramBucketsAreFNV1a(t *testing.T) {
	c := &Classifier{Terms: []string{"a", "b"}, Grams: 2048}
	var f features
	c.gramsOf(&f, []string{"pto", "ok"}, nil)
	var want []int32
	for _, g := range []string{"<pto", "pto>", "<ok>"} {
		h := fnv.New32a()
		h.Write([]byte(g))
		want = append(want, 2+int32(h.Sum32()%2048))
	}
	assert.Equal(t, want, f.idx)
	assert.InDeltaSlice(t, []float32{0.57735, 0.57735, 0.57735}, f.val, 1e-5, "1/√3 each")
}
