package wordllama

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pool's column blocks give the bits of the plain sum, row after row in
// the tokens' order, then scaled to unit length: whatever the dimension
// (the blocks of eight and the tail), the count of tokens (past the 64
// kept on the stack) and repeated or clipped ids.
func TestPoolIsTheRowByRowSumBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, dim := range []int{1, 7, 8, 9, 64, 256, 259} {
		m := &Model{dim: dim, rows: 50, table: make([]float32, 50*dim)}
		for i := range m.table {
			m.table[i] = r.Float32()*2 - 1
		}
		for _, n := range []int{0, 1, 2, 17, 64, 65, 200} {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = int32(r.IntN(60) - 5) // some below 0 and past the table: clipped
			}
			want := make([]float64, dim)
			acc := make([]float32, dim)
			for _, id := range ids {
				row := int(min(max(id, 0), 49)) * dim
				for j := range acc {
					acc[j] += m.table[row+j]
				}
			}
			var sum float64
			for j, x := range acc {
				want[j] = float64(x)
				sum += want[j] * want[j]
			}
			if sum > 0 {
				for j := range want {
					want[j] /= math.Sqrt(sum)
				}
			}
			got := m.pool(ids)
			for j := range want {
				if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
					t.Fatalf("dim %d, %d tokens, value %d: %v, row by row %v", dim, n, j, got[j], want[j])
				}
			}
		}
	}
}
