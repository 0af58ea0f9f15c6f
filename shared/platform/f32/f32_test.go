package f32_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/conclave-ai/conclave/shared/platform/f32"
)

// reference is the loop Lanes4x4 stands for, written as the callers write
// it (routing's dot): four lanes, value after value. Compiled for the
// architecture under test, with its rounding (fused on arm64).
func reference(q, e []float32) [4]float32 {
	var s0, s1, s2, s3 float32
	for i := 0; i+4 <= len(q); i += 4 {
		s0 += q[i] * e[i]
		s1 += q[i+1] * e[i+1]
		s2 += q[i+2] * e[i+2]
		s3 += q[i+3] * e[i+3]
	}
	return [4]float32{s0, s1, s2, s3}
}

// values returns n random values in (-scale, scale), a tenth of them 0.
func values(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		if r.IntN(10) > 0 {
			v[i] = (r.Float32()*2 - 1) * scale
		}
	}
	return v
}

// The kernel gives the loop's bits whatever the length (its four-value
// steps and the tail it leaves), the scale (subnormal products, where a
// fused and an unfused multiply-add differ most) and the sign. make test
// runs it on amd64 and, under qemu-aarch64, on arm64.
func TestLanes4x4IsTheLoopBitForBit(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, d := range []int{1, 2, 3, 4, 5, 7, 8, 13, 16, 64, 255, 256, 257, 1024} {
		for round := range 40 {
			scale := float32(1)
			if round%4 == 0 {
				scale = 1e-20
			}
			q := values(r, d, scale)
			ex := values(r, 5*d, 1) // a vector more than the four read
			got := f32.Lanes4x4(q, ex[:4*d])
			for k := range 4 {
				want := reference(q, ex[k*d:(k+1)*d])
				for l := range 4 {
					if math.Float32bits(got[4*k+l]) != math.Float32bits(want[l]) {
						t.Fatalf("dim %d, round %d, vector %d, lane %d: %v, the loop %v", d, round, k, l, got[4*k+l], want[l])
					}
				}
			}
		}
	}
}

// The kernel reads four vectors of ex and no more: a shorter ex panics
// before it runs.
func TestLanes4x4ReadsNoMoreThanItIsGiven(t *testing.T) {
	func() {
		defer func() {
			if recover() == nil {
				t.Error("four vectors of five values need 20: 19 did not panic")
			}
		}()
		f32.Lanes4x4(make([]float32, 5), make([]float32, 19))
	}()
	if out := f32.Lanes4x4(nil, nil); out != ([16]float32{}) {
		t.Errorf("no values: %v, want zeros", out)
	}
}

// The Go loop the other architectures run gives the same bits as the
// kernel of this one.
func TestTheGoLoopIsTheKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for _, d := range []int{3, 4, 9, 256} {
		q, ex := values(r, d, 1), values(r, 4*d, 1)
		if kern, loop := f32.Lanes4x4(q, ex), f32.LanesGo(q, ex); kern != loop {
			t.Fatalf("dim %d: kernel %v, Go loop %v", d, kern, loop)
		}
	}
}
