package routing

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sumRows gives the bits of clearing z and adding the rows one after
// another (addTo), whatever the length (the blocks of eight and the
// tail) and the count of rows.
func TestSumRowsIsRowAfterRowBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{1, 7, 8, 9, 21, 201, 513} {
		for _, k := range []int{0, 1, 3, 20, 70} {
			rows := make([][]float32, k)
			for i := range rows {
				rows[i] = make([]float32, n+2) // longer than z: only len(z) are read
				for j := range rows[i] {
					rows[i][j] = (r.Float32()*2 - 1) * float32(math.Pow(10, float64(r.IntN(7)-3)))
				}
			}
			want := make([]float32, n)
			for _, row := range rows {
				addTo(row, want)
			}
			got := make([]float32, n)
			for i := range got {
				got[i] = 42 // overwritten, not added to
			}
			sumRows(rows, got)
			for j := range want {
				if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
					t.Fatalf("%d columns, %d rows, column %d: %v, row after row %v", n, k, j, got[j], want[j])
				}
			}
		}
	}
}
