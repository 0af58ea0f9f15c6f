package routing

import (
	"math/rand/v2"
	"testing"
)

// dot4 is four calls of dot, bit for bit, whatever the length (the
// kernel's four-value steps and dot's tail): example similarities, and
// the calibration fitted on them, do not move with the kernel
// (shared/platform/f32).
func TestDot4IsFourDotsBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, d := range []int{1, 2, 3, 4, 5, 7, 13, 64, 255, 256, 257, 1024} {
		for range 20 {
			q := make([]float32, d)
			ex := make([]float32, 4*d)
			for i := range q {
				q[i] = r.Float32()*2 - 1
			}
			for i := range ex {
				ex[i] = r.Float32()*2 - 1
			}
			got := dot4(q, ex)
			for k := range 4 {
				if want := dot(q, ex[k*d:(k+1)*d]); got[k] != want {
					t.Fatalf("dim %d, vector %d: dot4 %v, dot %v", d, k, got[k], want)
				}
			}
		}
	}
}

// dot4 allocates nothing: the lanes come back by value (a pointer handed
// to the kernel, a function value, escaped and cost an allocation a call,
// 40 a gate query at 1,000 agents).
func TestDot4AllocatesNothing(t *testing.T) {
	q, ex := make([]float32, 256), make([]float32, 4*256)
	if n := testing.AllocsPerRun(100, func() { dot4(q, ex) }); n != 0 {
		t.Fatalf("dot4 allocated %v times a call", n)
	}
}
