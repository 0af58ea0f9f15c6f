// Package f32check is shared/platform/f32's bit-for-bit check, as a
// function: its test runs it on the machine's architecture, and make
// test-arm64 builds localstack/f32check, which runs it, for arm64 and
// runs that under qemu-aarch64. A program, not the test binary: compiling
// the testing package and its imports for arm64 too took a cold CI run
// about 10 s more of CPU. It imports no more than the runtime's own (no
// fmt, no os) for the same reason.
package f32check

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/conclave-ai/conclave/shared/platform/f32"
)

// reference is the loop Lanes4x4 stands for, written as the callers write
// it (routing's dot): four lanes, value after value. Compiled for the
// architecture it runs on, with its rounding (fused on arm64).
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

// Values returns n random values in (-scale, scale), a tenth of them 0.
func Values(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		if r.IntN(10) > 0 {
			v[i] = (r.Float32()*2 - 1) * scale
		}
	}
	return v
}

// Run checks that f32.Lanes4x4 gives the loop's bits whatever the length
// (its four-value steps and the tail it leaves), the scale (subnormal
// products, where a fused and an unfused multiply-add differ most) and
// the sign, and that it reads four vectors of ex and no more (a shorter ex
// panics before the kernel runs). nil when it does.
func Run() error {
	r := rand.New(rand.NewPCG(4, 4))
	for _, d := range []int{1, 2, 3, 4, 5, 7, 8, 13, 16, 64, 255, 256, 257, 1024} {
		for round := range 40 {
			scale := float32(1)
			if round%4 == 0 {
				scale = 1e-20
			}
			q := Values(r, d, scale)
			ex := Values(r, 5*d, 1) // a vector more than the four read
			got := f32.Lanes4x4(q, ex[:4*d])
			for k := range 4 {
				want := reference(q, ex[k*d:(k+1)*d])
				for l := range 4 {
					if math.Float32bits(got[4*k+l]) != math.Float32bits(want[l]) {
						return errors.New("dim " + strconv.Itoa(d) + ", round " + strconv.Itoa(round) + ", vector " + strconv.Itoa(k) + ", lane " + strconv.Itoa(l) +
							": " + strconv.FormatFloat(float64(got[4*k+l]), 'g', -1, 32) + ", the loop " + strconv.FormatFloat(float64(want[l]), 'g', -1, 32))
					}
				}
			}
		}
	}
	if !panics(func() { f32.Lanes4x4(make([]float32, 5), make([]float32, 19)) }) {
		return errors.New("four vectors of five values need 20: 19 did not panic")
	}
	if out := f32.Lanes4x4(nil, nil); out != ([16]float32{}) {
		return errors.New("no values: not all zeros")
	}
	// The Go loop the other architectures run gives the kernel's bits.
	for _, d := range []int{3, 4, 9, 256} {
		q, ex := Values(r, d, 1), Values(r, 4*d, 1)
		if f32.Lanes4x4(q, ex) != f32.LanesGo(q, ex) {
			return errors.New("dim " + strconv.Itoa(d) + ": the kernel and LanesGo differ")
		}
	}
	return nil
}

func panics(f func()) (p bool) {
	defer func() { p = recover() != nil }()
	f()
	return false
}
